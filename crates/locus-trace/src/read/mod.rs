//! Streaming readers: [`open`] a file (any format, any compression) as a [`RequestReader`].
//!
//! ```text
//!  open(path, opts)
//!    ├─ compression: opts.compression | extension (.zst .xz .gz .bz2) | magic bytes
//!    ├─ format:      opts.format | file name (*.oracleGeneral*, *.vscsi, *.lis) | first line
//!    └─ Box<dyn RequestReader>  ── read_into(&mut Request) ──> one request at a time
//! ```
//!
//! Readers keep a fixed window of the input and decode into the caller's `Request`, so memory is
//! constant in the trace length and nothing is allocated per record.

mod binary;
mod csv;
mod text;

pub(crate) use csv::BuildMix;

/// The header line of the Locus CSV.
pub(crate) fn csv_header() -> &'static str {
    csv::LOCUS_HEADER
}

use std::{
    io::Read,
    path::{Path, PathBuf},
    str::FromStr,
    sync::Arc,
};

use crate::{
    error::{Location, Result, TraceError},
    format::Format,
    record::Request,
    source::{Compression, Source, open_file},
};

/// Which fields of [`Request`] a reader fills with data from the trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceInfo {
    /// The file path, `-`, or a generator's description.
    pub source: String,
    /// The format (`None` for generators).
    pub format: Option<Format>,
    /// `time_us` comes from the trace.
    pub has_time: bool,
    /// `value_size` comes from the trace (otherwise it is the default size).
    pub has_sizes: bool,
    /// `key_size` comes from the trace.
    pub has_key_sizes: bool,
    /// `op` comes from the trace (otherwise every request is a `Get`).
    pub has_ops: bool,
    /// `tenant` comes from the trace.
    pub has_tenants: bool,
    /// `penalty_us` comes from the trace.
    pub has_penalty: bool,
}

impl TraceInfo {
    pub(crate) fn new(source: String, format: Format) -> Self {
        Self {
            source,
            format: Some(format),
            has_time: false,
            has_sizes: false,
            has_key_sizes: false,
            has_ops: false,
            has_tenants: false,
            has_penalty: false,
        }
    }
}

/// A kind of input a reader repaired rather than rejected, with how often it happened.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ReadWarning {
    /// What was repaired and how.
    pub what: String,
    /// How many records.
    pub count: u64,
    /// The first one.
    pub first: Location,
}

/// Counted warnings of one reader.
#[derive(Debug, Default)]
pub(crate) struct Warnings(Vec<ReadWarning>);

impl Warnings {
    pub(crate) fn note(&mut self, what: &str, at: Location) {
        if let Some(w) = self.0.iter_mut().find(|w| w.what == what) {
            w.count += 1;
        } else {
            self.0.push(ReadWarning {
                what: what.to_string(),
                count: 1,
                first: at,
            });
        }
    }

    pub(crate) fn all(&self) -> &[ReadWarning] {
        &self.0
    }
}

/// A stream of requests.
///
/// Implementations MUST: return `Ok(false)` only at the end of the input and keep returning it;
/// report every malformed record as an error carrying the file and the byte offset or line; never
/// panic on any input.
pub trait RequestReader: Send {
    /// Decodes the next request into `req` (every field is overwritten). `Ok(false)` at the end.
    ///
    /// # Errors
    /// A read/decompression error, a truncated record, or a record the format does not allow.
    fn read_into(&mut self, req: &mut Request) -> Result<bool>;

    /// Which fields are meaningful.
    fn info(&self) -> &TraceInfo;

    /// Records repaired so far (e.g. a negative size read as 0).
    fn warnings(&self) -> &[ReadWarning] {
        &[]
    }

    /// Records (lines or binary structs) consumed so far; differs from the request count for
    /// ARC `.lis` (one line, many blocks) and for skipped marker lines.
    fn records_read(&self) -> u64;
}

impl<R: RequestReader + ?Sized> RequestReader for Box<R> {
    fn read_into(&mut self, req: &mut Request) -> Result<bool> {
        (**self).read_into(req)
    }
    fn info(&self) -> &TraceInfo {
        (**self).info()
    }
    fn warnings(&self) -> &[ReadWarning] {
        (**self).warnings()
    }
    fn records_read(&self) -> u64 {
        (**self).records_read()
    }
}

/// Iterates over a reader's requests (copying each one out). Stops after the first error.
pub fn requests(r: &mut dyn RequestReader) -> impl Iterator<Item = Result<Request>> + '_ {
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        let mut req = Request::default();
        match r.read_into(&mut req) {
            Ok(true) => Some(Ok(req)),
            Ok(false) => {
                done = true;
                None
            }
            Err(e) => {
                done = true;
                Some(Err(e))
            }
        }
    })
}

/// Unit of a CSV time column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimeUnit {
    /// Seconds (may have a fraction).
    #[default]
    Seconds,
    /// Milliseconds.
    Millis,
    /// Microseconds.
    Micros,
    /// Nanoseconds.
    Nanos,
}

