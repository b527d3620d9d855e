//! The snapshot file format: framing, checksums, and the item body; pure (byte buffers and
//! `Read`/`Write`, no engine). The layout is documented in the module above ([`super`]).

use std::io::{self, Read, Write};

/// The file's first eight bytes.
pub const MAGIC: &[u8; 8] = b"LOCUSNAP";
/// The format version this code writes and reads.
pub const VERSION: u16 = 1;
/// Record tag: a string.
pub const TAG_STRING: u8 = 1;
/// Record tag: a string with the memcached face's 13-byte header (flags, CAS unique, state)
/// before its bytes (`Engine::set_with_meta`).
pub const TAG_STRING_META: u8 = 16;
/// Header flag: memcached items are [`TAG_STRING_META`] records. A file without it was written
/// by an older build, which stored a memcached item as a [`TAG_STRING`] with the header inside
/// the value: the loader tells those by their header (`memcache::item::decode_legacy`).
pub const FLAG_META_RECORDS: u8 = 1;
/// Record tag: the end of the file (its body is the number of item records).
pub const TAG_END: u8 = 0xFF;
/// `expire_at_ms` of an item without a TTL.
pub const NO_EXPIRY: u64 = u64::MAX;
/// Largest record body accepted (a value is at most `proto_max_bulk_len`, 512 MiB by
/// default; a collection's body can be larger but is refused beyond this).
pub const MAX_BODY: u64 = 4 << 30;

/// CRC-32C (Castagnoli), reflected, as iSCSI and ext4 use it: every error of up to 32
/// consecutive bits (so any one flipped byte) changes it.
const fn crc_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82F6_3B78
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static CRC_TABLE: [u32; 256] = crc_table();

/// A running CRC-32C.
#[derive(Clone, Copy, Debug)]
pub struct Crc(u32);

impl Default for Crc {
    fn default() -> Self {
        Crc(!0)
    }
}

impl Crc {
    /// Adds bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        let mut c = self.0;
        for &b in bytes {
            c = CRC_TABLE[((c ^ u32::from(b)) & 0xFF) as usize] ^ (c >> 8);
        }
        self.0 = c;
    }

    /// The checksum so far.
    pub fn value(self) -> u32 {
        !self.0
    }
}

/// CRC-32C of one buffer.
pub fn crc32c(bytes: &[u8]) -> u32 {
    let mut c = Crc::default();
    c.update(bytes);
    c.value()
}

/// What the header says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The tenant's name.
    pub tenant: String,
    /// How the items' recency stamps read ([`locus_engine::RecencyKind::code`]).
    pub recency: u8,
    /// When the snapshot was taken (clock ms).
    pub created_ms: u64,
    /// [`FLAG_META_RECORDS`] (files of older builds: 0).
    pub flags: u8,
}

/// Writes the header.
pub fn write_header(w: &mut impl Write, h: &Header) -> io::Result<()> {
    let mut b = Vec::with_capacity(32 + h.tenant.len());
    b.extend_from_slice(MAGIC);
    b.extend_from_slice(&VERSION.to_le_bytes());
    b.push(h.recency);
    b.push(h.flags);
    b.extend_from_slice(&h.created_ms.to_le_bytes());
    let name = h.tenant.as_bytes();
    let len = u16::try_from(name.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "tenant name too long"))?;
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(name);
    let crc = crc32c(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    w.write_all(&b)
}

/// Writes one record: tag, body length, body, CRC-32C of the three.
pub fn write_record(w: &mut impl Write, tag: u8, body: &[u8]) -> io::Result<()> {
    let len = u32::try_from(body.len())
        .ok()
        .filter(|&l| u64::from(l) <= MAX_BODY)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "record too large"))?;
    let mut head = [0u8; 5];
    head[0] = tag;
    head[1..].copy_from_slice(&len.to_le_bytes());
    let mut crc = Crc::default();
    crc.update(&head);
    crc.update(body);
    w.write_all(&head)?;
    w.write_all(body)?;
    w.write_all(&crc.value().to_le_bytes())
}

