//! The list representation (Redis's quicklist): a deque of nodes, each one buffer of packed
//! entries (Redis's listpack, in spirit and in size).
//!
//! An entry is a header, its payload and a back-length, so a node is walked both ways:
//!
//! ```text
//!  header                         payload        back-length
//!  0xxxxxxx                       -              integer 0..=127
//!  10llllll                       l bytes        string of 0..=63 bytes
//!  110iiiii iiiiiiii              -              13-bit integer
//!  1110llll llllllll              l bytes        string of 64..=4095 bytes
//!  0xF0 len:u32                   len bytes      longer string
//!  0xF1 / 0xF2 / 0xF3 / 0xF4      2 / 3 / 4 / 8  16, 24, 32, 64-bit integer (little endian)
//!  0xF5 len:u64                   len bytes      string of 4 GiB or more
//! ```
//!
//! The back-length is the size of header + payload in 1 to 5 bytes of 7 bits, read from the
//! entry's end backwards (the byte read first holds the low bits; a set high bit means another
//! byte precedes). A canonical integer string (`"42"`, `"-7"`, as Redis's `string2ll` accepts)
//! is stored as its integer and read back as the same string, so a list of 100 short elements
//! takes one or two bytes per element beyond its bytes, as in Redis.
//!
//! A node holds entries up to `list-max-listpack-size` (negative: 4 KiB .. 64 KiB of entries;
//! positive: that many entries, and at most 8 KiB); an element larger than the limit gets a node
//! of its own. Index lookups walk the nodes by their counts from the nearer end, then one node:
//! LINDEX and LSET in the middle of a long list touch one node's bytes, not the list's.
//!
//! Memory: every node buffer is sized to what the allocator hands out for its bytes (no
//! doubling), so [`List::charge`] (the buffers' allocations and the node deque's) is what the
//! list holds, maintained as a running sum in O(1).

use std::collections::VecDeque;
use std::mem::size_of;

use super::alloc;
use crate::exec::parse_i64;

/// An element as stored: bytes, or a canonical integer string kept as its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem<'a> {
    /// A string.
    Str(&'a [u8]),
    /// An integer (its decimal form is the element).
    Int(i64),
}

impl Elem<'_> {
    /// The element's bytes.
    pub fn to_vec(self) -> Vec<u8> {
        match self {
            Elem::Str(s) => s.to_vec(),
            Elem::Int(i) => itoa::Buffer::new().format(i).as_bytes().to_vec(),
        }
    }

    /// Whether the element is `b`.
    #[inline]
    pub fn eq_bytes(self, b: &[u8], b_int: Option<i64>) -> bool {
        match self {
            Elem::Str(s) => s == b,
            Elem::Int(i) => b_int == Some(i),
        }
    }
}

/// What an element's bytes are, as an integer entry: `Some` for a canonical integer string.
#[inline]
pub fn int_of(e: &[u8]) -> Option<i64> {
    if e.is_empty() || e.len() > 20 {
        return None;
    }
    parse_i64(e)
}

/// Bytes a back-length of `l` takes.
#[inline]
fn backlen_size(l: usize) -> usize {
    match l {
        0..=127 => 1,
        128..=16_383 => 2,
        16_384..=2_097_151 => 3,
        2_097_152..=268_435_455 => 4,
        _ => 5,
    }
}

/// An encoded entry: header (with any integer payload), string payload, back-length.
struct Enc<'a> {
    head: [u8; 9],
    head_len: usize,
    payload: &'a [u8],
    back: [u8; 5],
    back_len: usize,
}

impl Enc<'_> {
    #[inline]
    fn len(&self) -> usize {
        self.head_len + self.payload.len() + self.back_len
    }

    /// Writes the entry at the start of `dst` (at least `len` bytes).
    #[inline]
    fn write(&self, dst: &mut [u8]) {
        let (h, p) = (self.head_len, self.payload.len());
        dst[..h].copy_from_slice(&self.head[..h]);
        dst[h..h + p].copy_from_slice(self.payload);
        dst[h + p..h + p + self.back_len].copy_from_slice(&self.back[..self.back_len]);
    }
}

