//! The packed containers inside RDB values: listpacks (Redis 7), ziplists (before 7), intsets
//! and zipmaps (before 2.6), read with every check Redis's deep sanitization
//! (`sanitize-dump-payload yes`) makes, and listpacks and intsets written as Redis writes them.
//!
//! ```text
//!  listpack: total-bytes u32le | count u16le (65535 = unknown) | entry* | 0xFF
//!            entry = encoding+data | back-length (1-5 bytes, the entry's size)
//!  ziplist:  total-bytes u32le | tail-offset u32le | count u16le | entry* | 0xFF
//!            entry = prev-length (1 byte, or 0xFE + u32le) | encoding | data
//!  intset:   width u32le (2, 4, 8) | count u32le | count integers, ascending
//!  zipmap:   count u8 | (len key len free value pad)* | 0xFF
//! ```
//!
//! A reader never allocates from a count the payload claims: every element it returns is at
//! least one byte of input, so what it builds is bounded by the bytes actually present.

use crate::exec::parse_i64;

/// Why a container was refused (RESTORE answers "Bad data format" for all of them; the
/// reason is for tests and logs).
pub type PackError = &'static str;

/// One element: integers stay integers until asked for bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum El<'a> {
    /// A string element.
    Str(&'a [u8]),
    /// An integer element.
    Int(i64),
}

impl El<'_> {
    /// The element's bytes (an integer in decimal).
    pub fn to_vec(self) -> Vec<u8> {
        match self {
            El::Str(s) => s.to_vec(),
            El::Int(i) => itoa::Buffer::new().format(i).as_bytes().to_vec(),
        }
    }

    /// The element as an integer (a string that is one in canonical form too).
    pub fn int(self) -> Option<i64> {
        match self {
            El::Int(i) => Some(i),
            El::Str(s) => parse_i64(s),
        }
    }
}

fn u32le(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn int_le(b: &[u8]) -> i64 {
    let mut a = [0u8; 8];
    a[..b.len()].copy_from_slice(b);
    let shift = 64 - 8 * b.len() as u32;
    (i64::from_le_bytes(a) << shift) >> shift
}

fn backlen_size(l: usize) -> usize {
    match l {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    }
}

fn put_backlen(out: &mut Vec<u8>, l: usize) {
    let n = backlen_size(l);
    // The first byte holds the highest 7-bit group; every byte but the first has its top bit set.
    for i in (0..n).rev() {
        let group = ((l >> (7 * i)) & 0x7f) as u8;
        out.push(if i == n - 1 { group } else { group | 0x80 });
    }
}

/// Reads every element of a listpack, checking its header's length and count, each entry's
/// encoding and back-length, and the terminator.
///
/// # Errors
/// A [`PackError`] naming the first fault.
pub fn listpack(lp: &[u8]) -> Result<Vec<El<'_>>, PackError> {
    if lp.len() < 7 {
        return Err("listpack shorter than its header");
    }
    if u32le(lp, 0) != Some(lp.len() as u32) || lp.len() > u32::MAX as usize {
        return Err("listpack total length differs from its size");
    }
    if lp[lp.len() - 1] != 0xff {
        return Err("listpack without its terminator");
    }
    let claimed = u16::from_le_bytes([lp[4], lp[5]]);
    let end = lp.len() - 1;
    let mut out = Vec::new();
    let mut p = 6;
    while p < end {
        let b = lp[p];
        let need = |n: usize| -> Result<&[u8], PackError> {
            lp.get(p..p + n)
                .filter(|_| p + n <= end)
                .ok_or("listpack entry passes its end")
        };
        let (el, size) = if b & 0x80 == 0 {
            (El::Int(i64::from(b & 0x7f)), 1)
        } else if b & 0xc0 == 0x80 {
            let n = usize::from(b & 0x3f);
            (El::Str(&need(1 + n)?[1..]), 1 + n)
        } else if b & 0xe0 == 0xc0 {
            let h = need(2)?;
            let u = (u16::from(h[0] & 0x1f) << 8) | u16::from(h[1]);
            let v = if u >= 1 << 12 {
                i64::from(u) - (1 << 13)
            } else {
                i64::from(u)
            };
            (El::Int(v), 2)
        } else if b & 0xf0 == 0xe0 {
            let h = need(2)?;
            let n = (usize::from(h[0] & 0x0f) << 8) | usize::from(h[1]);
            (El::Str(&need(2 + n)?[2..]), 2 + n)
        } else {
            match b {
                0xf0 => {
                    let n = u32le(need(5)?, 1).unwrap_or(0) as usize;
                    if n > end - p {
                        return Err("listpack string passes its end");
                    }
                    (El::Str(&need(5 + n)?[5..]), 5 + n)
                }
                0xf1 => (El::Int(int_le(&need(3)?[1..])), 3),
                0xf2 => (El::Int(int_le(&need(4)?[1..])), 4),
                0xf3 => (El::Int(int_le(&need(5)?[1..])), 5),
                0xf4 => (El::Int(int_le(&need(9)?[1..])), 9),
                _ => return Err("listpack entry with an unknown encoding"),
            }
        };
        let bl = backlen_size(size);
        let mut expect = Vec::with_capacity(5);
        put_backlen(&mut expect, size);
        if need(size + bl)?[size..] != expect[..] {
            return Err("listpack entry's back-length is wrong");
        }
        out.push(el);
        p += size + bl;
    }
    if p != end {
        return Err("listpack entries pass its end");
    }
    if claimed != u16::MAX && usize::from(claimed) != out.len() {
        return Err("listpack header count differs from its entries");
    }
    Ok(out)
}

