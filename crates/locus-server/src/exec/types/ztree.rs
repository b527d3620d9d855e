//! The large encoding of a sorted set (the one Redis calls `skiplist`, and OBJECT ENCODING still
//! does): an order-statistic B+ tree ordered by (score, member), for O(log n) insert, delete,
//! rank, element-by-rank and range starts, beside a member -> slot hash table (keyed with a
//! per-process random hash) for O(1) lookups.
//!
//! Members and their scores live in an arena of slots (`Vec`) addressed by `u32`; a slot never
//! moves while its member is there (ZSCAN walks the slots). The tree's leaves hold up to [`B`]
//! entries, each a score and a slot number, side by side in two arrays, so a search compares
//! scores in one node's contiguous memory and reads a member's bytes only on a tie of scores.
//! Inner nodes hold, for each child, its first key and how many entries it holds (for ranks).
//! A skiplist takes a dependent load per step on some 2 log4(n) steps; this tree takes one or two
//! cache lines per level on log16(n) or so levels, which is what made ZADD on a 100,000-member
//! set cost twice Redis's CPU (issue 30).
//!
//! The charge counts every allocation as the allocator rounds it ([`super::alloc`]).

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

use hashbrown::HashTable;

use super::alloc;

/// The most entries of a leaf and children of an inner node; one more is held for a moment
/// before the node splits.
const B: usize = 31;
const CAP: usize = B + 1;
/// A node this narrow is merged with a neighbour when both fit in one.
const MIN: usize = B / 4;

/// A member and its score; a free slot has no member and a NaN score (no member has one).
#[derive(Debug, Clone)]
struct Slot {
    member: Box<[u8]>,
    score: f64,
}

#[derive(Debug, Clone)]
struct Leaf {
    len: usize,
    scores: [f64; CAP],
    ids: [u32; CAP],
}

/// Children with, for each, its first key (score and slot) and its number of entries.
#[derive(Debug)]
struct Inner {
    scores: Vec<f64>,
    ids: Vec<u32>,
    counts: Vec<u32>,
    kids: Vec<Tree>,
}

#[derive(Debug, Clone)]
enum Tree {
    Leaf(Box<Leaf>),
    Inner(Box<Inner>),
}

/// A `Vec` of capacity [`CAP`] holding `v`: every inner vector has that capacity, so none ever
/// reallocates and the charge knows its size.
fn cap_vec<T: Clone>(v: &[T]) -> Vec<T> {
    let mut o = Vec::with_capacity(CAP);
    o.extend_from_slice(v);
    o
}

impl Clone for Inner {
    fn clone(&self) -> Self {
        Inner {
            scores: cap_vec(&self.scores),
            ids: cap_vec(&self.ids),
            counts: cap_vec(&self.counts),
            kids: cap_vec(&self.kids),
        }
    }
}

/// Bytes a leaf takes.
fn leaf_bytes() -> u64 {
    alloc::heap(size_of::<Leaf>())
}

/// Bytes an inner node takes.
fn inner_bytes() -> u64 {
    alloc::heap(size_of::<Inner>())
        + alloc::vec::<f64>(CAP)
        + 2 * alloc::vec::<u32>(CAP)
        + alloc::vec::<Tree>(CAP)
}

fn empty_leaf() -> Leaf {
    Leaf {
        len: 0,
        scores: [0.0; CAP],
        ids: [0; CAP],
    }
}

/// The first index of `0..n` where `pred` fails (`pred` holds on a prefix).
#[inline]
fn partition(n: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Whether the entry (`s2`, slot `id2`) sorts before (`s`, `m`); before or equal when `or_eq`.
#[inline]
fn entry_before(slots: &[Slot], s2: f64, id2: u32, s: f64, m: &[u8], or_eq: bool) -> bool {
    if s2 != s {
        return s2 < s;
    }
    let m2 = &*slots[id2 as usize].member;
    if or_eq { m2 <= m } else { m2 < m }
}

/// Entry counts kept while nodes are made and freed.
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    leaves: usize,
    inners: usize,
}

