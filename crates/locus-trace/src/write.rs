//! Writers: the Locus CSV (every [`Request`] field round-trips) and libCacheSim oracleGeneral.
//!
//! Output compression follows the extension (`.zst .xz .gz .bz2`). oracleGeneral records carry the
//! position of the next request to the same object, which only the end of the trace reveals: the
//! writer writes plain records with `-1`, then at [`RequestWriter::finish`] walks the file backwards
//! once, patching each record's `next_access_vtime` in place (memory: one entry per distinct key),
//! and compresses the result if asked.

use std::{
    fs::{File, OpenOptions},
    io::{self, BufWriter, Read, Write},
    os::unix::fs::FileExt,
    path::{Path, PathBuf},
};

use hashbrown::HashMap;

use crate::{
    error::{Result, TraceError},
    format::Format,
    read::csv_header,
    record::Request,
    source::Compression,
};

/// A sink of requests.
pub trait RequestWriter {
    /// Appends one request.
    ///
    /// # Errors
    /// An I/O error, or a request the format cannot represent (e.g. a size above 2^32 − 1 in
    /// oracleGeneral).
    fn write(&mut self, req: &Request) -> Result<()>;

    /// Flushes and closes the output; returns the number of requests written.
    ///
    /// # Errors
    /// An I/O error.
    fn finish(self: Box<Self>) -> Result<u64>;
}

/// Creates a writer for `format` (`LocusCsv` or `OracleGeneral`) at `path`.
///
/// # Errors
/// Another format, or the file cannot be created.
pub fn create(path: impl AsRef<Path>, format: Format) -> Result<Box<dyn RequestWriter>> {
    let path = path.as_ref();
    match format {
        Format::LocusCsv => Ok(Box::new(CsvWriter::create(path)?)),
        Format::OracleGeneral => Ok(Box::new(OracleGeneralWriter::create(path)?)),
        other => Err(TraceError::Options(format!(
            "cannot write {other}: writable formats are locus-csv and oracle-general"
        ))),
    }
}

enum Sink {
    Plain(BufWriter<File>),
    Zstd(zstd::stream::write::Encoder<'static, BufWriter<File>>),
    Xz(xz2::write::XzEncoder<BufWriter<File>>),
    Gzip(flate2::write::GzEncoder<BufWriter<File>>),
    Bzip2(bzip2::write::BzEncoder<BufWriter<File>>),
}

impl Sink {
    fn create(path: &Path, compression: Compression) -> Result<Sink> {
        let f = File::create(path).map_err(|source| TraceError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let w = BufWriter::with_capacity(256 * 1024, f);
        Ok(match compression {
            Compression::None => Sink::Plain(w),
            Compression::Zstd => {
                Sink::Zstd(zstd::stream::write::Encoder::new(w, 3).map_err(|source| {
                    TraceError::Write {
                        path: path.to_path_buf(),
                        source,
                    }
                })?)
            }
            Compression::Xz => Sink::Xz(xz2::write::XzEncoder::new(w, 6)),
            Compression::Gzip => Sink::Gzip(flate2::write::GzEncoder::new(w, Default::default())),
            Compression::Bzip2 => Sink::Bzip2(bzip2::write::BzEncoder::new(w, Default::default())),
        })
    }

    fn finish(self) -> io::Result<()> {
        let mut w = match self {
            Sink::Plain(w) => w,
            Sink::Zstd(e) => e.finish()?,
            Sink::Xz(e) => e.finish()?,
            Sink::Gzip(e) => e.finish()?,
            Sink::Bzip2(e) => e.finish()?,
        };
        w.flush()?;
        w.get_ref().sync_all()
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::Plain(w) => w.write(buf),
            Sink::Zstd(w) => w.write(buf),
            Sink::Xz(w) => w.write(buf),
            Sink::Gzip(w) => w.write(buf),
            Sink::Bzip2(w) => w.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Plain(w) => w.flush(),
            Sink::Zstd(w) => w.flush(),
            Sink::Xz(w) => w.flush(),
            Sink::Gzip(w) => w.flush(),
            Sink::Bzip2(w) => w.flush(),
        }
    }
}

/// Writes the Locus CSV: header `time_us,tenant,key,key_size,value_size,op,penalty_us`, one row
/// per request, `penalty_us` empty when absent.
pub struct CsvWriter {
    path: PathBuf,
    out: Sink,
    line: Vec<u8>,
    n: u64,
}

impl CsvWriter {
    /// Creates (truncates) `path`; compression from its extension.
    ///
    /// # Errors
    /// The file cannot be created or written.
    pub fn create(path: &Path) -> Result<Self> {
        let comp = Compression::from_extension(path).unwrap_or(Compression::None);
        let mut out = Sink::create(path, comp)?;
        writeln!(out, "{}", csv_header()).map_err(|source| TraceError::Write {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Self {
            path: path.to_path_buf(),
            out,
            line: Vec::with_capacity(128),
            n: 0,
        })
    }
}

impl RequestWriter for CsvWriter {
    fn write(&mut self, r: &Request) -> Result<()> {
        let mut b = itoa::Buffer::new();
        let l = &mut self.line;
        l.clear();
        for (i, v) in [
            r.time_us,
            r.tenant as u64,
            r.key,
            r.key_size as u64,
            r.value_size,
        ]
        .into_iter()
        .enumerate()
        {
            if i > 0 {
                l.push(b',');
            }
            l.extend_from_slice(b.format(v).as_bytes());
        }
        l.push(b',');
        l.extend_from_slice(r.op.name().as_bytes());
        l.push(b',');
        if let Some(p) = r.penalty_us {
            l.extend_from_slice(b.format(p).as_bytes());
        }
        l.push(b'\n');
        self.n += 1;
        self.out.write_all(l).map_err(|source| TraceError::Write {
            path: self.path.clone(),
            source,
        })
    }

