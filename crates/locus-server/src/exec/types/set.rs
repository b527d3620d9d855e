//! Sets: SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP SRANDMEMBER SMOVE SINTER SINTERCARD
//! SUNION SDIFF SINTERSTORE SUNIONSTORE SDIFFSTORE SSCAN.
//!
//! As in Redis 7.0, a set whose members are all integers (in canonical decimal form, as Redis's
//! `string2ll` reads them) and that holds at most `set-max-intset-entries` of them is a sorted
//! array of integers (`intset`); any other set is a hash table (`hashtable`) keyed with a
//! per-process random hash, so that a tenant cannot slow another's lookups by choosing colliding
//! members. Conversion is one way. Replies, error words, the order of checks and keyspace events
//! are Redis 7.0's; each handler reports its own WATCH touches, since Redis signals a set only
//! when it changed (SADD of present members, SREM of absent ones and a STORE that leaves an
//! absent destination absent touch nothing).

use std::collections::{HashMap, HashSet};

use locus_engine::{Object, TenantId, ValueRef};
use locus_protocol::ReplyWriter;

use super::super::notify::{GENERIC, SET, notify};
use super::super::{Args, CmdError, CmdResult, Ctx, int_arg, is, parse_i64};
use super::entries::{self, Entries, Slot, Stored, Whole};
use super::hash::{ScanArgs, random_below, scan_args, table_scan_step};
use super::{alloc, check_type, peek, touched, write};

/// `set-max-intset-entries`.
fn max_intset() -> usize {
    super::limits::SET_INTSET.usize()
}

type Table = Entries<Whole>;

/// A member as the set holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Member<'a> {
    /// An intset's integer.
    Int(i64),
    /// A hash table's member.
    Str(&'a [u8]),
}

impl Member<'_> {
    /// The member's bytes (an integer in decimal).
    pub fn to_vec(self) -> Vec<u8> {
        match self {
            Member::Int(i) => itoa::Buffer::new().format(i).as_bytes().to_vec(),
            Member::Str(s) => s.to_vec(),
        }
    }

    fn write(self, w: &mut ReplyWriter<'_>) {
        match self {
            Member::Int(i) => w.bulk_int(i),
            Member::Str(s) => w.bulk(s),
        }
    }
}

/// Integers in ascending order, each stored in the narrowest of 2, 4 or 8 little-endian bytes
/// that holds them all (Redis's `intset`: 100 small integers take 200 bytes, not 800). The
/// buffer grows by an eighth (an insertion moves the tail anyway), so its charge stays close to
/// what it holds.
#[derive(Debug, Clone, Default)]
pub struct IntSet {
    /// Bytes per integer (2, 4 or 8; 0 while nothing was stored).
    width: u8,
    data: Vec<u8>,
}

fn width_of(v: i64) -> u8 {
    if i16::try_from(v).is_ok() {
        2
    } else if i32::try_from(v).is_ok() {
        4
    } else {
        8
    }
}

impl IntSet {
    fn w(&self) -> usize {
        usize::from(self.width.max(2))
    }

