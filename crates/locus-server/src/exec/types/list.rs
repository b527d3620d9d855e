//! Lists: LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LRANGE LINDEX LSET LINSERT LREM LTRIM LPOS
//! LMOVE RPOPLPUSH LMPOP, and the blocking BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP.
//!
//! The list itself is a [`List`] (a quicklist: nodes of packed entries, see
//! [`super::quicklist`]); Redis 7.0 reports every list's encoding as `quicklist`, and so does
//! Locus. Replies, error words, argument order (which errors come before the key is looked up)
//! and keyspace events are Redis 7.0's. Each handler reports its own WATCH touches (Redis
//! signals a list only when it changed: not for LPUSHX on a missing key, LINSERT without the
//! pivot, LREM that removed nothing, LPOP with a count of 0).
//!
//! A blocking command that finds every key empty hands the client to [`blocking::block`]; when a
//! push makes one of its keys a list again, the command runs again on the client's behalf (see
//! [`crate::exec::blocking`]), and then answers exactly as it would have had the list been there.

use locus_engine::{Object, TenantId};
use locus_protocol::ReplyWriter;

use super::super::notify::LIST;
use super::super::{Args, CmdError, CmdResult, Ctx, blocking, int_arg, is, parse_i64};
use super::quicklist::{Elem, List, int_of};
use super::{check_type, peek, touched, write};

