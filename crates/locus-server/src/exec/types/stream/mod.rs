//! Streams (Redis 7.0's stream type): the data structure, its encoding and its charge; the
//! commands are in [`cmds`] (XADD XRANGE XREVRANGE XLEN XDEL XTRIM XREAD XSETID) and [`group`]
//! (XGROUP XREADGROUP XACK XPENDING XCLAIM XAUTOCLAIM XINFO).
//!
//! ```text
//!  Stream ── nodes: BTreeMap<first id of the node, Node>   (Redis: a radix tree of listpacks)
//!         │            Node { master fields, buf: [entry][entry]... }
//!         │            entry = flags(1) | varint ms-delta | varint seq(-delta) |
//!         │                    (SAMEFIELDS: the values only | varint n, field, value ...)
//!         │            strings are varint(len << 1) + bytes, integers varint(zigzag << 1 | 1);
//!         │            deleted entries keep their bytes
//!         │            with the DELETED flag until the whole node goes (as in Redis)
//!         ├─ len, last_id, first_id, max_deleted, entries_added   (Redis 7.0's counters)
//!         └─ groups: BTreeMap<name, Group { last_id, entries_read, pel, consumers }>
//! ```
//!
//! A node takes entries until it holds `stream-node-max-entries` (live or deleted) or its bytes
//! would pass `stream-node-max-bytes`, Redis's two limits, so approximate trimming (`~`, which
//! only drops whole nodes) trims as much as Redis's does. IDs are delta-encoded against the
//! node's first ID and an entry whose fields are the node's first fields stores its values
//! only, so an entry of 3 small fields costs about 10 bytes (Redis's listpack: about 20).
//!
//! The charge ([`Stream::charge`]) is every node's allocated buffer plus a fixed cost per node,
//! group, consumer and pending entry; it is kept up to date as the stream changes, so a
//! stream's bytes are charged to its tenant like any collection's (see `locus_engine::Object`).

pub mod cmds;
pub mod group;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use locus_engine::Object;

/// A field and its value as read from a node (integers are formatted back: owned).
pub type Pair<'a> = (Cow<'a, [u8]>, Cow<'a, [u8]>);

/// An entry's field/value pairs, owned.
pub type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// A stream entry ID: milliseconds and sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Sid {
    /// Milliseconds part.
    pub ms: u64,
    /// Sequence part.
    pub seq: u64,
}

impl Sid {
    /// 0-0.
    pub const MIN: Sid = Sid { ms: 0, seq: 0 };
    /// The largest ID.
    pub const MAX: Sid = Sid {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    /// An ID.
    pub const fn new(ms: u64, seq: u64) -> Self {
        Self { ms, seq }
    }

    /// The next ID, `None` after the last.
    pub fn incr(self) -> Option<Sid> {
        if self.seq == u64::MAX {
            if self.ms == u64::MAX {
                None
            } else {
                Some(Sid::new(self.ms + 1, 0))
            }
        } else {
            Some(Sid::new(self.ms, self.seq + 1))
        }
    }

    /// The previous ID, `None` before 0-0.
    pub fn decr(self) -> Option<Sid> {
        if self.seq == 0 {
            if self.ms == 0 {
                None
            } else {
                Some(Sid::new(self.ms - 1, u64::MAX))
            }
        } else {
            Some(Sid::new(self.ms, self.seq - 1))
        }
    }

    /// Whether this is 0-0.
    pub fn is_zero(self) -> bool {
        self == Sid::MIN
    }

    /// The `<ms>-<seq>` text.
    pub fn text(self) -> String {
        format!("{}-{}", self.ms, self.seq)
    }
}

/// The entry is deleted (its bytes stay until the node goes).
const DELETED: u8 = 1;
/// The entry's fields are the node's master fields: only the values are stored.
const SAMEFIELDS: u8 = 2;

/// Bytes charged per node beyond its buffers (tree slot, header).
const NODE_COST: u64 = 96;
/// Bytes charged per group beyond its name.
const GROUP_COST: u64 = 128;
/// Bytes charged per consumer beyond its name.
const CONSUMER_COST: u64 = 96;
/// Bytes charged per pending entry (the group's PEL slot and the consumer's).
const NACK_COST: u64 = 80;

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a varint at `*p` (bytes this module wrote).
#[inline]
fn get_varint(b: &[u8], p: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let c = b[*p];
        *p += 1;
        v |= u64::from(c & 0x7f) << shift;
        if c < 0x80 {
            return v;
        }
        shift += 7;
    }
}

