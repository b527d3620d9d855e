//! Trace formats: names for `--format`, and detection by file name and content.

use std::{fmt, path::Path, str::FromStr};

use crate::error::TraceError;

/// Byte order and width of a binary stream of keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyStream {
    /// Signed 32-bit, big-endian (cache2k traces).
    I32Be,
    /// Signed 32-bit, little-endian.
    I32Le,
    /// Signed 64-bit, big-endian (Corda traces).
    I64Be,
    /// Signed 64-bit, little-endian.
    I64Le,
    /// Unsigned 32-bit, big-endian.
    U32Be,
    /// Unsigned 32-bit, little-endian.
    U32Le,
    /// Unsigned 64-bit, big-endian.
    U64Be,
    /// Unsigned 64-bit, little-endian.
    U64Le,
}

impl KeyStream {
    /// Bytes per key.
    pub fn width(self) -> usize {
        match self {
            KeyStream::I32Be | KeyStream::I32Le | KeyStream::U32Be | KeyStream::U32Le => 4,
            _ => 8,
        }
    }
}

/// A trace format. See the crate documentation for the key and size each one yields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// libCacheSim oracleGeneral: 24-byte little-endian records
    /// `u32 time (s) | u64 id | u32 size | i64 next_access_vtime`. Key = id, size = size.
    OracleGeneral,
    /// VMware vscsi v1 (32-byte) or v2 (40-byte) records. Key = LBN, size = length,
    /// op = read/write from the SCSI opcode.
    Vscsi,
    /// Generic CSV with the columns given by [`crate::CsvOptions`].
    Csv,
    /// The CSV [`crate::write::CsvWriter`] writes: header
    /// `time_us,tenant,key,key_size,value_size,op,penalty_us`; round-trips every field.
    LocusCsv,
    /// One decimal id per line (LIRS traces, libCacheSim txt). A line holding only `*` is a
    /// checkpoint marker and is skipped.
    IdPerLine,
    /// ARC `.lis`: `start n ignore reqno`; expanded into `n` requests for blocks
    /// `start..start+n`, each 512 bytes.
    ArcLis,
    /// webcachesim / AdaptSize text `time id size`. Key = hash of (id, size).
    Adaptsize,
    /// A binary stream of fixed-width keys.
    KeyStream(KeyStream),
    /// MSR Cambridge CSV `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`
    /// (Windows filetime, 100 ns units). Key = hash of (host, disk, offset).
    Msr,
    /// SYSTOR '17 CSV `Timestamp,Response,IOType,LUN,Offset,Size`. Key = hash of (LUN, offset);
    /// penalty = response time.
    Systor,
    /// Tencent CBS CSV `Timestamp,Offset(sectors),Size(sectors),IOType,VolumeID`.
    /// Key = hash of (volume, offset); size = sectors × 512.
    TencentBlock,
    /// twitter/cache-trace CSV `timestamp,key,key_size,value_size,client_id,op,ttl`.
    /// Key = hash of key; size = key_size + value_size.
    Twitter,
    /// CacheLib cachebench kvcache CSV (header with `key`, `key_size`, `op`, `size`, `op_time`).
    /// One request per row (`op_count` is not expanded); size = key_size + size.
    CachelibKvcache,
    /// CacheLib cachebench bigcache CSV (header with `timestamp`, `cacheKey`, `objectSize`).
    /// Rows with `objectSize` ≤ 0 are kept with size 0 and counted as a warning
    /// (an error with [`crate::ReadOptions::strict`]).
    CachelibBigcache,
    /// CacheLib cachebench block-chunk CSV. Key = hash of (block_id, io_offset); size = io_size.
    CachelibBlockchunk,
}

