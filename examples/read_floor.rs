//! The floor a dump's reading is measured against, as a whole process: read the file, gunzip
//! it (when gzipped) into a buffer as the reader does (`commlens::dump::gunzip`), then a
//! validating serde_json pass that keeps nothing (`IgnoredAny`). Prints the JSON's size.
//! With `FLOOR_STREAMED=1`, gunzip is streamed into the pass instead (less memory, and on
//! the development machine twice the CPU time: serde_json reads a stream byte by byte).
//!
//! `cargo run --release --example read_floor -- DUMP`

use serde::de::IgnoredAny;
use serde::Deserialize;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: read_floor DUMP")?;
    let bytes = std::fs::read(&path)?;
    let gzipped = bytes.starts_with(&[0x1f, 0x8b]);
    let json_len = if gzipped && std::env::var_os("FLOOR_STREAMED").is_some() {
        let mut counter = Counting {
            inner: flate2::read::MultiGzDecoder::new(&bytes[..]),
            count: 0,
        };
        let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::new(&mut counter));
        IgnoredAny::deserialize(&mut de)?;
        de.end()?;
        counter.count
    } else {
        let json = if gzipped {
            commlens::dump::gunzip(&bytes)?
        } else {
            bytes
        };
        let mut de = serde_json::Deserializer::from_slice(&json);
        IgnoredAny::deserialize(&mut de)?;
        de.end()?;
        json.len()
    };
    println!("{json_len}");
    Ok(())
}

/// Counts the bytes read through it.
struct Counting<R> {
    inner: R,
    count: usize,
}

impl<R: std::io::Read> std::io::Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count += n;
        Ok(n)
    }
}