/// Writes a string: an integer in Redis's canonical form as `varint(zigzag << 1 | 1)` (as a
/// listpack stores integers compactly), any other as `varint(len << 1)` and its bytes.
fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    if let Some(v) = crate::exec::parse_i64(s) {
        let z = ((v << 1) ^ (v >> 63)) as u64;
        if z >> 63 == 0 {
            put_varint(out, (z << 1) | 1);
            return;
        }
    }
    put_varint(out, (s.len() as u64) << 1);
    out.extend_from_slice(s);
}

#[inline]
fn get_str<'a>(b: &'a [u8], p: &mut usize) -> Cow<'a, [u8]> {
    let h = get_varint(b, p);
    if h & 1 == 1 {
        let z = h >> 1;
        let v = ((z >> 1) as i64) ^ -((z & 1) as i64);
        return Cow::Owned(v.to_string().into_bytes());
    }
    let n = (h >> 1) as usize;
    let s = &b[*p..*p + n];
    *p += n;
    Cow::Borrowed(s)
}

#[inline]
fn skip_str(b: &[u8], p: &mut usize) {
    let h = get_varint(b, p);
    if h & 1 == 0 {
        *p += (h >> 1) as usize;
    }
}

/// A run of entries sharing a master ID (its key in [`Stream`]) and master fields.
#[derive(Debug, Clone)]
pub struct Node {
    /// The first entry's fields, each as [`put_str`] writes it.
    master: Box<[u8]>,
    /// How many master fields.
    master_n: u32,
    /// The entries.
    buf: Vec<u8>,
    /// Entries held, deleted ones included.
    total: u32,
    /// Entries not deleted.
    live: u32,
}

/// One decoded entry header inside a node.
#[derive(Debug, Clone, Copy)]
struct Slot {
    /// Offset of the flags byte.
    at: usize,
    flags: u8,
    id: Sid,
    /// Offset of the body (after the ID).
    body: usize,
}

impl Node {
    fn cost(&self) -> u64 {
        NODE_COST + self.buf.capacity() as u64 + self.master.len() as u64
    }

    /// The entry at `p` (its flags byte); advances `p` past it.
    #[inline]
    fn read(&self, master: Sid, p: &mut usize) -> Slot {
        let b = &self.buf;
        let at = *p;
        let flags = b[at];
        *p += 1;
        let dms = get_varint(b, p);
        let s = get_varint(b, p);
        let id = if dms == 0 {
            Sid::new(master.ms, master.seq + s)
        } else {
            Sid::new(master.ms + dms, s)
        };
        let body = *p;
        let strings = if flags & SAMEFIELDS != 0 {
            self.master_n as u64
        } else {
            get_varint(b, p) * 2
        };
        for _ in 0..strings {
            skip_str(b, p);
        }
        Slot {
            at,
            flags,
            id,
            body,
        }
    }

    /// Every entry (deleted ones too), in order.
    fn slots(&self, master: Sid) -> Vec<Slot> {
        let mut v = Vec::with_capacity(self.total as usize);
        let mut p = 0;
        while p < self.buf.len() {
            v.push(self.read(master, &mut p));
        }
        v
    }

    /// The ID of the last entry (deleted or not).
    fn last_id(&self, master: Sid) -> Sid {
        let mut p = 0;
        let mut last = master;
        while p < self.buf.len() {
            last = self.read(master, &mut p).id;
        }
        last
    }

    /// The fields and values of the entry whose body starts at `body`.
    fn fields(&self, flags: u8, body: usize) -> Vec<Pair<'_>> {
        let b = &self.buf;
        let mut p = body;
        if flags & SAMEFIELDS != 0 {
            let mut mp = 0;
            let mut v = Vec::with_capacity(self.master_n as usize);
            for _ in 0..self.master_n {
                let f = get_str(&self.master, &mut mp);
                let val = get_str(b, &mut p);
                v.push((f, val));
            }
            v
        } else {
            let n = get_varint(b, &mut p) as usize;
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                let f = get_str(b, &mut p);
                let val = get_str(b, &mut p);
                v.push((f, val));
            }
            v
        }
    }

    fn same_as_master(&self, fields: &[(&[u8], &[u8])]) -> bool {
        if fields.len() != self.master_n as usize {
            return false;
        }
        let mut mp = 0;
        fields
            .iter()
            .all(|(f, _)| *get_str(&self.master, &mut mp) == **f)
    }
}

/// An entry handed to a reader: its ID and fields.
#[derive(Debug)]
pub struct Entry<'a> {
    node: &'a Node,
    flags: u8,
    body: usize,
}

impl<'a> Entry<'a> {
    /// The entry's field/value pairs.
    pub fn fields(&self) -> Vec<Pair<'a>> {
        self.node.fields(self.flags, self.body)
    }
}

