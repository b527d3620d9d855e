//! The large encoding of a sorted set (Redis's `skiplist`): a skiplist with spans, ordered by
//! (score, member), for O(log n) insert, delete, rank, element-by-rank and range starts, beside
//! a member -> score hash table (keyed with a per-process random hash) for O(1) lookups.
//!
//! Nodes live in one arena (`Vec`) addressed by `u32`; node 0 is the head. A node holds its
//! member's bytes, its score and its first level inline (three nodes in four have no other
//! level); higher levels are one small allocation. The member index is a hash table of node
//! numbers (4 bytes a member) hashed by the member bytes the node holds, so a member is stored
//! once. The charge counts every allocation as the allocator rounds it ([`super::alloc`]).

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

use hashbrown::HashTable;

use super::alloc;

const NIL: u32 = u32::MAX;
const HEAD: u32 = 0;
/// `back` of a node whose slot is on the free list.
const FREED: u32 = u32::MAX - 1;
/// The most levels a node has (Redis's `ZSKIPLIST_MAXLEVEL`).
pub const MAX_LEVEL: usize = 32;

#[derive(Debug, Clone, Copy)]
struct Level {
    fwd: u32,
    span: u32,
}

#[derive(Debug, Clone)]
struct Node {
    member: Box<[u8]>,
    score: f64,
    back: u32,
    /// Level 0.
    l0: Level,
    /// Levels 1 and up.
    up: Box<[Level]>,
}

impl Node {
    #[inline]
    fn lv(&self, i: usize) -> Level {
        if i == 0 { self.l0 } else { self.up[i - 1] }
    }
    #[inline]
    fn lv_mut(&mut self, i: usize) -> &mut Level {
        if i == 0 {
            &mut self.l0
        } else {
            &mut self.up[i - 1]
        }
    }
    fn levels(&self) -> usize {
        1 + self.up.len()
    }
}

/// Whether (score, member) of `n` sorts before (`score`, `member`).
#[inline]
fn before(n: &Node, score: f64, member: &[u8]) -> bool {
    n.score < score || (n.score == score && &*n.member < member)
}

/// Bytes a member of `n` bytes takes.
#[inline]
fn member_bytes(n: usize) -> u64 {
    alloc::bytes(n)
}

/// Bytes the higher levels of a node of `levels` levels take.
#[inline]
fn up_bytes(levels: usize) -> u64 {
    alloc::heap((levels - 1) * size_of::<Level>())
}

/// A skiplist of (member, score) with a member index.
#[derive(Debug, Clone)]
pub struct SkipList {
    nodes: Vec<Node>,
    free: Vec<u32>,
    level: usize,
    len: usize,
    tail: u32,
    index: HashTable<u32>,
    hasher: RandomState,
    /// Bytes of the members' and the higher levels' allocations.
    heap: u64,
}

impl Default for SkipList {
    fn default() -> Self {
        Self::new()
    }
}

impl SkipList {
    /// An empty skiplist.
    pub fn new() -> Self {
        let nil = Level { fwd: NIL, span: 0 };
        let head = Node {
            member: Box::default(),
            score: 0.0,
            back: NIL,
            l0: nil,
            up: vec![nil; MAX_LEVEL - 1].into_boxed_slice(),
        };
        Self {
            nodes: vec![head],
            free: Vec::new(),
            level: 1,
            len: 0,
            tail: NIL,
            index: HashTable::new(),
            hasher: RandomState::new(),
            heap: up_bytes(MAX_LEVEL),
        }
    }

    /// Members held.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Memory held: the arena, the table, the members and the levels.
    pub fn charge(&self) -> u64 {
        alloc::vec::<Node>(self.nodes.capacity())
            + alloc::vec::<u32>(self.free.capacity())
            + alloc::table::<u32>(self.index.capacity())
            + self.heap
    }

    /// The most [`Self::charge`] grows when `count` members of `bytes` bytes in all are added.
    pub fn grow_bound(&self, count: usize, bytes: usize) -> u64 {
        // Each member: its bytes as the allocator rounds them (at most its length + 40) and at
        // most every level.
        let mut g = count as u64 * (up_bytes(MAX_LEVEL) + 40) + bytes as u64;
        let need_nodes = (self.nodes.len() + count).saturating_sub(self.free.len());
        if need_nodes > self.nodes.capacity() {
            g += alloc::vec::<Node>(alloc::grown(self.nodes.capacity(), need_nodes));
        }
        let need = self.index.len() + count;
        if need > self.index.capacity() {
            g += alloc::table::<u32>(alloc::grown(self.index.capacity(), need) * 2);
        }
        g
    }