    /// Integers held.
    pub fn len(&self) -> usize {
        self.data.len() / self.w()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The integer at position `i` (`i < len`).
    pub fn get(&self, i: usize) -> i64 {
        let w = self.w();
        let b = &self.data[i * w..(i + 1) * w];
        match w {
            2 => i64::from(i16::from_le_bytes([b[0], b[1]])),
            4 => i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            _ => i64::from_le_bytes(b.try_into().unwrap_or_default()),
        }
    }

    /// Where `v` is (`Ok`) or would go (`Err`).
    pub fn search(&self, v: i64) -> Result<usize, usize> {
        if width_of(v) > self.width.max(2) {
            // Wider than every member: below or above them all.
            return Err(if v < 0 { 0 } else { self.len() });
        }
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.get(mid).cmp(&v) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// Every integer, ascending.
    pub fn iter(&self) -> impl Iterator<Item = i64> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    fn encode(v: i64, w: usize) -> ([u8; 8], usize) {
        let mut b = [0u8; 8];
        match w {
            2 => b[..2].copy_from_slice(&(v as i16).to_le_bytes()),
            4 => b[..4].copy_from_slice(&(v as i32).to_le_bytes()),
            _ => b = v.to_le_bytes(),
        }
        (b, w)
    }

    /// Room for `extra` more bytes, with an eighth of slack.
    fn reserve(&mut self, extra: usize) {
        let need = self.data.len() + extra;
        if need > self.data.capacity() {
            self.data.reserve_exact(need + need / 8 - self.data.len());
        }
    }

    /// Inserts `v`; true when it is new.
    pub fn insert(&mut self, v: i64) -> bool {
        let need = width_of(v);
        if need > self.width {
            let vals: Vec<i64> = self.iter().collect();
            let mut data = Vec::with_capacity((vals.len() + 1) * usize::from(need));
            for x in vals {
                let (b, n) = Self::encode(x, usize::from(need));
                data.extend_from_slice(&b[..n]);
            }
            self.width = need;
            self.data = data;
        }
        let Err(at) = self.search(v) else {
            return false;
        };
        let w = self.w();
        self.reserve(w);
        let (b, n) = Self::encode(v, w);
        self.data.splice(at * w..at * w, b[..n].iter().copied());
        true
    }

    /// Removes the integer at position `i`.
    pub fn remove_at(&mut self, i: usize) {
        let w = self.w();
        self.data.drain(i * w..(i + 1) * w);
        self.shrink();
    }

    /// Keeps the integers whose position is not marked in `drop`.
    fn retain_unmarked(&mut self, drop: &[bool]) {
        let w = self.w();
        let mut out = 0;
        for (i, &d) in drop.iter().enumerate() {
            if !d {
                self.data.copy_within(i * w..(i + 1) * w, out * w);
                out += 1;
            }
        }
        self.data.truncate(out * w);
        self.shrink();
    }

    fn shrink(&mut self) {
        if self.data.capacity() > 64 && self.data.len() < self.data.capacity() / 2 {
            self.data.shrink_to(self.data.len() + self.data.len() / 8);
        }
    }

    /// Bytes its buffer takes.
    pub fn charge(&self) -> u64 {
        alloc::heap(self.data.capacity())
    }

    /// The most its charge can grow when `n` integers are inserted.
    fn grow_bound(&self, n: usize) -> u64 {
        // Widest case: every integer re-encoded in 8 bytes, plus the slack.
        let bytes = (self.len() + n) * 8;
        alloc::heap(bytes + bytes / 8 + 8)
    }
}

/// A Redis set.
#[derive(Debug, Clone)]
pub enum Set {
    /// Integers in ascending order (`intset`).
    Ints(IntSet),
    /// A hash table, with the bytes its members hold.
    Table(Table, u64),
}

impl Default for Set {
    fn default() -> Self {
        Set::Ints(IntSet::default())
    }
}

/// A member in Redis's canonical integer form (the only members an intset holds).
fn int_of(m: &[u8]) -> Option<i64> {
    parse_i64(m)
}

fn int_len(i: i64) -> usize {
    itoa::Buffer::new().format(i).len()
}

impl Set {
    /// Members held.
    pub fn len(&self) -> usize {
        match self {
            Set::Ints(v) => v.len(),
            Set::Table(t, _) => t.len(),
        }
    }

    /// Whether it holds no member.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `m` is a member.
    pub fn contains(&self, m: &[u8]) -> bool {
        match self {
            Set::Ints(v) => int_of(m).is_some_and(|i| v.search(i).is_ok()),
            Set::Table(t, _) => t.find(m).is_some(),
        }
    }

    /// The member at position `i` (`i < len`) in the set's order.
    pub fn at(&self, i: usize) -> Member<'_> {
        match self {
            Set::Ints(v) => Member::Int(v.get(i)),
            Set::Table(t, _) => Member::Str(t.get_index(i).unwrap_or_default()),
        }
    }

    /// Every member, in the set's order (ascending for an intset).
    pub fn iter(&self) -> impl Iterator<Item = Member<'_>> {
        let (ints, strs) = match self {
            Set::Ints(v) => (Some(v.iter().map(Member::Int)), None),
            Set::Table(t, _) => (None, Some(t.iter().map(Member::Str))),
        };
        ints.into_iter().flatten().chain(strs.into_iter().flatten())
    }

    /// Every member, owned.
    pub fn members(&self) -> Vec<Vec<u8>> {
        self.iter().map(Member::to_vec).collect()
    }