impl Tree {
    fn new_leaf(t: &mut Tally) -> Tree {
        t.leaves += 1;
        Tree::Leaf(Box::new(empty_leaf()))
    }

    /// Entries (a leaf) or children (an inner node).
    fn width(&self) -> usize {
        match self {
            Tree::Leaf(l) => l.len,
            Tree::Inner(n) => n.kids.len(),
        }
    }

    /// Entries under it.
    fn count(&self) -> usize {
        match self {
            Tree::Leaf(l) => l.len,
            Tree::Inner(n) => n.counts.iter().map(|&c| c as usize).sum(),
        }
    }

    /// Its first key (it is not empty).
    fn first(&self) -> (f64, u32) {
        match self {
            Tree::Leaf(l) => (l.scores[0], l.ids[0]),
            Tree::Inner(n) => (n.scores[0], n.ids[0]),
        }
    }

    /// Frees it (counted out of `t`).
    fn forget(self, t: &mut Tally) {
        match self {
            Tree::Leaf(_) => t.leaves -= 1,
            Tree::Inner(_) => t.inners -= 1,
        }
    }
}

impl Inner {
    /// The child whose range holds (`s`, `m`): the last one whose first key is at or before it.
    #[inline]
    fn route(&self, slots: &[Slot], s: f64, m: &[u8]) -> usize {
        partition(self.kids.len(), |j| {
            entry_before(slots, self.scores[j], self.ids[j], s, m, true)
        })
        .saturating_sub(1)
    }

    fn refresh(&mut self, i: usize) {
        let (s, id) = self.kids[i].first();
        self.scores[i] = s;
        self.ids[i] = id;
    }

    fn put(&mut self, i: usize, kid: Tree) {
        let (s, id) = kid.first();
        self.counts.insert(i, kid.count() as u32);
        self.scores.insert(i, s);
        self.ids.insert(i, id);
        self.kids.insert(i, kid);
    }

    fn take(&mut self, i: usize) -> Tree {
        self.counts.remove(i);
        self.scores.remove(i);
        self.ids.remove(i);
        self.kids.remove(i)
    }

    /// Merges child `j + 1` into child `j` when both fit in one node.
    fn merge(&mut self, j: usize, t: &mut Tally) {
        if self.kids[j].width() + self.kids[j + 1].width() > B {
            return;
        }
        let c = self.counts[j + 1];
        let right = self.take(j + 1);
        self.counts[j] += c;
        match (&mut self.kids[j], right) {
            (Tree::Leaf(a), Tree::Leaf(b)) => {
                let (n, m) = (a.len, b.len);
                a.scores[n..n + m].copy_from_slice(&b.scores[..m]);
                a.ids[n..n + m].copy_from_slice(&b.ids[..m]);
                a.len = n + m;
                t.leaves -= 1;
            }
            (Tree::Inner(a), Tree::Inner(b)) => {
                let b = *b;
                a.scores.extend(b.scores);
                a.ids.extend(b.ids);
                a.counts.extend(b.counts);
                a.kids.extend(b.kids);
                t.inners -= 1;
            }
            _ => unreachable!("siblings are at one depth"),
        }
    }
}