/// A pending entry (delivered to a consumer, not acknowledged).
#[derive(Debug, Clone)]
pub struct Nack {
    /// Its consumer's name.
    pub consumer: Arc<[u8]>,
    /// When it was last delivered (ms since the epoch).
    pub delivery_time: i64,
    /// How many times it was delivered.
    pub delivery_count: u64,
}

/// A consumer of a group.
#[derive(Debug, Clone, Default)]
pub struct Consumer {
    /// Its name (shared with its pending entries).
    pub name: Arc<[u8]>,
    /// When it last read or claimed (ms).
    pub seen_time: i64,
    /// The IDs pending for it.
    pub pel: BTreeSet<Sid>,
}

/// A consumer group.
#[derive(Debug, Clone, Default)]
pub struct Group {
    /// The last ID delivered.
    pub last_id: Sid,
    /// Entries read (Redis's logical read counter), -1 when unknown.
    pub entries_read: i64,
    /// Pending entries, by ID.
    pub pel: BTreeMap<Sid, Nack>,
    /// Consumers, by name.
    pub consumers: BTreeMap<Vec<u8>, Consumer>,
    /// Bytes of the consumers' names (charged).
    names: u64,
}

impl Group {
    fn new(last_id: Sid, entries_read: i64) -> Self {
        Self {
            last_id,
            entries_read,
            ..Self::default()
        }
    }

    fn cost(&self) -> u64 {
        self.names + self.consumers.len() as u64 * CONSUMER_COST + self.pel.len() as u64 * NACK_COST
    }

    /// The consumer called `name`, created when absent (true then), its seen time set to `now`.
    pub fn consumer(&mut self, name: &[u8], now: i64) -> (&mut Consumer, bool) {
        let created = !self.consumers.contains_key(name);
        if created {
            self.names += name.len() as u64;
            self.consumers.insert(
                name.to_vec(),
                Consumer {
                    name: Arc::from(name),
                    seen_time: now,
                    pel: BTreeSet::new(),
                },
            );
        }
        let c = self.consumers.get_mut(name).expect("just ensured");
        c.seen_time = now;
        (c, created)
    }

    /// Creates consumer `name` without touching an existing one; true when created.
    pub fn create_consumer(&mut self, name: &[u8], now: i64) -> bool {
        if self.consumers.contains_key(name) {
            return false;
        }
        self.consumer(name, now);
        true
    }

    /// Deletes consumer `name` and its pending entries: how many it had, `None` when absent.
    pub fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let c = self.consumers.remove(name)?;
        self.names -= name.len() as u64;
        for id in &c.pel {
            self.pel.remove(id);
        }
        Some(c.pel.len())
    }

    /// Acknowledges `id`: true when it was pending.
    pub fn ack(&mut self, id: Sid) -> bool {
        match self.pel.remove(&id) {
            Some(n) => {
                if let Some(c) = self.consumers.get_mut(&n.consumer[..]) {
                    c.pel.remove(&id);
                }
                true
            }
            None => false,
        }
    }

    /// Makes `id` pending for `consumer` (moved from another consumer if it was pending
    /// there), delivered at `now` with `count` deliveries (`None`: one more than before, or 1).
    pub fn assign(&mut self, id: Sid, consumer: &[u8], time: i64, count: Option<u64>) {
        let name = match self.consumers.get(consumer) {
            Some(c) => c.name.clone(),
            None => return,
        };
        let prev = self.pel.get(&id).map(|n| n.consumer.clone());
        if let Some(p) = &prev
            && p[..] != *consumer
            && let Some(c) = self.consumers.get_mut(&p[..])
        {
            c.pel.remove(&id);
        }
        let e = self.pel.entry(id).or_insert(Nack {
            consumer: name.clone(),
            delivery_time: time,
            delivery_count: 0,
        });
        e.consumer = name;
        e.delivery_time = time;
        e.delivery_count = match count {
            Some(c) => c,
            None => e.delivery_count + 1,
        };
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pel.insert(id);
        }
    }
}

/// A stream.
#[derive(Debug, Clone, Default)]
pub struct Stream {
    nodes: BTreeMap<Sid, Node>,
    len: u64,
    /// The last ID ever added (or set by XSETID).
    pub last_id: Sid,
    /// The first live entry's ID (0-0 when empty).
    pub first_id: Sid,
    /// The largest ID deleted by XDEL (or set by XSETID).
    pub max_deleted: Sid,
    /// Entries ever added.
    pub entries_added: u64,
    /// Consumer groups by name.
    pub groups: BTreeMap<Vec<u8>, Group>,
    node_bytes: u64,
}

