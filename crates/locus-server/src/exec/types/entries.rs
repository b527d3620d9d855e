//! The hash table behind large hashes and sets: every entry one boxed byte string in a dense
//! vector, and an index of 4-byte positions hashed by each entry's key.
//!
//! ```text
//!  index (hashbrown, u32 positions)      items (Vec<Box<[u8]>>, dense)
//!  [ 2 | - | 0 | - | 1 | ... ]   --->    0: entry   1: entry   2: entry ...
//! ```
//!
//! A set's entry is its member; a hash's entry is its field's length (a varint), the field and the
//! value, in one allocation ([`HashEntry`]). Against a map of boxed keys and values with a stored
//! hash per bucket (what `indexmap` keeps), this saves an allocation per hash field and 20 of the
//! 40 bytes a bucket took, which is what brings a large hash under Redis's bytes per field.
//!
//! Removal moves the last entry into the hole (`swap_remove`), so positions below the one removed
//! never change: the order SCAN's cursor relies on ([`super::hash::table_scan_step`]), and O(1)
//! random picks by position (SPOP, SRANDMEMBER, HRANDFIELD).

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::marker::PhantomData;

use hashbrown::HashTable;

use super::alloc;

/// How an entry's key is found in its bytes.
pub trait EntryKey {
    /// The key part of `entry`.
    fn key(entry: &[u8]) -> &[u8];
}

/// A set's entries: the member is the whole entry.
#[derive(Debug, Clone, Copy)]
pub struct Whole;

impl EntryKey for Whole {
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
    #[inline]
    fn key(entry: &[u8]) -> &[u8] {
        Self::split(entry).0
    }
}

/// The table: dense entries and an index of their positions.
#[derive(Debug, Clone)]
pub struct Entries<K> {
    items: Vec<Box<[u8]>>,
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
                K::key(&items[i as usize]) == key
            })
            .map(|&i| i as usize)
    }

    /// The entry at position `i`.
    #[inline]
    pub fn get_index(&self, i: usize) -> Option<&[u8]> {
        self.items.get(i).map(|e| &**e)
    }

    /// The entry whose key is `key`.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<&[u8]> {
        self.find(key).map(|i| &*self.items[i])
    }

    /// Every entry, in position order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        self.items.iter().map(|e| &**e)
    }

    /// Adds `entry`, whose key must not be present (see [`Entries::find`]).
    pub fn insert_new(&mut self, entry: Box<[u8]>) {
        let pos = u32::try_from(self.items.len()).expect("a collection holds < 2^32 entries");
        let (items, hasher) = (&self.items, &self.hasher);
        let h = hasher.hash_one(K::key(&entry));
        self.index
            .insert_unique(h, pos, |&i| hasher.hash_one(K::key(&items[i as usize])));
        self.items.push(entry);
    }

    /// Replaces the entry at `i` with `entry`, which has the same key; the old one.
    pub fn replace(&mut self, i: usize, entry: Box<[u8]>) -> Box<[u8]> {
        debug_assert_eq!(K::key(&self.items[i]), K::key(&entry));
        std::mem::replace(&mut self.items[i], entry)
    }

    /// Removes the entry at `i`, moving the last one into its place.
    pub fn swap_remove_index(&mut self, i: usize) -> Option<Box<[u8]>> {
        if i >= self.items.len() {
            return None;
        }
        self.unindex(i);
        let last = self.items.len() - 1;
        if i != last {
            // The last entry takes position `i`: point its index slot there.
            let h = self.hasher.hash_one(K::key(&self.items[last]));
            if let Ok(slot) = self.index.find_entry(h, |&p| p as usize == last) {
                *slot.into_mut() = i as u32;
            }
        }
        let out = self.items.swap_remove(i);
        if self.items.capacity() > 64 && self.items.len() < self.items.capacity() / 4 {
            self.items.shrink_to_fit();
            let (items, hasher) = (&self.items, &self.hasher);
            self.index
                .shrink_to_fit(|&p| hasher.hash_one(K::key(&items[p as usize])));
        }
        Some(out)
    }

    /// Removes the entry whose key is `key`.
    pub fn swap_remove(&mut self, key: &[u8]) -> Option<Box<[u8]>> {
        let i = self.find(key)?;
        self.swap_remove_index(i)
    }

    fn unindex(&mut self, i: usize) {
        let h = self.hasher.hash_one(K::key(&self.items[i]));
        if let Ok(slot) = self.index.find_entry(h, |&p| p as usize == i) {
            slot.remove();
        }
    }

    /// Bytes the vector and the index take (not the entries).
    pub fn tables_charge(&self) -> u64 {
        tables_charge(self.items.capacity(), self.index.capacity())
    }

    /// The most the vector and the index can take, briefly (old and new both held while one
    /// grows), once `n` more entries are added.
    pub fn grow_bound(&self, n: usize) -> u64 {
        let need = self.items.len() + n;
        let items = if need > self.items.capacity() {
            alloc::vec::<Box<[u8]>>(alloc::grown(self.items.capacity(), need))
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
pub fn tables_charge(items: usize, index: usize) -> u64 {
    alloc::vec::<Box<[u8]>>(items) + alloc::table::<u32>(index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

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
            let v = format!("v{step}").into_bytes();
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