fn encode(e: &[u8]) -> Enc<'_> {
    let mut head = [0u8; 9];
    let (head_len, payload): (usize, &[u8]) = match int_of(e) {
        Some(v) if (0..=127).contains(&v) => {
            head[0] = v as u8;
            (1, &[])
        }
        Some(v) if (-4096..=4095).contains(&v) => {
            let u = (v as u16) & 0x1FFF;
            head[0] = 0xC0 | (u >> 8) as u8;
            head[1] = u as u8;
            (2, &[])
        }
        Some(v) if i16::try_from(v).is_ok() => {
            head[0] = 0xF1;
            head[1..3].copy_from_slice(&(v as i16).to_le_bytes());
            (3, &[])
        }
        Some(v) if (-(1 << 23)..(1 << 23)).contains(&v) => {
            head[0] = 0xF2;
            head[1..4].copy_from_slice(&(v as i32).to_le_bytes()[..3]);
            (4, &[])
        }
        Some(v) if i32::try_from(v).is_ok() => {
            head[0] = 0xF3;
            head[1..5].copy_from_slice(&(v as i32).to_le_bytes());
            (5, &[])
        }
        Some(v) => {
            head[0] = 0xF4;
            head[1..9].copy_from_slice(&v.to_le_bytes());
            (9, &[])
        }
        None => {
            let n = e.len();
            if n < 64 {
                head[0] = 0x80 | n as u8;
                (1, e)
            } else if n < 4096 {
                head[0] = 0xE0 | (n >> 8) as u8;
                head[1] = n as u8;
                (2, e)
            } else if let Ok(n32) = u32::try_from(n) {
                head[0] = 0xF0;
                head[1..5].copy_from_slice(&n32.to_le_bytes());
                (5, e)
            } else {
                head[0] = 0xF5;
                head[1..9].copy_from_slice(&(n as u64).to_le_bytes());
                (9, e)
            }
        }
    };
    let body = head_len + payload.len();
    let back_len = backlen_size(body);
    let mut back = [0u8; 5];
    for i in 0..back_len {
        let mut b = ((body >> (7 * i)) & 0x7F) as u8;
        if i + 1 < back_len {
            b |= 0x80;
        }
        back[back_len - 1 - i] = b;
    }
    Enc {
        head,
        head_len,
        payload,
        back,
        back_len,
    }
}

/// Bytes the entry of `e` takes.
#[inline]
pub fn entry_len(e: &[u8]) -> usize {
    encode(e).len()
}

/// Reads the entry at `at`: the element and the entry's whole size.
#[inline]
fn decode(b: &[u8], at: usize) -> (Elem<'_>, usize) {
    let h = b[at];
    let le = |from: usize, n: usize| -> u64 {
        let mut v = [0u8; 8];
        v[..n].copy_from_slice(&b[from..from + n]);
        u64::from_le_bytes(v)
    };
    let (elem, body) = match h {
        0x00..=0x7F => (Elem::Int(i64::from(h)), 1),
        0x80..=0xBF => {
            let n = usize::from(h & 0x3F);
            (Elem::Str(&b[at + 1..at + 1 + n]), 1 + n)
        }
        0xC0..=0xDF => {
            let u = (u16::from(h & 0x1F) << 8) | u16::from(b[at + 1]);
            // Sign-extend 13 bits.
            let v = ((u << 3) as i16) >> 3;
            (Elem::Int(i64::from(v)), 2)
        }
        0xE0..=0xEF => {
            let n = (usize::from(h & 0x0F) << 8) | usize::from(b[at + 1]);
            (Elem::Str(&b[at + 2..at + 2 + n]), 2 + n)
        }
        0xF0 => {
            let n = le(at + 1, 4) as usize;
            (Elem::Str(&b[at + 5..at + 5 + n]), 5 + n)
        }
        0xF1 => (Elem::Int(i64::from(le(at + 1, 2) as u16 as i16)), 3),
        0xF2 => {
            let v = ((le(at + 1, 3) as u32) << 8) as i32 >> 8;
            (Elem::Int(i64::from(v)), 4)
        }
        0xF3 => (Elem::Int(i64::from(le(at + 1, 4) as u32 as i32)), 5),
        0xF4 => (Elem::Int(le(at + 1, 8) as i64), 9),
        _ => {
            let n = le(at + 1, 8) as usize;
            (Elem::Str(&b[at + 9..at + 9 + n]), 9 + n)
        }
    };
    (elem, body + backlen_size(body))
}

/// The start of the entry that ends at `end` (> 0).
#[inline]
fn prev_start(b: &[u8], end: usize) -> usize {
    let (mut l, mut i) = (0usize, 0usize);
    loop {
        let byte = b[end - 1 - i];
        l |= usize::from(byte & 0x7F) << (7 * i);
        i += 1;
        if byte & 0x80 == 0 {
            break;
        }
    }
    end - i - l
}

/// Capacity a buffer gets for `n` bytes: all the allocator hands out for them.
#[inline]
fn usable(n: usize) -> usize {
    if n == 0 {
        0
    } else {
        alloc::heap(n) as usize - 8
    }
}

/// One node: entries packed in one buffer.
#[derive(Debug, Default)]
struct Node {
    buf: Vec<u8>,
    count: u32,
}

impl Node {
    #[inline]
    fn charge(&self) -> u64 {
        alloc::heap(self.buf.capacity())
    }

