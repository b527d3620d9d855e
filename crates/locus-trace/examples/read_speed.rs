//! Reader throughput: decode a trace into a reused record and count requests.
//!
//! `cargo run --release -p locus-trace --example read_speed -- FILE [FORMAT]`
//!
//! Prints requests, seconds and requests per second (decompression included), so reader
//! changes can be compared on the same file.

use std::time::Instant;

use locus_trace::{Format, ReadOptions, Request, open};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: read_speed FILE [FORMAT]")?;
    let mut opts = ReadOptions::default();
    if let Some(f) = args.next() {
        opts.format = Some(f.parse::<Format>()?);
    }
    let start = Instant::now();
    let mut r = open(&path, &opts)?;
    let mut req = Request::default();
    let (mut n, mut checksum) = (0u64, 0u64);
    while r.read_into(&mut req)? {
        n += 1;
        checksum = checksum.wrapping_add(req.key ^ req.value_size);
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{path}: {n} requests in {secs:.3} s = {:.1} M requests/s (checksum {checksum:x})",
        n as f64 / secs / 1e6
    );
    Ok(())
}
