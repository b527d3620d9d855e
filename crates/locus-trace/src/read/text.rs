//! Whitespace-separated text formats: id per line (LIRS, libCacheSim txt), ARC `.lis`,
//! webcachesim/AdaptSize `time id size`.

use std::{path::PathBuf, sync::Arc};

use locus_common::hash_key;

use super::{RequestReader, TraceInfo};
use crate::{
    error::{Location, Result, TraceError, show},
    parse::{split_blanks, trim, u64_dec},
    record::Request,
    source::Source,
};

fn invalid(path: &std::path::Path, line: u64, expected: &str, found: &[u8]) -> TraceError {
    TraceError::Invalid {
        path: path.to_path_buf(),
        at: Location::Line(line),
        expected: expected.to_string(),
        found: show(found),
    }
}

/// One decimal id per line; lines holding only `*` (LIRS checkpoints) and blank lines are skipped.
pub(crate) struct IdPerLine {
    path: Arc<PathBuf>,
    src: Source,
    info: TraceInfo,
    size: u64,
}

impl IdPerLine {
    pub(crate) fn new(src: Source, info: TraceInfo, size: u64) -> Self {
        Self {
            path: src.path.clone(),
            src,
            info,
            size,
        }
    }
}

impl RequestReader for IdPerLine {
    #[inline]
    fn read_into(&mut self, req: &mut Request) -> Result<bool> {
        loop {
            let Some((no, line)) = self.src.line()? else {
                return Ok(false);
            };
            let t = trim(line);
            if t.is_empty() || t == b"*" {
                continue;
            }
            let Some(key) = u64_dec(t) else {
                let e = invalid(&self.path, no, "one unsigned decimal id per line", line);
                return Err(e);
            };
            *req = Request {
                key,
                value_size: self.size,
                ..Request::default()
            };
            return Ok(true);
        }
    }

    fn info(&self) -> &TraceInfo {
        &self.info
    }

    fn records_read(&self) -> u64 {
        self.src.line_no()
    }
}

/// ARC `.lis`: `start n ignore reqno`, expanded into `n` requests of 512-byte blocks.
pub(crate) struct ArcLis {
    path: Arc<PathBuf>,
    src: Source,
    info: TraceInfo,
    next_block: u64,
    remaining: u64,
    fields: Vec<(usize, usize)>,
}

impl ArcLis {
    /// Block size of the ARC traces.
    const BLOCK: u64 = 512;

    pub(crate) fn new(src: Source, mut info: TraceInfo) -> Self {
        info.has_sizes = true;
        Self {
            path: src.path.clone(),
            src,
            info,
            next_block: 0,
            remaining: 0,
            fields: Vec::with_capacity(8),
        }
    }
}

impl RequestReader for ArcLis {
    #[inline]
    fn read_into(&mut self, req: &mut Request) -> Result<bool> {
        while self.remaining == 0 {
            let Some((no, line)) = self.src.line()? else {
                return Ok(false);
            };
            split_blanks(line, &mut self.fields);
            if self.fields.is_empty() {
                continue;
            }
            const WANT: &str = "`start_block number_of_blocks ignore request_number` (unsigned integers, number_of_blocks >= 1)";
            if self.fields.len() != 4 {
                return Err(invalid(&self.path, no, WANT, line));
            }
            let mut v = [0u64; 4];
            for (d, &(s, e)) in v.iter_mut().zip(&self.fields) {
                match u64_dec(&line[s..e]) {
                    Some(x) => *d = x,
                    None => return Err(invalid(&self.path, no, WANT, line)),
                }
            }
            if v[1] == 0 || v[0].checked_add(v[1]).is_none() {
                return Err(invalid(&self.path, no, WANT, line));
            }
            self.next_block = v[0];
            self.remaining = v[1];
        }
        *req = Request {
            key: self.next_block,
            value_size: Self::BLOCK,
            ..Request::default()
        };
        self.next_block += 1;
        self.remaining -= 1;
        Ok(true)
    }

    fn info(&self) -> &TraceInfo {
        &self.info
    }

    fn records_read(&self) -> u64 {
        self.src.line_no()
    }
}

/// webcachesim / AdaptSize text `time id size`; the key is the pair (id, size).
pub(crate) struct Adaptsize {
    path: Arc<PathBuf>,
    src: Source,
    info: TraceInfo,
    fields: Vec<(usize, usize)>,
}

impl Adaptsize {
    pub(crate) fn new(src: Source, mut info: TraceInfo) -> Self {
        info.has_time = true;
        info.has_sizes = true;
        Self {
            path: src.path.clone(),
            src,
            info,
            fields: Vec::with_capacity(4),
        }
    }
}

/// The key of a composite `(a, b)` of integers.
#[inline]
pub(crate) fn pair_key(a: u64, b: u64) -> u64 {
    let mut buf = [0u8; 16];
    buf[..8].copy_from_slice(&a.to_le_bytes());
    buf[8..].copy_from_slice(&b.to_le_bytes());
    hash_key(&buf)
}

impl RequestReader for Adaptsize {
    #[inline]
    fn read_into(&mut self, req: &mut Request) -> Result<bool> {
        loop {
            let Some((no, line)) = self.src.line()? else {
                return Ok(false);
            };
            split_blanks(line, &mut self.fields);
            if self.fields.is_empty() {
                continue;
            }
            const WANT: &str = "`time id size` (three unsigned integers)";
            if self.fields.len() != 3 {
                return Err(invalid(&self.path, no, WANT, line));
            }
            let f = |i: usize| {
                let (s, e) = self.fields[i];
                u64_dec(&line[s..e])
            };
            let (Some(t), Some(id), Some(size)) = (f(0), f(1), f(2)) else {
                return Err(invalid(&self.path, no, WANT, line));
            };
            let Some(time_us) = t.checked_mul(1_000_000) else {
                return Err(invalid(&self.path, no, "a time below 2^64 µs", line));
            };
            *req = Request {
                time_us,
                key: pair_key(id, size),
                value_size: size,
                ..Request::default()
            };
            return Ok(true);
        }
    }

    fn info(&self) -> &TraceInfo {
        &self.info
    }

    fn records_read(&self) -> u64 {
        self.src.line_no()
    }
}