/// Why an append failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddError {
    /// The ID is not greater than the last one.
    NotGreater,
    /// The fields are too large (Redis's listpack limit).
    TooLarge,
}

/// Redis's `STREAM_LISTPACK_MAX_SIZE`: the most bytes of fields and values one entry holds.
const MAX_ENTRY_BYTES: u64 = 1 << 30;

/// How a trim is bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trim {
    /// Keep at most this many entries.
    MaxLen(u64),
    /// Drop the entries below this ID.
    MinId(Sid),
}

/// `stream-node-max-entries` and `stream-node-max-bytes` as a node uses them.
fn node_limits() -> (u64, u64) {
    let entries = super::limits::STREAM_NODE_ENTRIES.get().max(0) as u64;
    let bytes = super::limits::STREAM_NODE_BYTES.get();
    let bytes = if bytes <= 0 || bytes as u64 > MAX_ENTRY_BYTES {
        MAX_ENTRY_BYTES
    } else {
        bytes as u64
    };
    (entries, bytes)
}

impl Stream {
    /// An empty stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Live entries.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether no entry is live.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Nodes (Redis's radix-tree keys).
    pub fn nodes(&self) -> usize {
        self.nodes.len()
    }

    /// Bytes the stream holds, as charged to its tenant.
    pub fn charge(&self) -> u64 {
        let groups: u64 = self
            .groups
            .iter()
            .map(|(n, g)| GROUP_COST + n.len() as u64 + g.cost())
            .sum();
        self.node_bytes + groups
    }

    /// The most appending an entry of `fields` can add to the charge.
    pub fn add_bound(&self, fields: &[(&[u8], &[u8])]) -> u64 {
        let body: u64 = fields
            .iter()
            .map(|(f, v)| (f.len() + v.len() + 20) as u64)
            .sum::<u64>()
            + 32;
        // A new node holds the master fields too; an append may double the buffer.
        let tail = self
            .nodes
            .last_key_value()
            .map_or(0, |(_, n)| n.buf.capacity() as u64);
        body * 2 + NODE_COST + tail.max(body) + 64
    }

    /// The next automatic ID after the last one at time `now_ms` (`None`: exhausted).
    pub fn next_auto_id(&self, now_ms: u64) -> Option<Sid> {
        if now_ms > self.last_id.ms {
            Some(Sid::new(now_ms, 0))
        } else {
            self.last_id.incr()
        }
    }

    /// Appends an entry with ID `id`, which must be greater than the last ID.
    ///
    /// # Errors
    /// [`AddError`].
    pub fn append(&mut self, id: Sid, fields: &[(&[u8], &[u8])]) -> Result<(), AddError> {
        if id <= self.last_id {
            return Err(AddError::NotGreater);
        }
        let totlen: u64 = fields.iter().map(|(f, v)| (f.len() + v.len()) as u64).sum();
        if totlen > MAX_ENTRY_BYTES {
            return Err(AddError::TooLarge);
        }
        let (max_entries, max_bytes) = node_limits();
        let mut new_node = true;
        if let Some((_, n)) = self.nodes.last_key_value() {
            let bytes = (n.buf.len() + n.master.len()) as u64;
            new_node = bytes + totlen >= max_bytes
                || (max_entries != 0 && u64::from(n.total) >= max_entries);
        }
        if new_node {
            if let Some(mut last) = self.nodes.last_entry() {
                let n = last.get_mut();
                let before = n.cost();
                n.buf.shrink_to_fit();
                self.node_bytes = self.node_bytes - before + n.cost();
            }
            let mut master = Vec::new();
            for (f, _) in fields {
                put_str(&mut master, f);
            }
            let node = Node {
                master: master.into_boxed_slice(),
                master_n: fields.len() as u32,
                buf: Vec::new(),
                total: 0,
                live: 0,
            };
            self.node_bytes += node.cost();
            self.nodes.insert(id, node);
        }
        let mut last = self.nodes.last_entry().expect("a node exists");
        let master = *last.key();
        let n = last.get_mut();
        let before = n.cost();
        let same = n.same_as_master(fields);
        let flags = if same { SAMEFIELDS } else { 0 };
        let b = &mut n.buf;
        b.push(flags);
        if id.ms == master.ms {
            put_varint(b, 0);
            put_varint(b, id.seq - master.seq);
        } else {
            put_varint(b, id.ms - master.ms);
            put_varint(b, id.seq);
        }
        if !same {
            put_varint(b, fields.len() as u64);
        }
        for (f, v) in fields {
            if !same {
                put_str(b, f);
            }
            put_str(b, v);
        }
        n.total += 1;
        n.live += 1;
        self.node_bytes = self.node_bytes - before + n.cost();
        self.len += 1;
        self.last_id = id;
        self.entries_added += 1;
        if self.len == 1 {
            self.first_id = id;
        }
        Ok(())
    }

