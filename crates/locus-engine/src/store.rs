//! Pages and the items stored inline in them.
//!
//! ```text
//!  page (page_size bytes, owned by one (pool, class), chunk = class chunk size)
//!  +-----------+-----------+-----------+-----+-----------+------+
//!  | chunk 0   | chunk 1   | chunk 2   | ... | chunk n-1 | tail |
//!  +-----------+-----------+-----------+-----+-----------+------+
//!
//!  live chunk:  [lru u32][pos u32][klen|TTL|LIVE u32][vlen u32][key ...][value ...][slack]
//!  free chunk:  [next free slot u32][  unused  ][0 u32 (not live)][ ... ]
//! ```
//!
//! * `lru`: Redis's object clock (24-bit seconds, or logical time) or the LFU field
//!   `minutes << 8 | counter`, depending on the pool's policy.
//! * `pos`: the item's position in its pool's dense sampling array (O(1) swap-remove).
//! * `klen`: 28 bits of key length, bit 28 = the value starts with a protocol's metadata
//!   prefix of [`META_PREFIX`] bytes (memcached's flags and CAS) that readers of the value do
//!   not see, bit 29 = the value is an object (a hash, list, set or sorted set living outside
//!   the pages; the value bytes are its id), bit 30 = has a TTL (the expiry lives in a side
//!   table), bit 31 = live.
//!
//! A handle is `page_id << slot_bits | slot` in a `u32`; items never move while they live.

use crate::evict::NIL;
use crate::region::PageBuf;

/// Bytes of the per-item header.
pub(crate) const HDR: usize = 16;
const LIVE: u32 = 1 << 31;
const TTL: u32 = 1 << 30;
const OBJ: u32 = 1 << 29;
const META: u32 = 1 << 28;
const KLEN_MASK: u32 = META - 1;
/// Keys must be shorter than this (the key length shares its word with the flags).
pub(crate) const MAX_KEY_LEN: usize = META as usize;
/// Bytes of the metadata prefix of an item stored with one (`Engine::set_with_meta`): the
/// memcached face's flags, CAS and state.
pub const META_PREFIX: usize = 13;

/// One page: its buffer (allocated lazily, kept while the page id is reused; a window of the
/// slow tier's mapping with a `file:` or `numa:` backend) and its slab state.
#[derive(Debug)]
pub(crate) struct Page {
    pub buf: PageBuf,
    /// Owning pool, or `NIL` when free.
    pub owner: u32,
    pub class: u16,
    pub chunk: u32,
    pub slots: u32,
    /// Live (or reserved) chunks.
    pub live: u32,
    /// Chunks handed out since the page was (re)assigned; slots `bump..slots` were never used.
    pub bump: u32,
    /// Head of the free list threaded through free chunks.
    pub free_head: u32,
    /// Position in the owner's page list.
    pub pool_pos: u32,
    /// Position in the owner's per-class list of pages with free chunks, or `NIL`.
    pub partial_pos: u32,
    /// Position in the owner's per-class list of all its pages, or `NIL`.
    pub class_pos: u32,
    /// A large item's own allocation (one slot, `chunk` = the item's bytes), outside the
    /// owner's page and class lists and outside `pages_used`.
    pub large: bool,
    /// Its memory tier (0 = fast, 1 = slow; always 0 without tiers).
    pub tier: u8,
}

impl Page {
    pub(crate) fn empty() -> Self {
        Self {
            buf: PageBuf::none(),
            owner: NIL,
            class: 0,
            chunk: 0,
            slots: 0,
            live: 0,
            bump: 0,
            free_head: NIL,
            pool_pos: NIL,
            partial_pos: NIL,
            class_pos: NIL,
            large: false,
            tier: 0,
        }
    }

    #[inline]
    pub(crate) fn has_free(&self) -> bool {
        self.free_head != NIL || self.bump < self.slots
    }
}

/// The page table plus handle arithmetic.
#[derive(Debug)]
pub(crate) struct Store {
    pub pages: Vec<Page>,
    pub slot_bits: u32,
    pub slot_mask: u32,
}