/// Inserts (`s`, `m`) held in slot `id` (absent) under `tree`; the new right sibling when the
/// node split.
fn insert(
    slots: &[Slot],
    tree: &mut Tree,
    s: f64,
    m: &[u8],
    id: u32,
    t: &mut Tally,
) -> Option<Tree> {
    match tree {
        Tree::Leaf(l) => {
            let n = l.len;
            let i = partition(n, |j| {
                entry_before(slots, l.scores[j], l.ids[j], s, m, false)
            });
            l.scores.copy_within(i..n, i + 1);
            l.ids.copy_within(i..n, i + 1);
            l.scores[i] = s;
            l.ids[i] = id;
            l.len = n + 1;
            if l.len <= B {
                return None;
            }
            let at = l.len / 2;
            let mut r = empty_leaf();
            let k = l.len - at;
            r.scores[..k].copy_from_slice(&l.scores[at..l.len]);
            r.ids[..k].copy_from_slice(&l.ids[at..l.len]);
            r.len = k;
            l.len = at;
            t.leaves += 1;
            Some(Tree::Leaf(Box::new(r)))
        }
        Tree::Inner(n) => {
            let i = n.route(slots, s, m);
            let split = insert(slots, &mut n.kids[i], s, m, id, t);
            n.counts[i] += 1;
            if i == 0 {
                n.refresh(0);
            }
            let right = split?;
            n.counts[i] -= right.count() as u32;
            n.put(i + 1, right);
            if n.kids.len() <= B {
                return None;
            }
            let at = n.kids.len() / 2;
            let r = Inner {
                scores: cap_vec(&n.scores[at..]),
                ids: cap_vec(&n.ids[at..]),
                counts: cap_vec(&n.counts[at..]),
                kids: {
                    let mut v = Vec::with_capacity(CAP);
                    v.extend(n.kids.drain(at..));
                    v
                },
            };
            n.scores.truncate(at);
            n.ids.truncate(at);
            n.counts.truncate(at);
            t.inners += 1;
            Some(Tree::Inner(Box::new(r)))
        }
    }
}

/// Removes (`s`, `m`), held in slot `id` (present), from under `tree`. A child left empty is
/// freed; a narrow one is merged with a neighbour.
fn remove(slots: &[Slot], tree: &mut Tree, s: f64, m: &[u8], id: u32, t: &mut Tally) {
    match tree {
        Tree::Leaf(l) => {
            let n = l.len;
            let i = partition(n, |j| {
                entry_before(slots, l.scores[j], l.ids[j], s, m, false)
            });
            debug_assert!(i < n && l.ids[i] == id);
            l.scores.copy_within(i + 1..n, i);
            l.ids.copy_within(i + 1..n, i);
            l.len = n - 1;
        }
        Tree::Inner(n) => {
            let i = n.route(slots, s, m);
            remove(slots, &mut n.kids[i], s, m, id, t);
            n.counts[i] -= 1;
            if n.counts[i] == 0 {
                n.take(i).forget(t);
                return;
            }
            n.refresh(i);
            if n.kids[i].width() < MIN && n.kids.len() > 1 {
                n.merge(if i + 1 < n.kids.len() { i } else { i - 1 }, t);
            }
        }
    }
}

/// Calls `f` on the entries of ranks `lo..hi` under `tree`, descending when `rev`.
fn walk<'a>(
    slots: &'a [Slot],
    tree: &'a Tree,
    lo: usize,
    hi: usize,
    rev: bool,
    f: &mut dyn FnMut(&'a [u8], f64),
) {
    match tree {
        Tree::Leaf(l) => {
            let mut one = |j: usize| f(&slots[l.ids[j] as usize].member, l.scores[j]);
            if rev {
                (lo..hi).rev().for_each(&mut one);
            } else {
                (lo..hi).for_each(&mut one);
            }
        }
        Tree::Inner(n) => {
            if rev {
                let mut end: usize = n.counts.iter().map(|&c| c as usize).sum();
                for (kid, &c) in n.kids.iter().zip(&n.counts).rev() {
                    let start = end - c as usize;
                    if start < hi && end > lo {
                        walk(
                            slots,
                            kid,
                            lo.saturating_sub(start),
                            hi.min(end) - start,
                            rev,
                            f,
                        );
                    }
                    if start <= lo {
                        break;
                    }
                    end = start;
                }
            } else {
                let mut start = 0usize;
                for (kid, &c) in n.kids.iter().zip(&n.counts) {
                    let end = start + c as usize;
                    if start >= hi {
                        break;
                    }
                    if end > lo {
                        walk(
                            slots,
                            kid,
                            lo.saturating_sub(start),
                            hi.min(end) - start,
                            rev,
                            f,
                        );
                    }
                    start = end;
                }
            }
        }
    }
}

