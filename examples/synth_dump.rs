//! Writes a synthetic Llama-like FSDP dump (`commlens::synth`) of about N nodes, gzipped when
//! OUT ends in `.gz`: the files the whole-process reading figures in docs/performance.md use.
//!
//! With `lean` after OUT, the same graph as the exporter lays a dump out, without `val`
//! (`commlens::synth::lean_dump`: the shape issue 14 measured); with `traced`, that and a
//! stack trace in every node's `meta`, as the exporter writes with `--with-stack-trace`
//! (`commlens::synth::lean_dump_with_stack_traces`).
//!
//! `cargo run --release --example synth_dump -- 1000000 /tmp/synth-1m.json.gz [lean|traced]`

use commlens::synth::{lean_dump, lean_dump_with_stack_traces, synthetic_dump, SynthSpec};
use std::io::Write;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: synth_dump NODES OUT[.gz] [lean|traced]";
    let nodes: usize = args.next().ok_or(usage)?.parse()?;
    let out = args.next().ok_or(usage)?;
    let text = synthetic_dump(SynthSpec::with_nodes(nodes));
    let text = match args.next().as_deref() {
        None => text,
        Some("lean") => lean_dump(&text)?,
        Some("traced") => lean_dump_with_stack_traces(&text)?,
        Some(_) => return Err(usage.into()),
    };
    let file = std::io::BufWriter::new(std::fs::File::create(&out)?);
    if out.ends_with(".gz") {
        let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
        gz.write_all(text.as_bytes())?;
        gz.finish()?.flush()?;
    } else {
        let mut file = file;
        file.write_all(text.as_bytes())?;
        file.flush()?;
    }
    eprintln!("{out}: {} bytes of JSON", text.len());
    Ok(())
}
