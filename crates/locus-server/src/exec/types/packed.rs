//! A packed sequence of byte strings in one buffer (Redis's listpack, in spirit): each entry is
//! its length as a LEB128 varint, then its bytes. Small collections live in one; lookups are
//! linear, as Redis's are below its `*-max-listpack-*` thresholds, and memory is the bytes plus
//! one or two per entry.

use super::alloc;

/// Bytes a varint of `n` takes.
#[inline]
fn varint_len(mut n: usize) -> usize {
    let mut l = 1;
    while n >= 0x80 {
        n >>= 7;
        l += 1;
    }
    l
}

#[inline]
fn put_varint(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Reads a varint at `at`: (value, bytes it took).
#[inline]
fn get_varint(b: &[u8], at: usize) -> (usize, usize) {
    let mut n = 0usize;
    let mut shift = 0;
    let mut i = at;
    loop {
        let byte = b[i];
        n |= usize::from(byte & 0x7f) << shift;
        i += 1;
        if byte & 0x80 == 0 {
            return (n, i - at);
        }
        shift += 7;
    }
}

/// Entries packed in one buffer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Packed {
    buf: Vec<u8>,
    n: usize,
}

impl Packed {
    /// An empty sequence.
    pub fn new() -> Self {
        Self::default()
    }

    /// Entries held.
    #[inline]
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether it holds none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Bytes of the buffer (the packed size).
    #[inline]
    pub fn bytes(&self) -> usize {
        self.buf.len()
    }

    /// Memory held: the buffer's allocation.
    #[inline]
    pub fn charge(&self) -> u64 {
        alloc::heap(self.buf.capacity())
    }

    /// The most the charge can grow by when entries of `added` bytes in all (`count` of them)
    /// are added: the buffer grows exactly (never by doubling).
    pub fn grow_bound(&self, count: usize, added: usize) -> u64 {
        let extra = added + count * varint_len(added.max(1));
        alloc::heap(self.buf.len() + extra).saturating_sub(self.charge()) + 16
    }

    /// Entry bytes at offset `at`, and the offset of the next entry.
    #[inline]
    pub fn entry_at(&self, at: usize) -> (&[u8], usize) {
        let (len, l) = get_varint(&self.buf, at);
        let start = at + l;
        (&self.buf[start..start + len], start + len)
    }

    /// The entries in order.
    pub fn iter(&self) -> PackedIter<'_> {
        PackedIter { p: self, at: 0 }
    }

    /// The entries with their offsets.
    pub fn iter_offsets(&self) -> impl Iterator<Item = (usize, &[u8])> + '_ {
        let mut at = 0;
        std::iter::from_fn(move || {
            if at >= self.buf.len() {
                return None;
            }
            let here = at;
            let (e, next) = self.entry_at(at);
            at = next;
            Some((here, e))
        })
    }

    /// Appends an entry.
    pub fn push(&mut self, e: &[u8]) {
        self.buf.reserve_exact(varint_len(e.len()) + e.len());
        put_varint(&mut self.buf, e.len());
        self.buf.extend_from_slice(e);
        self.n += 1;
    }

    /// Inserts an entry at offset `at` (an entry boundary, or the end).
    pub fn insert_at(&mut self, at: usize, e: &[u8]) {
        let mut enc = Vec::with_capacity(varint_len(e.len()) + e.len());
        put_varint(&mut enc, e.len());
        enc.extend_from_slice(e);
        self.buf.reserve_exact(enc.len());
        self.buf.splice(at..at, enc);
        self.n += 1;
    }

    /// Removes the entry at offset `at`; returns the offset the next entry now has (`at`).
    pub fn remove_at(&mut self, at: usize) -> usize {
        let (_, next) = self.entry_at(at);
        self.buf.drain(at..next);
        self.n -= 1;
        self.shrink();
        at
    }

    /// Removes `count` entries starting at offset `at`.
    pub fn remove_run(&mut self, at: usize, count: usize) {
        let mut end = at;
        for _ in 0..count {
            end = self.entry_at(end).1;
        }
        self.buf.drain(at..end);
        self.n -= count;
        self.shrink();
    }

    /// Replaces the entry at offset `at`.
    pub fn replace_at(&mut self, at: usize, e: &[u8]) {
        let (_, next) = self.entry_at(at);
        let mut enc = Vec::with_capacity(varint_len(e.len()) + e.len());
        put_varint(&mut enc, e.len());
        enc.extend_from_slice(e);
        if enc.len() > next - at {
            self.buf.reserve_exact(enc.len() - (next - at));
        }
        self.buf.splice(at..next, enc);
        self.shrink();
    }

    /// The offset just past the entry at `at`.
    #[inline]
    pub fn next_of(&self, at: usize) -> usize {
        self.entry_at(at).1
    }

    /// Gives back a buffer much larger than its contents.
    fn shrink(&mut self) {
        if self.buf.capacity() > 64 && self.buf.capacity() > self.buf.len() * 2 {
            self.buf.shrink_to_fit();
        }
    }
}

/// Iterator over a [`Packed`]'s entries.
#[derive(Debug)]
pub struct PackedIter<'a> {
    p: &'a Packed,
    at: usize,
}

impl<'a> Iterator for PackedIter<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        if self.at >= self.p.buf.len() {
            return None;
        }
        let (e, next) = self.p.entry_at(self.at);
        self.at = next;
        Some(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_through_inserts_and_removals() {
        let mut p = Packed::new();
        let long = vec![7u8; 300];
        p.push(b"a");
        p.push(&long);
        p.push(b"");
        p.insert_at(0, b"first");
        let got: Vec<&[u8]> = p.iter().collect();
        assert_eq!(got, vec![&b"first"[..], b"a", &long[..], b""]);
        let offs: Vec<usize> = p.iter_offsets().map(|(o, _)| o).collect();
        p.replace_at(offs[1], b"replaced");
        p.remove_at(offs[0]);
        let got: Vec<&[u8]> = p.iter().collect();
        assert_eq!(got, vec![&b"replaced"[..], &long[..], b""]);
        assert_eq!(p.len(), 3);
        p.remove_run(0, 2);
        assert_eq!(p.iter().collect::<Vec<_>>(), vec![&b""[..]]);
        assert!(p.charge() >= p.bytes() as u64);
    }

    #[test]
    fn growth_stays_within_its_bound() {
        let mut p = Packed::new();
        for i in 0..500usize {
            let e = vec![b'x'; i % 200];
            let before = p.charge();
            let bound = p.grow_bound(1, e.len());
            p.push(&e);
            assert!(p.charge() <= before + bound, "at {i}");
        }
    }
}