/// How many leading entries under `tree` satisfy `pred` (true on a prefix of the order).
fn count_while(slots: &[Slot], tree: &Tree, pred: &dyn Fn(f64, &[u8]) -> bool) -> usize {
    match tree {
        Tree::Leaf(l) => partition(l.len, |j| {
            pred(l.scores[j], &slots[l.ids[j] as usize].member)
        }),
        Tree::Inner(n) => {
            let k = partition(n.kids.len(), |j| {
                pred(n.scores[j], &slots[n.ids[j] as usize].member)
            });
            if k == 0 {
                return 0;
            }
            let before: usize = n.counts[..k - 1].iter().map(|&c| c as usize).sum();
            before + count_while(slots, &n.kids[k - 1], pred)
        }
    }
}

/// The tree with a member index.
#[derive(Debug, Clone)]
pub struct ZTree {
    slots: Vec<Slot>,
    free: Vec<u32>,
    root: Tree,
    tally: Tally,
    index: HashTable<u32>,
    hasher: RandomState,
    /// Bytes of the members' allocations.
    heap: u64,
}

impl Default for ZTree {
    fn default() -> Self {
        Self::new()
    }
}

impl ZTree {
    /// An empty tree.
    pub fn new() -> Self {
        let mut tally = Tally::default();
        let root = Tree::new_leaf(&mut tally);
        Self {
            slots: Vec::new(),
            free: Vec::new(),
            root,
            tally,
            index: HashTable::new(),
            hasher: RandomState::new(),
            heap: 0,
        }
    }

    /// Members held.
    #[inline]
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether it holds none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn tree_bytes(&self) -> u64 {
        self.tally.leaves as u64 * leaf_bytes() + self.tally.inners as u64 * inner_bytes()
    }

    /// Memory held: the slots, the table, the members and the tree's nodes.
    pub fn charge(&self) -> u64 {
        alloc::vec::<Slot>(self.slots.capacity())
            + alloc::vec::<u32>(self.free.capacity())
            + alloc::table::<u32>(self.index.capacity())
            + self.heap
            + self.tree_bytes()
    }

    /// Levels of the tree (1: the root is a leaf).
    fn height(&self) -> usize {
        let (mut h, mut t) = (1, &self.root);
        while let Tree::Inner(n) = t {
            h += 1;
            t = &n.kids[0];
        }
        h
    }

    /// The most [`Self::charge`] grows when `count` members of `bytes` bytes in all are added.
    pub fn grow_bound(&self, count: usize, bytes: usize) -> u64 {
        // Each member: its bytes as the allocator rounds them (at most its length + 40), and a
        // split of every node on its path, a new root above them.
        let mut g = count as u64 * (40 + leaf_bytes() + self.height() as u64 * inner_bytes())
            + bytes as u64;
        let need_slots = (self.slots.len() + count).saturating_sub(self.free.len());
        if need_slots > self.slots.capacity() {
            g += alloc::vec::<Slot>(alloc::grown(self.slots.capacity(), need_slots));
        }
        let need = self.index.len() + count;
        if need > self.index.capacity() {
            g += alloc::table::<u32>(alloc::grown(self.index.capacity(), need) * 2);
        }
        g
    }

    /// The slot of `member`.
    #[inline]
    fn find(&self, member: &[u8]) -> Option<u32> {
        let h = self.hasher.hash_one(member);
        self.index
            .find(h, |&i| &*self.slots[i as usize].member == member)
            .copied()
    }