    /// The most [`Object::charge`] can grow when `members` are added.
    pub fn grow_bound<'a>(&self, members: impl Iterator<Item = &'a [u8]>) -> u64 {
        let (mut n, mut boxed, mut all_ints) = (0usize, 0u64, true);
        for m in members {
            n += 1;
            boxed += <Slot as Stored>::charge(m.len());
            all_ints &= int_of(m).is_some();
        }
        match self {
            Set::Ints(v) if all_ints && v.len() + n <= max_intset() => v.grow_bound(n),
            Set::Ints(v) => {
                // Converts: the whole table (the buckets of everything it may hold bound its
                // capacity), the integers boxed as strings, and the new members.
                let existing: u64 = v.iter().map(|i| <Slot as Stored>::charge(int_len(i))).sum();
                let need = v.len() + n;
                v.grow_bound(n)
                    + entries::tables_charge::<Whole>(3 * need, 3 * need)
                    + existing
                    + boxed
            }
            Set::Table(t, _) => t.grow_bound(n) + boxed,
        }
    }

    fn convert_to_table(&mut self, room: usize) {
        if let Set::Ints(v) = self {
            let mut t = Table::with_capacity(v.len() + room);
            let mut elems = 0;
            let mut b = itoa::Buffer::new();
            for i in v.iter() {
                let s = b.format(i).as_bytes();
                elems += <Slot as Stored>::charge(s.len());
                t.insert_new(Slot::new(s));
            }
            *self = Set::Table(t, elems);
        }
    }

    /// Adds `m`; true when it is new.
    pub fn add(&mut self, m: &[u8]) -> bool {
        if let Set::Ints(v) = self {
            match int_of(m) {
                Some(i) => {
                    if !v.insert(i) {
                        return false;
                    }
                    if v.len() > max_intset() {
                        self.convert_to_table(0);
                    }
                    return true;
                }
                None => self.convert_to_table(1),
            }
        }
        let Set::Table(t, elems) = self else {
            return false;
        };
        if t.find(m).is_some() {
            return false;
        }
        *elems += <Slot as Stored>::charge(m.len());
        t.insert_new(Slot::new(m));
        true
    }

    /// Whether `m` (a member of another set) is a member: an integer is searched as one in an
    /// intset, and formatted only for a hash table.
    pub fn contains_member(&self, m: Member<'_>) -> bool {
        match (self, m) {
            (Set::Ints(v), Member::Int(i)) => v.search(i).is_ok(),
            (Set::Table(t, _), Member::Int(i)) => {
                t.find(itoa::Buffer::new().format(i).as_bytes()).is_some()
            }
            (_, Member::Str(s)) => self.contains(s),
        }
    }

    /// Adds `m` (a member of another set); true when it is new.
    pub fn add_member(&mut self, m: Member<'_>) -> bool {
        match m {
            Member::Int(i) => self.add(itoa::Buffer::new().format(i).as_bytes()),
            Member::Str(s) => self.add(s),
        }
    }

    /// Removes `m` (a member of another set); true when it was there.
    pub fn remove_member(&mut self, m: Member<'_>) -> bool {
        match (&mut *self, m) {
            (Set::Ints(v), Member::Int(i)) => match v.search(i) {
                Ok(at) => {
                    v.remove_at(at);
                    true
                }
                Err(_) => false,
            },
            (_, Member::Int(i)) => self.remove(itoa::Buffer::new().format(i).as_bytes()),
            (_, Member::Str(s)) => self.remove(s),
        }
    }

    /// Removes `m`; true when it was there.
    pub fn remove(&mut self, m: &[u8]) -> bool {
        match self {
            Set::Ints(v) => match int_of(m).map(|i| v.search(i)) {
                Some(Ok(at)) => {
                    v.remove_at(at);
                    true
                }
                _ => false,
            },
            Set::Table(t, elems) => {
                if t.swap_remove(m).is_some() {
                    *elems -= <Slot as Stored>::charge(m.len());
                    true
                } else {
                    false
                }
            }
        }
    }

    /// Removes and returns `count` distinct members chosen at random (all when `count >= len`).
    pub fn pop_random(&mut self, count: usize) -> Vec<Vec<u8>> {
        let n = self.len();
        if count >= n {
            let all = self.members();
            *self = Set::default();
            return all;
        }
        match self {
            Set::Ints(v) => {
                let picked = distinct_positions(n, count);
                let mut take = vec![false; n];
                let mut out = Vec::with_capacity(count);
                for &i in &picked {
                    take[i] = true;
                    out.push(Member::Int(v.get(i)).to_vec());
                }
                v.retain_unmarked(&take);
                out
            }
            Set::Table(t, elems) => {
                let mut out = Vec::with_capacity(count);
                for _ in 0..count {
                    let i = random_below(t.len() as u64) as usize;
                    if let Some(m) = t.swap_remove_index(i) {
                        *elems -= <Slot as Stored>::charge(m.bytes().len());
                        out.push(m.to_vec());
                    }
                }
                out
            }
        }
    }
}

/// `count` distinct positions below `n` (`count <= n`), chosen uniformly: a partial
/// Fisher-Yates shuffle when many are wanted, draws with rejection when few are.
fn distinct_positions(n: usize, count: usize) -> Vec<usize> {
    if count.saturating_mul(3) > n {
        let mut idx: Vec<usize> = (0..n).collect();
        for i in 0..count {
            let j = i + random_below((n - i) as u64) as usize;
            idx.swap(i, j);
        }
        idx.truncate(count);
        idx
    } else {
        let mut seen = HashSet::with_capacity(count);
        let mut out = Vec::with_capacity(count);
        while out.len() < count {
            let i = random_below(n as u64) as usize;
            if seen.insert(i) {
                out.push(i);
            }
        }
        out
    }
}