    fn finish(self: Box<Self>) -> Result<u64> {
        let n = self.n;
        let path = self.path;
        self.out
            .finish()
            .map_err(|source| TraceError::Write { path, source })?;
        Ok(n)
    }
}

/// Writes libCacheSim oracleGeneral (24-byte LE records), with exact `next_access_vtime`.
///
/// `time_us` is written in whole seconds, the key as the object id and [`Request::size`] as the
/// object size; tenant, op and penalty are not representable and are dropped.
pub struct OracleGeneralWriter {
    path: PathBuf,
    /// The uncompressed file being written (the output itself, or a temporary beside it).
    plain: PathBuf,
    compression: Compression,
    out: BufWriter<File>,
    n: u64,
}

impl OracleGeneralWriter {
    /// Creates (truncates) `path`; compression from its extension.
    ///
    /// # Errors
    /// The file cannot be created.
    pub fn create(path: &Path) -> Result<Self> {
        let compression = Compression::from_extension(path).unwrap_or(Compression::None);
        let plain = if compression == Compression::None {
            path.to_path_buf()
        } else {
            let mut p = path.as_os_str().to_owned();
            p.push(".locus-tmp");
            PathBuf::from(p)
        };
        let f = File::create(&plain).map_err(|source| TraceError::Open {
            path: plain.clone(),
            source,
        })?;
        Ok(Self {
            path: path.to_path_buf(),
            plain,
            compression,
            out: BufWriter::with_capacity(256 * 1024, f),
            n: 0,
        })
    }

    fn werr(&self, source: io::Error) -> TraceError {
        TraceError::Write {
            path: self.plain.clone(),
            source,
        }
    }

    /// Walks the records from last to first, setting each one's next access position.
    fn patch_next_access(&self) -> io::Result<()> {
        const REC: u64 = 24;
        const CHUNK_RECS: u64 = 1 << 16;
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.plain)?;
        let mut next: HashMap<u64, u64, crate::read::BuildMix> =
            HashMap::with_hasher(crate::read::BuildMix);
        let mut buf = vec![0u8; (CHUNK_RECS * REC) as usize];
        let mut end = self.n; // records [0, end) still to patch
        while end > 0 {
            let start = end.saturating_sub(CHUNK_RECS);
            let len = ((end - start) * REC) as usize;
            let chunk = &mut buf[..len];
            f.read_exact_at(chunk, start * REC)?;
            for i in (0..(end - start) as usize).rev() {
                let rec = &mut chunk[i * 24..i * 24 + 24];
                let key = u64::from_le_bytes(rec[4..12].try_into().expect("8 bytes"));
                let pos = start + i as u64 + 1; // 1-based position of this record
                let nx = next.insert(key, pos).map_or(-1i64, |p| p as i64);
                rec[16..24].copy_from_slice(&nx.to_le_bytes());
            }
            f.write_all_at(chunk, start * REC)?;
            end = start;
        }
        f.sync_all()
    }
}

impl RequestWriter for OracleGeneralWriter {
    fn write(&mut self, r: &Request) -> Result<()> {
        let secs = u32::try_from(r.time_us / 1_000_000).map_err(|_| {
            TraceError::Options(format!(
                "request {}: time {} µs does not fit oracleGeneral's u32 seconds",
                self.n + 1,
                r.time_us
            ))
        })?;
        let size = u32::try_from(r.size()).map_err(|_| {
            TraceError::Options(format!(
                "request {}: size {} does not fit oracleGeneral's u32",
                self.n + 1,
                r.size()
            ))
        })?;
        let mut rec = [0u8; 24];
        rec[0..4].copy_from_slice(&secs.to_le_bytes());
        rec[4..12].copy_from_slice(&r.key.to_le_bytes());
        rec[12..16].copy_from_slice(&size.to_le_bytes());
        rec[16..24].copy_from_slice(&(-1i64).to_le_bytes());
        self.n += 1;
        self.out.write_all(&rec).map_err(|e| self.werr(e))
    }

    fn finish(mut self: Box<Self>) -> Result<u64> {
        self.out.flush().map_err(|e| self.werr(e))?;
        self.patch_next_access().map_err(|e| self.werr(e))?;
        if self.compression != Compression::None {
            let mut sink = Sink::create(&self.path, self.compression)?;
            let mut input = File::open(&self.plain).map_err(|e| self.werr(e))?;
            let wr = |source| TraceError::Write {
                path: self.path.clone(),
                source,
            };
            let mut buf = vec![0u8; 256 * 1024];
            loop {
                let k = input.read(&mut buf).map_err(|e| self.werr(e))?;
                if k == 0 {
                    break;
                }
                sink.write_all(&buf[..k]).map_err(wr)?;
            }
            sink.finish().map_err(wr)?;
            std::fs::remove_file(&self.plain).map_err(|e| self.werr(e))?;
        }
        Ok(self.n)
    }
}