    fn with(enc: &Enc<'_>) -> Node {
        let mut buf = Vec::with_capacity(usable(enc.len()));
        buf.resize(enc.len(), 0);
        enc.write(&mut buf);
        Node { buf, count: 1 }
    }

    /// Makes room for `extra` more bytes: to what the allocator rounds them to, plus an eighth
    /// when `slack` (a node that grows by pushes reallocates every few hundred bytes, not on
    /// every push; a node holds at most [`Fill`]'s bytes, so the slack is bounded too).
    #[inline]
    fn reserve(&mut self, extra: usize, slack: bool) {
        let need = self.buf.len() + extra;
        if need > self.buf.capacity() {
            let want = if slack { need + need / 8 } else { need };
            self.buf.reserve_exact(usable(want) - self.buf.len());
        }
    }

    /// Gives back a buffer well over its contents.
    #[inline]
    fn shrink(&mut self) {
        let len = self.buf.len();
        if self.buf.capacity() > usable(len) + (len / 2).max(64) {
            self.buf.shrink_to(usable(len));
        }
    }

    /// Writes `enc` at byte offset `at` (an entry boundary).
    fn insert(&mut self, at: usize, enc: &Enc<'_>) {
        let n = enc.len();
        self.reserve(n, true);
        let old = self.buf.len();
        self.buf.resize(old + n, 0);
        self.buf.copy_within(at..old, at + n);
        enc.write(&mut self.buf[at..]);
        self.count += 1;
    }

    /// Removes bytes `from..to` holding `entries` entries.
    fn remove(&mut self, from: usize, to: usize, entries: u32) {
        self.buf.drain(from..to);
        self.count -= entries;
        self.shrink();
    }

    /// Byte offset of entry `k` (`k < count`), walking from the nearer end.
    fn offset_of(&self, k: usize) -> usize {
        let count = self.count as usize;
        if k <= count / 2 {
            let mut at = 0;
            for _ in 0..k {
                at += decode(&self.buf, at).1;
            }
            at
        } else {
            let mut at = self.buf.len();
            for _ in 0..count - k {
                at = prev_start(&self.buf, at);
            }
            at
        }
    }

    /// Entries before byte offset `at`.
    fn entries_before(&self, at: usize) -> u32 {
        let (mut o, mut n) = (0, 0);
        while o < at {
            o += decode(&self.buf, o).1;
            n += 1;
        }
        n
    }
}

/// How large a node may grow: bytes and entries.
#[derive(Debug, Clone, Copy)]
pub struct Fill {
    bytes: usize,
    count: usize,
}

/// Redis's `SIZE_SAFETY_LIMIT`: a node limited by count holds at most this many bytes.
const SAFETY_BYTES: usize = 8192;

impl Fill {
    /// The limits `list-max-listpack-size` = `fill` gives.
    pub fn from_setting(fill: i64) -> Fill {
        if fill < 0 {
            let level = (fill.unsigned_abs() - 1).min(4) as u32;
            Fill {
                bytes: 4096 << level,
                count: usize::MAX,
            }
        } else {
            Fill {
                bytes: SAFETY_BYTES,
                count: usize::try_from(fill).unwrap_or(usize::MAX),
            }
        }
    }

    /// The limits in force (`list-max-listpack-size`).
    pub fn current() -> Fill {
        Fill::from_setting(super::limits::LIST_SIZE.get())
    }

    #[inline]
    fn allows(self, node: &Node, extra: usize) -> bool {
        (node.count as usize) < self.count && node.buf.len() + extra <= self.bytes
    }
}

/// A Redis list.
#[derive(Debug, Default)]
pub struct List {
    nodes: VecDeque<Node>,
    len: usize,
    /// Sum of the nodes' [`Node::charge`].
    node_bytes: u64,
}

impl Clone for List {
    fn clone(&self) -> Self {
        let mut nodes = VecDeque::with_capacity(self.nodes.len());
        let mut node_bytes = 0;
        for n in &self.nodes {
            let mut buf = Vec::with_capacity(usable(n.buf.len()));
            buf.extend_from_slice(&n.buf);
            let node = Node {
                buf,
                count: n.count,
            };
            node_bytes += node.charge();
            nodes.push_back(node);
        }
        List {
            nodes,
            len: self.len,
            node_bytes,
        }
    }
}

/// The capacity the node deque grows to from `cap` to hold `need` nodes (doubling from one).
#[inline]
fn deque_cap(cap: usize, need: usize) -> usize {
    let mut c = cap.max(1);
    while c < need {
        c *= 2;
    }
    c
}

/// A position: node and byte offset of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pos {
    node: usize,
    off: usize,
}

