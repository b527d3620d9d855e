//! The hash table behind large hashes and sets: every entry one byte string in a dense vector,
//! and an index of 4-byte positions hashed by each entry's key.
//!
//! ```text
//!  index (hashbrown, u32 positions)      items (Vec<Slot> or Vec<Box<[u8]>>, dense)
//!  [ 2 | - | 0 | - | 1 | ... ]   --->    0: entry   1: entry   2: entry ...
//! ```
//!
//! A set's entry is its member, in a 24-byte [`Slot`] (inline up to [`INLINE`] bytes, as most
//! members are, else boxed); a hash's entry is its field's length (a varint), the field and the
//! value in one boxed allocation ([`HashEntry`]; a field with its value rarely fits a slot, and a
//! 16-byte box is then the smaller). Against a map of boxed keys and values with a stored hash per
//! bucket (what `indexmap` keeps), this saves one or two allocations per element and the stored
//! hash, which is what brings large hashes and sets under Redis's bytes per element.
//!
//! Removal moves the last entry into the hole (`swap_remove`), so positions below the one removed
//! never change: the order SCAN's cursor relies on ([`super::hash::table_scan_step`]), and O(1)
//! random picks by position (SPOP, SRANDMEMBER, HRANDFIELD).

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::marker::PhantomData;

use hashbrown::HashTable;

use super::alloc;

/// The longest entry a [`Slot`] holds inline.
pub const INLINE: usize = 22;

/// One entry: its bytes inline when they fit, else in their own allocation.
#[derive(Debug, Clone)]
pub enum Slot {
    /// Up to [`INLINE`] bytes: the length, then the bytes.
    Inline(u8, [u8; INLINE]),
    /// A longer entry.
    Heap(Box<[u8]>),
}

impl Slot {
    /// A slot holding `bytes`.
    pub fn new(bytes: &[u8]) -> Self {
        if bytes.len() <= INLINE {
            let mut b = [0u8; INLINE];
            b[..bytes.len()].copy_from_slice(bytes);
            Slot::Inline(bytes.len() as u8, b)
        } else {
            Slot::Heap(bytes.into())
        }
    }

    /// The entry's bytes.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        match self {
            Slot::Inline(n, b) => &b[..usize::from(*n)],
            Slot::Heap(b) => b,
        }
    }

    /// The entry's bytes, owned.
    pub fn to_vec(&self) -> Vec<u8> {
        self.bytes().to_vec()
    }
}

/// How an entry is held in the vector.
pub trait Stored: Clone + std::fmt::Debug {
    /// Holds `bytes`.
    fn new(bytes: &[u8]) -> Self;
    /// The entry's bytes.
    fn bytes(&self) -> &[u8];
    /// Bytes an entry of `len` bytes takes outside the vector.
    fn charge(len: usize) -> u64;
}

impl Stored for Slot {
    fn new(bytes: &[u8]) -> Self {
        Slot::new(bytes)
    }
    #[inline]
    fn bytes(&self) -> &[u8] {
        Slot::bytes(self)
    }
    fn charge(len: usize) -> u64 {
        if len <= INLINE { 0 } else { alloc::bytes(len) }
    }
}

impl Stored for Box<[u8]> {
    fn new(bytes: &[u8]) -> Self {
        bytes.into()
    }
    #[inline]
    fn bytes(&self) -> &[u8] {
        self
    }
    fn charge(len: usize) -> u64 {
        alloc::bytes(len)
    }
}

/// How an entry is held and its key found in its bytes.
pub trait EntryKey {
    /// How entries are held.
    type Stored: Stored;
    /// The key part of `entry`.
    fn key(entry: &[u8]) -> &[u8];
}

/// A set's entries: the member is the whole entry.
#[derive(Debug, Clone, Copy)]
pub struct Whole;

impl EntryKey for Whole {
    type Stored = Slot;
    #[inline]
    fn key(entry: &[u8]) -> &[u8] {
        entry
    }
}

/// A hash's entries: `varint(field length) field value`.
#[derive(Debug, Clone, Copy)]
pub struct HashEntry;