/// Reads every element of a ziplist, checking its header (length, tail offset, count), each
/// entry's previous-length and encoding, and the terminator.
///
/// # Errors
/// A [`PackError`] naming the first fault.
pub fn ziplist(zl: &[u8]) -> Result<Vec<El<'_>>, PackError> {
    if zl.len() < 11 {
        return Err("ziplist shorter than its header");
    }
    if u32le(zl, 0) != Some(zl.len() as u32) || zl.len() > u32::MAX as usize {
        return Err("ziplist total length differs from its size");
    }
    let tail = u32le(zl, 4).unwrap_or(0) as usize;
    let claimed = u16::from_le_bytes([zl[8], zl[9]]);
    let end = zl.len() - 1;
    if zl[end] != 0xff || tail > end {
        return Err("ziplist tail or terminator is wrong");
    }
    let mut out = Vec::new();
    let mut p = 10;
    let mut prev_size = 0usize;
    let mut last_start = 10;
    while p < end {
        let start = p;
        let get = |from: usize, n: usize| -> Result<&[u8], PackError> {
            zl.get(from..from + n)
                .filter(|_| from + n <= end)
                .ok_or("ziplist entry passes its end")
        };
        let prevlen = if zl[p] < 254 {
            p += 1;
            usize::from(zl[p - 1])
        } else if zl[p] == 254 {
            let v = u32le(get(p, 5)?, 1).unwrap_or(0) as usize;
            p += 5;
            v
        } else {
            return Err("ziplist entry with a bad previous length");
        };
        if prevlen != prev_size {
            return Err("ziplist entry's previous length is wrong");
        }
        let e = *get(p, 1)?.first().unwrap_or(&0);
        let el = match e >> 6 {
            0 => {
                let n = usize::from(e & 0x3f);
                let s = get(p + 1, n)?;
                p += 1 + n;
                El::Str(s)
            }
            1 => {
                let h = get(p, 2)?;
                let n = (usize::from(h[0] & 0x3f) << 8) | usize::from(h[1]);
                let s = get(p + 2, n)?;
                p += 2 + n;
                El::Str(s)
            }
            2 => {
                let h = get(p, 5)?;
                let n = u32::from_be_bytes([h[1], h[2], h[3], h[4]]) as usize;
                if n > end - p {
                    return Err("ziplist string passes its end");
                }
                let s = get(p + 5, n)?;
                p += 5 + n;
                El::Str(s)
            }
            _ => {
                let width = match e {
                    0xc0 => 2,
                    0xd0 => 4,
                    0xe0 => 8,
                    0xf0 => 3,
                    0xfe => 1,
                    0xf1..=0xfd => 0,
                    _ => return Err("ziplist entry with an unknown encoding"),
                };
                let v = if width == 0 {
                    i64::from(e & 0x0f) - 1
                } else {
                    int_le(get(p + 1, width)?)
                };
                p += 1 + width;
                El::Int(v)
            }
        };
        out.push(el);
        prev_size = p - start;
        last_start = start;
    }
    if p != end {
        return Err("ziplist entries pass its end");
    }
    if last_start != tail {
        return Err("ziplist tail offset is wrong");
    }
    if claimed != u16::MAX && usize::from(claimed) != out.len() {
        return Err("ziplist header count differs from its entries");
    }
    Ok(out)
}