impl Object for Set {
    fn type_name(&self) -> &'static str {
        "set"
    }
    fn encoding(&self) -> &'static str {
        match self {
            Set::Ints(_) => "intset",
            Set::Table(..) => "hashtable",
        }
    }
    fn charge(&self) -> u64 {
        match self {
            Set::Ints(v) => v.charge(),
            Set::Table(t, elems) => t.tables_charge() + *elems,
        }
    }
    fn len(&self) -> usize {
        Set::len(self)
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

/// Publishes a set event, and `del` when the write emptied the key.
fn events(ctx: &Ctx<'_>, t: TenantId, key: &[u8], event: &str, deleted: bool) {
    super::events(ctx, t, key, SET, event, deleted);
}

/// Reads the set at `key` (touched as GET does) with the reply writer at hand.
fn with_set<R>(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    f: impl FnOnce(&Set, &mut ReplyWriter<'_>) -> R,
) -> Result<Option<R>, CmdError> {
    super::with::<Set, R>(ctx, t, key, f)
}

/// Writes members as a set (RESP3) or an array (RESP2).
fn reply_set(w: &mut ReplyWriter<'_>, members: &[Vec<u8>]) {
    w.set(members.len());
    for m in members {
        w.bulk(m);
    }
}

/// Writes members as an array.
fn reply_array(w: &mut ReplyWriter<'_>, members: &[Vec<u8>]) {
    w.array(members.len());
    for m in members {
        w.bulk(m);
    }
}

/// Adds `members` to the set at `key` (created when absent): how many were new. Touches WATCH
/// and sends `sadd` when any was.
fn add_members(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    members: &[&[u8]],
) -> Result<usize, CmdError> {
    let bound = peek::<Set, u64>(ctx, t, key, |s| s.grow_bound(members.iter().copied()))?
        .unwrap_or_else(|| Set::default().grow_bound(members.iter().copied()));
    let (added, _) = write::<Set, usize>(ctx, t, key, bound, true, |s| {
        members.iter().filter(|m| s.add(m)).count()
    })?
    .expect("created");
    if added > 0 {
        touched(ctx, t, key);
        events(ctx, t, key, "sadd", false);
    }
    Ok(added)
}

/// `SADD key member [member ...]`
pub fn sadd(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let members: Vec<&[u8]> = a[2..].iter().map(|m| &m[..]).collect();
    let n = add_members(ctx, t, &a[1], &members)?;
    ctx.w.integer(n as i64);
    Ok(())
}

/// `SREM key member [member ...]`
pub fn srem(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let key = &a[1][..];
    let r = write::<Set, usize>(ctx, t, key, 0, false, |s| {
        a[2..].iter().filter(|m| s.remove(m)).count()
    })?;
    let (n, deleted) = r.map_or((0, false), |(n, w)| (n, w.deleted));
    if n > 0 {
        touched(ctx, t, key);
        events(ctx, t, key, "srem", deleted);
    }
    ctx.w.integer(n as i64);
    Ok(())
}

/// `SCARD key`
pub fn scard(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let n = with_set(ctx, t, &a[1], |s, _| s.len())?.unwrap_or(0);
    ctx.w.integer(n as i64);
    Ok(())
}

/// `SISMEMBER key member`
pub fn sismember(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let hit = with_set(ctx, t, &a[1], |s, _| s.contains(&a[2]))?.unwrap_or(false);
    ctx.w.integer(i64::from(hit));
    Ok(())
}

/// `SMISMEMBER key member [member ...]`
pub fn smismember(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let found = with_set(ctx, t, &a[1], |s, w| {
        w.array(a.len() - 2);
        for m in &a[2..] {
            w.integer(i64::from(s.contains(m)));
        }
    })?;
    if found.is_none() {
        ctx.w.array(a.len() - 2);
        for _ in 2..a.len() {
            ctx.w.integer(0);
        }
    }
    Ok(())
}

/// `SMEMBERS key`
pub fn smembers(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let found = with_set(ctx, t, &a[1], |s, w| {
        w.set(s.len());
        for m in s.iter() {
            m.write(w);
        }
    })?;
    if found.is_none() {
        ctx.w.set(0);
    }
    Ok(())
}

/// `SPOP key [count]`
pub fn spop(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    if a.len() > 3 {
        return Err(CmdError::Syntax);
    }
    let t = ctx.t()?;
    let key = &a[1][..];
    let count = match a.get(2) {
        // (Redis words a count that is not an integer like a negative one.)
        Some(c) => Some(
            parse_i64(c)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| CmdError::msg("ERR value is out of range, must be positive"))?,
        ),
        None => None,
    };
    let exists = check_type::<Set>(ctx, t, key)?;
    let absent = |ctx: &mut Ctx<'_>| match count {
        Some(_) => ctx.w.set(0),
        None => ctx.w.null(),
    };
    if !exists || count == Some(0) {
        absent(ctx);
        return Ok(());
    }
    let r =
        write::<Set, Vec<Vec<u8>>>(ctx, t, key, 0, false, |s| s.pop_random(count.unwrap_or(1)))?;
    let Some((vals, w)) = r else {
        absent(ctx);
        return Ok(());
    };
    touched(ctx, t, key);
    events(ctx, t, key, "spop", w.deleted);
    match count {
        Some(_) => reply_set(&mut ctx.w, &vals),
        None => ctx.w.bulk(&vals[0]),
    }
    Ok(())
}