/// A CSV column: a 1-based number or a header name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Column {
    /// 1-based column number (libCacheSim's convention).
    Index(usize),
    /// Column name from the header line.
    Name(String),
}

/// Columns and syntax of a generic CSV trace ([`Format::Csv`]).
///
/// Parsed from a libCacheSim-style option string, e.g.
/// `obj-id-col=5,obj-size-col=4,time-col=2,has-header=true,obj-id-is-num=true`. Keys:
/// `obj-id-col` (required), `obj-size-col`, `key-size-col`, `time-col`, `op-col`, `tenant-col`,
/// `penalty-col` (µs), `has-header`, `obj-id-is-num`, `delimiter`
/// (`comma|tab|space|semicolon|pipe` or one character), `time-unit` (`s|ms|us|ns`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvOptions {
    /// Key column (required).
    pub id_col: Option<Column>,
    /// Value/object size column, bytes.
    pub size_col: Option<Column>,
    /// Key size column, bytes.
    pub key_size_col: Option<Column>,
    /// Time column.
    pub time_col: Option<Column>,
    /// Op column (op words, or SCSI opcodes `28`/`2a`).
    pub op_col: Option<Column>,
    /// Tenant column (unsigned integer).
    pub tenant_col: Option<Column>,
    /// Miss penalty column, microseconds.
    pub penalty_col: Option<Column>,
    /// The first line is a header.
    pub has_header: bool,
    /// Keys are unsigned decimal integers (kept as they are); otherwise keys are hashed strings.
    pub numeric_ids: bool,
    /// Field delimiter.
    pub delimiter: u8,
    /// Unit of the time column.
    pub time_unit: TimeUnit,
}

impl Default for CsvOptions {
    fn default() -> Self {
        Self {
            id_col: None,
            size_col: None,
            key_size_col: None,
            time_col: None,
            op_col: None,
            tenant_col: None,
            penalty_col: None,
            has_header: false,
            numeric_ids: true,
            delimiter: b',',
            time_unit: TimeUnit::Seconds,
        }
    }
}

fn parse_bool(key: &str, v: &str) -> Result<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        _ => Err(TraceError::Options(format!(
            "{key}: expected true or false, got {v:?}"
        ))),
    }
}

impl FromStr for CsvOptions {
    type Err = TraceError;

    fn from_str(s: &str) -> Result<Self> {
        let mut o = CsvOptions::default();
        let parts: Vec<&str> = s.split(',').collect();
        let mut i = 0;
        while i < parts.len() {
            let part = parts[i].trim();
            i += 1;
            if part.is_empty() {
                continue;
            }
            let (k, v) = part.split_once('=').ok_or_else(|| {
                TraceError::Options(format!("CSV option {part:?} is not key=value"))
            })?;
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
            let col = || -> Result<Column> {
                if v.is_empty() {
                    return Err(TraceError::Options(format!("{k}: empty column")));
                }
                match v.parse::<usize>() {
                    Ok(0) => Err(TraceError::Options(format!("{k}: columns are 1-based"))),
                    Ok(n) => Ok(Column::Index(n)),
                    Err(_) => Ok(Column::Name(v.to_string())),
                }
            };
            match k.as_str() {
                "obj-id-col" | "id-col" | "key-col" => o.id_col = Some(col()?),
                "obj-size-col" | "size-col" | "value-size-col" => o.size_col = Some(col()?),
                "key-size-col" => o.key_size_col = Some(col()?),
                "time-col" => o.time_col = Some(col()?),
                "op-col" => o.op_col = Some(col()?),
                "tenant-col" => o.tenant_col = Some(col()?),
                "penalty-col" => o.penalty_col = Some(col()?),
                "has-header" | "header" => o.has_header = parse_bool(&k, v)?,
                "obj-id-is-num" | "numeric-ids" => o.numeric_ids = parse_bool(&k, v)?,
                "delimiter" | "delim" => {
                    o.delimiter = match v {
                        // "delimiter=," splits into "delimiter=" and "": a comma.
                        "" if parts.get(i).is_some_and(|p| p.is_empty()) => {
                            i += 1;
                            b','
                        }
                        "comma" => b',',
                        "tab" | "\\t" => b'\t',
                        "space" => b' ',
                        "semicolon" => b';',
                        "pipe" => b'|',
                        _ if v.len() == 1 && v.is_ascii() => v.as_bytes()[0],
                        _ => {
                            return Err(TraceError::Options(format!(
                                "delimiter: expected comma|tab|space|semicolon|pipe or one character, got {v:?}"
                            )));
                        }
                    }
                }
                "time-unit" => {
                    o.time_unit = match v {
                        "s" => TimeUnit::Seconds,
                        "ms" => TimeUnit::Millis,
                        "us" => TimeUnit::Micros,
                        "ns" => TimeUnit::Nanos,
                        _ => {
                            return Err(TraceError::Options(format!(
                                "time-unit: expected s|ms|us|ns, got {v:?}"
                            )));
                        }
                    }
                }
                _ => return Err(TraceError::Options(format!("unknown CSV option {k:?}"))),
            }
        }
        Ok(o)
    }
}