impl Object for List {
    fn type_name(&self) -> &'static str {
        "list"
    }
    fn encoding(&self) -> &'static str {
        "quicklist"
    }
    fn charge(&self) -> u64 {
        List::charge(self)
    }
    fn len(&self) -> usize {
        List::len(self)
    }
    // One allocation per quicklist node, as Redis counts a quicklist.
    fn free_effort(&self) -> usize {
        self.node_count()
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

/// The `type_name` of a list (what a blocked client waits for).
pub const KIND: &str = "list";

/// Publishes a list event, and `del` when the write emptied the key.
fn events(ctx: &Ctx<'_>, t: TenantId, key: &[u8], event: &str, deleted: bool) {
    super::events(ctx, t, key, LIST, event, deleted);
}

#[inline]
fn reply_elem(w: &mut ReplyWriter<'_>, e: Elem<'_>) {
    match e {
        Elem::Str(s) => w.bulk(s),
        Elem::Int(i) => w.bulk_int(i),
    }
}

fn reply_all(ctx: &mut Ctx<'_>, items: &[Vec<u8>]) {
    ctx.w.array(items.len());
    for i in items {
        ctx.w.bulk(i);
    }
}

/// Reads the list at `key` (touched as GET does) with the reply writer at hand: `Ok(None)` when
/// absent.
fn with_list<R>(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    f: impl FnOnce(&List, &mut ReplyWriter<'_>) -> Result<R, CmdError>,
) -> Result<Option<R>, CmdError> {
    super::with::<List, _>(ctx, t, key, f)?.transpose()
}

/// The most pushing `elems` onto `key` can add to its charge.
fn push_bound<'a>(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    elems: impl Iterator<Item = &'a [u8]> + Clone,
) -> Result<u64, CmdError> {
    Ok(
        peek::<List, u64>(ctx, t, key, |l| l.push_bound(elems.clone()))?
            .unwrap_or_else(|| List::new().push_bound(elems)),
    )
}

/// `LEFT` / `RIGHT`: true for the head.
fn side(a: &[u8]) -> Result<bool, CmdError> {
    if is(a, "left") {
        Ok(true)
    } else if is(a, "right") {
        Ok(false)
    } else {
        Err(CmdError::Syntax)
    }
}

fn push(ctx: &mut Ctx<'_>, a: Args<'_, '_>, front: bool, only_existing: bool) -> CmdResult {
    let t = ctx.t()?;
    let key = &a[1][..];
    let elems = || a[2..].iter().map(|e| &e[..]);
    let exists = check_type::<List>(ctx, t, key)?;
    if !exists && only_existing {
        ctx.w.integer(0);
        return Ok(());
    }
    let bound = push_bound(ctx, t, key, elems())?;
    let r = write::<List, usize>(ctx, t, key, bound, !only_existing, |l| {
        for e in elems() {
            if front {
                l.push_front(e);
            } else {
                l.push_back(e);
            }
        }
        l.len()
    })?;
    // (LPUSHX/RPUSHX: the key may have been evicted while room was made.)
    let Some((n, _)) = r else {
        ctx.w.integer(0);
        return Ok(());
    };
    touched(ctx, t, key);
    events(ctx, t, key, if front { "lpush" } else { "rpush" }, false);
    ctx.w.integer(n as i64);
    Ok(())
}

/// `LPUSH key element [element ...]`
pub fn lpush(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    push(ctx, a, true, false)
}

/// `RPUSH key element [element ...]`
pub fn rpush(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    push(ctx, a, false, false)
}

/// `LPUSHX key element [element ...]`
pub fn lpushx(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    push(ctx, a, true, true)
}

/// `RPUSHX key element [element ...]`
pub fn rpushx(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    push(ctx, a, false, true)
}

/// Pops up to `count` elements from one end of the list at `key` (a list the caller checked),
/// in pop order. `None` when the key is gone.
fn pop_n(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    front: bool,
    count: usize,
) -> Result<Option<Vec<Vec<u8>>>, CmdError> {
    let r = write::<List, Vec<Vec<u8>>>(ctx, t, key, 0, false, |l| {
        let n = count.min(l.len());
        if n == 1 {
            let v = if front { l.pop_front() } else { l.pop_back() };
            return v.into_iter().collect();
        }
        if front {
            let v: Vec<Vec<u8>> = l.iter().take(n).map(Elem::to_vec).collect();
            l.delete_range(0, n);
            v
        } else {
            let len = l.len();
            let v: Vec<Vec<u8>> = l
                .iter_from(len - 1, false)
                .take(n)
                .map(Elem::to_vec)
                .collect();
            l.delete_range(len - n, n);
            v
        }
    })?;
    let Some((vals, w)) = r else {
        return Ok(None);
    };
    touched(ctx, t, key);
    events(ctx, t, key, if front { "lpop" } else { "rpop" }, w.deleted);
    Ok(Some(vals))
}

fn positive(a: &[u8]) -> Result<usize, CmdError> {
    parse_i64(a)
        .filter(|&n| n >= 0)
        .map(|n| n as usize)
        .ok_or_else(|| CmdError::msg("ERR value is out of range, must be positive"))
}

fn pop(ctx: &mut Ctx<'_>, a: Args<'_, '_>, front: bool) -> CmdResult {
    if a.len() > 3 {
        return Err(CmdError::WrongArity(
            if front { "lpop" } else { "rpop" }.into(),
        ));
    }
    let t = ctx.t()?;
    let count = match a.get(2) {
        Some(c) => Some(positive(c)?),
        None => None,
    };
    let key = &a[1][..];
    let exists = check_type::<List>(ctx, t, key)?;
    let absent = |ctx: &mut Ctx<'_>| {
        if count.is_some() {
            ctx.w.null_array();
        } else {
            ctx.w.null();
        }
    };
    if !exists {
        absent(ctx);
        return Ok(());
    }
    if count == Some(0) {
        ctx.w.array(0);
        return Ok(());
    }
    match pop_n(ctx, t, key, front, count.unwrap_or(1))? {
        None => absent(ctx),
        Some(vals) if count.is_some() => reply_all(ctx, &vals),
        Some(vals) => match vals.first() {
            Some(v) => ctx.w.bulk(v),
            None => ctx.w.null(),
        },
    }
    Ok(())
}

/// `LPOP key [count]`
pub fn lpop(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    pop(ctx, a, true)
}

/// `RPOP key [count]`
pub fn rpop(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    pop(ctx, a, false)
}

/// `LLEN key`
pub fn llen(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let n = with_list(ctx, t, &a[1], |l, _| Ok(l.len()))?.unwrap_or(0);
    ctx.w.integer(n as i64);
    Ok(())
}