/// `SRANDMEMBER key [count]`
pub fn srandmember(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    if a.len() > 3 {
        return Err(CmdError::Syntax);
    }
    let t = ctx.t()?;
    let count = match a.get(2) {
        Some(c) => {
            let c = int_arg(c)?;
            if c == i64::MIN {
                return Err(CmdError::msg(format!(
                    "ERR value is out of range, value must between {} and {}",
                    -i64::MAX,
                    i64::MAX
                )));
            }
            Some(c)
        }
        None => None,
    };
    super::hash::check_repeated_picks(count)?;
    let found = with_set(ctx, t, &a[1], |s, w| {
        let n = s.len();
        match count {
            None => s.at(random_below(n as u64) as usize).write(w),
            Some(c) if c < 0 => {
                // Repeats allowed: each draw is independent.
                let c = c.unsigned_abs() as usize;
                w.array(c);
                for _ in 0..c {
                    s.at(random_below(n as u64) as usize).write(w);
                }
            }
            Some(c) if c as u64 >= n as u64 => {
                w.array(n);
                for m in s.iter() {
                    m.write(w);
                }
            }
            Some(c) => {
                let picked = distinct_positions(n, c as usize);
                w.array(picked.len());
                for i in picked {
                    s.at(i).write(w);
                }
            }
        }
    })?;
    if found.is_none() {
        match count {
            Some(_) => ctx.w.array(0),
            None => ctx.w.null(),
        }
    }
    Ok(())
}

/// `SMOVE source destination member`
pub fn smove(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let (src, dst, m) = (&a[1][..], &a[2][..], &a[3][..]);
    // As Redis: an absent source answers 0 before either type is checked.
    let Some(in_src) = peek::<Set, bool>(ctx, t, src, |s| s.contains(m))? else {
        ctx.w.integer(0);
        return Ok(());
    };
    check_type::<Set>(ctx, t, dst)?;
    if src == dst || !in_src {
        ctx.w.integer(i64::from(in_src));
        return Ok(());
    }
    // The destination gains first, so a write refused for memory loses nothing.
    let bound = peek::<Set, u64>(ctx, t, dst, |s| s.grow_bound([m].into_iter()))?
        .unwrap_or_else(|| Set::default().grow_bound([m].into_iter()));
    let (added, _) = write::<Set, bool>(ctx, t, dst, bound, true, |s| s.add(m))?.expect("created");
    let removed = write::<Set, bool>(ctx, t, src, 0, false, |s| s.remove(m))?;
    if let Some((true, w)) = removed {
        touched(ctx, t, src);
        events(ctx, t, src, "srem", w.deleted);
    }
    if added {
        touched(ctx, t, dst);
        events(ctx, t, dst, "sadd", false);
    }
    ctx.w.integer(1);
    Ok(())
}

/// Which algebra a command computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Inter,
    Union,
    Diff,
}

/// The distinct keys of `keys` (in order of first appearance) and, for each key argument, the
/// position of its key among them: a key named twice is one object, read once.
pub fn distinct<'k>(keys: &[&'k [u8]]) -> (Vec<&'k [u8]>, Vec<usize>) {
    // A few keys (the usual call) are compared pairwise: cheaper than building a keyed hash map
    // for them. Longer lists (up to a million names) hash, so the work stays linear.
    if keys.len() <= 8 {
        let mut uniq: Vec<&[u8]> = Vec::with_capacity(keys.len());
        let at = keys
            .iter()
            .map(|&k| match uniq.iter().position(|&u| u == k) {
                Some(i) => i,
                None => {
                    uniq.push(k);
                    uniq.len() - 1
                }
            })
            .collect();
        return (uniq, at);
    }
    let mut seen: HashMap<&[u8], usize> = HashMap::with_capacity(keys.len().min(1 << 16));
    let mut uniq = Vec::new();
    let at = keys
        .iter()
        .map(|&k| {
            *seen.entry(k).or_insert_with(|| {
                uniq.push(k);
                uniq.len() - 1
            })
        })
        .collect();
    (uniq, at)
}

