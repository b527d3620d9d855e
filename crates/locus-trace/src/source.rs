//! Decompression and the buffered byte source every reader decodes from.
//!
//! ```text
//!  file ──> [zstd | xz | gzip | bzip2 | none] ──> Source { buf: 256 KiB window }
//!                                                    ├─ record(n): next n-byte struct (binary)
//!                                                    └─ line():    next line, \n or \r\n (text)
//! ```
//!
//! The window is refilled in large reads, so a reader touches the decompressor once per
//! 256 KiB, and a record or line is handed out as a slice of the window (no copy, no allocation).

use std::{
    fs::File,
    io::{self, Read},
    path::{Path, PathBuf},
    str::FromStr,
    sync::Arc,
};

use crate::error::{Result, TraceError};

/// Compression of a trace file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Plain.
    None,
    /// Zstandard (`.zst`).
    Zstd,
    /// xz / LZMA2 (`.xz`).
    Xz,
    /// gzip (`.gz`).
    Gzip,
    /// bzip2 (`.bz2`).
    Bzip2,
}

impl Compression {
    /// The compression a file name's extension implies (`None` when there is no known extension).
    pub fn from_extension(path: &Path) -> Option<Compression> {
        let ext = path.extension()?.to_string_lossy().to_ascii_lowercase();
        match ext.as_str() {
            "zst" | "zstd" => Some(Compression::Zstd),
            "xz" => Some(Compression::Xz),
            "gz" => Some(Compression::Gzip),
            "bz2" => Some(Compression::Bzip2),
            _ => None,
        }
    }

    /// The compression the first bytes of a stream announce, if any.
    pub fn from_magic(head: &[u8]) -> Option<Compression> {
        if head.starts_with(&[0x28, 0xB5, 0x2F, 0xFD]) {
            Some(Compression::Zstd)
        } else if head.starts_with(&[0xFD, b'7', b'z', b'X', b'Z', 0x00]) {
            Some(Compression::Xz)
        } else if head.starts_with(&[0x1F, 0x8B, 0x08]) {
            Some(Compression::Gzip)
        } else if head.len() >= 10
            && head.starts_with(b"BZh")
            && (b'1'..=b'9').contains(&head[3])
            && &head[4..10] == b"\x31\x41\x59\x26\x53\x59"
        {
            Some(Compression::Bzip2)
        } else {
            None
        }
    }

    /// Wraps `input` in the matching decoder (multi-frame/multi-stream aware).
    pub(crate) fn decoder(self, input: Box<dyn Read + Send>) -> io::Result<Box<dyn Read + Send>> {
        Ok(match self {
            Compression::None => input,
            Compression::Zstd => Box::new(zstd::stream::read::Decoder::new(input)?),
            Compression::Xz => Box::new(xz2::read::XzDecoder::new_multi_decoder(input)),
            Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(input)),
            Compression::Bzip2 => Box::new(bzip2::read::MultiBzDecoder::new(input)),
        })
    }
}

impl FromStr for Compression {
    type Err = TraceError;

    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "none" => Ok(Compression::None),
            "zst" | "zstd" => Ok(Compression::Zstd),
            "xz" => Ok(Compression::Xz),
            "gz" | "gzip" => Ok(Compression::Gzip),
            "bz2" | "bzip2" => Ok(Compression::Bzip2),
            _ => Err(TraceError::Options(format!(
                "unknown compression {s:?} (none, zstd, xz, gzip, bzip2)"
            ))),
        }
    }
}

/// Opens a file (or stdin for `-`) as a raw byte stream.
pub(crate) fn open_file(path: &Path) -> Result<Box<dyn Read + Send>> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(io::stdin()));
    }
    let f = File::open(path).map_err(|source| TraceError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(Box::new(f))
}

const WINDOW: usize = 256 * 1024;
/// Longest line a text reader accepts; longer lines are an error (not a silent split).
pub(crate) const MAX_LINE: usize = 1 << 20;

/// A read-ahead window over a (decompressed) stream.
pub(crate) struct Source {
    inner: Box<dyn Read + Send>,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    /// Stream offset of `buf[0]`.
    base: u64,
    eof: bool,
    line_no: u64,
    pub(crate) path: Arc<PathBuf>,
}

impl Source {
    pub(crate) fn new(path: Arc<PathBuf>, inner: Box<dyn Read + Send>) -> Self {
        Self {
            inner,
            buf: vec![0; WINDOW],
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
            line_no: 0,
            path,
        }
    }

    /// Offset (decompressed) of the next unread byte.
    #[inline]
    pub(crate) fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Number of the last line returned by [`Source::line`].
    pub(crate) fn line_no(&self) -> u64 {
        self.line_no
    }