impl HashEntry {
    /// The entry holding `field` and `value`.
    pub fn encode(field: &[u8], value: &[u8]) -> Box<[u8]> {
        let mut out = Vec::with_capacity(Self::len(field, value));
        let mut n = field.len();
        while n >= 0x80 {
            out.push((n as u8) | 0x80);
            n >>= 7;
        }
        out.push(n as u8);
        out.extend_from_slice(field);
        out.extend_from_slice(value);
        out.into_boxed_slice()
    }

    /// Bytes of the entry holding `field` and `value`.
    pub fn len(field: &[u8], value: &[u8]) -> usize {
        let mut n = field.len();
        let mut header = 1;
        while n >= 0x80 {
            header += 1;
            n >>= 7;
        }
        header + field.len() + value.len()
    }

    /// (field, value) of an entry made by [`HashEntry::encode`].
    #[inline]
    pub fn split(entry: &[u8]) -> (&[u8], &[u8]) {
        let (mut n, mut shift, mut at) = (0usize, 0u32, 0usize);
        while let Some(&b) = entry.get(at) {
            at += 1;
            n |= usize::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        let end = at.saturating_add(n).min(entry.len());
        (&entry[at..end], &entry[end..])
    }
}

impl EntryKey for HashEntry {
    type Stored = Box<[u8]>;
    #[inline]
    fn key(entry: &[u8]) -> &[u8] {
        Self::split(entry).0
    }
}

/// The table: dense entries and an index of their positions.
#[derive(Debug, Clone)]
pub struct Entries<K: EntryKey> {
    items: Vec<K::Stored>,
    index: HashTable<u32>,
    hasher: RandomState,
    _key: PhantomData<K>,
}

impl<K: EntryKey> Entries<K> {
    /// An empty table with room for `cap` entries, keyed with a per-process random hash (so a
    /// client cannot choose colliding keys).
    pub fn with_capacity(cap: usize) -> Self {
        Self {
            items: Vec::with_capacity(cap),
            index: HashTable::with_capacity(cap),
            hasher: RandomState::new(),
            _key: PhantomData,
        }
    }

    /// Entries held.
    #[inline]
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether it holds none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The position of the entry whose key is `key`.
    #[inline]
    pub fn find(&self, key: &[u8]) -> Option<usize> {
        let items = &self.items;
        self.index
            .find(self.hasher.hash_one(key), |&i| {
                K::key(items[i as usize].bytes()) == key
            })
            .map(|&i| i as usize)
    }

    /// The entry at position `i`.
    #[inline]
    pub fn get_index(&self, i: usize) -> Option<&[u8]> {
        self.items.get(i).map(Stored::bytes)
    }

    /// The entry whose key is `key`.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<&[u8]> {
        self.find(key).map(|i| self.items[i].bytes())
    }

    /// Every entry, in position order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        self.items.iter().map(Stored::bytes)
    }

    /// Adds `entry`, whose key must not be present (see [`Entries::find`]).
    pub fn insert_new(&mut self, entry: K::Stored) {
        let pos = u32::try_from(self.items.len()).expect("a collection holds < 2^32 entries");
        let (items, hasher) = (&self.items, &self.hasher);
        let h = hasher.hash_one(K::key(entry.bytes()));
        self.index.insert_unique(h, pos, |&i| {
            hasher.hash_one(K::key(items[i as usize].bytes()))
        });
        self.items.push(entry);
    }

    /// Replaces the entry at `i` with `entry`, which has the same key; the old one.
    pub fn replace(&mut self, i: usize, entry: K::Stored) -> K::Stored {
        debug_assert_eq!(K::key(self.items[i].bytes()), K::key(entry.bytes()));
        std::mem::replace(&mut self.items[i], entry)
    }

    /// Removes the entry at `i`, moving the last one into its place.
    pub fn swap_remove_index(&mut self, i: usize) -> Option<K::Stored> {
        if i >= self.items.len() {
            return None;
        }
        self.unindex(i);
        let last = self.items.len() - 1;
        if i != last {
            // The last entry takes position `i`: point its index slot there.
            let h = self.hasher.hash_one(K::key(self.items[last].bytes()));
            if let Ok(slot) = self.index.find_entry(h, |&p| p as usize == last) {
                *slot.into_mut() = i as u32;
            }
        }
        let out = self.items.swap_remove(i);
        if self.items.capacity() > 64 && self.items.len() < self.items.capacity() / 4 {
            self.items.shrink_to_fit();
            let (items, hasher) = (&self.items, &self.hasher);
            self.index
                .shrink_to_fit(|&p| hasher.hash_one(K::key(items[p as usize].bytes())));
        }
        Some(out)
    }

    /// Removes the entry whose key is `key`.
    pub fn swap_remove(&mut self, key: &[u8]) -> Option<K::Stored> {
        let i = self.find(key)?;
        self.swap_remove_index(i)
    }

    fn unindex(&mut self, i: usize) {
        let h = self.hasher.hash_one(K::key(self.items[i].bytes()));
        if let Ok(slot) = self.index.find_entry(h, |&p| p as usize == i) {
            slot.remove();
        }
    }

    /// Bytes the vector and the index take (not the entries).
    pub fn tables_charge(&self) -> u64 {
        tables_charge::<K>(self.items.capacity(), self.index.capacity())
    }

    /// The most the vector and the index can take, briefly (old and new both held while one
    /// grows), once `n` more entries are added.
    pub fn grow_bound(&self, n: usize) -> u64 {
        let need = self.items.len() + n;
        let items = if need > self.items.capacity() {
            alloc::vec::<K::Stored>(alloc::grown(self.items.capacity(), need))
        } else {
            0
        };
        let index = if need > self.index.capacity() {
            alloc::table::<u32>(alloc::grown(self.index.capacity(), need))
        } else {
            0
        };
        items + index
    }
}