    /// Visits the live entries with IDs in `start..=end`, forward or (`rev`) backward, while
    /// `f` answers true.
    pub fn range(
        &self,
        start: Sid,
        end: Sid,
        rev: bool,
        mut f: impl FnMut(Sid, Entry<'_>) -> bool,
    ) {
        if start > end {
            return;
        }
        if !rev {
            let from = self
                .nodes
                .range(..=start)
                .next_back()
                .map_or(start, |(k, _)| *k);
            for (&mid, node) in self.nodes.range(from..) {
                if mid > end {
                    return;
                }
                let mut p = 0;
                while p < node.buf.len() {
                    let s = node.read(mid, &mut p);
                    if s.flags & DELETED != 0 || s.id < start {
                        continue;
                    }
                    if s.id > end {
                        return;
                    }
                    let e = Entry {
                        node,
                        flags: s.flags,
                        body: s.body,
                    };
                    if !f(s.id, e) {
                        return;
                    }
                }
            }
        } else {
            for (&mid, node) in self.nodes.range(..=end).rev() {
                let slots = node.slots(mid);
                for s in slots.iter().rev() {
                    if s.flags & DELETED != 0 || s.id > end {
                        continue;
                    }
                    if s.id < start {
                        return;
                    }
                    let e = Entry {
                        node,
                        flags: s.flags,
                        body: s.body,
                    };
                    if !f(s.id, e) {
                        return;
                    }
                }
            }
        }
    }

    /// The fields of live entry `id`, if there is one.
    pub fn get(&self, id: Sid) -> Option<Fields> {
        let mut out = None;
        self.range(id, id, false, |_, e| {
            out = Some(
                e.fields()
                    .into_iter()
                    .map(|(f, v)| (f.to_vec(), v.to_vec()))
                    .collect(),
            );
            false
        });
        out
    }

    /// Whether live entry `id` exists.
    pub fn contains(&self, id: Sid) -> bool {
        let mut found = false;
        self.range(id, id, false, |_, _| {
            found = true;
            false
        });
        found
    }

    /// Whether a live entry has an ID above `id`.
    pub fn any_after(&self, id: Sid) -> bool {
        let Some(start) = id.incr() else {
            return false;
        };
        let mut found = false;
        self.range(start, Sid::MAX, false, |_, _| {
            found = true;
            false
        });
        found
    }

    /// The first (or `last`) live entry's ID.
    pub fn edge_id(&self, last: bool) -> Option<Sid> {
        let mut out = None;
        self.range(Sid::MIN, Sid::MAX, last, |id, _| {
            out = Some(id);
            false
        });
        out
    }

    /// Marks the entry at `at` of node `mid` deleted.
    fn mark_deleted(&mut self, mid: Sid, at: usize) {
        let n = self.nodes.get_mut(&mid).expect("caller found the node");
        n.buf[at] |= DELETED;
        n.live -= 1;
        self.len -= 1;
        if n.live == 0 {
            let cost = n.cost();
            self.nodes.remove(&mid);
            self.node_bytes -= cost;
        }
    }

    /// Deletes live entry `id`: true when it existed. Updates the first and max-deleted IDs
    /// as XDEL does.
    pub fn delete(&mut self, id: Sid) -> bool {
        let Some((&mid, node)) = self.nodes.range(..=id).next_back() else {
            return false;
        };
        let mut p = 0;
        let mut at = None;
        while p < node.buf.len() {
            let s = node.read(mid, &mut p);
            if s.id == id {
                if s.flags & DELETED == 0 {
                    at = Some(s.at);
                }
                break;
            }
            if s.id > id {
                break;
            }
        }
        let Some(at) = at else {
            return false;
        };
        self.mark_deleted(mid, at);
        if id > self.max_deleted {
            self.max_deleted = id;
        }
        if self.len == 0 {
            self.first_id = Sid::MIN;
        } else if id == self.first_id {
            self.first_id = self.edge_id(false).unwrap_or(Sid::MIN);
        }
        true
    }

    /// Trims as Redis's `streamTrim`: whole nodes first; then, unless `approx`, entries of the
    /// first node that must stay partly; at most `limit` entries when `limit` > 0 (whole nodes
    /// only). Returns the entries removed.
    pub fn trim(&mut self, how: Trim, approx: bool, limit: u64) -> u64 {
        let mut deleted = 0u64;
        loop {
            if let Trim::MaxLen(m) = how
                && self.len <= m
            {
                break;
            }
            let Some((&mid, node)) = self.nodes.first_key_value() else {
                break;
            };
            let entries = u64::from(node.live);
            if limit > 0 && deleted + entries > limit {
                break;
            }
            let remove = match how {
                Trim::MaxLen(m) => self.len - entries >= m,
                Trim::MinId(min) => node.last_id(mid) < min,
            };
            if remove {
                let cost = node.cost();
                self.nodes.remove(&mid);
                self.node_bytes -= cost;
                self.len -= entries;
                deleted += entries;
                continue;
            }
            if approx {
                break;
            }
            let slots = node.slots(mid);
            for s in slots {
                let stop = match how {
                    Trim::MaxLen(m) => self.len <= m,
                    Trim::MinId(min) => s.id >= min,
                };
                if stop {
                    break;
                }
                if s.flags & DELETED == 0 {
                    // Never the node's last live entry: the checks above kept the node.
                    self.mark_deleted(mid, s.at);
                    deleted += 1;
                }
            }
            break;
        }
        if self.len == 0 {
            self.first_id = Sid::MIN;
        } else if deleted > 0 {
            self.first_id = self.edge_id(false).unwrap_or(Sid::MIN);
        }
        deleted
    }

    /// Whether `start..=end` may hold a deleted entry (Redis's `streamRangeHasTombstones`).
    pub fn has_tombstones(&self, start: Sid, end: Sid) -> bool {
        if self.len == 0 || self.max_deleted.is_zero() {
            return false;
        }
        if self.first_id > self.max_deleted {
            return false;
        }
        start <= self.max_deleted && self.max_deleted <= end
    }

    /// Redis's `streamEstimateDistanceFromFirstEverEntry`: `None` when unknown.
    pub fn estimate_read(&self, id: Sid) -> Option<u64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if self.len == 0 && id <= self.last_id {
            return Some(self.entries_added);
        }
        if id == self.last_id {
            return Some(self.entries_added);
        }
        if id > self.last_id {
            return None;
        }
        if self.max_deleted.is_zero() || self.max_deleted < self.first_id {
            if id < self.first_id {
                return Some(self.entries_added - self.len);
            }
            if id == self.first_id {
                return Some(self.entries_added - self.len + 1);
            }
        }
        None
    }