/// Starts an item body: key, expiry, stamp (the value follows, as its type encodes it).
pub fn item_head(out: &mut Vec<u8>, key: &[u8], expire_at_ms: Option<u64>, stamp: u32) {
    out.clear();
    put_bytes(out, key);
    out.extend_from_slice(&expire_at_ms.unwrap_or(NO_EXPIRY).to_le_bytes());
    out.extend_from_slice(&stamp.to_le_bytes());
}

/// Appends a length-prefixed byte string.
pub fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

/// Appends a count.
pub fn put_u32(out: &mut Vec<u8>, n: u32) {
    out.extend_from_slice(&n.to_le_bytes());
}

/// Why a file cannot be loaded: what, and the byte offset of the record (or header field)
/// where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError {
    /// Byte offset in the file.
    pub offset: u64,
    /// What is wrong.
    pub what: String,
}

impl std::fmt::Display for FormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "at byte {}: {}", self.offset, self.what)
    }
}

fn err(offset: u64, what: impl Into<String>) -> FormatError {
    FormatError {
        offset,
        what: what.into(),
    }
}

/// Reads records from a file, checking each one's frame and checksum.
pub struct Reader<R: Read> {
    r: R,
    /// Bytes consumed so far.
    offset: u64,
    /// Bytes in the file (bounds a record's length before anything is allocated).
    size: u64,
    items: u64,
    done: bool,
}

impl<R: Read> Reader<R> {
    /// Reads and checks the header of a file of `size` bytes.
    ///
    /// # Errors
    /// A [`FormatError`] for a short, foreign, newer or damaged header.
    pub fn open(mut r: R, size: u64) -> Result<(Header, Reader<R>), FormatError> {
        let mut fixed = [0u8; 22];
        read_exact(&mut r, &mut fixed, 0, "header")?;
        if &fixed[..8] != MAGIC {
            return Err(err(0, "not a Locus snapshot (bad magic)"));
        }
        let version = u16::from_le_bytes([fixed[8], fixed[9]]);
        if version != VERSION {
            return Err(err(
                8,
                format!("format version {version}, this Locus reads {VERSION}"),
            ));
        }
        let name_len = u16::from_le_bytes([fixed[20], fixed[21]]) as usize;
        let mut rest = vec![0u8; name_len + 4];
        read_exact(&mut r, &mut rest, 22, "header")?;
        let mut crc = Crc::default();
        crc.update(&fixed);
        crc.update(&rest[..name_len]);
        let stored = u32::from_le_bytes(rest[name_len..].try_into().unwrap_or_default());
        if crc.value() != stored {
            return Err(err(0, "header checksum mismatch"));
        }
        let tenant = String::from_utf8(rest[..name_len].to_vec())
            .map_err(|_| err(22, "tenant name is not UTF-8"))?;
        let header = Header {
            tenant,
            recency: fixed[10],
            flags: fixed[11],
            created_ms: u64::from_le_bytes(fixed[12..20].try_into().unwrap_or_default()),
        };
        let offset = 22 + rest.len() as u64;
        Ok((
            header,
            Reader {
                r,
                offset,
                size,
                items: 0,
                done: false,
            },
        ))
    }

