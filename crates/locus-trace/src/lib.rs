//! Cache traces: request records, streaming readers and writers for the public trace formats,
//! seeded synthetic generators, and trace statistics with exact LRU miss ratios.
//!
//! # Components
//!
//! * [`Request`] / [`Op`]: the one record type (time, tenant, key, key and value size, op,
//!   optional miss penalty).
//! * [`read`]: [`open`] any supported file as a [`RequestReader`], with transparent
//!   `.zst .xz .gz .bz2` decompression. Readers stream (constant memory), decode into a reused
//!   record (no allocation per request) and turn every malformed record into a [`TraceError`]
//!   naming the file and the byte offset or line.
//! * [`write`](mod@write): writers for the Locus CSV (every field round-trips) and libCacheSim oracleGeneral.
//! * [`generate`]: Zipf, uniform, loop, phase-change and YCSB A–F key streams, value-size
//!   distributions and multi-tenant mixes, all seeded and reproducible.
//! * [`stats`]: request and key counts, one-hit wonders, sizes, op mix, footprint and exact LRU
//!   miss ratios at 0.1 %, 1 % and 10 % of the keys and of the bytes (Fenwick-tree stack distances,
//!   `docs/models.md` §1).
//!
//! ```text
//!  file ─ decompress ─ Source (256 KiB window) ─ format decoder ─┐
//!                                                                ├─> RequestReader ─> stats / mrc / sim
//!  GeneratorConfig ─ Generator (seeded RNG) ────────────────────┘           └─────> write (csv, oracleGeneral)
//! ```
//!
//! # Keys and sizes per format
//!
//! Numeric ids are kept as they are (`u64`); string keys are hashed with
//! [`locus_common::hash_key`]; composite keys (Tencent `(volume, offset)`, SYSTOR `(LUN, offset)`,
//! AdaptSize `(id, size)`, block-chunk `(block_id, io_offset)`, MSR `(host, disk, offset)`) are the
//! hash of their parts. The size a cache charges is [`Request::size`] = `key_size + value_size`
//! (Twitter and kvcache give both). See [`Format`] for each layout, and
//! `shared/traces/README.md` for the definitions the statistics follow.
//!
//! Non-goals: no random access or seeking; no trace is ever loaded whole.

pub mod error;
pub mod format;
pub mod generate;
mod parse;
pub mod read;
pub mod record;
mod source;
pub mod stats;
pub mod write;

pub use error::{Location, Result, TraceError};
pub use format::{Format, KeyStream};
pub use read::{
    Column, CsvOptions, ReadOptions, ReadWarning, RequestReader, TimeUnit, TraceInfo, open,
    open_stream, requests,
};
pub use record::{Op, Request};
pub use source::Compression;
pub use write::{RequestWriter, create};
