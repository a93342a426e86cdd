//! Writes a synthetic Llama-like FSDP dump (`commlens::synth`) of about N nodes, gzipped when
//! OUT ends in `.gz`: the files the whole-process reading figures in docs/performance.md use.
//!
//! With `lean` after OUT, the same graph as the exporter lays a dump out, without `val`
//! (`commlens::synth::lean_dump`: the shape issue 14 measured); with `traced`, that and a
//! stack trace in every node's `meta`, as the exporter writes with `--with-stack-trace`
//! (`commlens::synth::lean_dump_with_stack_traces`); with `lean-one-line`, the lean dump on
//! one line, as `json.dump` writes a file without `indent`; with `lean-no-repr`, the lean dump
//! without the nodes' `repr`s (`commlens::synth::lean_dump_without_reprs`).
//!
//! With `hostile`, OUT is a directory, and every shape of `commlens::synth::Hostile` is
//! written there as `NAME.json` (valid dumps that find work growing faster than the graph),
//! with `NAME.args.json` beside the shapes that have planner arguments for a diff's after side
//! and `NAME.after.json` beside those that are a graph and its graph after a pass.
//!
//! `cargo run --release --example synth_dump -- 1000000 /tmp/synth-1m.json.gz [lean|traced|lean-one-line|lean-no-repr]`

use commlens::synth::{
    lean_dump, lean_dump_with_stack_traces, lean_dump_without_reprs, synthetic_dump, Hostile,
    SynthSpec,
};
use std::io::Write;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: synth_dump NODES OUT[.gz] [lean|traced|lean-one-line|lean-no-repr] | synth_dump NODES DIR hostile";
    let nodes: usize = args.next().ok_or(usage)?.parse()?;
    let out = args.next().ok_or(usage)?;
    let shape = args.next();
    if shape.as_deref() == Some("hostile") {
        std::fs::create_dir_all(&out)?;
        for hostile in Hostile::ALL {
            let path = std::path::Path::new(&out).join(format!("{}.json", hostile.name()));
            std::fs::write(&path, hostile.dump(nodes))?;
            eprintln!("{}", path.display());
            if let Some(args) = hostile.args_after() {
                let path = path.with_extension("args.json");
                std::fs::write(&path, args)?;
                eprintln!("{}", path.display());
            }
            if let Some(after) = hostile.after(nodes) {
                let path = path.with_extension("after.json");
                std::fs::write(&path, after)?;
                eprintln!("{}", path.display());
            }
        }
        return Ok(());
    }
    let text = synthetic_dump(SynthSpec::with_nodes(nodes));
    let text = match shape.as_deref() {
        None => text,
        Some("lean") => lean_dump(&text)?,
        Some("traced") => lean_dump_with_stack_traces(&text)?,
        // A JSON string holds no raw line break, so every one is between tokens.
        Some("lean-one-line") => lean_dump(&text)?.replace('\n', ""),
        Some("lean-no-repr") => lean_dump_without_reprs(&text)?,
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
