//! Delimited text formats: generic CSV (columns from options), the Locus CSV, MSR Cambridge,
//! SYSTOR '17, Tencent CBS, Twitter cache-trace and the CacheLib kvcache/bigcache/block-chunk CSVs.
//!
//! One reader serves them all: the header (or the format's fixed layout) is resolved once into
//! column indices, then every row is split into field ranges (a reused `Vec`, no allocation) and
//! decoded by the format's rule.

use hashbrown::HashMap;
use locus_common::hash_key;

use super::{Column, CsvOptions, ReadOptions, RequestReader, TimeUnit, TraceInfo, Warnings};
use crate::{
    error::{Location, Result, TraceError, show},
    format::Format,
    parse::{i64_dec, scaled_dec, split_fields, trim, u64_dec},
    read::text::pair_key,
    record::{Op, Request},
    source::Source,
};

/// The header the Locus CSV writer emits.
pub(crate) const LOCUS_HEADER: &str = "time_us,tenant,key,key_size,value_size,op,penalty_us";

#[derive(Debug, Default, Clone, Copy)]
struct Cols {
    time: Option<usize>,
    key: usize,
    key_size: Option<usize>,
    size: Option<usize>,
    op: Option<usize>,
    tenant: Option<usize>,
    penalty: Option<usize>,
    /// Second key component (offset) for composite keys.
    aux: Option<usize>,
    /// Volume/LUN/disk column.
    volume: Option<usize>,
}

pub(crate) struct CsvReader {
    path: std::sync::Arc<std::path::PathBuf>,
    src: Source,
    info: TraceInfo,
    format: Format,
    cols: Cols,
    min_fields: usize,
    delim: u8,
    numeric_ids: bool,
    time_unit: TimeUnit,
    volume_as_tenant: bool,
    strict: bool,
    default_size: u64,
    fields: Vec<(usize, usize)>,
    scratch: Vec<u8>,
    tenants: HashMap<u64, u32, BuildMix>,
    warnings: Warnings,
    records: u64,
}

/// A cheap hasher for already-mixed u64 keys.
#[derive(Clone, Copy, Default)]
pub(crate) struct BuildMix;

impl std::hash::BuildHasher for BuildMix {
    type Hasher = Mix;
    fn build_hasher(&self) -> Mix {
        Mix(0)
    }
}

/// Hasher state of [`BuildMix`] (a murmur3 finaliser over the written u64s).
#[derive(Clone, Copy, Default)]
pub(crate) struct Mix(u64);

