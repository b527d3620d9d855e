//! Binary record formats: libCacheSim oracleGeneral, VMware vscsi v1/v2, raw key streams.

use super::{RequestReader, TraceInfo, Warnings};
use crate::{
    error::{Location, Result, TraceError},
    format::KeyStream,
    record::{Op, Request},
    source::Source,
};

#[inline]
fn u16le(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
#[inline]
fn u32le(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
#[inline]
fn u64le(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// libCacheSim oracleGeneral: `u32 time_s | u64 id | u32 size | i64 next_access_vtime`, LE.
pub(crate) struct OracleGeneral {
    src: Source,
    info: TraceInfo,
    n: u64,
}

impl OracleGeneral {
    const RECORD: usize = 24;

    pub(crate) fn new(src: Source, mut info: TraceInfo) -> Self {
        info.has_time = true;
        info.has_sizes = true;
        Self { src, info, n: 0 }
    }
}

impl RequestReader for OracleGeneral {
    #[inline]
    fn read_into(&mut self, req: &mut Request) -> Result<bool> {
        let at = self.src.offset();
        let Some(r) = self.src.record(Self::RECORD)? else {
            return Ok(false);
        };
        let time_s = u32le(r, 0);
        let id = u64le(r, 4);
        let size = u32le(r, 12);
        let next = u64le(r, 16) as i64;
        self.n += 1;
        // The next access is a later (1-based, or 0-based in some writers) position, or -1 /
        // i64::MAX for none. Anything else means this is not an oracleGeneral file.
        if !(next == -1 || next == i64::MAX || (next >= 0 && next as u64 >= self.n)) {
            return Err(TraceError::Invalid {
                path: self.src.path.to_path_buf(),
                at: Location::Byte(at + 16),
                expected: format!(
                    "next_access_vtime of record {} to be -1 or a later position (is this oracleGeneral?)",
                    self.n
                ),
                found: next.to_string(),
            });
        }
        *req = Request {
            time_us: time_s as u64 * 1_000_000,
            key: id,
            value_size: size as u64,
            ..Request::default()
        };
        Ok(true)
    }

    fn info(&self) -> &TraceInfo {
        &self.info
    }

    fn records_read(&self) -> u64 {
        self.n
    }
}

/// VMware vscsi trace, version 1 (32-byte) or 2 (40-byte) records, detected from the first two.
pub(crate) struct Vscsi {
    src: Source,
    info: TraceInfo,
    v2: bool,
    n: u64,
    warnings: Warnings,
}

impl Vscsi {
    pub(crate) fn new(mut src: Source, mut info: TraceInfo) -> Result<Self> {
        info.has_time = true;
        info.has_sizes = true;
        info.has_ops = true;
        let head = src.peek(80)?;
        let v1 = head.len() >= 32
            && u16le(head, 14) >> 8 == 1
            && (head.len() < 64 || u16le(head, 46) >> 8 == 1);
        let v2 = head.len() >= 40
            && u16le(head, 2) >> 8 == 2
            && (head.len() < 80 || u16le(head, 42) >> 8 == 2);
        if !v1 && !v2 {
            return Err(TraceError::Format {
                path: src.path.to_path_buf(),
                msg: "not a vscsi trace: the version field of the first records is neither 1 (v1, \
                      32-byte records) nor 2 (v2, 40-byte records)"
                    .into(),
            });
        }
        Ok(Self {
            src,
            info,
            v2: !v1,
            n: 0,
            warnings: Warnings::default(),
        })
    }
}

impl RequestReader for Vscsi {
    #[inline]
    fn read_into(&mut self, req: &mut Request) -> Result<bool> {
        let at = self.src.offset();
        let size = if self.v2 { 40 } else { 32 };
        let Some(r) = self.src.record(size)? else {
            return Ok(false);
        };
        // v1: sn u32 | len u32 | nSG u32 | cmd u16 | ver u16 | lbn u64 | ts u64
        // v2: cmd u16 | ver u16 | sn u32 | len u32 | nSG u32 | lbn u64 | ts u64 | rt u64
        let (cmd, ver, len, ver_at) = if self.v2 {
            (u16le(r, 0), u16le(r, 2), u32le(r, 8), 2)
        } else {
            (u16le(r, 12), u16le(r, 14), u32le(r, 4), 14)
        };
        let (lbn, ts) = (u64le(r, 16), u64le(r, 24));
        self.n += 1;
        let want = if self.v2 { 2 } else { 1 };
        if ver >> 8 != want {
            return Err(TraceError::Invalid {
                path: self.src.path.to_path_buf(),
                at: Location::Byte(at + ver_at),
                expected: format!("vscsi version {want} in every record (corrupt or misaligned?)"),
                found: format!("{ver:#06x}"),
            });
        }
        let op = match cmd & 0xff {
            0x08 | 0x28 | 0xa8 | 0x88 => Op::Get,
            0x0a | 0x2a | 0xaa | 0x8a => Op::Set,
            _ => {
                self.warnings.note(
                    "SCSI opcode neither read nor write; counted as a read",
                    Location::Byte(at),
                );
                Op::Get
            }
        };
        *req = Request {
            time_us: ts,
            key: lbn,
            value_size: len as u64,
            op,
            ..Request::default()
        };
        Ok(true)
    }

    fn info(&self) -> &TraceInfo {
        &self.info
    }

    fn warnings(&self) -> &[super::ReadWarning] {
        self.warnings.all()
    }

    fn records_read(&self) -> u64 {
        self.n
    }
}

/// A stream of fixed-width binary keys.
pub(crate) struct Keys {
    src: Source,
    info: TraceInfo,
    kind: KeyStream,
    size: u64,
    n: u64,
}

impl Keys {
    pub(crate) fn new(src: Source, info: TraceInfo, kind: KeyStream, size: u64) -> Self {
        Self {
            src,
            info,
            kind,
            size,
            n: 0,
        }
    }
}

impl RequestReader for Keys {
    #[inline]
    fn read_into(&mut self, req: &mut Request) -> Result<bool> {
        let w = self.kind.width();
        let Some(r) = self.src.record(w)? else {
            return Ok(false);
        };
        let key = match self.kind {
            KeyStream::I32Be => i32::from_be_bytes(r.try_into().expect("4")) as i64 as u64,
            KeyStream::I32Le => i32::from_le_bytes(r.try_into().expect("4")) as i64 as u64,
            KeyStream::U32Be => u32::from_be_bytes(r.try_into().expect("4")) as u64,
            KeyStream::U32Le => u32::from_le_bytes(r.try_into().expect("4")) as u64,
            KeyStream::I64Be | KeyStream::U64Be => u64::from_be_bytes(r.try_into().expect("8")),
            KeyStream::I64Le | KeyStream::U64Le => u64::from_le_bytes(r.try_into().expect("8")),
        };
        self.n += 1;
        *req = Request {
            key,
            value_size: self.size,
            ..Request::default()
        };
        Ok(true)
    }

    fn info(&self) -> &TraceInfo {
        &self.info
    }

    fn records_read(&self) -> u64 {
        self.n
    }
}