/// Reads the keys of `keys` as Redis's set algebra looks them up before computing (touched as
/// GET touches it; absent or a set, else WRONGTYPE), each distinct key once, then returns the
/// distinct keys and each argument's position among them.
fn lookup<'k>(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    keys: &[&'k [u8]],
) -> Result<(Vec<&'k [u8]>, Vec<usize>), CmdError> {
    // Each distinct key is read (type-checked, its access recorded) once, in the order it is
    // first named, so the first wrong type is the one Redis reports; a key named again costs a
    // hash lookup, not another read (`SDIFF a a a ...` of 400 names stays microseconds).
    let (uniq, at) = distinct(keys);
    for k in &uniq {
        super::read::<Set, ()>(ctx, t, k, |_| ())?;
    }
    Ok((uniq, at))
}

/// The sets at `keys`, borrowed together (`None` for an absent key); every key was type-checked
/// by [`lookup`].
fn borrow_sets<'e>(
    eng: &'e mut locus_engine::Engine,
    t: TenantId,
    keys: &[&[u8]],
) -> Vec<Option<&'e Set>> {
    eng.peek_values(t, keys)
        .into_iter()
        .map(|v| match v {
            Some(ValueRef::Obj(o)) => o.as_any().downcast_ref::<Set>(),
            _ => None,
        })
        .collect()
}

/// A result: members borrowed from an input, or a set built for it.
enum Outcome<'a> {
    Members(Vec<Member<'a>>),
    Built(Set),
}

impl Outcome<'_> {
    fn len(&self) -> usize {
        match self {
            Outcome::Members(v) => v.len(),
            Outcome::Built(s) => s.len(),
        }
    }

    fn write(&self, w: &mut ReplyWriter<'_>) {
        w.set(self.len());
        match self {
            Outcome::Members(v) => v.iter().for_each(|m| m.write(w)),
            Outcome::Built(s) => s.iter().for_each(|m| m.write(w)),
        }
    }

    fn into_set(self) -> Set {
        match self {
            Outcome::Built(s) => s,
            Outcome::Members(v) => {
                let mut s = Set::default();
                for m in v {
                    s.add_member(m);
                }
                s
            }
        }
    }
}

/// The intersection of the distinct sets `sets` (each named once: intersecting a set with
/// itself changes nothing), as Redis's `sinterGenericCommand` computes it: empty at once when
/// any is absent or empty, else each member of the smallest looked up in the others, smallest
/// first so a miss comes early; stops at `limit` members (0: none).
fn inter<'a>(sets: &[Option<&'a Set>], limit: usize) -> Vec<Member<'a>> {
    let Some(mut sets) = sets.iter().copied().collect::<Option<Vec<&Set>>>() else {
        return Vec::new();
    };
    sets.sort_by_key(|s| s.len());
    let Some((first, others)) = sets.split_first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for m in first.iter() {
        if others.iter().all(|o| o.contains_member(m)) {
            out.push(m);
            if out.len() == limit {
                break;
            }
        }
    }
    out
}

/// The union of the distinct sets `sets` (a set named twice adds nothing the second time).
fn union(sets: &[Option<&Set>]) -> Set {
    let mut acc = Set::default();
    for s in sets.iter().flatten() {
        for m in s.iter() {
            acc.add_member(m);
        }
    }
    acc
}

/// The members of `first` in none of `others` (distinct sets, none of them `first`), by the
/// cheaper of Redis's two algorithms: each member of `first` looked up in the others, largest
/// first (about `|first| * others / 2` lookups, as many hit early), or a copy of `first` with
/// every member of the others removed (their total size), stopping once the copy is empty.
fn diff<'a>(first: &'a Set, others: &[&Set]) -> Outcome<'a> {
    let one = first.len() as u64 * (others.len() as u64 + 1) / 2;
    let two: u64 = first.len() as u64 + others.iter().map(|s| s.len() as u64).sum::<u64>();
    if one <= two {
        let mut by_size = others.to_vec();
        by_size.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Outcome::Members(
            first
                .iter()
                .filter(|&m| !by_size.iter().any(|o| o.contains_member(m)))
                .collect(),
        )
    } else {
        let mut acc = first.clone();
        for o in others {
            if acc.is_empty() {
                break;
            }
            for m in o.iter() {
                acc.remove_member(m);
            }
        }
        Outcome::Built(acc)
    }
}