    /// The next item record as (tag, offset, body) in `body`; `Ok(None)` after a valid end
    /// record that closes the file.
    ///
    /// # Errors
    /// A [`FormatError`] at the record's offset: truncated, too long, checksum mismatch, a
    /// wrong item count in the end record, or bytes after it.
    pub fn next(&mut self, body: &mut Vec<u8>) -> Result<Option<(u8, u64)>, FormatError> {
        if self.done {
            return Ok(None);
        }
        let at = self.offset;
        let mut head = [0u8; 5];
        read_exact(
            &mut self.r,
            &mut head,
            at,
            "record (no end record: the file is torn)",
        )?;
        let len = u64::from(u32::from_le_bytes([head[1], head[2], head[3], head[4]]));
        if len > MAX_BODY || at + 9 + len > self.size {
            return Err(err(
                at,
                format!(
                    "record of {len} bytes runs past the end of the file ({} bytes): torn or corrupt",
                    self.size
                ),
            ));
        }
        body.clear();
        body.resize(len as usize, 0);
        read_exact(&mut self.r, body, at + 5, "record body")?;
        let mut crcb = [0u8; 4];
        read_exact(&mut self.r, &mut crcb, at + 5 + len, "record checksum")?;
        let mut crc = Crc::default();
        crc.update(&head);
        crc.update(body);
        if crc.value() != u32::from_le_bytes(crcb) {
            return Err(err(at, "record checksum mismatch"));
        }
        self.offset = at + 9 + len;
        if head[0] == TAG_END {
            let n = <[u8; 8]>::try_from(&body[..])
                .map(u64::from_le_bytes)
                .map_err(|_| err(at, "end record of the wrong length"))?;
            if n != self.items {
                return Err(err(
                    at,
                    format!("end record counts {n} items, the file holds {}", self.items),
                ));
            }
            if self.offset != self.size {
                return Err(err(
                    self.offset,
                    format!("{} bytes after the end record", self.size - self.offset),
                ));
            }
            self.done = true;
            return Ok(None);
        }
        self.items += 1;
        Ok(Some((head[0], at)))
    }
}

fn read_exact(r: &mut impl Read, buf: &mut [u8], at: u64, what: &str) -> Result<(), FormatError> {
    r.read_exact(buf).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            err(at, format!("file ends inside the {what}"))
        } else {
            err(at, format!("cannot read the {what}: {e}"))
        }
    })
}

/// A cursor over a record body (every read checks its bounds).
#[derive(Debug)]
pub struct Body<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Body<'a> {
    /// A cursor at the start of `b`.
    pub fn new(b: &'a [u8]) -> Self {
        Body { b, pos: 0 }
    }

    /// The next `n` bytes.
    ///
    /// # Errors
    /// When fewer remain.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| format!("body too short at byte {} of {}", self.pos, self.b.len()))?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    /// A little-endian u32.
    ///
    /// # Errors
    /// When fewer than 4 bytes remain.
    pub fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().unwrap_or_default(),
        ))
    }

    /// A little-endian u64.
    ///
    /// # Errors
    /// When fewer than 8 bytes remain.
    pub fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().unwrap_or_default(),
        ))
    }

    /// A length-prefixed byte string.
    ///
    /// # Errors
    /// When the body is shorter than its length says.
    pub fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    /// A count of elements that each need at least `min_each` bytes, checked against what
    /// remains (so a corrupt count never makes a large allocation).
    ///
    /// # Errors
    /// When the remaining bytes cannot hold that many.
    pub fn count(&mut self, min_each: usize) -> Result<usize, String> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_each) > self.remaining().len() {
            return Err(format!("count {n} does not fit the body"));
        }
        Ok(n)
    }

    /// The bytes not read yet.
    pub fn remaining(&self) -> &'a [u8] {
        &self.b[self.pos..]
    }

    /// Checks that every byte was read.
    ///
    /// # Errors
    /// When bytes are left over.
    pub fn finish(&self) -> Result<(), String> {
        if self.pos == self.b.len() {
            Ok(())
        } else {
            Err(format!(
                "{} bytes left over in the body",
                self.b.len() - self.pos
            ))
        }
    }
}

/// An item body's common head: key, expiry (`None`: no TTL), stamp.
///
/// # Errors
/// When the body is too short.
pub fn read_item_head<'a>(b: &mut Body<'a>) -> Result<(&'a [u8], Option<u64>, u32), String> {
    let key = b.bytes()?;
    let exp = b.u64()?;
    let stamp = b.u32()?;
    Ok((key, (exp != NO_EXPIRY).then_some(exp), stamp))
}