    /// A group's lag (entries not yet delivered), `None` when unknown.
    pub fn lag(&self, g: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if g.entries_read >= 0 && !self.has_tombstones(g.last_id, Sid::MAX) {
            return Some(self.entries_added as i64 - g.entries_read);
        }
        self.estimate_read(g.last_id)
            .map(|r| self.entries_added as i64 - r as i64)
    }

    /// Advances group `name`'s counters past delivered entry `id` (Redis's bookkeeping in
    /// `streamReplyWithRange`).
    pub fn note_delivered(&mut self, name: &[u8], id: Sid) {
        let tomb = self.has_tombstones(id, Sid::MAX);
        let est = self.estimate_read(id);
        let added = self.entries_added;
        let Some(g) = self.groups.get_mut(name) else {
            return;
        };
        if id > g.last_id {
            if g.entries_read >= 0 && !tomb {
                g.entries_read += 1;
            } else if added > 0 {
                g.entries_read = est.map_or(-1, |e| e as i64);
            }
            g.last_id = id;
        }
    }

    /// Creates group `name`; false when it exists.
    pub fn create_group(&mut self, name: &[u8], last_id: Sid, entries_read: i64) -> bool {
        if self.groups.contains_key(name) {
            return false;
        }
        self.groups
            .insert(name.to_vec(), Group::new(last_id, entries_read));
        true
    }

    /// Adds a group read back from a snapshot: its consumers (name, seen time) and pending
    /// entries (ID, consumer, delivery time, deliveries).
    ///
    /// # Errors
    /// A group named twice, or a pending entry naming no consumer of the group or twice.
    pub fn restore_group(
        &mut self,
        name: &[u8],
        last_id: Sid,
        entries_read: i64,
        consumers: &[(&[u8], i64)],
        pending: &[(Sid, &[u8], i64, u64)],
    ) -> Result<(), String> {
        if !self.create_group(name, last_id, entries_read) {
            return Err("a stream group appears twice".to_string());
        }
        let g = self.groups.get_mut(name).expect("just created");
        for &(c, seen) in consumers {
            if !g.create_consumer(c, seen) {
                return Err("a group consumer appears twice".to_string());
            }
        }
        for &(id, c, time, count) in pending {
            if !g.consumers.contains_key(c) || g.pel.contains_key(&id) {
                return Err("a pending entry names no consumer, or appears twice".to_string());
            }
            g.assign(id, c, time, Some(count));
        }
        Ok(())
    }