impl std::hash::Hasher for Mix {
    fn finish(&self) -> u64 {
        let mut z = self.0;
        z = (z ^ (z >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        z = (z ^ (z >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        z ^ (z >> 33)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ b as u64;
        }
    }
    fn write_u64(&mut self, i: u64) {
        self.0 ^= i;
    }
}

fn header_cols(src: &mut Source, delim: u8) -> Result<(u64, Vec<String>)> {
    let path = src.path.to_path_buf();
    let Some((no, line)) = src.line()? else {
        return Err(TraceError::Format {
            path,
            msg: "empty file: expected a CSV header line".into(),
        });
    };
    let mut f = Vec::new();
    if !split_fields(line, delim, &mut f) {
        return Err(TraceError::Invalid {
            path,
            at: Location::Line(no),
            expected: "a CSV header".into(),
            found: show(line),
        });
    }
    let names = f
        .iter()
        .map(|&(s, e)| String::from_utf8_lossy(trim(&line[s..e])).to_ascii_lowercase())
        .collect();
    Ok((no, names))
}

fn find(path: &std::path::Path, names: &[String], want: &str, what: &str) -> Result<usize> {
    names
        .iter()
        .position(|n| n == &want.to_ascii_lowercase())
        .ok_or_else(|| TraceError::Format {
            path: path.to_path_buf(),
            msg: format!(
                "{what} CSV header lacks the column {want:?} (header: {})",
                names.join(",")
            ),
        })
}

impl CsvReader {
    pub(crate) fn new(mut src: Source, mut info: TraceInfo, opts: &ReadOptions) -> Result<Self> {
        let format = info.format.expect("CSV readers have a format");
        let path = src.path.to_path_buf();
        let mut delim = b',';
        let mut numeric_ids = false;
        let mut time_unit = TimeUnit::Seconds;
        let cols = match format {
            Format::Csv => {
                let o: &CsvOptions = &opts.csv;
                delim = o.delimiter;
                numeric_ids = o.numeric_ids;
                time_unit = o.time_unit;
                let names = if o.has_header {
                    Some(header_cols(&mut src, delim)?.1)
                } else {
                    None
                };
                let resolve = |c: &Option<Column>, what: &str| -> Result<Option<usize>> {
                    match c {
                        None => Ok(None),
                        Some(Column::Index(i)) => Ok(Some(i - 1)),
                        Some(Column::Name(n)) => match &names {
                            Some(names) => find(&path, names, n, "generic").map(Some),
                            None => Err(TraceError::Options(format!(
                                "{what}={n}: a column name needs has-header=true"
                            ))),
                        },
                    }
                };
                let key = resolve(&o.id_col, "obj-id-col")?.ok_or_else(|| {
                    TraceError::Options(
                        "generic CSV needs obj-id-col (e.g. --csv obj-id-col=2,obj-size-col=3,has-header=true)"
                            .into(),
                    )
                })?;
                Cols {
                    key,
                    time: resolve(&o.time_col, "time-col")?,
                    size: resolve(&o.size_col, "obj-size-col")?,
                    key_size: resolve(&o.key_size_col, "key-size-col")?,
                    op: resolve(&o.op_col, "op-col")?,
                    tenant: resolve(&o.tenant_col, "tenant-col")?,
                    penalty: resolve(&o.penalty_col, "penalty-col")?,
                    ..Cols::default()
                }
            }
            Format::LocusCsv => {
                let (no, names) = header_cols(&mut src, delim)?;
                if names.join(",") != LOCUS_HEADER {
                    return Err(TraceError::Invalid {
                        path,
                        at: Location::Line(no),
                        expected: format!("the locus-csv header {LOCUS_HEADER:?}"),
                        found: show(names.join(",").as_bytes()),
                    });
                }
                numeric_ids = true;
                time_unit = TimeUnit::Micros;
                Cols {
                    time: Some(0),
                    tenant: Some(1),
                    key: 2,
                    key_size: Some(3),
                    size: Some(4),
                    op: Some(5),
                    penalty: Some(6),
                    ..Cols::default()
                }
            }
            Format::Msr => Cols {
                time: Some(0),
                volume: Some(2),
                key: 1,
                op: Some(3),
                aux: Some(4),
                size: Some(5),
                penalty: Some(6),
                ..Cols::default()
            },
            Format::Systor => {
                let (_, n) = header_cols(&mut src, delim)?;
                let w = "SYSTOR";
                Cols {
                    time: Some(find(&path, &n, "timestamp", w)?),
                    penalty: Some(find(&path, &n, "response", w)?),
                    op: Some(find(&path, &n, "iotype", w)?),
                    volume: Some(find(&path, &n, "lun", w)?),
                    key: find(&path, &n, "lun", w)?,
                    aux: Some(find(&path, &n, "offset", w)?),
                    size: Some(find(&path, &n, "size", w)?),
                    ..Cols::default()
                }
            }
            Format::TencentBlock => Cols {
                time: Some(0),
                aux: Some(1),
                size: Some(2),
                op: Some(3),
                volume: Some(4),
                key: 4,
                ..Cols::default()
            },
            Format::Twitter => Cols {
                time: Some(0),
                key: 1,
                key_size: Some(2),
                size: Some(3),
                op: Some(5),
                ..Cols::default()
            },
            Format::CachelibKvcache => {
                let (_, n) = header_cols(&mut src, delim)?;
                let w = "CacheLib kvcache";
                Cols {
                    time: Some(find(&path, &n, "op_time", w)?),
                    key: find(&path, &n, "key", w)?,
                    key_size: Some(find(&path, &n, "key_size", w)?),
                    op: Some(find(&path, &n, "op", w)?),
                    size: Some(find(&path, &n, "size", w)?),
                    ..Cols::default()
                }
            }
            Format::CachelibBigcache => {
                let (_, n) = header_cols(&mut src, delim)?;
                let w = "CacheLib bigcache";
                Cols {
                    time: Some(find(&path, &n, "timestamp", w)?),
                    key: find(&path, &n, "cachekey", w)?,
                    op: Some(find(&path, &n, "optype", w)?),
                    size: Some(find(&path, &n, "objectsize", w)?),
                    ..Cols::default()
                }
            }
            Format::CachelibBlockchunk => {
                let (_, n) = header_cols(&mut src, delim)?;
                let w = "CacheLib block-chunk";
                Cols {
                    time: Some(find(&path, &n, "op_time", w)?),
                    key: find(&path, &n, "block_id", w)?,
                    aux: Some(find(&path, &n, "io_offset", w)?),
                    size: Some(find(&path, &n, "io_size", w)?),
                    op: Some(find(&path, &n, "op_name", w)?),
                    ..Cols::default()
                }
            }
            _ => unreachable!("not a CSV format: {format}"),
        };
        let c = cols;
        let min_fields = [
            Some(c.key),
            c.time,
            c.key_size,
            c.size,
            c.op,
            c.tenant,
            c.penalty,
            c.aux,
            c.volume,
        ]
        .iter()
        .flatten()
        .max()
        .copied()
        .unwrap_or(0)
            + 1;
        info.has_time = c.time.is_some();
        info.has_sizes = c.size.is_some();
        info.has_key_sizes = c.key_size.is_some();
        info.has_ops = c.op.is_some();
        info.has_penalty = c.penalty.is_some();
        info.has_tenants = c.tenant.is_some() || (opts.volume_as_tenant && c.volume.is_some());
        Ok(Self {
            path: src.path.clone(),
            src,
            info,
            format,
            cols,
            min_fields,
            delim,
            numeric_ids,
            time_unit,
            volume_as_tenant: opts.volume_as_tenant,
            strict: opts.strict,
            default_size: opts.size_or_one(),
            fields: Vec::with_capacity(16),
            scratch: Vec::with_capacity(256),
            tenants: HashMap::with_hasher(BuildMix),
            warnings: Warnings::default(),
            records: 0,
        })
    }
}

/// A row being decoded: the line, its fields and where it is.
struct Row<'a> {
    line: &'a [u8],
    fields: &'a [(usize, usize)],
    no: u64,
    path: &'a std::path::Path,
}

impl<'a> Row<'a> {
    #[inline(always)]
    fn get(&self, i: usize) -> &'a [u8] {
        let (s, e) = self.fields[i];
        trim(&self.line[s..e])
    }

    fn bad(&self, col: usize, expected: &str) -> TraceError {
        TraceError::Invalid {
            path: self.path.to_path_buf(),
            at: Location::Line(self.no),
            expected: format!("{expected} in column {}", col + 1),
            found: show(self.get(col)),
        }
    }

    #[inline]
    fn u64(&self, col: usize, what: &str) -> Result<u64> {
        u64_dec(self.get(col)).ok_or_else(|| self.bad(col, what))
    }

    #[inline]
    fn scaled(&self, col: usize, scale: u32, what: &str) -> Result<u64> {
        scaled_dec(self.get(col), scale).ok_or_else(|| self.bad(col, what))
    }
}

fn time_us(row: &Row<'_>, col: usize, unit: TimeUnit) -> Result<u64> {
    const W: &str = "a non-negative time";
    match unit {
        TimeUnit::Seconds => row.scaled(col, 6, W),
        TimeUnit::Millis => row.scaled(col, 3, W),
        TimeUnit::Micros => row.scaled(col, 0, W),
        TimeUnit::Nanos => Ok(row.scaled(col, 0, W)? / 1000),
    }
}

fn sat_u32(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

impl RequestReader for CsvReader {
    fn read_into(&mut self, req: &mut Request) -> Result<bool> {
        let (no, line) = loop {
            let Some((no, line)) = self.src.line()? else {
                return Ok(false);
            };
            if !trim(line).is_empty() {
                break (no, line);
            }
        };
        self.records += 1;
        let path: &std::path::Path = &self.path;
        if !split_fields(line, self.delim, &mut self.fields) {
            return Err(TraceError::Invalid {
                path: path.to_path_buf(),
                at: Location::Line(no),
                expected: "a closing quote".into(),
                found: show(line),
            });
        }
        if self.fields.len() < self.min_fields {
            return Err(TraceError::Invalid {
                path: path.to_path_buf(),
                at: Location::Line(no),
                expected: format!(
                    "at least {} fields for the {} format",
                    self.min_fields, self.format
                ),
                found: format!("{} fields: {}", self.fields.len(), show(line)),
            });
        }
        let row = Row {
            line,
            fields: &self.fields,
            no,
            path,
        };
        let c = self.cols;
        let mut r = Request {
            value_size: self.default_size,
            ..Request::default()
        };
        if let Some(t) = c.time {
            r.time_us = match self.format {
                // Windows filetime: 100 ns ticks.
                Format::Msr => row.u64(t, "a filetime timestamp")? / 10,
                _ => time_us(&row, t, self.time_unit)?,
            };
        }
        match self.format {
            Format::Csv | Format::LocusCsv => {
                let k = row.get(c.key);
                r.key = if self.numeric_ids {
                    u64_dec(k).ok_or_else(|| row.bad(c.key, "an unsigned integer id"))?
                } else {
                    hash_key(k)
                };
                if let Some(s) = c.size {
                    r.value_size = row.u64(s, "a non-negative size")?;
                }
                if let Some(s) = c.key_size {
                    r.key_size = u32::try_from(row.u64(s, "a key size")?)
                        .map_err(|_| row.bad(s, "a key size below 2^32"))?;
                }
                if let Some(o) = c.op {
                    let w = row.get(o);
                    r.op = match w {
                        b"28" | b"0x28" | b"08" | b"0x08" => Op::Get,
                        b"2a" | b"0x2a" | b"2A" | b"0x2A" | b"0a" | b"0x0a" => Op::Set,
                        _ => Op::parse(w).ok_or_else(|| {
                            row.bad(o, "an op (get/set/delete and synonyms, or SCSI 28/2a)")
                        })?,
                    };
                }
                if let Some(t) = c.tenant {
                    r.tenant = u32::try_from(row.u64(t, "a tenant id")?)
                        .map_err(|_| row.bad(t, "a tenant id below 2^32"))?;
                }
                if let Some(p) = c.penalty
                    && !row.get(p).is_empty()
                {
                    r.penalty_us = Some(sat_u32(row.scaled(p, 0, "a penalty in µs")?));
                }
            }
            Format::Msr => {
                self.scratch.clear();
                self.scratch.extend_from_slice(row.get(c.key));
                self.scratch.push(0xff);
                let disk = row.u64(c.volume.expect("msr disk"), "a disk number")?;
                let off = row.u64(c.aux.expect("msr offset"), "a byte offset")?;
                self.scratch.extend_from_slice(&disk.to_le_bytes());
                let volume = hash_key(&self.scratch);
                self.scratch.extend_from_slice(&off.to_le_bytes());
                r.key = hash_key(&self.scratch);
                r.value_size = row.u64(c.size.expect("size"), "a size in bytes")?;
                let o = c.op.expect("op");
                r.op = Op::parse(row.get(o)).ok_or_else(|| row.bad(o, "Read or Write"))?;
                let rt = row.u64(c.penalty.expect("rt"), "a response time (100 ns units)")?;
                r.penalty_us = Some(sat_u32(rt / 10));
                if self.volume_as_tenant {
                    let n = self.tenants.len() as u32;
                    r.tenant = *self.tenants.entry(volume).or_insert(n);
                }
            }
            Format::Systor => {
                let lun = row.u64(c.volume.expect("lun"), "a LUN number")?;
                let off = row.u64(c.aux.expect("offset"), "a byte offset")?;
                r.key = pair_key(lun, off);
                r.value_size = row.u64(c.size.expect("size"), "a size in bytes")?;
                let o = c.op.expect("op");
                r.op = Op::parse(row.get(o)).ok_or_else(|| row.bad(o, "R or W"))?;
                let p = c.penalty.expect("response");
                r.penalty_us = Some(sat_u32(row.scaled(p, 6, "a response time in seconds")?));
                if self.volume_as_tenant {
                    r.tenant = sat_u32(lun);
                }
            }
            Format::TencentBlock => {
                let vol = row.u64(c.volume.expect("volume"), "a volume id")?;
                let off = row.u64(c.aux.expect("offset"), "an offset in sectors")?;
                r.key = pair_key(vol, off);
                let s = c.size.expect("size");
                r.value_size = row
                    .u64(s, "a size in sectors")?
                    .checked_mul(512)
                    .ok_or_else(|| row.bad(s, "a size below 2^55 sectors"))?;
                let o = c.op.expect("op");
                r.op = match row.get(o) {
                    b"0" => Op::Get,
                    b"1" => Op::Set,
                    _ => return Err(row.bad(o, "IOType 0 (read) or 1 (write)")),
                };
                if self.volume_as_tenant {
                    r.tenant = sat_u32(vol);
                }
            }
            Format::Twitter | Format::CachelibKvcache => {
                r.key = hash_key(row.get(c.key));
                let ks = c.key_size.expect("key size");
                r.key_size = u32::try_from(row.u64(ks, "a key size")?)
                    .map_err(|_| row.bad(ks, "a key size below 2^32"))?;
                let s = c.size.expect("size");
                r.value_size = if self.format == Format::CachelibKvcache && row.get(s).is_empty() {
                    0
                } else {
                    row.u64(s, "a value size")?
                };
                let o = c.op.expect("op");
                r.op = Op::parse(row.get(o))
                    .ok_or_else(|| row.bad(o, "an op (get, set, delete, …)"))?;
            }
            Format::CachelibBigcache => {
                r.key = hash_key(row.get(c.key));
                let s = c.size.expect("size");
                let size =
                    i64_dec(row.get(s)).ok_or_else(|| row.bad(s, "an integer objectSize"))?;
                if size <= 0 {
                    if self.strict {
                        return Err(row.bad(s, "objectSize > 0"));
                    }
                    self.warnings.note(
                        "bigcache objectSize <= 0: request kept with size 0",
                        Location::Line(no),
                    );
                }
                r.value_size = size.max(0) as u64;
                let o = c.op.expect("op");
                r.op = match row.get(o) {
                    b"1" => Op::Get,
                    _ => {
                        self.warnings.note(
                            "bigcache OpType other than 1: counted as a GET",
                            Location::Line(no),
                        );
                        Op::Get
                    }
                };
            }
            Format::CachelibBlockchunk => {
                let off = row.u64(c.aux.expect("offset"), "an io_offset")?;
                self.scratch.clear();
                self.scratch.extend_from_slice(row.get(c.key));
                self.scratch.push(0xff);
                self.scratch.extend_from_slice(&off.to_le_bytes());
                r.key = hash_key(&self.scratch);
                r.value_size = row.u64(c.size.expect("size"), "an io_size")?;
                let name = row.get(c.op.expect("op"));
                r.op = if name.starts_with(b"get") {
                    Op::Get
                } else if name.starts_with(b"put") {
                    Op::Set
                } else {
                    self.warnings.note(
                        "block-chunk op_name neither get* nor put*: counted as a GET",
                        Location::Line(no),
                    );
                    Op::Get
                };
            }
            _ => unreachable!("not a CSV format"),
        }
        *req = r;
        Ok(true)
    }

    fn info(&self) -> &TraceInfo {
        &self.info
    }

    fn warnings(&self) -> &[super::ReadWarning] {
        self.warnings.all()
    }

    fn records_read(&self) -> u64 {
        self.records
    }
}