    /// The score of `member`.
    #[inline]
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.find(member).map(|i| self.slots[i as usize].score)
    }

    /// Puts entry (`score`, slot `id`) into the tree.
    fn link(&mut self, id: u32, score: f64) {
        let Self {
            slots, root, tally, ..
        } = self;
        let m = &slots[id as usize].member;
        if let Some(right) = insert(slots, root, score, m, id, tally) {
            let left = std::mem::replace(root, Tree::Leaf(Box::new(empty_leaf())));
            let mut n = Inner {
                scores: Vec::with_capacity(CAP),
                ids: Vec::with_capacity(CAP),
                counts: Vec::with_capacity(CAP),
                kids: Vec::with_capacity(CAP),
            };
            n.put(0, left);
            n.put(1, right);
            *root = Tree::Inner(Box::new(n));
            tally.inners += 1;
        }
    }

    /// Takes entry (its score, slot `id`) out of the tree.
    fn unlink(&mut self, id: u32) {
        let Self {
            slots, root, tally, ..
        } = self;
        let slot = &slots[id as usize];
        remove(slots, root, slot.score, &slot.member, id, tally);
        loop {
            let next = match root {
                Tree::Inner(n) if n.kids.is_empty() => Tree::new_leaf(tally),
                Tree::Inner(n) if n.kids.len() == 1 => n.kids.pop().expect("one child"),
                _ => break,
            };
            tally.inners -= 1;
            *root = next;
        }
    }

    /// Adds `member` (absent) with `score`.
    pub fn insert(&mut self, member: &[u8], score: f64) {
        debug_assert!(self.find(member).is_none());
        self.heap += alloc::bytes(member.len());
        let slot = Slot {
            member: member.into(),
            score,
        };
        let id = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = slot;
                i
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        };
        let (slots, hasher) = (&self.slots, &self.hasher);
        self.index.insert_unique(hasher.hash_one(member), id, |&i| {
            hasher.hash_one(&*slots[i as usize].member)
        });
        self.link(id, score);
    }

    /// Frees slot `id` (out of the tree and the index): its member and score.
    fn release(&mut self, id: u32) -> (Box<[u8]>, f64) {
        let s = &mut self.slots[id as usize];
        self.heap -= alloc::bytes(s.member.len());
        let member = std::mem::take(&mut s.member);
        let score = std::mem::replace(&mut s.score, f64::NAN);
        self.free.push(id);
        (member, score)
    }

    /// Removes `member`; its score when it was there.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let h = self.hasher.hash_one(member);
        let slots = &self.slots;
        let (id, _) = self
            .index
            .find_entry(h, |&i| &*slots[i as usize].member == member)
            .ok()?
            .remove();
        self.unlink(id);
        Some(self.release(id).1)
    }

    /// Sets the score of `member` (present or not); its old score.
    pub fn set_score(&mut self, member: &[u8], score: f64) -> Option<f64> {
        let Some(id) = self.find(member) else {
            self.insert(member, score);
            return None;
        };
        self.unlink(id);
        let old = std::mem::replace(&mut self.slots[id as usize].score, score);
        self.link(id, score);
        Some(old)
    }

    /// Removes the lowest member: its bytes and score.
    pub fn pop_first(&mut self) -> Option<(Box<[u8]>, f64)> {
        if self.is_empty() {
            return None;
        }
        let mut t = &self.root;
        while let Tree::Inner(n) = t {
            t = &n.kids[0];
        }
        let (_, id) = t.first();
        let h = self.hasher.hash_one(&*self.slots[id as usize].member);
        if let Ok(e) = self.index.find_entry(h, |&i| i == id) {
            e.remove();
        }
        self.unlink(id);
        Some(self.release(id))
    }

    /// One step of ZSCAN over the slots: calls `f` with the live members in slots
    /// `cursor..cursor + count` and returns the next cursor, 0 after the last slot. A live member
    /// never changes slot, so every member present throughout a walk is visited; a member added
    /// meanwhile may take a slot already passed, and be missed, as Redis allows.
    pub fn scan_slots(&self, cursor: u64, count: usize, mut f: impl FnMut(&[u8], f64)) -> u64 {
        let n = self.slots.len();
        let start = usize::try_from(cursor).map_or(n, |c| c.min(n));
        let end = start.saturating_add(count.max(1)).min(n);
        for s in &self.slots[start..end] {
            if !s.score.is_nan() {
                f(&s.member, s.score);
            }
        }
        if end >= n { 0 } else { end as u64 }
    }

    /// How many leading members (in order) satisfy `pred`, which holds for a prefix of the
    /// order and then never again: O(log n).
    pub fn count_while(&self, pred: impl Fn(f64, &[u8]) -> bool) -> usize {
        count_while(&self.slots, &self.root, &pred)
    }

    /// Calls `f` on the members of ranks `start..end` (ascending), in descending order when
    /// `rev`.
    pub fn visit(&self, start: usize, end: usize, rev: bool, mut f: impl FnMut(&[u8], f64)) {
        if start >= end || end > self.len() {
            return;
        }
        walk(&self.slots, &self.root, start, end, rev, &mut f);
    }

    /// Calls `f` on every member in order, borrowed for as long as the tree is.
    pub fn visit_all<'a>(&'a self, mut f: impl FnMut(&'a [u8], f64)) {
        walk(&self.slots, &self.root, 0, self.len(), false, &mut f);
    }

    /// The 0-based rank of `member` with its score.
    pub fn rank(&self, member: &[u8]) -> Option<(usize, f64)> {
        let s = self.score(member)?;
        Some((
            self.count_while(|sc, m| sc < s || (sc == s && m < member)),
            s,
        ))
    }

    /// Checks the tree's invariants (tests).
    #[cfg(test)]
    fn check(&self) {
        fn go(z: &ZTree, t: &Tree, root: bool, out: &mut Vec<(f64, u32)>, tally: &mut Tally) {
            match t {
                Tree::Leaf(l) => {
                    tally.leaves += 1;
                    assert!(l.len <= B);
                    assert!(root || l.len > 0);
                    for j in 0..l.len {
                        assert_eq!(
                            z.slots[l.ids[j] as usize].score.to_bits(),
                            l.scores[j].to_bits()
                        );
                        out.push((l.scores[j], l.ids[j]));
                    }
                }
                Tree::Inner(n) => {
                    tally.inners += 1;
                    assert!(n.kids.len() <= B && (n.kids.len() >= 2 || !root));
                    assert_eq!(n.kids.capacity(), CAP);
                    for (j, kid) in n.kids.iter().enumerate() {
                        assert_eq!(kid.count(), n.counts[j] as usize);
                        assert!(n.counts[j] > 0);
                        assert_eq!(kid.first(), (n.scores[j], n.ids[j]));
                        go(z, kid, false, out, tally);
                    }
                }
            }
        }
        let mut out = Vec::new();
        let mut tally = Tally::default();
        go(self, &self.root, true, &mut out, &mut tally);
        assert_eq!(tally.leaves, self.tally.leaves);
        assert_eq!(tally.inners, self.tally.inners);
        assert_eq!(out.len(), self.len());
        for w in out.windows(2) {
            let (a, b) = (&self.slots[w[0].1 as usize], &self.slots[w[1].1 as usize]);
            assert!(a.score < b.score || (a.score == b.score && a.member < b.member));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_walk_returns_every_member_present_throughout() {
        let mut rng = locus_common::Rng::new(11);
        for round in 0..20u64 {
            let mut s = ZTree::new();
            let mut live: std::collections::HashSet<Vec<u8>> = Default::default();
            for i in 0..500u64 {
                let m = format!("m{i}").into_bytes();
                s.insert(&m, (i % 13) as f64);
                live.insert(m);
            }
            let mut stayed = live.clone();
            let (mut cursor, mut seen, mut added) = (0u64, std::collections::HashSet::new(), 0);
            loop {
                let count = 1 + rng.below(40) as usize;
                cursor = s.scan_slots(cursor, count, |m, _| {
                    seen.insert(m.to_vec());
                });
                if cursor == 0 {
                    break;
                }
                for _ in 0..3 {
                    let victim = live
                        .iter()
                        .nth(rng.below(live.len() as u64) as usize)
                        .cloned();
                    if let Some(v) = victim {
                        assert!(s.remove(&v).is_some());
                        live.remove(&v);
                        stayed.remove(&v);
                    }
                }
                for _ in 0..2 {
                    let m = format!("n{round}-{added}").into_bytes();
                    added += 1;
                    s.insert(&m, 1.0);
                    live.insert(m);
                }
            }
            assert!(stayed.is_subset(&seen), "round {round}");
            assert!(seen.iter().all(|m| !m.is_empty()));
            s.check();
        }
    }

    #[test]
    fn ranks_and_ranges_match_a_sorted_vector() {
        let mut s = ZTree::new();
        let mut model: Vec<(f64, Vec<u8>)> = Vec::new();
        for i in 0..2000u32 {
            let m = format!("m{}", (i * 7919) % 1000).into_bytes();
            let sc = f64::from((i * 31) % 97);
            if let Some(old) = s.remove(&m) {
                model.retain(|(_, x)| *x != m);
                assert!(old.is_finite());
            }
            if i % 5 != 0 {
                s.insert(&m, sc);
                model.push((sc, m));
            }
            model.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            assert_eq!(s.len(), model.len());
        }
        s.check();
        for (r, (sc, m)) in model.iter().enumerate() {
            assert_eq!(s.rank(m), Some((r, *sc)));
        }
        let mut got = Vec::new();
        s.visit(10, 50, false, |m, _| got.push(m.to_vec()));
        let want: Vec<_> = model[10..50].iter().map(|(_, m)| m.clone()).collect();
        assert_eq!(got, want);
        got.clear();
        s.visit(10, 50, true, |m, _| got.push(m.to_vec()));
        assert_eq!(got, want.into_iter().rev().collect::<Vec<_>>());
        assert_eq!(
            s.count_while(|sc, _| sc < 50.0),
            model.iter().filter(|(sc, _)| *sc < 50.0).count()
        );
        for (sc, m) in model.drain(..10) {
            assert_eq!(s.pop_first(), Some((m.into_boxed_slice(), sc)));
        }
        assert_eq!(s.rank(&model[0].1), Some((0, model[0].0)));
        while let Some((_, m)) = model.pop() {
            assert!(s.remove(&m).is_some());
        }
        assert!(s.is_empty());
        assert_eq!(s.pop_first(), None);
        s.check();
        assert_eq!((s.tally.leaves, s.tally.inners), (1, 0));
    }

    /// Many members, many ties, score updates, removals from everywhere: every rank range,
    /// in both directions, against a sorted vector, and the tree's shape after each phase.
    #[test]
    fn a_deep_tree_matches_a_sorted_vector() {
        let mut rng = locus_common::Rng::new(7);
        let mut s = ZTree::new();
        let mut model: std::collections::BTreeMap<Vec<u8>, f64> = Default::default();
        let sorted = |model: &std::collections::BTreeMap<Vec<u8>, f64>| {
            let mut v: Vec<(f64, Vec<u8>)> = model.iter().map(|(m, s)| (*s, m.clone())).collect();
            v.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)));
            v
        };
        for phase in 0..6 {
            for _ in 0..6000 {
                let m = format!("k{}", rng.below(8000)).into_bytes();
                let sc = if phase % 2 == 0 {
                    rng.below(50) as f64
                } else {
                    rng.below(1 << 20) as f64 - 1000.0
                };
                match rng.below(if phase >= 4 { 2 } else { 4 }) {
                    0 => assert_eq!(s.remove(&m), model.remove(&m)),
                    _ => assert_eq!(s.set_score(&m, sc), model.insert(m, sc)),
                }
            }
            s.check();
            let v = sorted(&model);
            assert_eq!(s.len(), v.len());
            let mut all = Vec::new();
            s.visit_all(|m, sc| all.push((sc, m.to_vec())));
            assert_eq!(all, v);
            for _ in 0..50 {
                let a = rng.below(v.len() as u64 + 1) as usize;
                let b = a + rng.below((v.len() - a) as u64 + 1) as usize;
                let mut got = Vec::new();
                s.visit(a, b, true, |m, sc| got.push((sc, m.to_vec())));
                got.reverse();
                assert_eq!(got, v[a..b]);
            }
            for (r, (sc, m)) in v.iter().enumerate().step_by(97) {
                assert_eq!(s.rank(m), Some((r, *sc)));
            }
        }
        for (i, (sc, m)) in sorted(&model).into_iter().enumerate() {
            assert_eq!(s.pop_first(), Some((m.into_boxed_slice(), sc)));
            if i % 500 == 0 {
                s.check();
            }
        }
        assert_eq!(s.pop_first(), None);
        assert_eq!((s.tally.leaves, s.tally.inners), (1, 0));
    }
}