/// Options for [`open`].
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// The format; `None` detects it from the file name, then from the first line (binary key
    /// streams cannot be detected and need it).
    pub format: Option<Format>,
    /// The compression; `None` uses the extension, else the magic bytes.
    pub compression: Option<Compression>,
    /// Columns for [`Format::Csv`].
    pub csv: CsvOptions,
    /// `value_size` for formats without sizes (0 means 1).
    pub default_size: u64,
    /// Put the volume (Tencent), LUN (SYSTOR) or host/disk (MSR) in `Request::tenant`.
    pub volume_as_tenant: bool,
    /// Make repairable records (bigcache `objectSize` ≤ 0) errors instead of counted warnings.
    pub strict: bool,
}

impl ReadOptions {
    /// Options with a given format.
    pub fn with_format(format: Format) -> Self {
        Self {
            format: Some(format),
            ..Self::default()
        }
    }

    pub(crate) fn size_or_one(&self) -> u64 {
        if self.default_size == 0 {
            1
        } else {
            self.default_size
        }
    }
}

/// Opens a trace file (`-` for stdin) for streaming.
///
/// # Errors
/// The file cannot be opened; the format cannot be detected; the start of the file does not fit
/// the format (e.g. a CSV header without the needed columns).
pub fn open(path: impl AsRef<Path>, opts: &ReadOptions) -> Result<Box<dyn RequestReader>> {
    let path = path.as_ref();
    let raw = open_file(path)?;
    open_inner(path.to_path_buf(), raw, opts)
}

/// Reads a trace from any byte stream; `name` is used in errors and for detection by file name.
///
/// # Errors
/// As [`open`].
pub fn open_stream(
    name: &str,
    input: Box<dyn Read + Send>,
    opts: &ReadOptions,
) -> Result<Box<dyn RequestReader>> {
    open_inner(PathBuf::from(name), input, opts)
}

fn open_inner(
    path: PathBuf,
    raw: Box<dyn Read + Send>,
    opts: &ReadOptions,
) -> Result<Box<dyn RequestReader>> {
    let path = Arc::new(path);
    let compression = match opts
        .compression
        .or_else(|| Compression::from_extension(&path))
    {
        Some(c) => c,
        None => {
            // Read the first bytes to look for a magic number, then put them back in front.
            let mut raw = raw;
            let mut head = Vec::with_capacity(16);
            (&mut raw)
                .take(16)
                .read_to_end(&mut head)
                .map_err(|source| read_err(&path, source))?;
            let c = Compression::from_magic(&head).unwrap_or(Compression::None);
            let replay: Box<dyn Read + Send> = Box::new(std::io::Cursor::new(head).chain(raw));
            let dec = c
                .decoder(replay)
                .map_err(|source| read_err(&path, source))?;
            return open_decoded(path, dec, opts);
        }
    };
    let dec = compression
        .decoder(raw)
        .map_err(|source| read_err(&path, source))?;
    open_decoded(path, dec, opts)
}

fn read_err(path: &Path, source: std::io::Error) -> TraceError {
    TraceError::Read {
        path: path.to_path_buf(),
        offset: 0,
        source,
    }
}

fn open_decoded(
    path: Arc<PathBuf>,
    dec: Box<dyn Read + Send>,
    opts: &ReadOptions,
) -> Result<Box<dyn RequestReader>> {
    let mut src = Source::new(path.clone(), dec);
    let format = match opts.format.or_else(|| Format::from_file_name(&path)) {
        Some(f) => f,
        None => {
            let head = src.peek(4096)?;
            match Format::sniff_text(head) {
                Some(f) => f,
                None if head.is_empty() => {
                    return Err(TraceError::Format {
                        path: path.to_path_buf(),
                        msg: "empty file: cannot detect the format; pass --format".into(),
                    });
                }
                None => {
                    return Err(TraceError::Format {
                        path: path.to_path_buf(),
                        msg: "cannot detect the trace format from the file name or first line; \
                              pass --format (binary key streams: int32-be, int64-be, uint32-le, …; \
                              generic CSV: --format csv with column options)"
                            .into(),
                    });
                }
            }
        }
    };
    let source = path.display().to_string();
    let info = TraceInfo::new(source, format);
    Ok(match format {
        Format::OracleGeneral => Box::new(binary::OracleGeneral::new(src, info)),
        Format::Vscsi => Box::new(binary::Vscsi::new(src, info)?),
        Format::KeyStream(ks) => Box::new(binary::Keys::new(src, info, ks, opts.size_or_one())),
        Format::IdPerLine => Box::new(text::IdPerLine::new(src, info, opts.size_or_one())),
        Format::ArcLis => Box::new(text::ArcLis::new(src, info)),
        Format::Adaptsize => Box::new(text::Adaptsize::new(src, info)),
        Format::Csv
        | Format::LocusCsv
        | Format::Msr
        | Format::Systor
        | Format::TencentBlock
        | Format::Twitter
        | Format::CachelibKvcache
        | Format::CachelibBigcache
        | Format::CachelibBlockchunk => Box::new(csv::CsvReader::new(src, info, opts)?),
    })
}