    /// Every live entry, oldest first, as owned pairs (snapshots, tests).
    pub fn entries(&self) -> Vec<(Sid, Fields)> {
        let mut v = Vec::with_capacity(self.len as usize);
        self.range(Sid::MIN, Sid::MAX, false, |id, e| {
            v.push((
                id,
                e.fields()
                    .into_iter()
                    .map(|(f, x)| (f.to_vec(), x.to_vec()))
                    .collect(),
            ));
            true
        });
        v
    }
}

impl Object for Stream {
    fn type_name(&self) -> &'static str {
        KIND
    }
    fn encoding(&self) -> &'static str {
        "stream"
    }
    fn charge(&self) -> u64 {
        Stream::charge(self)
    }
    fn len(&self) -> usize {
        usize::try_from(self.len).unwrap_or(usize::MAX)
    }
    // Redis's estimate: one allocation per node, and per consumer group one plus its pending
    // entries (the first group's count standing for every group's).
    fn free_effort(&self) -> usize {
        let pel = self.groups.values().next().map_or(0, |g| g.pel.len());
        self.nodes.len() + self.groups.len() * (1 + pel)
    }
    // A stream stays when its last entry goes (Redis keeps empty streams).
    fn is_empty(&self) -> bool {
        false
    }
    fn clone_object(&self) -> Box<dyn Object> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

/// The `type_name` of a stream (what a blocked XREAD waits for).
pub const KIND: &str = "stream";

/// Milliseconds since the epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Redis's `string2ull`: a decimal `i64` that is not negative, or else what C's `strtoull`
/// accepts whole (leading spaces, a sign, no overflow).
fn parse_u64(s: &[u8]) -> Option<u64> {
    if let Some(v) = crate::exec::parse_i64(s) {
        return u64::try_from(v).ok();
    }
    let mut i = 0;
    while i < s.len() && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
        i += 1;
    }
    let mut neg = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        neg = s[i] == b'-';
        i += 1;
    }
    if i >= s.len() {
        return None;
    }
    let mut v: u64 = 0;
    for &c in &s[i..] {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(if neg { v.wrapping_neg() } else { v })
}

/// An ID argument as parsed: the ID and whether its sequence was given (`<ms>-*` has none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedId {
    /// The ID (sequence 0 for `<ms>-*`).
    pub id: Sid,
    /// False for `<ms>-*`.
    pub seq_given: bool,
}