/// An index counted from the tail when negative, within `0..len`.
fn index_in(idx: i64, len: usize) -> Option<usize> {
    let len = len as i64;
    let i = if idx < 0 { idx + len } else { idx };
    (0..len).contains(&i).then_some(i as usize)
}

/// `LINDEX key index`
pub fn lindex(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let found = with_list(ctx, t, &a[1], |l, w| {
        // As Redis: the index is parsed once the key is known to hold a list.
        let idx = int_arg(&a[2])?;
        match index_in(idx, l.len()).and_then(|i| l.get(i)) {
            Some(e) => reply_elem(w, e),
            None => w.null(),
        }
        Ok(())
    })?;
    if found.is_none() {
        ctx.w.null();
    }
    Ok(())
}

/// `LSET key index element`
pub fn lset(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let key = &a[1][..];
    if !check_type::<List>(ctx, t, key)? {
        return Err(CmdError::NoSuchKey);
    }
    let idx = int_arg(&a[2])?;
    let e = &a[3][..];
    let bound = peek::<List, u64>(ctx, t, key, |l| l.insert_bound(e))?.unwrap_or(0);
    let r = write::<List, bool>(ctx, t, key, bound, false, |l| {
        index_in(idx, l.len()).is_some_and(|i| l.set(i, e))
    })?;
    match r {
        None => Err(CmdError::NoSuchKey),
        Some((false, _)) => Err(CmdError::msg("ERR index out of range")),
        Some((true, _)) => {
            touched(ctx, t, key);
            events(ctx, t, key, "lset", false);
            ctx.w.ok();
            Ok(())
        }
    }
}

/// A range `start..=end` (Redis's LRANGE/LTRIM arithmetic) within a list of `len`: `None` when
/// empty.
fn range_of(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let llen = len as i64;
    let mut start = if start < 0 { llen + start } else { start };
    let mut end = if end < 0 { llen + end } else { end };
    if start < 0 {
        start = 0;
    }
    if start > end || start >= llen {
        return None;
    }
    if end >= llen {
        end = llen - 1;
    }
    Some((start as usize, end as usize))
}

/// `LRANGE key start stop`
pub fn lrange(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let (start, end) = (int_arg(&a[2])?, int_arg(&a[3])?);
    let found = with_list(ctx, t, &a[1], |l, w| {
        match range_of(start, end, l.len()) {
            None => w.array(0),
            Some((s, e)) => {
                w.array(e - s + 1);
                for x in l.iter_from(s, true).take(e - s + 1) {
                    reply_elem(w, x);
                }
            }
        }
        Ok(())
    })?;
    if found.is_none() {
        ctx.w.array(0);
    }
    Ok(())
}

/// `LTRIM key start stop`
pub fn ltrim(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let key = &a[1][..];
    let (start, end) = (int_arg(&a[2])?, int_arg(&a[3])?);
    let r = write::<List, ()>(ctx, t, key, 0, false, |l| {
        let len = l.len();
        let (ltrim, rtrim) = match range_of(start, end, len) {
            None => (len, 0),
            Some((s, e)) => (s, len - e - 1),
        };
        l.delete_range(len - rtrim, rtrim);
        l.delete_range(0, ltrim);
    })?;
    if let Some((_, w)) = r {
        touched(ctx, t, key);
        events(ctx, t, key, "ltrim", w.deleted);
    }
    ctx.w.ok();
    Ok(())
}

/// `LREM key count element`
pub fn lrem(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let key = &a[1][..];
    let count = int_arg(&a[2])?;
    let e = &a[3][..];
    let limit = if count == 0 {
        usize::MAX
    } else {
        usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX)
    };
    let r = write::<List, usize>(ctx, t, key, 0, false, |l| {
        l.remove_matching(e, limit, count < 0)
    })?;
    let (n, deleted) = r.map_or((0, false), |(n, w)| (n, w.deleted));
    if n > 0 {
        touched(ctx, t, key);
        events(ctx, t, key, "lrem", deleted);
    }
    ctx.w.integer(n as i64);
    Ok(())
}