const NAMES: &[(&str, Format)] = &[
    ("oracle-general", Format::OracleGeneral),
    ("oraclegeneral", Format::OracleGeneral),
    ("vscsi", Format::Vscsi),
    ("csv", Format::Csv),
    ("locus-csv", Format::LocusCsv),
    ("txt", Format::IdPerLine),
    ("lirs", Format::IdPerLine),
    ("lirs-txt", Format::IdPerLine),
    ("id-per-line", Format::IdPerLine),
    ("arc-lis", Format::ArcLis),
    ("lis", Format::ArcLis),
    ("adaptsize", Format::Adaptsize),
    ("adaptsize-txt", Format::Adaptsize),
    ("webcachesim", Format::Adaptsize),
    ("int32-be", Format::KeyStream(KeyStream::I32Be)),
    ("int32-le", Format::KeyStream(KeyStream::I32Le)),
    ("int64-be", Format::KeyStream(KeyStream::I64Be)),
    ("int64-le", Format::KeyStream(KeyStream::I64Le)),
    ("uint32-be", Format::KeyStream(KeyStream::U32Be)),
    ("uint32-le", Format::KeyStream(KeyStream::U32Le)),
    ("uint64-be", Format::KeyStream(KeyStream::U64Be)),
    ("uint64-le", Format::KeyStream(KeyStream::U64Le)),
    ("msr", Format::Msr),
    ("systor", Format::Systor),
    ("systor-csv", Format::Systor),
    ("tencent-block", Format::TencentBlock),
    ("tencent-block-csv", Format::TencentBlock),
    ("twitter", Format::Twitter),
    ("twitter-csv", Format::Twitter),
    ("cachelib-kvcache", Format::CachelibKvcache),
    ("cachelib-kvcache-csv", Format::CachelibKvcache),
    ("cachelib-bigcache", Format::CachelibBigcache),
    ("cachelib-bigcache-csv", Format::CachelibBigcache),
    ("cachelib-blockchunk", Format::CachelibBlockchunk),
    ("cachelib-blockchunk-csv", Format::CachelibBlockchunk),
];

impl Format {
    /// Every format, once each.
    pub const ALL: [Format; 22] = [
        Format::OracleGeneral,
        Format::Vscsi,
        Format::Csv,
        Format::LocusCsv,
        Format::IdPerLine,
        Format::ArcLis,
        Format::Adaptsize,
        Format::KeyStream(KeyStream::I32Be),
        Format::KeyStream(KeyStream::I32Le),
        Format::KeyStream(KeyStream::I64Be),
        Format::KeyStream(KeyStream::I64Le),
        Format::KeyStream(KeyStream::U32Be),
        Format::KeyStream(KeyStream::U32Le),
        Format::KeyStream(KeyStream::U64Be),
        Format::KeyStream(KeyStream::U64Le),
        Format::Msr,
        Format::Systor,
        Format::TencentBlock,
        Format::Twitter,
        Format::CachelibKvcache,
        Format::CachelibBigcache,
        Format::CachelibBlockchunk,
    ];