/// Redis's `streamGenericParseIDOrReply`: `-`, `+` (unless `strict`), `<ms>`, `<ms>-<seq>`,
/// and with `allow_star` `<ms>-*`; `missing_seq` fills an absent sequence.
pub fn parse_id_full(
    s: &[u8],
    missing_seq: u64,
    strict: bool,
    allow_star: bool,
) -> Option<ParsedId> {
    if s.len() > 127 {
        return None;
    }
    // (C strings: the text ends at the first NUL.)
    let s = s.split(|&c| c == 0).next().unwrap_or(&[]);
    if strict && (s == b"-" || s == b"+") {
        return None;
    }
    if s == b"-" {
        return Some(ParsedId {
            id: Sid::MIN,
            seq_given: true,
        });
    }
    if s == b"+" {
        return Some(ParsedId {
            id: Sid::MAX,
            seq_given: true,
        });
    }
    let (ms, seq) = match s.iter().position(|&c| c == b'-') {
        Some(d) => (&s[..d], Some(&s[d + 1..])),
        None => (s, None),
    };
    let ms = parse_u64(ms)?;
    match seq {
        None => Some(ParsedId {
            id: Sid::new(ms, missing_seq),
            seq_given: true,
        }),
        Some(b"*") if allow_star => Some(ParsedId {
            id: Sid::new(ms, 0),
            seq_given: false,
        }),
        Some(q) => Some(ParsedId {
            id: Sid::new(ms, parse_u64(q)?),
            seq_given: true,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(s: &mut Stream, ms: u64, seq: u64, fields: &[(&str, &str)]) {
        let f: Vec<(&[u8], &[u8])> = fields
            .iter()
            .map(|(a, b)| (a.as_bytes(), b.as_bytes()))
            .collect();
        s.append(Sid::new(ms, seq), &f).unwrap();
    }

    #[test]
    fn ids_parse_as_redis_does() {
        let p = |s: &str| parse_id_full(s.as_bytes(), 0, false, false).map(|p| p.id);
        assert_eq!(p("5"), Some(Sid::new(5, 0)));
        assert_eq!(p("5-3"), Some(Sid::new(5, 3)));
        assert_eq!(p("-"), Some(Sid::MIN));
        assert_eq!(p("+"), Some(Sid::MAX));
        assert_eq!(
            p("18446744073709551615-18446744073709551615"),
            Some(Sid::MAX)
        );
        assert_eq!(p("18446744073709551616"), None);
        assert_eq!(p("-1"), None);
        assert_eq!(p("1-x"), None);
        assert_eq!(p(""), None);
        assert_eq!(p("5-*"), None);
        assert_eq!(
            parse_id_full(b"5-*", 0, true, true),
            Some(ParsedId {
                id: Sid::new(5, 0),
                seq_given: false
            })
        );
        assert_eq!(parse_id_full(b"+", 0, true, false), None);
    }

    #[test]
    fn append_range_delete_trim() {
        let mut s = Stream::new();
        for i in 1..=250u64 {
            add(&mut s, i, 0, &[("a", "1"), ("b", &i.to_string())]);
        }
        add(&mut s, 251, 0, &[("other", "x")]);
        assert_eq!(s.len(), 251);
        assert!(s.nodes() >= 3);
        let mut ids = Vec::new();
        s.range(Sid::new(99, 0), Sid::new(102, 0), false, |id, e| {
            ids.push((id.ms, e.fields()[1].1.to_vec()));
            true
        });
        assert_eq!(
            ids,
            vec![
                (99, b"99".to_vec()),
                (100, b"100".to_vec()),
                (101, b"101".to_vec()),
                (102, b"102".to_vec())
            ]
        );
        let mut rev = Vec::new();
        s.range(Sid::MIN, Sid::MAX, true, |id, _| {
            rev.push(id.ms);
            rev.len() < 3
        });
        assert_eq!(rev, vec![251, 250, 249]);
        assert_eq!(s.get(Sid::new(251, 0)).unwrap()[0].0, b"other");
        assert!(s.delete(Sid::new(1, 0)));
        assert!(!s.delete(Sid::new(1, 0)));
        assert_eq!(s.first_id, Sid::new(2, 0));
        assert_eq!(s.max_deleted, Sid::new(1, 0));
        let before = s.charge();
        assert_eq!(
            s.trim(Trim::MaxLen(200), true, 0),
            0,
            "no whole node can go"
        );
        assert_eq!(s.trim(Trim::MaxLen(150), true, 0), 99);
        assert!(s.charge() < before);
        assert_eq!(s.trim(Trim::MaxLen(10), false, 0), 141);
        assert_eq!(s.len(), 10);
        assert_eq!(s.first_id, Sid::new(242, 0));
        assert_eq!(s.entries().len(), 10);
        assert_eq!(s.trim(Trim::MinId(Sid::new(245, 0)), false, 0), 3);
        assert_eq!(s.edge_id(false), Some(Sid::new(245, 0)));
        assert_eq!(s.edge_id(true), Some(Sid::new(251, 0)));
    }

    #[test]
    fn integers_and_other_strings_read_back_byte_for_byte() {
        let vals = [
            "0",
            "-1",
            "123456",
            "007",
            "-0",
            "+5",
            " 1",
            "1.5",
            "",
            "9223372036854775807",
            "-9223372036854775808",
            "4611686018427387904",
            "-4611686018427387904",
            "4611686018427387903",
        ];
        let mut s = Stream::new();
        for (i, v) in vals.iter().enumerate() {
            add(&mut s, i as u64 + 1, 0, &[("f", v), (v, "x")]);
        }
        let got = s.entries();
        for (i, v) in vals.iter().enumerate() {
            assert_eq!(got[i].1[0].1, v.as_bytes());
            assert_eq!(got[i].1[1].0, v.as_bytes());
        }
    }

    #[test]
    fn same_ms_ids_and_charge_bounds() {
        let mut s = Stream::new();
        let f: [(&[u8], &[u8]); 3] = [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")];
        for i in 0..1000u64 {
            let bound = s.add_bound(&f);
            let before = s.charge();
            s.append(Sid::new(7, i), &f).unwrap();
            assert!(s.charge() <= before + bound);
        }
        assert_eq!(s.append(Sid::new(7, 5), &f), Err(AddError::NotGreater));
        assert_eq!(s.get(Sid::new(7, 999)).unwrap().len(), 3);
        // Compact: well under 20 bytes an entry beyond the fixed costs.
        assert!(s.charge() < 1000 * 20, "{}", s.charge());
    }
}