/// `LINSERT key BEFORE|AFTER pivot element`
pub fn linsert(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let after = if is(&a[2], "after") {
        true
    } else if is(&a[2], "before") {
        false
    } else {
        return Err(CmdError::Syntax);
    };
    let t = ctx.t()?;
    let key = &a[1][..];
    let (pivot, e) = (&a[3][..], &a[4][..]);
    let Some(bound) = peek::<List, u64>(ctx, t, key, |l| l.insert_bound(e))? else {
        ctx.w.integer(0);
        return Ok(());
    };
    let r = write::<List, Option<usize>>(ctx, t, key, bound, false, |l| {
        l.insert_by_pivot(pivot, e, after).then(|| l.len())
    })?;
    match r {
        None => ctx.w.integer(0),
        Some((None, _)) => ctx.w.integer(-1),
        Some((Some(n), _)) => {
            touched(ctx, t, key);
            events(ctx, t, key, "linsert", false);
            ctx.w.integer(n as i64);
        }
    }
    Ok(())
}

/// `LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]`
pub fn lpos(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let e = &a[2][..];
    let (mut rank, mut count, mut maxlen): (i64, Option<i64>, i64) = (1, None, 0);
    let mut j = 3;
    while j < a.len() {
        let more = j + 1 < a.len();
        if is(&a[j], "rank") && more {
            j += 1;
            rank = int_arg(&a[j])?;
            if rank == 0 {
                return Err(CmdError::msg(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                ));
            }
        } else if is(&a[j], "count") && more {
            j += 1;
            count = Some(
                parse_i64(&a[j])
                    .filter(|&n| n >= 0)
                    .ok_or_else(|| CmdError::msg("ERR COUNT can't be negative"))?,
            );
        } else if is(&a[j], "maxlen") && more {
            j += 1;
            maxlen = parse_i64(&a[j])
                .filter(|&n| n >= 0)
                .ok_or_else(|| CmdError::msg("ERR MAXLEN can't be negative"))?;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    // A negative rank searches from the tail (Redis negates it as a C long: i64::MIN stays
    // negative, and then every match counts).
    let forward = rank > 0;
    let rank = i128::from(if forward { rank } else { rank.wrapping_neg() });
    let eint = int_of(e);
    let found = with_list(ctx, t, &a[1], |l, _| {
        let len = l.len();
        let iter = if forward {
            l.iter()
        } else {
            l.iter_from(len - 1, false)
        };
        let (mut matches, mut hits) = (0i128, Vec::new());
        for (index, x) in iter.enumerate() {
            if maxlen != 0 && index as i64 >= maxlen {
                break;
            }
            if !x.eq_bytes(e, eint) {
                continue;
            }
            matches += 1;
            if matches >= rank {
                hits.push(if forward { index } else { len - index - 1 });
                match count {
                    None => break,
                    Some(c) if c != 0 && matches - rank + 1 >= i128::from(c) => break,
                    _ => {}
                }
            }
        }
        Ok(hits)
    })?;
    match (found, count) {
        (None, Some(_)) => ctx.w.array(0),
        (None, None) => ctx.w.null(),
        (Some(hits), Some(_)) => {
            ctx.w.array(hits.len());
            for h in hits {
                ctx.w.integer(h as i64);
            }
        }
        (Some(hits), None) => match hits.first() {
            Some(&h) => ctx.w.integer(h as i64),
            None => ctx.w.null(),
        },
    }
    Ok(())
}

/// Moves one element from an end of `src` to an end of `dst` (LMOVE and its family): the
/// element, or `None` when `src` is absent. Types are checked first (a WRONGTYPE destination
/// leaves the source as it was); the element is pushed before it is popped, so that running
/// out of memory for the push changes nothing.
fn lmove_one(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    src: &[u8],
    dst: &[u8],
    from_left: bool,
    to_left: bool,
) -> Result<Option<Vec<u8>>, CmdError> {
    if !check_type::<List>(ctx, t, src)? {
        return Ok(None);
    }
    check_type::<List>(ctx, t, dst)?;
    let end = |l: &List| {
        let i = if from_left { 0 } else { l.len() - 1 };
        l.get(i).map(Elem::to_vec)
    };
    let Some(v) = peek::<List, Option<Vec<u8>>>(ctx, t, src, end)?.flatten() else {
        return Ok(None);
    };
    let bound = push_bound(ctx, t, dst, std::iter::once(&v[..]))?;
    let push = |l: &mut List| {
        if to_left {
            l.push_front(&v);
        } else {
            l.push_back(&v);
        }
    };
    let deleted = if src == dst {
        let r = write::<List, ()>(ctx, t, src, bound, false, |l| {
            if from_left {
                l.pop_front();
            } else {
                l.pop_back();
            }
            push(l);
        })?;
        if r.is_none() {
            return Ok(None);
        }
        false
    } else {
        write::<List, ()>(ctx, t, dst, bound, true, push)?;
        let popped = write::<List, ()>(ctx, t, src, 0, false, |l| {
            if from_left {
                l.pop_front();
            } else {
                l.pop_back();
            }
        })?;
        popped.is_some_and(|(_, w)| w.deleted)
    };
    touched(ctx, t, dst);
    events(ctx, t, dst, if to_left { "lpush" } else { "rpush" }, false);
    touched(ctx, t, src);
    events(
        ctx,
        t,
        src,
        if from_left { "lpop" } else { "rpop" },
        deleted,
    );
    Ok(Some(v))
}

/// `LMOVE source destination LEFT|RIGHT LEFT|RIGHT`
pub fn lmove(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let (from, to) = (side(&a[3])?, side(&a[4])?);
    let t = ctx.t()?;
    match lmove_one(ctx, t, &a[1], &a[2], from, to)? {
        Some(v) => ctx.w.bulk(&v),
        None => ctx.w.null(),
    }
    Ok(())
}

/// `RPOPLPUSH source destination`
pub fn rpoplpush(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    match lmove_one(ctx, t, &a[1], &a[2], false, true)? {
        Some(v) => ctx.w.bulk(&v),
        None => ctx.w.null(),
    }
    Ok(())
}

/// Parses `numkeys key [key ...] WHERE [COUNT count]` from `at` (LMPOP's LEFT|RIGHT, ZMPOP's
/// MIN|MAX, read by `which`): (keys, `which`'s answer, count).
pub fn mpop_args<'x>(
    a: Args<'x, '_>,
    at: usize,
    which: fn(&[u8]) -> Result<bool, CmdError>,
) -> Result<(Vec<&'x [u8]>, bool, usize), CmdError> {
    let numkeys = parse_i64(&a[at])
        .filter(|&n| n >= 1)
        .ok_or_else(|| CmdError::msg("ERR numkeys should be greater than 0"))?;
    let where_at = usize::try_from(numkeys)
        .ok()
        .and_then(|n| n.checked_add(at + 1))
        .filter(|&w| w < a.len())
        .ok_or(CmdError::Syntax)?;
    let front = which(&a[where_at])?;
    let mut count = None;
    let mut j = where_at + 1;
    while j < a.len() {
        if count.is_none() && is(&a[j], "count") && j + 1 < a.len() {
            j += 1;
            count = Some(
                parse_i64(&a[j])
                    .filter(|&n| n >= 1)
                    .ok_or_else(|| CmdError::msg("ERR count should be greater than 0"))?
                    as usize,
            );
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    let keys = a[at + 1..where_at].iter().map(|k| &k[..]).collect();
    Ok((keys, front, count.unwrap_or(1)))
}

/// A key and the elements popped from it.
type Popped = (Vec<u8>, Vec<Vec<u8>>);

/// Pops from the first of `keys` that holds a list (LMPOP and friends): the key and what was
/// popped; `None` when every key is absent. A key of another type before the first list is
/// WRONGTYPE.
fn mpop(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    keys: &[&[u8]],
    front: bool,
    count: usize,
) -> Result<Option<Popped>, CmdError> {
    for &k in keys {
        if !check_type::<List>(ctx, t, k)? {
            continue;
        }
        if let Some(vals) = pop_n(ctx, t, k, front, count)? {
            return Ok(Some((k.to_vec(), vals)));
        }
    }
    Ok(None)
}

fn reply_key_elems(ctx: &mut Ctx<'_>, key: &[u8], vals: &[Vec<u8>]) {
    ctx.w.array(2);
    ctx.w.bulk(key);
    reply_all(ctx, vals);
}

/// `LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]`
pub fn lmpop(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let (keys, front, count) = mpop_args(a, 1, side)?;
    let t = ctx.t()?;
    match mpop(ctx, t, &keys, front, count)? {
        Some((k, vals)) => reply_key_elems(ctx, &k, &vals),
        None => ctx.w.null_array(),
    }
    Ok(())
}

fn bpop(ctx: &mut Ctx<'_>, a: Args<'_, '_>, front: bool) -> CmdResult {
    let timeout = blocking::parse_timeout(&a[a.len() - 1])?;
    let t = ctx.t()?;
    let keys: Vec<&[u8]> = a[1..a.len() - 1].iter().map(|k| &k[..]).collect();
    for &k in &keys {
        if !check_type::<List>(ctx, t, k)? {
            continue;
        }
        if let Some(vals) = pop_n(ctx, t, k, front, 1)?
            && let Some(v) = vals.first()
        {
            ctx.w.array(2);
            ctx.w.bulk(k);
            ctx.w.bulk(v);
            return Ok(());
        }
    }
    blocking::block(ctx, a, &keys, KIND, timeout, blocking::Denied::NullArray)
}

/// `BLPOP key [key ...] timeout`
pub fn blpop(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    bpop(ctx, a, true)
}

/// `BRPOP key [key ...] timeout`
pub fn brpop(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    bpop(ctx, a, false)
}

/// `BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]`
pub fn blmpop(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let timeout = blocking::parse_timeout(&a[1])?;
    let (keys, front, count) = mpop_args(a, 2, side)?;
    let t = ctx.t()?;
    match mpop(ctx, t, &keys, front, count)? {
        Some((k, vals)) => {
            reply_key_elems(ctx, &k, &vals);
            Ok(())
        }
        None => blocking::block(ctx, a, &keys, KIND, timeout, blocking::Denied::NullArray),
    }
}

fn bmove(
    ctx: &mut Ctx<'_>,
    a: Args<'_, '_>,
    from: bool,
    to: bool,
    timeout: blocking::Timeout,
) -> CmdResult {
    let t = ctx.t()?;
    let src = &a[1][..];
    if check_type::<List>(ctx, t, src)?
        && let Some(v) = lmove_one(ctx, t, src, &a[2], from, to)?
    {
        ctx.w.bulk(&v);
        return Ok(());
    }
    blocking::block(ctx, a, &[src], KIND, timeout, blocking::Denied::Null)
}

/// `BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout`
pub fn blmove(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let (from, to) = (side(&a[3])?, side(&a[4])?);
    let timeout = blocking::parse_timeout(&a[5])?;
    bmove(ctx, a, from, to, timeout)
}

/// `BRPOPLPUSH source destination timeout`
pub fn brpoplpush(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let timeout = blocking::parse_timeout(&a[3])?;
    bmove(ctx, a, false, true, timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_follow_redis_arithmetic() {
        assert_eq!(range_of(0, -1, 5), Some((0, 4)));
        assert_eq!(range_of(-100, 100, 5), Some((0, 4)));
        assert_eq!(range_of(1, 0, 5), None);
        assert_eq!(range_of(-1, -2, 5), None);
        assert_eq!(range_of(0, -5, 4), None);
        assert_eq!(range_of(0, -4, 4), Some((0, 0)));
        assert_eq!(range_of(5, 10, 5), None);
        assert_eq!(range_of(i64::MIN, i64::MAX, 3), Some((0, 2)));
        assert_eq!(index_in(-1, 3), Some(2));
        assert_eq!(index_in(3, 3), None);
        assert_eq!(index_in(-4, 3), None);
        assert_eq!(index_in(i64::MIN, 3), None);
    }
}