impl List {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Elements held.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Memory held: node buffers and the node deque, as allocated.
    #[inline]
    pub fn charge(&self) -> u64 {
        self.node_bytes + alloc::heap(self.nodes.capacity() * size_of::<Node>())
    }

    /// Nodes (for tests and diagnostics).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The most the deque's allocation grows when `extra` nodes are added.
    fn deque_growth(&self, extra: usize) -> u64 {
        let (cap, need) = (self.nodes.capacity(), self.nodes.len() + extra);
        if need <= cap {
            return 0;
        }
        let sz = size_of::<Node>();
        alloc::heap(deque_cap(cap, need) * sz).saturating_sub(alloc::heap(cap * sz))
    }

    /// The most [`List::charge`] can grow when `elems` are pushed: their entries, each maybe in
    /// a new node, the slack of the nodes grown (an eighth of their bytes, at most [`Fill`]'s
    /// for the end node pushed onto), and the node deque.
    pub fn push_bound<'a>(&self, elems: impl Iterator<Item = &'a [u8]>) -> u64 {
        self.push_bound_with(elems, Fill::current())
    }

    fn push_bound_with<'a>(&self, elems: impl Iterator<Item = &'a [u8]>, fill: Fill) -> u64 {
        let (mut n, mut bytes) = (0usize, 0u64);
        for e in elems {
            n += 1;
            bytes += entry_len(e) as u64;
        }
        bytes + bytes / 8 + 32 * n as u64 + fill.bytes as u64 / 8 + 32 + self.deque_growth(n)
    }

    /// The most [`List::charge`] can grow when `e` is inserted or set anywhere (a node may be
    /// split around it, or grow with its slack).
    pub fn insert_bound(&self, e: &[u8]) -> u64 {
        self.insert_bound_with(e, Fill::current())
    }

    fn insert_bound_with(&self, e: &[u8], fill: Fill) -> u64 {
        let n = entry_len(e) as u64;
        n + n / 8 + 96 + fill.bytes as u64 / 8 + self.deque_growth(2)
    }

    /// Changes node `i` through `f`, keeping the byte sum.
    #[inline]
    fn with_node<R>(&mut self, i: usize, f: impl FnOnce(&mut Node) -> R) -> R {
        let node = &mut self.nodes[i];
        let before = node.charge();
        let r = f(node);
        self.node_bytes = self.node_bytes - before + node.charge();
        r
    }

    fn add_node(&mut self, at: usize, node: Node) {
        if self.nodes.len() == self.nodes.capacity() {
            let want = deque_cap(self.nodes.capacity(), self.nodes.len() + 1);
            self.nodes.reserve_exact(want - self.nodes.len());
        }
        self.node_bytes += node.charge();
        self.nodes.insert(at, node);
    }

    fn drop_node(&mut self, at: usize) {
        if let Some(n) = self.nodes.remove(at) {
            self.node_bytes -= n.charge();
        }
        self.shrink_deque();
    }

    fn shrink_deque(&mut self) {
        let (len, cap) = (self.nodes.len(), self.nodes.capacity());
        if cap > 8 && cap > len * 4 {
            self.nodes.shrink_to(len * 2);
        }
    }

    /// Appends `e` (RPUSH).
    pub fn push_back(&mut self, e: &[u8]) {
        self.push_back_with(e, Fill::current());
    }

    /// Prepends `e` (LPUSH).
    pub fn push_front(&mut self, e: &[u8]) {
        self.push_front_with(e, Fill::current());
    }

    fn push_back_with(&mut self, e: &[u8], fill: Fill) {
        let enc = encode(e);
        let n = enc.len();
        self.len += 1;
        if let Some(last) = self.nodes.back()
            && fill.allows(last, n)
        {
            let i = self.nodes.len() - 1;
            self.with_node(i, |node| node.insert(node.buf.len(), &enc));
            return;
        }
        self.add_node(self.nodes.len(), Node::with(&enc));
    }

    fn push_front_with(&mut self, e: &[u8], fill: Fill) {
        let enc = encode(e);
        let n = enc.len();
        self.len += 1;
        if let Some(first) = self.nodes.front()
            && fill.allows(first, n)
        {
            self.with_node(0, |node| node.insert(0, &enc));
            return;
        }
        self.add_node(0, Node::with(&enc));
    }

    /// Removes and returns the first element.
    pub fn pop_front(&mut self) -> Option<Vec<u8>> {
        let first = self.nodes.front()?;
        let (e, n) = decode(&first.buf, 0);
        let v = e.to_vec();
        self.remove_entry(Pos { node: 0, off: 0 }, n);
        Some(v)
    }

    /// Removes and returns the last element.
    pub fn pop_back(&mut self) -> Option<Vec<u8>> {
        let i = self.nodes.len().checked_sub(1)?;
        let buf = &self.nodes[i].buf;
        let off = prev_start(buf, buf.len());
        let (e, n) = decode(buf, off);
        let v = e.to_vec();
        self.remove_entry(Pos { node: i, off }, n);
        Some(v)
    }

    /// Removes the entry of `n` bytes at `p`; an emptied node goes.
    fn remove_entry(&mut self, p: Pos, n: usize) {
        self.len -= 1;
        if self.nodes[p.node].count == 1 {
            self.drop_node(p.node);
        } else {
            self.with_node(p.node, |node| node.remove(p.off, p.off + n, 1));
        }
    }

    /// The position of element `index` (< len): nodes walked by count from the nearer end.
    fn locate(&self, index: usize) -> Option<(Pos, usize)> {
        if index >= self.len {
            return None;
        }
        let (node, k) = if index < self.len / 2 {
            let mut rest = index;
            let mut i = 0;
            loop {
                let c = self.nodes[i].count as usize;
                if rest < c {
                    break (i, rest);
                }
                rest -= c;
                i += 1;
            }
        } else {
            let mut rest = self.len - 1 - index;
            let mut i = self.nodes.len() - 1;
            loop {
                let c = self.nodes[i].count as usize;
                if rest < c {
                    break (i, c - 1 - rest);
                }
                rest -= c;
                i -= 1;
            }
        };
        Some((
            Pos {
                node,
                off: self.nodes[node].offset_of(k),
            },
            k,
        ))
    }

    #[inline]
    fn at(&self, p: Pos) -> (Elem<'_>, usize) {
        decode(&self.nodes[p.node].buf, p.off)
    }

    /// Element `index` (0-based from the head).
    pub fn get(&self, index: usize) -> Option<Elem<'_>> {
        let (p, _) = self.locate(index)?;
        Some(self.at(p).0)
    }

    /// The entry after `p`.
    #[inline]
    fn next_pos(&self, p: Pos) -> Option<Pos> {
        let n = self.at(p).1;
        if p.off + n < self.nodes[p.node].buf.len() {
            Some(Pos {
                node: p.node,
                off: p.off + n,
            })
        } else if p.node + 1 < self.nodes.len() {
            Some(Pos {
                node: p.node + 1,
                off: 0,
            })
        } else {
            None
        }
    }

    /// The entry before `p`.
    #[inline]
    fn prev_pos(&self, p: Pos) -> Option<Pos> {
        if p.off > 0 {
            Some(Pos {
                node: p.node,
                off: prev_start(&self.nodes[p.node].buf, p.off),
            })
        } else if p.node > 0 {
            let b = &self.nodes[p.node - 1].buf;
            Some(Pos {
                node: p.node - 1,
                off: prev_start(b, b.len()),
            })
        } else {
            None
        }
    }

    /// The elements from `index` towards the tail (`forward`) or the head.
    pub fn iter_from(&self, index: usize, forward: bool) -> Iter<'_> {
        Iter {
            list: self,
            pos: self.locate(index).map(|(p, _)| p),
            forward,
        }
    }

    /// Every element, head to tail.
    pub fn iter(&self) -> Iter<'_> {
        self.iter_from(0, true)
    }

    /// Replaces element `index`; false when out of range.
    pub fn set(&mut self, index: usize, e: &[u8]) -> bool {
        self.set_with(index, e, Fill::current())
    }

    fn set_with(&mut self, index: usize, e: &[u8], fill: Fill) -> bool {
        let Some((p, _)) = self.locate(index) else {
            return false;
        };
        let old = self.at(p).1;
        let enc = encode(e);
        let node = &self.nodes[p.node];
        if node.count == 1 || node.buf.len() - old + enc.len() <= fill.bytes {
            self.with_node(p.node, |node| {
                let n = enc.len();
                if n > old {
                    node.reserve(n - old, false);
                }
                let len = node.buf.len();
                if n > old {
                    node.buf.resize(len + n - old, 0);
                    node.buf.copy_within(p.off + old..len, p.off + n);
                } else if n < old {
                    node.buf.copy_within(p.off + old..len, p.off + n);
                    node.buf.truncate(len - (old - n));
                }
                enc.write(&mut node.buf[p.off..]);
                node.shrink();
            });
            return true;
        }
        // It does not fit this node: out, then in again where it was (the node splits).
        self.with_node(p.node, |node| node.remove(p.off, p.off + old, 1));
        self.len -= 1;
        self.insert_at(p, &enc, fill);
        true
    }

    /// Inserts `enc` at `p` (an entry boundary; `p.off` may be the node's end), splitting a
    /// full node. The caller counted nothing yet.
    fn insert_at(&mut self, p: Pos, enc: &Enc<'_>, fill: Fill) {
        let n = enc.len();
        self.len += 1;
        let (i, off) = (p.node, p.off);
        if fill.allows(&self.nodes[i], n) {
            self.with_node(i, |node| node.insert(off, enc));
            return;
        }
        if off == 0 {
            if i > 0 && fill.allows(&self.nodes[i - 1], n) {
                self.with_node(i - 1, |node| node.insert(node.buf.len(), enc));
            } else {
                self.add_node(i, Node::with(enc));
            }
            return;
        }
        if off == self.nodes[i].buf.len() {
            if i + 1 < self.nodes.len() && fill.allows(&self.nodes[i + 1], n) {
                self.with_node(i + 1, |node| node.insert(0, enc));
            } else {
                self.add_node(i + 1, Node::with(enc));
            }
            return;
        }
        // Split the node at `off`: the left keeps its buffer (shrunk), the right is new.
        let right = self.with_node(i, |node| {
            let before = node.entries_before(off);
            let mut rbuf = Vec::with_capacity(usable(node.buf.len() - off));
            rbuf.extend_from_slice(&node.buf[off..]);
            let right = Node {
                buf: rbuf,
                count: node.count - before,
            };
            node.buf.truncate(off);
            node.count = before;
            node.buf.shrink_to(usable(off));
            right
        });
        self.add_node(i + 1, right);
        if fill.allows(&self.nodes[i], n) {
            self.with_node(i, |node| node.insert(node.buf.len(), enc));
        } else if fill.allows(&self.nodes[i + 1], n) {
            self.with_node(i + 1, |node| node.insert(0, enc));
        } else {
            self.add_node(i + 1, Node::with(enc));
        }
    }

    /// Inserts `e` before (or after) the first element equal to `pivot`; false when there is
    /// none (LINSERT).
    pub fn insert_by_pivot(&mut self, pivot: &[u8], e: &[u8], after: bool) -> bool {
        self.insert_by_pivot_with(pivot, e, after, Fill::current())
    }

    fn insert_by_pivot_with(&mut self, pivot: &[u8], e: &[u8], after: bool, fill: Fill) -> bool {
        let pint = int_of(pivot);
        let mut pos = self.locate(0).map(|(p, _)| p);
        while let Some(p) = pos {
            let (elem, n) = self.at(p);
            if elem.eq_bytes(pivot, pint) {
                let at = if after {
                    Pos {
                        node: p.node,
                        off: p.off + n,
                    }
                } else {
                    p
                };
                self.insert_at(at, &encode(e), fill);
                return true;
            }
            pos = self.next_pos(p);
        }
        false
    }

    /// Removes `count` elements from index `start` (within the list).
    pub fn delete_range(&mut self, start: usize, count: usize) {
        let count = count.min(self.len.saturating_sub(start));
        if count == 0 {
            return;
        }
        let Some((p, k)) = self.locate(start) else {
            return;
        };
        self.len -= count;
        let (mut i, mut off, mut k, mut left) = (p.node, p.off, k, count);
        while left > 0 {
            let c = self.nodes[i].count as usize;
            if off == 0 && c <= left {
                left -= c;
                if let Some(n) = self.nodes.remove(i) {
                    self.node_bytes -= n.charge();
                }
                continue;
            }
            let take = left.min(c - k);
            self.with_node(i, |node| {
                let mut end = off;
                for _ in 0..take {
                    end += decode(&node.buf, end).1;
                }
                node.remove(off, end, take as u32);
            });
            left -= take;
            i += 1;
            off = 0;
            k = 0;
        }
        self.shrink_deque();
    }

    /// Removes up to `limit` elements equal to `e`, from the head (or from the tail when
    /// `from_tail`); returns how many (LREM).
    pub fn remove_matching(&mut self, e: &[u8], limit: usize, from_tail: bool) -> usize {
        let eint = int_of(e);
        let mut removed = 0;
        let order: Vec<usize> = if from_tail {
            (0..self.nodes.len()).rev().collect()
        } else {
            (0..self.nodes.len()).collect()
        };
        for i in order {
            if removed >= limit {
                break;
            }
            let node = &self.nodes[i];
            let mut hits: Vec<(usize, usize)> = Vec::new();
            let mut at = 0;
            while at < node.buf.len() {
                let (elem, n) = decode(&node.buf, at);
                if elem.eq_bytes(e, eint) {
                    hits.push((at, at + n));
                }
                at += n;
            }
            let want = limit - removed;
            if hits.len() > want {
                if from_tail {
                    hits.drain(..hits.len() - want);
                } else {
                    hits.truncate(want);
                }
            }
            if hits.is_empty() {
                continue;
            }
            removed += hits.len();
            self.with_node(i, |node| {
                let gone: usize = hits.iter().map(|(a, b)| b - a).sum();
                let keep = node.buf.len() - gone;
                let mut nb = Vec::with_capacity(usable(keep));
                let mut from = 0;
                for &(a, b) in &hits {
                    nb.extend_from_slice(&node.buf[from..a]);
                    from = b;
                }
                nb.extend_from_slice(&node.buf[from..]);
                node.buf = nb;
                node.count -= hits.len() as u32;
            });
        }
        if removed > 0 {
            self.len -= removed;
            let mut freed = 0;
            self.nodes.retain(|n| {
                if n.count == 0 {
                    freed += n.charge();
                    false
                } else {
                    true
                }
            });
            self.node_bytes -= freed;
            self.shrink_deque();
        }
        removed
    }

    /// Every element, head to tail, as owned bytes (tests, COPY-like paths).
    pub fn to_vecs(&self) -> Vec<Vec<u8>> {
        self.iter().map(Elem::to_vec).collect()
    }
}