/// Reads an intset: a width of 2, 4 or 8, a count matching the size exactly, integers in
/// strictly ascending order.
///
/// # Errors
/// A [`PackError`] naming the first fault.
pub fn intset(b: &[u8]) -> Result<Vec<i64>, PackError> {
    let width = u32le(b, 0).ok_or("intset shorter than its header")? as usize;
    if ![2, 4, 8].contains(&width) {
        return Err("intset with an unknown width");
    }
    let n = u32le(b, 4).ok_or("intset shorter than its header")? as u64;
    if n.checked_mul(width as u64).and_then(|x| x.checked_add(8)) != Some(b.len() as u64) {
        return Err("intset count differs from its size");
    }
    let mut out: Vec<i64> = Vec::with_capacity(n as usize);
    for c in b[8..].chunks_exact(width) {
        let v = int_le(c);
        if out.last().is_some_and(|&l| l >= v) {
            return Err("intset not in ascending order");
        }
        out.push(v);
    }
    Ok(out)
}

/// A (key, value) pair of a zipmap.
pub type BytePair<'a> = (&'a [u8], &'a [u8]);

/// Reads a zipmap's (key, value) pairs.
///
/// # Errors
/// A [`PackError`] naming the first fault.
pub fn zipmap(z: &[u8]) -> Result<Vec<BytePair<'_>>, PackError> {
    let claimed = *z.first().ok_or("zipmap is empty")?;
    let mut p = 1;
    let len_at = |p: &mut usize| -> Result<Option<usize>, PackError> {
        let b = *z.get(*p).ok_or("zipmap passes its end")?;
        match b {
            255 => Ok(None),
            254 => {
                let v = u32le(z, *p + 1).ok_or("zipmap passes its end")? as usize;
                *p += 5;
                Ok(Some(v))
            }
            _ => {
                *p += 1;
                Ok(Some(usize::from(b)))
            }
        }
    };
    let take = |p: &mut usize, n: usize| -> Result<&[u8], PackError> {
        let s = z
            .get(*p..p.saturating_add(n))
            .ok_or("zipmap passes its end")?;
        *p += n;
        Ok(s)
    };
    let mut out = Vec::new();
    while let Some(kl) = len_at(&mut p)? {
        let k = take(&mut p, kl)?;
        let vl = len_at(&mut p)?.ok_or("zipmap key without a value")?;
        let free = usize::from(*take(&mut p, 1)?.first().unwrap_or(&0));
        let v = take(&mut p, vl)?;
        take(&mut p, free)?;
        out.push((k, v));
    }
    if p != z.len() - 1 {
        return Err("zipmap has bytes past its terminator");
    }
    if claimed < 254 && usize::from(claimed) != out.len() {
        return Err("zipmap count differs from its entries");
    }
    Ok(out)
}

/// Builds a listpack as Redis 7.0 does (`lpAppend`: a string that is a canonical integer is
/// stored as an integer, in the narrowest encoding).
#[derive(Debug)]
pub struct LpWriter {
    buf: Vec<u8>,
    count: usize,
}

impl Default for LpWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl LpWriter {
    /// An empty listpack.
    pub fn new() -> Self {
        LpWriter {
            buf: vec![0; 6],
            count: 0,
        }
    }

    /// Bytes so far (without the terminator).
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Entries so far.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Whether it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Appends an element (bytes, stored as an integer when they are one).
    pub fn push(&mut self, s: &[u8]) {
        if s.len() <= 20
            && let Some(i) = parse_i64(s)
        {
            return self.push_int(i);
        }
        let start = self.buf.len();
        let n = s.len();
        if n < 64 {
            self.buf.push(0x80 | n as u8);
        } else if n < 4096 {
            self.buf.push(0xe0 | (n >> 8) as u8);
            self.buf.push((n & 0xff) as u8);
        } else {
            self.buf.push(0xf0);
            self.buf.extend_from_slice(&(n as u32).to_le_bytes());
        }
        self.buf.extend_from_slice(s);
        let size = self.buf.len() - start;
        put_backlen(&mut self.buf, size);
        self.count += 1;
    }

    /// Appends an element of either kind.
    pub fn push_el(&mut self, e: El<'_>) {
        match e {
            El::Int(i) => self.push_int(i),
            El::Str(s) => self.push(s),
        }
    }