    /// Reads more input so that at least `want` bytes are available, unless the stream ends.
    fn fill(&mut self, want: usize) -> Result<()> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.base += self.pos as u64;
            self.end -= self.pos;
            self.pos = 0;
        }
        if want > self.buf.len() {
            self.buf.resize(want.next_power_of_two(), 0);
        }
        while self.end < want && !self.eof {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(TraceError::Read {
                        path: self.path.to_path_buf(),
                        offset: self.base + self.end as u64,
                        source,
                    });
                }
            }
        }
        Ok(())
    }

    /// The first bytes of the stream without consuming them (for format detection).
    pub(crate) fn peek(&mut self, n: usize) -> Result<&[u8]> {
        if self.end - self.pos < n {
            self.fill(n)?;
        }
        let n = n.min(self.end - self.pos);
        Ok(&self.buf[self.pos..self.pos + n])
    }

    /// The next `n`-byte record; `None` at a clean end of stream.
    ///
    /// # Errors
    /// [`TraceError::Truncated`] when the stream ends inside a record.
    #[inline]
    pub(crate) fn record(&mut self, n: usize) -> Result<Option<&[u8]>> {
        if self.end - self.pos < n {
            self.fill(n.max(WINDOW / 2))?;
            let have = self.end - self.pos;
            if have == 0 {
                return Ok(None);
            }
            if have < n {
                return Err(TraceError::Truncated {
                    path: self.path.to_path_buf(),
                    offset: self.offset(),
                    record_size: n,
                    remainder: have,
                });
            }
        }
        let r = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(Some(r))
    }

    /// The next line without its `\n` or `\r\n`, with its 1-based number; `None` at the end.
    /// A last line without a trailing newline is returned like any other.
    ///
    /// # Errors
    /// A line longer than [`MAX_LINE`] bytes, or a read error.
    #[inline]
    pub(crate) fn line(&mut self) -> Result<Option<(u64, &[u8])>> {
        let mut scanned = 0;
        let nl = loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.pos + scanned..self.end]) {
                break Some(self.pos + scanned + i);
            }
            if self.eof {
                break None;
            }
            scanned = self.end - self.pos;
            if scanned >= MAX_LINE {
                return Err(TraceError::Invalid {
                    path: self.path.to_path_buf(),
                    at: crate::error::Location::Line(self.line_no + 1),
                    expected: format!("a line shorter than {MAX_LINE} bytes"),
                    found: "a longer line (is this a binary file?)".into(),
                });
            }
            let want = if self.pos == 0 && self.end == self.buf.len() {
                self.buf.len() * 2
            } else {
                self.buf.len()
            };
            self.fill(want)?;
        };
        let start = self.pos;
        let end = match nl {
            Some(i) => {
                self.pos = i + 1;
                i
            }
            None => {
                if self.pos == self.end {
                    return Ok(None);
                }
                self.pos = self.end;
                self.end
            }
        };
        self.line_no += 1;
        let mut line = &self.buf[start..end];
        if let [rest @ .., b'\r'] = line {
            line = rest;
        }
        Ok(Some((self.line_no, line)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out at most `step` bytes per read, to exercise every refill path.
    struct Trickle(std::io::Cursor<Vec<u8>>, usize);

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(self.1);
            self.0.read(&mut buf[..n])
        }
    }

    fn source(data: Vec<u8>, step: usize) -> Source {
        Source::new(
            Arc::new(PathBuf::from("t")),
            Box::new(Trickle(std::io::Cursor::new(data), step)),
        )
    }

    #[test]
    fn lines_across_refills_and_long_lines() {
        let long = vec![b'x'; 600_000]; // longer than the window, shorter than MAX_LINE
        let mut data = b"a\r\n".to_vec();
        data.extend_from_slice(&long);
        data.extend_from_slice(b"\nlast");
        for step in [1, 7, 4096, 1 << 20] {
            let mut s = source(data.clone(), step);
            assert_eq!(s.line().unwrap(), Some((1, &b"a"[..])));
            let (no, l) = s.line().unwrap().unwrap();
            assert_eq!((no, l.len()), (2, long.len()));
            assert_eq!(s.line().unwrap(), Some((3, &b"last"[..])));
            assert_eq!(s.line().unwrap(), None);
            assert_eq!(s.line().unwrap(), None);
        }
        let mut s = source(vec![b'y'; MAX_LINE + 10], 1 << 16);
        assert!(matches!(s.line(), Err(TraceError::Invalid { .. })));
    }

    #[test]
    fn records_across_refills() {
        let data: Vec<u8> = (0..=255u8).cycle().take(24 * 20_000 + 5).collect();
        for step in [1, 5, 100_000] {
            let mut s = source(data.clone(), step);
            for i in 0..20_000 {
                let r = s.record(24).unwrap().unwrap();
                assert_eq!(r[0], ((i * 24) % 256) as u8);
            }
            match s.record(24) {
                Err(TraceError::Truncated {
                    offset, remainder, ..
                }) => {
                    assert_eq!((offset, remainder), (24 * 20_000, 5));
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