    /// The score of `member`.
    #[inline]
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.find(member).map(|i| self.nodes[i as usize].score)
    }

    /// The node holding `member`.
    fn find(&self, member: &[u8]) -> Option<u32> {
        let h = self.hasher.hash_one(member);
        self.index
            .find(h, |&i| &*self.nodes[i as usize].member == member)
            .copied()
    }

    fn random_level() -> usize {
        let mut level = 1;
        while level < MAX_LEVEL && super::hash::random_below(4) == 0 {
            level += 1;
        }
        level
    }

    /// Adds `member` (absent) with `score`.
    pub fn insert(&mut self, member: &[u8], score: f64) {
        debug_assert!(self.find(member).is_none());
        let mut update = [HEAD; MAX_LEVEL];
        let mut rank = [0usize; MAX_LEVEL];
        let mut x = HEAD;
        for i in (0..self.level).rev() {
            rank[i] = if i == self.level - 1 { 0 } else { rank[i + 1] };
            loop {
                let f = self.nodes[x as usize].lv(i).fwd;
                if f != NIL && before(&self.nodes[f as usize], score, member) {
                    rank[i] += self.nodes[x as usize].lv(i).span as usize;
                    x = f;
                } else {
                    break;
                }
            }
            update[i] = x;
        }
        let level = Self::random_level();
        if level > self.level {
            for i in self.level..level {
                rank[i] = 0;
                update[i] = HEAD;
                self.nodes[HEAD as usize].lv_mut(i).span = self.len as u32;
            }
            self.level = level;
        }
        self.heap += member_bytes(member.len()) + up_bytes(level);
        let nil = Level { fwd: NIL, span: 0 };
        let node = Node {
            member: member.into(),
            score,
            back: NIL,
            l0: nil,
            up: vec![nil; level - 1].into_boxed_slice(),
        };
        let new = match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        for i in 0..level {
            let u = update[i] as usize;
            let ul = self.nodes[u].lv(i);
            let d = (rank[0] - rank[i]) as u32;
            *self.nodes[new as usize].lv_mut(i) = Level {
                fwd: ul.fwd,
                span: ul.span - d,
            };
            *self.nodes[u].lv_mut(i) = Level {
                fwd: new,
                span: d + 1,
            };
        }
        for (i, &u) in update.iter().enumerate().take(self.level).skip(level) {
            self.nodes[u as usize].lv_mut(i).span += 1;
        }
        self.nodes[new as usize].back = if update[0] == HEAD { NIL } else { update[0] };
        let f0 = self.nodes[new as usize].l0.fwd;
        if f0 == NIL {
            self.tail = new;
        } else {
            self.nodes[f0 as usize].back = new;
        }
        self.len += 1;
        let (nodes, hasher) = (&self.nodes, &self.hasher);
        self.index
            .insert_unique(hasher.hash_one(member), new, |&i| {
                hasher.hash_one(&*nodes[i as usize].member)
            });
    }

    /// Removes `member`; its score when it was there.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let h = self.hasher.hash_one(member);
        let nodes = &self.nodes;
        let (found, _) = self
            .index
            .find_entry(h, |&i| &*nodes[i as usize].member == member)
            .ok()?
            .remove();
        let score = self.nodes[found as usize].score;
        let mut update = [HEAD; MAX_LEVEL];
        let mut x = HEAD;
        for i in (0..self.level).rev() {
            loop {
                let f = self.nodes[x as usize].lv(i).fwd;
                if f != NIL && before(&self.nodes[f as usize], score, member) {
                    x = f;
                } else {
                    break;
                }
            }
            update[i] = x;
        }
        let x = self.nodes[x as usize].l0.fwd;
        debug_assert!(x == found);
        Some(self.unlink(x, &update).1)
    }

    /// Removes the lowest member without a search (every level's predecessor is the head): its
    /// bytes and score.
    pub fn pop_first(&mut self) -> Option<(Box<[u8]>, f64)> {
        let x = self.nodes[HEAD as usize].l0.fwd;
        if x == NIL {
            return None;
        }
        let h = self.hasher.hash_one(&*self.nodes[x as usize].member);
        if let Ok(e) = self.index.find_entry(h, |&i| i == x) {
            e.remove();
        }
        Some(self.unlink(x, &[HEAD; MAX_LEVEL]))
    }

    /// Unlinks node `x` (its predecessor at each level in `update`), frees its slot and gives
    /// back its member and score. The index entry is the caller's to remove.
    fn unlink(&mut self, x: u32, update: &[u32; MAX_LEVEL]) -> (Box<[u8]>, f64) {
        for (i, &u) in update.iter().enumerate().take(self.level) {
            let u = u as usize;
            if self.nodes[u].lv(i).fwd == x {
                let xl = self.nodes[x as usize].lv(i);
                let span = self.nodes[u].lv(i).span + xl.span - 1;
                *self.nodes[u].lv_mut(i) = Level { fwd: xl.fwd, span };
            } else {
                self.nodes[u].lv_mut(i).span -= 1;
            }
        }
        let (f0, back) = (self.nodes[x as usize].l0.fwd, self.nodes[x as usize].back);
        if f0 == NIL {
            self.tail = back;
        } else {
            self.nodes[f0 as usize].back = back;
        }
        while self.level > 1 && self.nodes[HEAD as usize].lv(self.level - 1).fwd == NIL {
            self.level -= 1;
        }
        self.len -= 1;
        let n = &mut self.nodes[x as usize];
        self.heap -= member_bytes(n.member.len()) + up_bytes(n.levels());
        let member = std::mem::take(&mut n.member);
        n.up = Box::default();
        n.back = FREED;
        self.free.push(x);
        (member, n.score)
    }

    /// One step of ZSCAN over the node slots: calls `f` with the live members in slots
    /// `cursor..cursor + count` (slot 1 on when `cursor` is 0) and returns the next cursor, 0 after
    /// the last slot. A live node never changes slot, so every member present throughout a walk
    /// is visited; a member added meanwhile may take a slot already passed, and be missed, as
    /// Redis allows.
    pub fn scan_slots(&self, cursor: u64, count: usize, mut f: impl FnMut(&[u8], f64)) -> u64 {
        let n = self.nodes.len();
        let start = usize::try_from(cursor).map_or(n, |c| c.max(HEAD as usize + 1).min(n));
        let end = start.saturating_add(count).min(n);
        for node in &self.nodes[start..end] {
            if node.back != FREED {
                f(&node.member, node.score);
            }
        }
        if end >= n { 0 } else { end as u64 }
    }

    /// How many leading members (in order) satisfy `pred`, which holds for a prefix of the
    /// order and then never again: O(log n).
    pub fn count_while(&self, pred: impl Fn(f64, &[u8]) -> bool) -> usize {
        let mut x = HEAD;
        let mut rank = 0usize;
        for i in (0..self.level).rev() {
            loop {
                let f = self.nodes[x as usize].lv(i).fwd;
                if f != NIL && {
                    let n = &self.nodes[f as usize];
                    pred(n.score, &n.member)
                } {
                    rank += self.nodes[x as usize].lv(i).span as usize;
                    x = f;
                } else {
                    break;
                }
            }
        }
        rank
    }

    /// The node at 0-based `rank` (`rank < len`).
    fn node_at(&self, rank: usize) -> u32 {
        let target = rank + 1;
        let mut traversed = 0usize;
        let mut x = HEAD;
        for i in (0..self.level).rev() {
            loop {
                let l = self.nodes[x as usize].lv(i);
                if l.fwd != NIL && traversed + l.span as usize <= target {
                    traversed += l.span as usize;
                    x = l.fwd;
                } else {
                    break;
                }
            }
            if traversed == target {
                return x;
            }
        }
        NIL
    }

    /// Calls `f` on the members of ranks `start..end` (ascending), in descending order when
    /// `rev`.
    pub fn visit(&self, start: usize, end: usize, rev: bool, mut f: impl FnMut(&[u8], f64)) {
        if start >= end || end > self.len {
            return;
        }
        let mut x = self.node_at(if rev { end - 1 } else { start });
        for _ in start..end {
            if x == NIL {
                break;
            }
            let n = &self.nodes[x as usize];
            f(&n.member, n.score);
            x = if rev { n.back } else { n.l0.fwd };
        }
    }

    /// Calls `f` on every member in order, borrowed for as long as the list is.
    pub fn visit_all<'a>(&'a self, mut f: impl FnMut(&'a [u8], f64)) {
        if self.len == 0 {
            return;
        }
        let mut x = self.node_at(0);
        while x != NIL {
            let n = &self.nodes[x as usize];
            f(&n.member[..], n.score);
            x = n.l0.fwd;
        }
    }

    /// The 0-based rank of `member` with its score.
    pub fn rank(&self, member: &[u8]) -> Option<(usize, f64)> {
        let s = self.score(member)?;
        Some((
            self.count_while(|sc, m| sc < s || (sc == s && m < member)),
            s,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_walk_returns_every_member_present_throughout() {
        let mut rng = locus_common::Rng::new(11);
        for round in 0..20u64 {
            let mut s = SkipList::new();
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
        }
    }

    #[test]
    fn ranks_and_ranges_match_a_sorted_vector() {
        let mut s = SkipList::new();
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
    }
}