#[inline]
fn rd(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[inline]
fn wr(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

impl Store {
    #[inline]
    pub(crate) fn handle(&self, page: u32, slot: u32) -> u32 {
        (page << self.slot_bits) | slot
    }

    #[inline]
    pub(crate) fn split(&self, h: u32) -> (usize, usize) {
        (
            (h >> self.slot_bits) as usize,
            (h & self.slot_mask) as usize,
        )
    }

    #[inline]
    fn loc(&self, h: u32) -> (&[u8], usize) {
        let (p, s) = self.split(h);
        let page = &self.pages[p];
        (&page.buf[..], s * page.chunk as usize)
    }

    #[inline]
    fn loc_mut(&mut self, h: u32) -> (&mut [u8], usize) {
        let (p, s) = self.split(h);
        let page = &mut self.pages[p];
        let off = s * page.chunk as usize;
        (&mut page.buf[..], off)
    }

    #[inline]
    pub(crate) fn is_live(&self, h: u32) -> bool {
        let (b, o) = self.loc(h);
        rd(b, o + 8) & LIVE != 0
    }

    #[inline]
    pub(crate) fn has_ttl(&self, h: u32) -> bool {
        let (b, o) = self.loc(h);
        rd(b, o + 8) & TTL != 0
    }

    #[inline]
    pub(crate) fn set_ttl_flag(&mut self, h: u32, on: bool) {
        let (b, o) = self.loc_mut(h);
        let w = rd(b, o + 8);
        wr(b, o + 8, if on { w | TTL } else { w & !TTL });
    }

    /// Whether the item's value is an object id (see [`crate::Object`]).
    #[inline]
    pub(crate) fn is_obj(&self, h: u32) -> bool {
        let (b, o) = self.loc(h);
        rd(b, o + 8) & OBJ != 0
    }

    /// Marks a freshly written item as an object's (its value is the object's id).
    #[inline]
    pub(crate) fn set_obj_flag(&mut self, h: u32) {
        let (b, o) = self.loc_mut(h);
        let w = rd(b, o + 8);
        wr(b, o + 8, w | OBJ);
    }

    /// Whether the item's value starts with a metadata prefix (see [`META_PREFIX`]).
    #[inline]
    pub(crate) fn has_meta(&self, h: u32) -> bool {
        let (b, o) = self.loc(h);
        rd(b, o + 8) & META != 0
    }

    /// Marks (or unmarks) a live item's value as starting with a metadata prefix.
    #[inline]
    pub(crate) fn set_meta_flag(&mut self, h: u32, on: bool) {
        let (b, o) = self.loc_mut(h);
        let w = rd(b, o + 8);
        wr(b, o + 8, if on { w | META } else { w & !META });
    }

    #[inline]
    pub(crate) fn lru(&self, h: u32) -> u32 {
        let (b, o) = self.loc(h);
        rd(b, o)
    }

    #[inline]
    pub(crate) fn set_lru(&mut self, h: u32, v: u32) {
        let (b, o) = self.loc_mut(h);
        wr(b, o, v);
    }

    #[inline]
    pub(crate) fn pos(&self, h: u32) -> u32 {
        let (b, o) = self.loc(h);
        rd(b, o + 4)
    }

    #[inline]
    pub(crate) fn set_pos(&mut self, h: u32, v: u32) {
        let (b, o) = self.loc_mut(h);
        wr(b, o + 4, v);
    }

    #[inline]
    pub(crate) fn key(&self, h: u32) -> &[u8] {
        let (b, o) = self.loc(h);
        let klen = (rd(b, o + 8) & KLEN_MASK) as usize;
        &b[o + HDR..o + HDR + klen]
    }

    /// The value of a live item, without its metadata prefix when it has one.
    #[inline]
    pub(crate) fn value(&self, h: u32) -> &[u8] {
        let (b, o) = self.loc(h);
        let w = rd(b, o + 8);
        let klen = (w & KLEN_MASK) as usize;
        let vlen = rd(b, o + 12) as usize;
        let skip = if w & META != 0 { META_PREFIX } else { 0 };
        &b[o + HDR + klen + skip..o + HDR + klen + vlen]
    }

    /// The value of a live item with its metadata prefix, if any.
    #[inline]
    pub(crate) fn raw_value(&self, h: u32) -> &[u8] {
        let (b, o) = self.loc(h);
        let klen = (rd(b, o + 8) & KLEN_MASK) as usize;
        let vlen = rd(b, o + 12) as usize;
        &b[o + HDR + klen..o + HDR + klen + vlen]
    }

    /// The value bytes of a live item with its metadata prefix, if any, for edits in place (its
    /// length stays).
    #[inline]
    pub(crate) fn value_mut(&mut self, h: u32) -> &mut [u8] {
        let (b, o) = self.loc_mut(h);
        let klen = (rd(b, o + 8) & KLEN_MASK) as usize;
        let vlen = rd(b, o + 12) as usize;
        &mut b[o + HDR + klen..o + HDR + klen + vlen]
    }

    /// (key length, value length).
    #[inline]
    pub(crate) fn lens(&self, h: u32) -> (usize, usize) {
        let (b, o) = self.loc(h);
        ((rd(b, o + 8) & KLEN_MASK) as usize, rd(b, o + 12) as usize)
    }

    /// Writes a whole item. The caller guarantees it fits the chunk.
    pub(crate) fn write(
        &mut self,
        h: u32,
        lru: u32,
        pos: u32,
        key: &[u8],
        value: &[u8],
        ttl: bool,
    ) {
        let (b, o) = self.loc_mut(h);
        wr(b, o, lru);
        wr(b, o + 4, pos);
        let flags = LIVE | if ttl { TTL } else { 0 };
        wr(b, o + 8, key.len() as u32 | flags);
        wr(b, o + 12, value.len() as u32);
        b[o + HDR..o + HDR + key.len()].copy_from_slice(key);
        let v = o + HDR + key.len();
        b[v..v + value.len()].copy_from_slice(value);
    }

    /// Replaces the value of a live item in place (same chunk; the caller checked it fits).
    pub(crate) fn rewrite_value(&mut self, h: u32, value: &[u8]) {
        let (b, o) = self.loc_mut(h);
        let klen = (rd(b, o + 8) & KLEN_MASK) as usize;
        wr(b, o + 12, value.len() as u32);
        let v = o + HDR + klen;
        b[v..v + value.len()].copy_from_slice(value);
    }

    /// Takes a free chunk from `page` (which MUST have one). Returns the slot.
    pub(crate) fn take_slot(&mut self, page: u32) -> u32 {
        let p = &mut self.pages[page as usize];
        let slot = if p.free_head != NIL {
            let s = p.free_head;
            let off = s as usize * p.chunk as usize;
            p.free_head = rd(&p.buf, off);
            s
        } else {
            let s = p.bump;
            p.bump += 1;
            s
        };
        p.live += 1;
        let off = slot as usize * p.chunk as usize;
        wr(&mut p.buf, off + 8, 0);
        slot
    }

    /// Returns a chunk to its page's free list.
    pub(crate) fn free_slot(&mut self, h: u32) {
        let (pi, s) = self.split(h);
        let p = &mut self.pages[pi];
        let off = s * p.chunk as usize;
        wr(&mut p.buf, off + 8, 0);
        wr(&mut p.buf, off, p.free_head);
        p.free_head = s as u32;
        p.live -= 1;
    }
}