/// `op` over the sets at `keys` (checked and read by [`lookup`]); `limit` stops an
/// intersection (0: none). The result borrows the engine: `f` replies or builds from it.
fn compute<R>(
    eng: &mut locus_engine::Engine,
    t: TenantId,
    uniq: &[&[u8]],
    at: &[usize],
    op: Op,
    limit: usize,
    f: impl FnOnce(Outcome<'_>) -> R,
) -> R {
    // A later key naming the first set removes every member (Redis's `sameset`): nothing to read.
    if op == Op::Diff && at[1..].contains(&at[0]) {
        return f(Outcome::Members(Vec::new()));
    }
    let sets = borrow_sets(eng, t, uniq);
    let out = match op {
        Op::Inter => Outcome::Members(inter(&sets, limit)),
        Op::Union => Outcome::Built(union(&sets)),
        Op::Diff => {
            let first = at[0];
            match sets[first] {
                Some(s) => {
                    let others: Vec<&Set> = sets
                        .iter()
                        .enumerate()
                        .filter(|&(i, _)| i != first)
                        .filter_map(|(_, s)| *s)
                        .collect();
                    diff(s, &others)
                }
                _ => Outcome::Members(Vec::new()),
            }
        }
    };
    f(out)
}

fn keys_from<'x>(a: Args<'x, '_>, from: usize) -> Vec<&'x [u8]> {
    a[from..].iter().map(|k| &k[..]).collect()
}

fn algebra(ctx: &mut Ctx<'_>, a: Args<'_, '_>, op: Op) -> CmdResult {
    let t = ctx.t()?;
    let (uniq, at) = lookup(ctx, t, &keys_from(a, 1))?;
    let w = &mut ctx.w;
    compute(ctx.eng, t, &uniq, &at, op, 0, |out: Outcome<'_>| {
        out.write(w)
    });
    Ok(())
}

fn algebra_store(ctx: &mut Ctx<'_>, a: Args<'_, '_>, op: Op, event: &str) -> CmdResult {
    let t = ctx.t()?;
    let dst = &a[1][..];
    let (uniq, at) = lookup(ctx, t, &keys_from(a, 2))?;
    let result = compute(ctx.eng, t, &uniq, &at, op, 0, |out: Outcome<'_>| {
        (out.len() > 0).then(|| out.into_set())
    });
    let n = result.as_ref().map_or(0, Set::len);
    // An empty result deletes the destination, as Redis does; no object is built for it.
    let existed = match result {
        Some(set) => super::store(ctx, t, dst, Box::new(set))?,
        None => ctx.eng.delete(t, dst),
    };
    if n > 0 {
        touched(ctx, t, dst);
        events(ctx, t, dst, event, false);
    } else if existed {
        touched(ctx, t, dst);
        notify(ctx.fx, t, ctx.conn.db, GENERIC, "del", dst);
    }
    ctx.w.integer(n as i64);
    Ok(())
}

/// `SINTER key [key ...]`
pub fn sinter(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    algebra(ctx, a, Op::Inter)
}

/// `SUNION key [key ...]`
pub fn sunion(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    algebra(ctx, a, Op::Union)
}

/// `SDIFF key [key ...]`
pub fn sdiff(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    algebra(ctx, a, Op::Diff)
}

/// `SINTERSTORE destination key [key ...]`
pub fn sinterstore(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    algebra_store(ctx, a, Op::Inter, "sinterstore")
}

/// `SUNIONSTORE destination key [key ...]`
pub fn sunionstore(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    algebra_store(ctx, a, Op::Union, "sunionstore")
}

/// `SDIFFSTORE destination key [key ...]`
pub fn sdiffstore(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    algebra_store(ctx, a, Op::Diff, "sdiffstore")
}

