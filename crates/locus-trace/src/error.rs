//! Errors of the readers, writers and generators.
//!
//! Every error that comes from input names the file and the place: the byte offset for binary
//! formats (offsets are in the *decompressed* stream), the 1-based line number for text formats.

use std::{fmt, io, path::PathBuf};

/// Where in a trace an error was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Location {
    /// A byte offset in the decompressed stream.
    Byte(u64),
    /// A 1-based line number in the decompressed text.
    Line(u64),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Byte(o) => write!(f, "byte offset {o}"),
            Location::Line(l) => write!(f, "line {l}"),
        }
    }
}

/// An error reading, writing or generating a trace.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be opened or created.
    #[error("{}: cannot open", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// Reading or decompressing failed (this includes a truncated or corrupt `.zst/.xz/.gz/.bz2`).
    #[error("{}: read error after {offset} decompressed bytes", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Decompressed bytes successfully read before the error.
        offset: u64,
        /// The cause.
        source: io::Error,
    },
    /// A binary trace ends in the middle of a record.
    #[error(
        "{}: truncated: {remainder} trailing bytes at byte offset {offset}, expected whole {record_size}-byte records",
        path.display()
    )]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Offset (decompressed) where the incomplete record starts.
        offset: u64,
        /// The record size of the format.
        record_size: usize,
        /// Bytes of the incomplete record.
        remainder: usize,
    },
    /// A record or line does not hold what the format requires.
    #[error("{}: {at}: expected {expected}, found {found}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Where.
        at: Location,
        /// What the format requires there.
        expected: String,
        /// What was there (shortened).
        found: String,
    },
    /// The format could not be determined, or the file is not in the given format
    /// (e.g. a CSV header without the needed columns).
    #[error("{}: {msg}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong and what to do.
        msg: String,
    },
    /// Invalid reader, writer or generator options.
    #[error("invalid option: {0}")]
    Options(String),
    /// Writing failed.
    #[error("{}: write error", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

impl TraceError {
    /// Where in the input the error is, for the errors that come from input content
    /// (`Read` gives the decompressed offset reached before the failure).
    pub fn location(&self) -> Option<Location> {
        match self {
            TraceError::Read { offset, .. } | TraceError::Truncated { offset, .. } => {
                Some(Location::Byte(*offset))
            }
            TraceError::Invalid { at, .. } => Some(*at),
            _ => None,
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = TraceError> = std::result::Result<T, E>;

/// Shortens an input fragment for an error message (lossy UTF-8, at most 60 characters).
pub(crate) fn show(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    let mut out: String = s.chars().take(60).collect();
    if s.chars().count() > 60 {
        out.push('…');
    }
    format!("{out:?}")
}