    /// Appends an integer.
    pub fn push_int(&mut self, v: i64) {
        let start = self.buf.len();
        if (0..=127).contains(&v) {
            self.buf.push(v as u8);
        } else if (-4096..4096).contains(&v) {
            let u = if v < 0 { (1 << 13) + v } else { v } as u16;
            self.buf.push(0xc0 | (u >> 8) as u8);
            self.buf.push((u & 0xff) as u8);
        } else if i16::try_from(v).is_ok() {
            self.buf.push(0xf1);
            self.buf.extend_from_slice(&v.to_le_bytes()[..2]);
        } else if (-(1 << 23)..(1 << 23)).contains(&v) {
            self.buf.push(0xf2);
            self.buf.extend_from_slice(&v.to_le_bytes()[..3]);
        } else if i32::try_from(v).is_ok() {
            self.buf.push(0xf3);
            self.buf.extend_from_slice(&v.to_le_bytes()[..4]);
        } else {
            self.buf.push(0xf4);
            self.buf.extend_from_slice(&v.to_le_bytes());
        }
        let size = self.buf.len() - start;
        put_backlen(&mut self.buf, size);
        self.count += 1;
    }

    /// The finished listpack.
    pub fn finish(mut self) -> Vec<u8> {
        self.buf.push(0xff);
        let total = self.buf.len() as u32;
        self.buf[0..4].copy_from_slice(&total.to_le_bytes());
        let n = u16::try_from(self.count).unwrap_or(u16::MAX);
        self.buf[4..6].copy_from_slice(&n.to_le_bytes());
        self.buf
    }
}