    /// The canonical `--format` name.
    pub fn name(self) -> &'static str {
        NAMES
            .iter()
            .find(|(_, f)| *f == self)
            .map(|(n, _)| *n)
            .expect("every format has a name")
    }

    /// True for the binary record formats.
    pub fn is_binary(self) -> bool {
        matches!(
            self,
            Format::OracleGeneral | Format::Vscsi | Format::KeyStream(_)
        )
    }

    /// The format a file name implies, if any (after removing a compression extension):
    /// `*.oracleGeneral*` → oracleGeneral, `*.vscsi` → vscsi, `*.lis` → arc-lis.
    pub fn from_file_name(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
        let name = ["zst", "xz", "gz", "bz2", "zstd"]
            .iter()
            .find_map(|e| name.strip_suffix(&format!(".{e}")))
            .unwrap_or(&name);
        if name.contains("oraclegeneral") {
            Some(Format::OracleGeneral)
        } else if name.ends_with(".vscsi") {
            Some(Format::Vscsi)
        } else if name.ends_with(".lis") {
            Some(Format::ArcLis)
        } else {
            None
        }
    }

    /// Detects a text format from the first line of the (decompressed) content.
    /// Returns `None` when the content is binary or the line matches no known layout.
    pub fn sniff_text(head: &[u8]) -> Option<Format> {
        let sample = &head[..head.len().min(4096)];
        if sample.is_empty()
            || !sample
                .iter()
                .all(|&b| b == b'\n' || b == b'\r' || b == b'\t' || (32..127).contains(&b))
        {
            return None;
        }
        let first = sample.split(|&b| b == b'\n').next().unwrap_or(b"");
        let first = first.strip_suffix(b"\r").unwrap_or(first);
        let line = String::from_utf8_lossy(first);
        let lower = line.to_ascii_lowercase();
        let cols: Vec<&str> = lower.split(',').map(str::trim).collect();
        let has = |c: &str| cols.contains(&c);
        if lower.starts_with("time_us,tenant,key,") {
            return Some(Format::LocusCsv);
        }
        if has("cachekey") && has("objectsize") {
            return Some(Format::CachelibBigcache);
        }
        if has("block_id") && has("io_offset") && has("io_size") {
            return Some(Format::CachelibBlockchunk);
        }
        if has("key") && has("key_size") && has("op") && has("size") {
            return Some(Format::CachelibKvcache);
        }
        if has("response") && has("iotype") && has("lun") && has("offset") {
            return Some(Format::Systor);
        }
        let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if cols.len() == 5 && cols.iter().all(|c| numeric(c)) {
            return Some(Format::TencentBlock);
        }
        if cols.len() == 7 && crate::record::Op::parse(cols[5].as_bytes()).is_some() {
            return Some(Format::Twitter);
        }
        if cols.len() == 7 && (cols[3] == "read" || cols[3] == "write") {
            return Some(Format::Msr);
        }
        let words: Vec<&str> = lower.split_ascii_whitespace().collect();
        if !words.is_empty() && words.iter().all(|w| numeric(w) || *w == "*") {
            return match words.len() {
                1 => Some(Format::IdPerLine),
                3 => Some(Format::Adaptsize),
                4 => Some(Format::ArcLis),
                _ => None,
            };
        }
        None
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = TraceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.trim().to_ascii_lowercase();
        NAMES
            .iter()
            .find(|(n, _)| *n == lower)
            .map(|(_, f)| *f)
            .ok_or_else(|| {
                let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
                TraceError::Options(format!(
                    "unknown trace format {s:?}; known formats: {}",
                    names.join(", ")
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_aliases_parse() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>().unwrap(), f);
        }
        assert_eq!(
            "oracleGeneral".parse::<Format>().unwrap(),
            Format::OracleGeneral
        );
        assert_eq!("LIRS-TXT".parse::<Format>().unwrap(), Format::IdPerLine);
        assert!("nope".parse::<Format>().is_err());
    }

    #[test]
    fn file_names_and_content_are_recognised() {
        assert_eq!(
            Format::from_file_name(Path::new("x/cloudPhysicsIO.oracleGeneral.bin")),
            Some(Format::OracleGeneral)
        );
        assert_eq!(
            Format::from_file_name(Path::new("arc_P2.lis.zst")),
            Some(Format::ArcLis)
        );
        assert_eq!(Format::sniff_text(b"1 2 3\n"), Some(Format::Adaptsize));
        assert_eq!(Format::sniff_text(b"42\n*\n"), Some(Format::IdPerLine));
        assert_eq!(
            Format::sniff_text(b"1538323200,4247200,128,1,1058\n"),
            Some(Format::TencentBlock)
        );
        assert_eq!(
            Format::sniff_text(b"0,k,17,249,1,get,0"),
            Some(Format::Twitter)
        );
        assert_eq!(Format::sniff_text(&[0, 1, 2, 3]), None);
    }
}