/// Iterator over a list's elements from a position, either way.
#[derive(Debug)]
pub struct Iter<'a> {
    list: &'a List,
    pos: Option<Pos>,
    forward: bool,
}

impl<'a> Iterator for Iter<'a> {
    type Item = Elem<'a>;

    #[inline]
    fn next(&mut self) -> Option<Elem<'a>> {
        let p = self.pos?;
        let list: &'a List = self.list;
        let buf = &list.nodes[p.node].buf;
        let (e, n) = decode(buf, p.off);
        self.pos = if !self.forward {
            list.prev_pos(p)
        } else if p.off + n < buf.len() {
            Some(Pos {
                node: p.node,
                off: p.off + n,
            })
        } else if p.node + 1 < list.nodes.len() {
            Some(Pos {
                node: p.node + 1,
                off: 0,
            })
        } else {
            None
        };
        Some(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elems() -> Vec<Vec<u8>> {
        let mut v: Vec<Vec<u8>> = vec![
            b"".to_vec(),
            b"0".to_vec(),
            b"127".to_vec(),
            b"128".to_vec(),
            b"-1".to_vec(),
            b"-4096".to_vec(),
            b"4095".to_vec(),
            b"4096".to_vec(),
            b"-32768".to_vec(),
            b"32767".to_vec(),
            b"32768".to_vec(),
            b"-8388608".to_vec(),
            b"8388607".to_vec(),
            b"8388608".to_vec(),
            b"2147483647".to_vec(),
            b"-2147483648".to_vec(),
            b"2147483648".to_vec(),
            b"9223372036854775807".to_vec(),
            b"-9223372036854775808".to_vec(),
            b"9223372036854775808".to_vec(),
            b"007".to_vec(),
            b"-0".to_vec(),
            b"+1".to_vec(),
            b"hello".to_vec(),
        ];
        for n in [63, 64, 127, 128, 4095, 4096, 20_000] {
            v.push(vec![b'x'; n]);
        }
        v
    }

    #[test]
    fn every_encoding_round_trips_both_ways() {
        let all = elems();
        let mut l = List::new();
        for e in &all {
            l.push_back(e);
        }
        assert_eq!(l.to_vecs(), all);
        let back: Vec<Vec<u8>> = l.iter_from(l.len() - 1, false).map(Elem::to_vec).collect();
        let mut rev = all.clone();
        rev.reverse();
        assert_eq!(back, rev);
        for (i, e) in all.iter().enumerate() {
            assert_eq!(l.get(i).map(Elem::to_vec).as_ref(), Some(e), "{i}");
        }
        // Integers are stored as integers.
        assert_eq!(l.get(1), Some(Elem::Int(0)));
        assert_eq!(l.get(17), Some(Elem::Int(i64::MAX)));
        assert_eq!(l.get(20), Some(Elem::Str(b"007")));
    }

    /// A deterministic pseudo-random sequence.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, n: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) % n
        }
    }

    #[test]
    fn random_operations_match_a_model_and_stay_within_their_bounds() {
        for fill in [-2i64, -1, 1, 2, 5, 0, -5] {
            let fill_l = Fill::from_setting(fill);
            let mut rng = Lcg((fill as u64).wrapping_add(17));
            let mut l = List::new();
            let mut model: VecDeque<Vec<u8>> = VecDeque::new();
            for step in 0..3000 {
                let e: Vec<u8> = match rng.next(5) {
                    0 => rng.next(100_000).to_string().into_bytes(),
                    1 => vec![b'a' + rng.next(3) as u8; rng.next(20) as usize],
                    2 => vec![b'y'; rng.next(3000) as usize],
                    3 => format!("e{}", rng.next(50)).into_bytes(),
                    _ => vec![b'z'; rng.next(9000) as usize],
                };
                let before = l.charge();
                match rng.next(10) {
                    0 | 1 => {
                        let bound = l.push_bound_with(std::iter::once(&e[..]), fill_l);
                        l.push_back_with(&e, fill_l);
                        model.push_back(e);
                        assert!(l.charge() <= before + bound, "push_back at {step}");
                    }
                    2 | 3 => {
                        let bound = l.push_bound_with(std::iter::once(&e[..]), fill_l);
                        l.push_front_with(&e, fill_l);
                        model.push_front(e);
                        assert!(l.charge() <= before + bound, "push_front at {step}");
                    }
                    4 if step % 7 == 0 => {
                        let batch: Vec<Vec<u8>> = (0..rng.next(60))
                            .map(|i| vec![b'b'; (i * 37 % 500) as usize])
                            .collect();
                        let bound = l.push_bound_with(batch.iter().map(|b| &b[..]), fill_l);
                        for b in batch {
                            l.push_back_with(&b, fill_l);
                            model.push_back(b);
                        }
                        assert!(l.charge() <= before + bound, "batch at {step}");
                    }
                    4 => {
                        assert_eq!(l.pop_front(), model.pop_front());
                        assert!(l.charge() <= before);
                    }
                    5 => {
                        assert_eq!(l.pop_back(), model.pop_back());
                        assert!(l.charge() <= before);
                    }
                    6 if !model.is_empty() => {
                        let i = rng.next(model.len() as u64) as usize;
                        let bound = l.insert_bound_with(&e, fill_l);
                        assert!(l.set_with(i, &e, fill_l));
                        model[i] = e;
                        assert!(l.charge() <= before + bound, "set at {step}");
                    }
                    7 if !model.is_empty() => {
                        let i = rng.next(model.len() as u64) as usize;
                        let pivot = model[i].clone();
                        let after = rng.next(2) == 0;
                        let bound = l.insert_bound_with(&e, fill_l);
                        assert!(l.insert_by_pivot_with(&pivot, &e, after, fill_l));
                        let first = model.iter().position(|x| *x == pivot).unwrap();
                        model.insert(first + usize::from(after), e);
                        assert!(l.charge() <= before + bound, "insert at {step}");
                    }
                    8 if !model.is_empty() => {
                        let start = rng.next(model.len() as u64) as usize;
                        let count = rng.next(5) as usize;
                        l.delete_range(start, count);
                        let end = (start + count).min(model.len());
                        model.drain(start..end);
                        assert!(l.charge() <= before);
                    }
                    9 if !model.is_empty() => {
                        let i = rng.next(model.len() as u64) as usize;
                        let target = model[i].clone();
                        let limit = rng.next(3) as usize + 1;
                        let tail = rng.next(2) == 0;
                        let n = l.remove_matching(&target, limit, tail);
                        let mut removed = 0;
                        if tail {
                            let mut j = model.len();
                            while j > 0 && removed < limit {
                                j -= 1;
                                if model[j] == target {
                                    model.remove(j);
                                    removed += 1;
                                }
                            }
                        } else {
                            let mut j = 0;
                            while j < model.len() && removed < limit {
                                if model[j] == target {
                                    model.remove(j);
                                    removed += 1;
                                } else {
                                    j += 1;
                                }
                            }
                        }
                        assert_eq!(n, removed);
                        assert!(l.charge() <= before);
                    }
                    _ => {}
                }
                assert_eq!(l.len(), model.len(), "len at {step}");
                let recount: u64 = l.nodes.iter().map(Node::charge).sum();
                assert_eq!(recount, l.node_bytes, "running sum at {step}");
                assert!(l.nodes.iter().all(|n| n.count > 0));
                if step % 97 == 0 {
                    assert_eq!(l.to_vecs(), Vec::from(model.clone()), "at {step}");
                    let mid = model.len() / 2;
                    if !model.is_empty() {
                        assert_eq!(l.get(mid).map(Elem::to_vec).as_ref(), model.get(mid));
                    }
                }
            }
            assert_eq!(l.to_vecs(), Vec::from(model));
            let c = l.clone();
            assert_eq!(c.to_vecs(), l.to_vecs());
            assert!(c.charge() <= l.charge() + 64);
        }
    }

    #[test]
    fn a_hundred_short_elements_take_about_their_bytes() {
        let mut l = List::new();
        for i in 0..100 {
            l.push_back(format!("element:{i:03}").as_bytes());
        }
        assert_eq!(l.node_count(), 1);
        // 11 bytes each + header + back-length: 13 bytes, plus at most an eighth of slack, the
        // deque and rounding (Redis 7.0: a 1,207-byte listpack in a 1,280-byte class, plus a
        // 32-byte node and a 48-byte quicklist).
        assert!(l.charge() <= 1300 + 1300 / 8 + 48 + 32, "{}", l.charge());
    }
}