/// Bytes of a vector of `items` entries and an index of `index` positions.
pub fn tables_charge<K: EntryKey>(items: usize, index: usize) -> u64 {
    alloc::vec::<K::Stored>(items) + alloc::table::<u32>(index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn a_slot_takes_24_bytes_and_holds_up_to_22_inline() {
        assert_eq!(std::mem::size_of::<Slot>(), 24);
        for n in 0..40 {
            let b: Vec<u8> = (0..n as u8).collect();
            let s = Slot::new(&b);
            assert_eq!(s.bytes(), &b[..]);
            assert_eq!(matches!(s, Slot::Inline(..)), n <= INLINE);
            assert_eq!(<Slot as Stored>::charge(n) == 0, n <= INLINE);
        }
    }

    #[test]
    fn hash_entries_round_trip_fields_of_every_length() {
        for n in [0usize, 1, 127, 128, 300, 16_383, 16_384, 70_000] {
            let f = vec![b'f'; n];
            let e = HashEntry::encode(&f, b"value");
            assert_eq!(e.len(), HashEntry::len(&f, b"value"));
            assert_eq!(HashEntry::split(&e), (&f[..], &b"value"[..]));
        }
        assert_eq!(HashEntry::split(b""), (&b""[..], &b""[..]));
    }

    #[test]
    fn the_table_matches_a_map_through_inserts_replaces_and_removals() {
        let mut rng = locus_common::Rng::new(3);
        let mut t: Entries<HashEntry> = Entries::with_capacity(0);
        let mut model: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
        for step in 0..20_000u64 {
            let f = format!("f{}", rng.below(600)).into_bytes();
            // Short and long values: inline and boxed slots.
            let v = format!("v{step}")
                .repeat(1 + rng.below(5) as usize)
                .into_bytes();
            match rng.below(4) {
                0 | 1 => {
                    let e = HashEntry::encode(&f, &v);
                    match t.find(&f) {
                        Some(i) => {
                            t.replace(i, e);
                        }
                        None => t.insert_new(e),
                    }
                    model.insert(f, v);
                }
                2 => {
                    let gone = t.swap_remove(&f).map(|e| HashEntry::split(&e).1.to_vec());
                    assert_eq!(gone, model.remove(&f));
                }
                _ => {
                    if !t.is_empty() {
                        let i = rng.below(t.len() as u64) as usize;
                        let e = t.swap_remove_index(i).expect("in range");
                        assert!(model.remove(HashEntry::split(&e).0).is_some());
                    }
                }
            }
            assert_eq!(t.len(), model.len());
            if step % 997 == 0 {
                for (f, v) in &model {
                    assert_eq!(t.get(f).map(|e| HashEntry::split(e).1), Some(&v[..]));
                }
                for (i, e) in t.iter().enumerate() {
                    assert_eq!(t.find(HashEntry::split(e).0), Some(i));
                }
            }
        }
        assert!(t.swap_remove_index(t.len()).is_none());
    }
}