/// An intset of `vals` (ascending, distinct), in the narrowest width that holds them.
pub fn write_intset(vals: &[i64]) -> Vec<u8> {
    let width = if vals.iter().all(|&v| i16::try_from(v).is_ok()) {
        2
    } else if vals.iter().all(|&v| i32::try_from(v).is_ok()) {
        4
    } else {
        8
    };
    let mut out = Vec::with_capacity(8 + vals.len() * width);
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(vals.len() as u32).to_le_bytes());
    for v in vals {
        out.extend_from_slice(&v.to_le_bytes()[..width]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lp(items: &[&[u8]]) -> Vec<u8> {
        let mut w = LpWriter::new();
        for i in items {
            w.push(i);
        }
        w.finish()
    }

    #[test]
    fn listpack_round_trips_every_encoding() {
        let long = vec![b'x'; 5000];
        let mid = vec![b'y'; 300];
        let items: Vec<&[u8]> = vec![
            b"0",
            b"127",
            b"128",
            b"-1",
            b"-4096",
            b"4095",
            b"4096",
            b"-32768",
            b"32767",
            b"8388607",
            b"-8388608",
            b"2147483647",
            b"-2147483648",
            b"9223372036854775807",
            b"-9223372036854775808",
            b"",
            b"abc",
            b"007",
            &mid,
            &long,
            b"18446744073709551616",
        ];
        let b = lp(&items);
        let back: Vec<Vec<u8>> = listpack(&b).unwrap().into_iter().map(El::to_vec).collect();
        let want: Vec<Vec<u8>> = items.iter().map(|s| s.to_vec()).collect();
        assert_eq!(back, want);
    }

    #[test]
    fn backlen_of_large_entries() {
        for l in [127, 128, 16382, 16383, 2_097_150, 2_097_151, 300_000_000] {
            let mut b = Vec::new();
            put_backlen(&mut b, l);
            assert_eq!(b.len(), backlen_size(l));
            // Read back from the right as Redis does.
            let mut v = 0usize;
            for (i, &x) in b.iter().rev().enumerate() {
                v |= usize::from(x & 0x7f) << (7 * i);
            }
            assert_eq!(v, l);
        }
    }

    #[test]
    fn corrupt_listpacks_are_refused() {
        let good = lp(&[b"a", b"hello", b"12"]);
        assert!(listpack(&good).is_ok());
        // Wrong total length.
        let mut b = good.clone();
        b[0] += 1;
        assert!(listpack(&b).is_err());
        // A count claiming more entries (but not "unknown").
        let mut b = good.clone();
        b[4] = 0xfe;
        b[5] = 0xff;
        assert!(listpack(&b).is_err());
        // Unknown count is fine.
        let mut b = good.clone();
        b[4] = 0xff;
        b[5] = 0xff;
        assert_eq!(listpack(&b).unwrap().len(), 3);
        // Truncated, a bad back-length, no terminator.
        assert!(listpack(&good[..good.len() - 1]).is_err());
        let mut b = good.clone();
        b[8] ^= 0x01;
        assert!(listpack(&b).is_err());
        let mut b = good.clone();
        let n = b.len();
        b[n - 1] = 0;
        assert!(listpack(&b).is_err());
        // A 32-bit string length far past the end.
        let mut b = vec![0; 6];
        b.extend_from_slice(&[0xf0, 0xff, 0xff, 0xff, 0x7f, 5, 0xff]);
        let n = b.len() as u32;
        b[..4].copy_from_slice(&n.to_le_bytes());
        assert!(listpack(&b).is_err());
    }

    fn zl(entries: &[El<'_>]) -> Vec<u8> {
        let mut b = vec![0; 10];
        let mut prev = 0usize;
        let mut tail = 10;
        for e in entries {
            let start = b.len();
            tail = start;
            if prev < 254 {
                b.push(prev as u8);
            } else {
                b.push(254);
                b.extend_from_slice(&(prev as u32).to_le_bytes());
            }
            match e {
                El::Str(s) if s.len() < 64 => b.push(s.len() as u8),
                El::Str(s) if s.len() < 16384 => {
                    b.push(0x40 | (s.len() >> 8) as u8);
                    b.push(s.len() as u8);
                }
                El::Str(s) => {
                    b.push(0x80);
                    b.extend_from_slice(&(s.len() as u32).to_be_bytes());
                }
                El::Int(i) if (0..=12).contains(i) => b.push(0xf1 + *i as u8),
                El::Int(i) => {
                    b.push(0xe0);
                    b.extend_from_slice(&i.to_le_bytes());
                }
            }
            if let El::Str(s) = e {
                b.extend_from_slice(s);
            }
            prev = b.len() - start;
        }
        b.push(0xff);
        let n = b.len() as u32;
        b[..4].copy_from_slice(&n.to_le_bytes());
        b[4..8].copy_from_slice(&(tail as u32).to_le_bytes());
        b[8..10].copy_from_slice(&(entries.len() as u16).to_le_bytes());
        b
    }

    #[test]
    fn ziplists_are_read_and_checked() {
        let big = vec![b'z'; 20000];
        let els = [
            El::Str(b"a"),
            El::Int(7),
            El::Int(-5),
            El::Str(&big),
            El::Str(&big[..300]),
            El::Str(b"b"),
        ];
        let b = zl(&els);
        assert_eq!(ziplist(&b).unwrap(), els);
        // Claiming 2^16-2 entries, a wrong tail, a wrong previous length.
        let mut x = b.clone();
        x[8] = 0xfe;
        x[9] = 0xff;
        assert!(ziplist(&x).is_err());
        let mut x = b.clone();
        x[4] ^= 1;
        assert!(ziplist(&x).is_err());
        let mut x = b.clone();
        x[13] = 9;
        assert!(ziplist(&x).is_err());
        // Total length beyond the bytes present (a ziplist claiming 2^32 - 1 bytes).
        let mut x = b.clone();
        x[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(ziplist(&x).is_err());
        assert!(ziplist(&b[..b.len() - 3]).is_err());
    }

    #[test]
    fn intsets_are_checked() {
        let b = write_intset(&[-3, 5, 70000]);
        assert_eq!(intset(&b).unwrap(), [-3, 5, 70000]);
        assert_eq!(u32le(&b, 0), Some(4));
        assert!(intset(&b[..b.len() - 1]).is_err());
        let mut x = b.clone();
        x[4] = 200;
        assert!(intset(&x).is_err());
        let unsorted = write_intset(&[5, 3]);
        assert!(intset(&unsorted).is_err());
        let mut x = b.clone();
        x[0] = 3;
        assert!(intset(&x).is_err());
    }

    #[test]
    fn zipmaps_are_read() {
        let z = [
            2, 1, b'a', 2, 0, b'x', b'y', 3, b'k', b'e', b'y', 1, 1, b'v', 0, 0xff,
        ];
        assert_eq!(
            zipmap(&z).unwrap(),
            vec![(&b"a"[..], &b"xy"[..]), (b"key", b"v")]
        );
        assert!(zipmap(&z[..z.len() - 1]).is_err());
        let mut x = z;
        x[0] = 3;
        assert!(zipmap(&x).is_err());
    }
}