/// `SINTERCARD numkeys key [key ...] [LIMIT limit]`
pub fn sintercard(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let numkeys_err = || CmdError::msg("ERR numkeys should be greater than 0");
    let numkeys = parse_i64(&a[1])
        .filter(|&n| n >= 1)
        .ok_or_else(numkeys_err)?;
    if numkeys > (a.len() - 2) as i64 {
        return Err(CmdError::msg(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    let end = 2 + numkeys as usize;
    let mut limit = 0usize;
    let mut j = end;
    while j < a.len() {
        if is(&a[j], "limit") && j + 1 < a.len() {
            j += 1;
            limit = parse_i64(&a[j])
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| CmdError::msg("ERR LIMIT can't be negative"))?;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    let t = ctx.t()?;
    let keys: Vec<&[u8]> = a[2..end].iter().map(|k| &k[..]).collect();
    let (uniq, at) = lookup(ctx, t, &keys)?;
    let n = compute(
        ctx.eng,
        t,
        &uniq,
        &at,
        Op::Inter,
        limit,
        |out: Outcome<'_>| out.len(),
    );
    ctx.w.integer(n as i64);
    Ok(())
}

/// `SSCAN key cursor [MATCH pattern] [COUNT count]`: an intset whole in one call (cursor 0), as
/// Redis answers for one; a hash table `COUNT` members a call (see [`table_scan_step`]), so a
/// large set is never copied whole under the engine lock.
pub fn sscan(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    // As Redis: the cursor is read first, then the key, and the options only for a set.
    scan_args(&a[..3], 2)?;
    let opts = scan_args(a, 2);
    let step = |s: &Set, sa: ScanArgs<'_>| -> (u64, Vec<Vec<u8>>) {
        match s {
            Set::Ints(_) => (
                0,
                s.iter()
                    .map(Member::to_vec)
                    .filter(|m| sa.matches(m))
                    .collect(),
            ),
            Set::Table(tb, _) => {
                let (range, next) = table_scan_step(tb.len(), sa.cursor, sa.count);
                let members = range
                    .rev()
                    .filter_map(|i| tb.get_index(i))
                    .filter(|m| sa.matches(m))
                    .map(<[u8]>::to_vec)
                    .collect();
                (next, members)
            }
        }
    };
    let (next, members) = match with_set(ctx, t, &a[1], |s, _| opts.map(|sa| step(s, sa)))? {
        None => (0, Vec::new()),
        Some(r) => r?,
    };
    ctx.w.array(2);
    ctx.w.bulk(next.to_string().as_bytes());
    reply_array(&mut ctx.w, &members);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_converts_past_the_intset_limits_and_keeps_every_member() {
        let mut s = Set::default();
        for i in 0..600 {
            let m = i.to_string();
            let before = s.charge();
            let bound = s.grow_bound([m.as_bytes()].into_iter());
            assert!(s.add(m.as_bytes()));
            assert!(s.charge() <= before + bound, "member {i}");
            assert_eq!(
                s.encoding(),
                if i < 512 { "intset" } else { "hashtable" },
                "member {i}"
            );
        }
        assert_eq!(s.len(), 600);
        assert!(s.contains(b"599"));
        assert!(!s.add(b"599"));
        assert!(s.remove(b"599"));
        assert!(!s.remove(b"599"));
        let mut small = Set::default();
        small.add(b"1");
        assert_eq!(small.encoding(), "intset");
        // Not canonical integers: stored as strings.
        for m in [&b"01"[..], b"-0", b" 1", b"+1"] {
            let mut s = small.clone();
            let before = s.charge();
            let bound = s.grow_bound([m].into_iter());
            assert!(s.add(m));
            assert!(s.charge() <= before + bound);
            assert_eq!(s.encoding(), "hashtable");
            assert!(s.contains(m) && s.contains(b"1"));
        }
    }

    #[test]
    fn an_intset_widens_and_keeps_its_order() {
        let mut v = IntSet::default();
        let vals = [
            5i64,
            -3,
            40_000,
            -70_000,
            i64::MAX,
            i64::MIN,
            0,
            7,
            32_767,
            -32_768,
        ];
        for (i, &x) in vals.iter().enumerate() {
            assert!(v.insert(x));
            assert!(!v.insert(x));
            let mut want = vals[..=i].to_vec();
            want.sort_unstable();
            assert_eq!(v.iter().collect::<Vec<_>>(), want);
        }
        assert_eq!(v.w(), 8);
        for &x in &vals {
            let at = v.search(x).expect("present");
            v.remove_at(at);
            assert!(v.search(x).is_err());
        }
        assert!(v.is_empty());
        let mut small = IntSet::default();
        for x in 0..100 {
            small.insert(x);
        }
        assert_eq!(small.w(), 2);
        assert!(small.charge() <= alloc::heap(100 * 2 + 100 * 2 / 8 + 8));
        assert_eq!(small.search(1 << 40), Err(100));
        assert_eq!(small.search(-(1 << 40)), Err(0));
    }

    #[test]
    fn a_bulk_add_stays_within_its_bound() {
        let mut s = Set::default();
        let ms: Vec<Vec<u8>> = (0..2000).map(|i| format!("m{i}").into_bytes()).collect();
        for chunk in ms.chunks(300) {
            let before = s.charge();
            let bound = s.grow_bound(chunk.iter().map(|m| &m[..]));
            for m in chunk {
                s.add(m);
            }
            assert!(s.charge() <= before + bound);
        }
        let popped = s.pop_random(1500);
        let distinct: HashSet<_> = popped.iter().collect();
        assert_eq!(distinct.len(), 1500);
        assert_eq!(s.len(), 500);
        assert!(popped.iter().all(|m| !s.contains(m)));
    }
}
