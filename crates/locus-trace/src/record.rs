//! The request record every reader produces and every consumer takes.

use std::fmt;

/// What a request does to the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Op {
    /// A lookup (GET, gets, block read). Formats without an op column produce only `Get`.
    #[default]
    Get,
    /// A write of the value (SET, add, cas, replace, block write, …).
    Set,
    /// A removal (DEL, delete).
    Delete,
}

impl Op {
    /// All ops, in the order of their discriminants.
    pub const ALL: [Op; 3] = [Op::Get, Op::Set, Op::Delete];

    /// The lower-case name used in CSV files and reports (`get`, `set`, `delete`).
    pub fn name(self) -> &'static str {
        match self {
            Op::Get => "get",
            Op::Set => "set",
            Op::Delete => "delete",
        }
    }

    /// Parses an op word as the key-value trace formats spell it (case-insensitive):
    /// `get gets get_lease read r` → `Get`; `set set_lease add cas replace append prepend incr decr
    /// write w update` → `Set`; `delete del` → `Delete`. `None` for anything else.
    pub fn parse(word: &[u8]) -> Option<Op> {
        // The spellings trace writers use, without case folding.
        match word {
            b"get" | b"GET" => return Some(Op::Get),
            b"set" | b"SET" => return Some(Op::Set),
            b"delete" | b"DELETE" => return Some(Op::Delete),
            _ => {}
        }
        let mut lower = [0u8; 16];
        if word.len() > lower.len() {
            return None;
        }
        for (d, s) in lower.iter_mut().zip(word) {
            *d = s.to_ascii_lowercase();
        }
        match &lower[..word.len()] {
            b"get" | b"gets" | b"get_lease" | b"read" | b"r" => Some(Op::Get),
            b"set" | b"set_lease" | b"add" | b"cas" | b"replace" | b"append" | b"prepend"
            | b"incr" | b"decr" | b"write" | b"w" | b"update" => Some(Op::Set),
            b"delete" | b"del" => Some(Op::Delete),
            _ => None,
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One cache request.
///
/// Readers decode into a caller-owned `Request` (see [`crate::RequestReader::read_into`]), so
/// reading allocates nothing per record. Fields a format does not carry keep their defaults
/// (`time_us` 0, `tenant` 0, `op` `Get`, `penalty_us` `None`); [`crate::TraceInfo`] says which
/// fields are meaningful for a reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Request {
    /// Timestamp in microseconds, in the trace's own epoch (not necessarily starting at 0).
    pub time_us: u64,
    /// Tenant id (0 when the trace has a single tenant).
    pub tenant: u32,
    /// The key: numeric ids are kept as they are; string and composite keys are hashed with
    /// [`locus_common::hash_key`] (see the format's documentation in [`crate::Format`]).
    pub key: u64,
    /// Key length in bytes (0 when the format does not give it).
    pub key_size: u32,
    /// Value (object) size in bytes. For formats without sizes this is
    /// [`crate::ReadOptions::default_size`] (1 unless set).
    pub value_size: u64,
    /// The operation.
    pub op: Op,
    /// Miss penalty in microseconds (measured response time, or given per tenant), if known.
    pub penalty_us: Option<u32>,
}

impl Request {
    /// The bytes a cache charges for this object: `key_size + value_size`.
    #[inline]
    pub fn size(&self) -> u64 {
        self.key_size as u64 + self.value_size
    }
}
