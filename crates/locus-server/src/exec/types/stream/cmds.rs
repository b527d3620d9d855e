//! XADD XRANGE XREVRANGE XLEN XDEL XTRIM XSETID, and XREAD / XREADGROUP (blocking too).
//!
//! Replies, error words and the order of checks are Redis 7.0's (`t_stream.c`). Each writer
//! reports its own WATCH touches and keyspace events (`xadd`, `xtrim`, `xdel`, `xsetid`, ...).
//!
//! Blocking: XREAD and XREADGROUP with BLOCK that find nothing hand the client to
//! [`blocking::block`] with their arguments rewritten so that running them again means the
//! same thing (`$` becomes the stream's last ID at the time of the call). When a write touches
//! one of the keys the command runs again ([`blocking::rerunning`]): it serves the first key
//! whose last ID passed the one waited for, with one key in the reply as Redis does, or keeps
//! waiting. XREADGROUP waits with [`blocking::ANY_TYPE`], so it also runs again when its key is
//! deleted, replaced, or its group destroyed, and then answers Redis's NOGROUP error.

use std::borrow::Cow;

use locus_engine::TenantId;
use locus_protocol::{ProtocolVersion, ReplyWriter};

use super::super::super::notify::STREAM;
use super::super::super::{Args, CmdError, CmdResult, Ctx, blocking, int_arg, is};
use super::super::{check_type, peek, touched, write};
use super::{AddError, Entry, KIND, ParsedId, Sid, Stream, Trim, now_ms, parse_id_full};

/// Redis's error for an ID it cannot parse.
pub fn invalid_id() -> CmdError {
    CmdError::msg("ERR Invalid stream ID specified as stream command argument")
}

/// An ID where `-` and `+` are allowed (`missing_seq` fills `<ms>`).
pub fn parse_id(a: &[u8], missing_seq: u64) -> Result<Sid, CmdError> {
    parse_id_full(a, missing_seq, false, false)
        .map(|p| p.id)
        .ok_or_else(invalid_id)
}

/// An ID where `-` and `+` are refused.
pub fn parse_strict(a: &[u8], missing_seq: u64) -> Result<Sid, CmdError> {
    parse_id_full(a, missing_seq, true, false)
        .map(|p| p.id)
        .ok_or_else(invalid_id)
}

/// A range bound: `(` makes it exclusive (then `-`/`+` are refused). (ID, exclusive).
pub fn parse_interval(a: &[u8], missing_seq: u64) -> Result<(Sid, bool), CmdError> {
    if a.len() > 1 && a[0] == b'(' {
        Ok((parse_strict(&a[1..], missing_seq)?, true))
    } else {
        Ok((parse_id(a, missing_seq)?, false))
    }
}

/// A start bound, moved past itself when exclusive.
pub fn parse_start(a: &[u8]) -> Result<Sid, CmdError> {
    let (id, ex) = parse_interval(a, 0)?;
    if ex {
        id.incr()
            .ok_or_else(|| CmdError::msg("ERR invalid start ID for the interval"))
    } else {
        Ok(id)
    }
}

/// An end bound, moved before itself when exclusive.
pub fn parse_end(a: &[u8]) -> Result<Sid, CmdError> {
    let (id, ex) = parse_interval(a, u64::MAX)?;
    if ex {
        id.decr()
            .ok_or_else(|| CmdError::msg("ERR invalid end ID for the interval"))
    } else {
        Ok(id)
    }
}

/// Writes one entry: `[id, [field, value, ...]]`.
pub fn reply_entry(w: &mut ReplyWriter<'_>, id: Sid, e: &Entry<'_>) {
    w.array(2);
    w.bulk(id.text().as_bytes());
    let f = e.fields();
    w.array(f.len() * 2);
    for (k, v) in f {
        w.bulk(&k);
        w.bulk(&v);
    }
}

/// The entries of `start..=end` (at most `count`, 0 = all) encoded in `proto`: (bytes, how
/// many, their IDs).
pub fn range_bytes(
    s: &Stream,
    start: Sid,
    end: Sid,
    count: u64,
    rev: bool,
    proto: ProtocolVersion,
) -> (Vec<u8>, u64, Vec<Sid>) {
    let mut out = Vec::new();
    let mut n = 0u64;
    let mut ids = Vec::new();
    {
        let mut w = ReplyWriter::new(&mut out, proto);
        s.range(start, end, rev, |id, e| {
            reply_entry(&mut w, id, &e);
            ids.push(id);
            n += 1;
            count == 0 || n < count
        });
    }
    (out, n, ids)
}

/// Publishes a stream event for `key`.
pub fn event(ctx: &Ctx<'_>, t: TenantId, key: &[u8], name: &str) {
    super::super::events(ctx, t, key, STREAM, name, false);
}

/// What XADD and XTRIM parsed.
#[derive(Debug, Default)]
struct AddTrim {
    trim: Option<Trim>,
    approx: bool,
    limit: u64,
    nomkstream: bool,
    id: Option<ParsedId>,
    /// Where the ID is (XADD).
    id_pos: usize,
}

/// Redis's `streamParseAddOrTrimArgsOrReply`.
fn parse_add_trim(a: Args<'_, '_>, xadd: bool) -> Result<AddTrim, CmdError> {
    let mut r = AddTrim::default();
    let mut limit: Option<i64> = None;
    let argc = a.len();
    let mut i = 2;
    while i < argc {
        let more = argc - 1 - i;
        let opt = &a[i][..];
        if xadd && opt == b"*" {
            break;
        } else if (is(opt, "maxlen") || is(opt, "minid")) && more > 0 {
            if r.trim.is_some() {
                return Err(CmdError::msg(
                    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible",
                ));
            }
            r.approx = false;
            let next = &a[i + 1][..];
            if more >= 2 && next == b"~" {
                r.approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            if is(opt, "maxlen") {
                let n = int_arg(&a[i + 1])?;
                if n < 0 {
                    return Err(CmdError::msg("ERR The MAXLEN argument must be >= 0."));
                }
                r.trim = Some(Trim::MaxLen(n as u64));
            } else {
                r.trim = Some(Trim::MinId(parse_strict(&a[i + 1], 0)?));
            }
            i += 1;
        } else if is(opt, "limit") && more > 0 {
            let n = int_arg(&a[i + 1])?;
            if n < 0 {
                return Err(CmdError::msg("ERR The LIMIT argument must be >= 0."));
            }
            limit = Some(n);
            i += 1;
        } else if xadd && is(opt, "nomkstream") {
            r.nomkstream = true;
        } else if xadd {
            r.id = Some(parse_id_full(opt, 0, true, true).ok_or_else(invalid_id)?);
            break;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    r.id_pos = i;
    if limit.is_some_and(|l| l > 0) && r.trim.is_none() {
        return Err(CmdError::msg(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
        ));
    }
    if !xadd && r.trim.is_none() {
        return Err(CmdError::msg(
            "ERR syntax error, XTRIM must be called with a trimming strategy",
        ));
    }
    match limit {
        Some(_) if !r.approx => {
            return Err(CmdError::msg(
                "ERR syntax error, LIMIT cannot be used without the special ~ option",
            ));
        }
        Some(l) => r.limit = l as u64,
        None if r.approx => {
            let l = super::super::limits::STREAM_NODE_ENTRIES
                .get()
                .saturating_mul(100);
            r.limit = if l <= 0 {
                10_000
            } else {
                l.min(1_000_000) as u64
            };
        }
        None => r.limit = 0,
    }
    Ok(r)
}

/// `XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value ...`
pub fn xadd(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let p = parse_add_trim(a, true)?;
    let field_pos = p.id_pos + 1;
    let argc = a.len();
    if argc < field_pos + 2 || (argc - field_pos) % 2 == 1 {
        return Err(CmdError::WrongArity("xadd".into()));
    }
    if let Some(id) = p.id
        && id.seq_given
        && id.id.is_zero()
    {
        return Err(CmdError::msg(
            "ERR The ID specified in XADD must be greater than 0-0",
        ));
    }
    let t = ctx.t()?;
    let key = &a[1][..];
    let fields: Vec<(&[u8], &[u8])> = a[field_pos..]
        .chunks_exact(2)
        .map(|c| (&c[0][..], &c[1][..]))
        .collect();
    let exists = check_type::<Stream>(ctx, t, key)?;
    if !exists && p.nomkstream {
        ctx.w.null();
        return Ok(());
    }
    let bound = peek::<Stream, u64>(ctx, t, key, |s| s.add_bound(&fields))?
        .unwrap_or_else(|| Stream::new().add_bound(&fields));
    let now = now_ms().max(0) as u64;
    let r = write::<Stream, Result<(Sid, u64), CmdError>>(
        ctx,
        t,
        key,
        bound,
        !p.nomkstream,
        |s| {
            if s.last_id == Sid::MAX {
                return Err(CmdError::msg(
                    "ERR The stream has exhausted the last possible ID, unable to add more items",
                ));
            }
            let id = match p.id {
                None => s.next_auto_id(now),
                Some(ParsedId {
                    id,
                    seq_given: true,
                }) => Some(id),
                // `<ms>-*` on the last ID's millisecond: the next sequence, never the next ms.
                Some(ParsedId { id, .. }) if id.ms == s.last_id.ms => {
                    s.last_id.seq.checked_add(1).map(|q| Sid::new(id.ms, q))
                }
                Some(ParsedId { id, .. }) => Some(id),
            };
            let smaller = || {
                CmdError::msg(
                    "ERR The ID specified in XADD is equal or smaller than the target stream top item",
                )
            };
            // An overflowing `<ms>-*` sequence: Redis answers with its other append error (its
            // errno is not EDOM there).
            let id = id.ok_or_else(|| CmdError::msg("ERR Elements are too large to be stored"))?;
            s.append(id, &fields).map_err(|e| match e {
                AddError::NotGreater => smaller(),
                AddError::TooLarge => CmdError::msg("ERR Elements are too large to be stored"),
            })?;
            let trimmed = match p.trim {
                Some(how) => s.trim(how, p.approx, p.limit),
                None => 0,
            };
            Ok((id, trimmed))
        },
    )?;
    let Some((r, wrote)) = r else {
        // (NOMKSTREAM: the key went while room was made.)
        ctx.w.null();
        return Ok(());
    };
    let (id, trimmed) = match r {
        Ok(x) => x,
        Err(e) => {
            if wrote.created {
                ctx.eng.delete(t, key);
            }
            return Err(e);
        }
    };
    touched(ctx, t, key);
    event(ctx, t, key, "xadd");
    if trimmed > 0 {
        event(ctx, t, key, "xtrim");
    }
    ctx.w.bulk(id.text().as_bytes());
    Ok(())
}

fn xrange_generic(ctx: &mut Ctx<'_>, a: Args<'_, '_>, rev: bool) -> CmdResult {
    let (sa, ea) = if rev { (&a[3], &a[2]) } else { (&a[2], &a[3]) };
    let start = parse_start(sa)?;
    let end = parse_end(ea)?;
    let mut count: i64 = -1;
    let mut j = 4;
    while j < a.len() {
        if is(&a[j], "count") && j + 1 < a.len() {
            count = int_arg(&a[j + 1])?.max(0);
            j += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let t = ctx.t()?;
    let proto = ctx.w.proto();
    let r = super::super::read::<Stream, _>(ctx, t, &a[1], |s| {
        if count == 0 {
            None
        } else {
            Some(range_bytes(s, start, end, count.max(0) as u64, rev, proto))
        }
    })?;
    match r {
        None => ctx.w.array(0),
        Some(None) => ctx.w.null_array(),
        Some(Some((bytes, n, _))) => {
            ctx.w.array(n as usize);
            ctx.w.raw(&bytes);
        }
    }
    Ok(())
}

/// `XRANGE key start end [COUNT count]`
pub fn xrange(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    xrange_generic(ctx, a, false)
}

/// `XREVRANGE key end start [COUNT count]`
pub fn xrevrange(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    xrange_generic(ctx, a, true)
}

/// `XLEN key`
pub fn xlen(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let n = super::super::read::<Stream, _>(ctx, t, &a[1], |s| s.len())?.unwrap_or(0);
    ctx.w.integer(n as i64);
    Ok(())
}

/// `XDEL key id [id ...]`
pub fn xdel(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let key = &a[1][..];
    if !check_type::<Stream>(ctx, t, key)? {
        ctx.w.integer(0);
        return Ok(());
    }
    let ids = a[2..]
        .iter()
        .map(|x| parse_strict(x, 0))
        .collect::<Result<Vec<_>, _>>()?;
    let r = write::<Stream, u64>(ctx, t, key, 0, false, |s| {
        ids.iter().filter(|&&id| s.delete(id)).count() as u64
    })?;
    let n = r.map_or(0, |(n, _)| n);
    if n > 0 {
        touched(ctx, t, key);
        event(ctx, t, key, "xdel");
    }
    ctx.w.integer(n as i64);
    Ok(())
}

/// `XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]`
pub fn xtrim(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let p = parse_add_trim(a, false)?;
    let t = ctx.t()?;
    let key = &a[1][..];
    if !check_type::<Stream>(ctx, t, key)? {
        ctx.w.integer(0);
        return Ok(());
    }
    let how = p.trim.ok_or(CmdError::Syntax)?;
    let r = write::<Stream, u64>(ctx, t, key, 0, false, |s| s.trim(how, p.approx, p.limit))?;
    let n = r.map_or(0, |(n, _)| n);
    if n > 0 {
        touched(ctx, t, key);
        event(ctx, t, key, "xtrim");
    }
    ctx.w.integer(n as i64);
    Ok(())
}

/// `XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]`
pub fn xsetid(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let id = parse_strict(&a[2], 0)?;
    let mut added: i64 = -1;
    let mut max_del = Sid::MIN;
    let mut i = 3;
    while i < a.len() {
        let more = a.len() - 1 - i;
        if is(&a[i], "entriesadded") && more > 0 {
            added = int_arg(&a[i + 1])?;
            if added < 0 {
                return Err(CmdError::msg("ERR entries_added must be positive"));
            }
            i += 2;
        } else if is(&a[i], "maxdeletedid") && more > 0 {
            max_del = parse_strict(&a[i + 1], 0)?;
            if id < max_del {
                return Err(CmdError::msg(
                    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                ));
            }
            i += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let t = ctx.t()?;
    let key = &a[1][..];
    if !check_type::<Stream>(ctx, t, key)? {
        return Err(CmdError::NoSuchKey);
    }
    let r = write::<Stream, CmdResult>(ctx, t, key, 0, false, |s| {
        if !s.is_empty() {
            let max = s.edge_id(true).unwrap_or(Sid::MIN);
            if id < max {
                return Err(CmdError::msg(
                    "ERR The ID specified in XSETID is smaller than the target stream top item",
                ));
            }
            if added != -1 && s.len() > added as u64 {
                return Err(CmdError::msg(
                    "ERR The entries_added specified in XSETID is smaller than the target stream length",
                ));
            }
        }
        s.last_id = id;
        if added != -1 {
            s.entries_added = added as u64;
        }
        if !max_del.is_zero() {
            s.max_deleted = max_del;
        }
        Ok(())
    })?;
    match r {
        None => Err(CmdError::NoSuchKey),
        Some((Err(e), _)) => Err(e),
        Some((Ok(()), _)) => {
            touched(ctx, t, key);
            event(ctx, t, key, "xsetid");
            ctx.w.ok();
            Ok(())
        }
    }
}

/// XREAD's and XREADGROUP's parsed arguments.
struct ReadArgs<'a> {
    block: Option<u64>,
    count: u64,
    group: Option<(&'a [u8], &'a [u8])>,
    noack: bool,
    keys: Vec<&'a [u8]>,
    ids: Vec<&'a [u8]>,
    /// Where the keys start.
    streams_at: usize,
}

fn parse_read<'a>(a: &'a [Cow<'_, [u8]>], xreadgroup: bool) -> Result<ReadArgs<'a>, CmdError> {
    let mut r = ReadArgs {
        block: None,
        count: 0,
        group: None,
        noack: false,
        keys: Vec::new(),
        ids: Vec::new(),
        streams_at: 0,
    };
    let argc = a.len();
    let mut i = 1;
    while i < argc {
        let more = argc - i - 1;
        let o = &a[i][..];
        if is(o, "block") && more > 0 {
            i += 1;
            let ms = super::super::super::parse_i64(&a[i])
                .ok_or_else(|| CmdError::msg("ERR timeout is not an integer or out of range"))?;
            if ms < 0 {
                return Err(CmdError::msg("ERR timeout is negative"));
            }
            r.block = Some(ms as u64);
        } else if is(o, "count") && more > 0 {
            i += 1;
            r.count = int_arg(&a[i])?.max(0) as u64;
        } else if is(o, "streams") && more > 0 {
            let at = i + 1;
            let n = argc - at;
            if !n.is_multiple_of(2) {
                return Err(CmdError::msg(
                    "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.",
                ));
            }
            r.streams_at = at;
            r.keys = a[at..at + n / 2].iter().map(|k| &k[..]).collect();
            r.ids = a[at + n / 2..].iter().map(|k| &k[..]).collect();
            break;
        } else if is(o, "group") && more >= 2 {
            if !xreadgroup {
                return Err(CmdError::msg(
                    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            r.group = Some((&a[i + 1][..], &a[i + 2][..]));
            i += 2;
        } else if is(o, "noack") {
            if !xreadgroup {
                return Err(CmdError::msg(
                    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            r.noack = true;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    if r.streams_at == 0 {
        return Err(CmdError::Syntax);
    }
    if xreadgroup && r.group.is_none() {
        return Err(CmdError::msg("ERR Missing GROUP option for XREADGROUP"));
    }
    Ok(r)
}

/// `>` in XREADGROUP: new entries.
const NEW: Sid = Sid::MAX;

fn no_group(key: &[u8], group: &[u8]) -> CmdError {
    CmdError::msg(format!(
        "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(group)
    ))
}

fn group_gone() -> CmdError {
    CmdError::msg("NOGROUP the consumer group this client was blocked on no longer exists")
}

/// Serves one key of XREADGROUP: the entries after `gt` (`NEW`: after the group's last ID),
/// or the consumer's pending history from `gt` on. The reply bytes of `[key, entries]`'s
/// second element, or `None` when the key went.
#[expect(
    clippy::too_many_arguments,
    reason = "one key of one XREADGROUP: its parsed options"
)]
fn serve_group(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    group: &[u8],
    consumer: &[u8],
    gt: Sid,
    count: u64,
    noack: bool,
) -> Result<Option<Vec<u8>>, CmdError> {
    let proto = ctx.w.proto();
    let bound = peek::<Stream, u64>(ctx, t, key, |s| {
        let n = if count == 0 {
            s.len()
        } else {
            count.min(s.len())
        };
        n * super::NACK_COST + super::CONSUMER_COST + consumer.len() as u64
    })?
    .unwrap_or(0);
    let now = now_ms();
    let r = write::<Stream, Result<(Vec<u8>, bool), CmdError>>(ctx, t, key, bound, false, |s| {
        let Some(g) = s.groups.get_mut(group) else {
            return Err(group_gone());
        };
        let (_, created) = g.consumer(consumer, now);
        let mut out = Vec::new();
        if gt != NEW {
            // History: the consumer's pending entries after `gt`.
            let from = gt.incr().unwrap_or(Sid::MAX);
            let pending: Vec<Sid> = g.consumers[consumer]
                .pel
                .range(from..)
                .take(if count == 0 {
                    usize::MAX
                } else {
                    count as usize
                })
                .copied()
                .collect();
            let mut w = ReplyWriter::new(&mut out, proto);
            w.array(pending.len());
            let mut delivered = Vec::new();
            for id in pending {
                let mut found = false;
                s.range(id, id, false, |id, e| {
                    reply_entry(&mut w, id, &e);
                    found = true;
                    false
                });
                if found {
                    delivered.push(id);
                } else {
                    w.array(2);
                    w.bulk(id.text().as_bytes());
                    w.null_array();
                }
            }
            let g = s.groups.get_mut(group).expect("looked up above");
            for id in delivered {
                if let Some(n) = g.pel.get_mut(&id) {
                    n.delivery_time = now;
                    n.delivery_count += 1;
                }
            }
            return Ok((out, created));
        }
        let start = g.last_id.incr().unwrap_or(Sid::MAX);
        let (bytes, n, ids) = if g.last_id == Sid::MAX {
            (Vec::new(), 0, Vec::new())
        } else {
            range_bytes(s, start, Sid::MAX, count, false, proto)
        };
        {
            let mut w = ReplyWriter::new(&mut out, proto);
            w.array(n as usize);
            w.raw(&bytes);
        }
        for id in ids {
            s.note_delivered(group, id);
            if !noack {
                let g = s.groups.get_mut(group).expect("looked up above");
                g.assign(id, consumer, now, Some(1));
            }
        }
        Ok((out, created))
    })?;
    match r {
        None => Ok(None),
        Some((Err(e), _)) => Err(e),
        Some((Ok((bytes, created)), _)) => {
            touched(ctx, t, key);
            if created {
                event(ctx, t, key, "xgroup-createconsumer");
            }
            Ok(Some(bytes))
        }
    }
}

fn read_generic(ctx: &mut Ctx<'_>, a: Args<'_, '_>, xreadgroup: bool) -> CmdResult {
    let r = parse_read(a, xreadgroup)?;
    if r.block.is_some() && ctx.conn.block.script {
        // Redis refuses it outright from a script (inside MULTI it answers at once instead).
        return Err(CmdError::msg(format!(
            "ERR {} command is not allowed with BLOCK option from scripts",
            if xreadgroup { "xreadgroup" } else { "xread" }
        )));
    }
    let t = ctx.t()?;
    let rerun = blocking::rerunning(ctx);
    if rerun {
        return serve_waiter(ctx, a, &r, t);
    }
    // Validate every key and resolve every ID before serving any.
    let mut gts = Vec::with_capacity(r.keys.len());
    for (key, ida) in r.keys.iter().zip(&r.ids) {
        let info = peek::<Stream, _>(ctx, t, key, |s| {
            let g = r.group.map(|(g, _)| s.groups.get(g).map(|g| g.last_id));
            (s.last_id, g)
        })?;
        if let Some((g, _)) = r.group
            && !matches!(info, Some((_, Some(Some(_)))))
        {
            return Err(no_group(key, g));
        }
        let gt = if &ida[..] == b"$" {
            if xreadgroup {
                return Err(CmdError::msg(
                    "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.",
                ));
            }
            info.map_or(Sid::MIN, |(last, _)| last)
        } else if &ida[..] == b">" {
            if !xreadgroup {
                return Err(CmdError::msg(
                    "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
                ));
            }
            NEW
        } else {
            parse_strict(ida, 0)?
        };
        gts.push(gt);
    }
    let proto = ctx.w.proto();
    let mut out = Vec::new();
    let mut served = 0usize;
    for (i, key) in r.keys.iter().enumerate() {
        let gt = gts[i];
        // (last valid ID, group last ID)
        let body = if let Some((g, c)) = r.group {
            // Served when reading history, or when a live entry follows the group's last ID.
            let ready = super::super::read::<Stream, _>(ctx, t, key, |s| {
                s.groups
                    .get(g)
                    .is_some_and(|grp| gt != NEW || s.any_after(grp.last_id))
            })?;
            if ready != Some(true) {
                continue;
            }
            match serve_group(ctx, t, key, g, c, gt, r.count, r.noack)? {
                Some(b) => b,
                None => continue,
            }
        } else {
            // Served when a live entry follows `gt`: one pass reads them.
            let Some(start) = gt.incr() else {
                continue;
            };
            let count = r.count;
            let b = super::super::read::<Stream, _>(ctx, t, key, |s| {
                let (bytes, n, _) = range_bytes(s, start, Sid::MAX, count, false, proto);
                (n > 0).then(|| {
                    let mut out = Vec::new();
                    let mut w = ReplyWriter::new(&mut out, proto);
                    w.array(n as usize);
                    w.raw(&bytes);
                    out
                })
            })?;
            match b.flatten() {
                Some(b) => b,
                None => continue,
            }
        };
        served += 1;
        let mut w = ReplyWriter::new(&mut out, proto);
        if proto == ProtocolVersion::Resp2 {
            w.array(2);
        }
        w.bulk(key);
        w.raw(&body);
    }
    if served > 0 {
        if proto == ProtocolVersion::Resp2 {
            ctx.w.array(served);
        } else {
            ctx.w.map(served);
        }
        ctx.w.raw(&out);
        return Ok(());
    }
    let Some(timeout) = r.block else {
        ctx.w.null_array();
        return Ok(());
    };
    // Wait: `$` is fixed to the ID it meant now, so the command means the same when it runs
    // again.
    let mut args: Vec<Cow<'_, [u8]>> = a.iter().map(|x| Cow::Borrowed(&x[..])).collect();
    let nkeys = r.keys.len();
    for (i, gt) in gts.iter().enumerate() {
        if r.ids[i] == b"$" {
            args[r.streams_at + nkeys + i] = Cow::Owned(gt.text().into_bytes());
        }
    }
    let keys = r.keys.clone();
    let kind = if xreadgroup { blocking::ANY_TYPE } else { KIND };
    blocking::block(
        ctx,
        &args,
        &keys,
        kind,
        blocking::Timeout(timeout),
        blocking::Denied::NullArray,
    )
}

/// A waiting XREAD / XREADGROUP runs again after a write to one of its keys: serves the
/// first key past what it waits for (one key in the reply, as Redis), or keeps waiting.
fn serve_waiter(ctx: &mut Ctx<'_>, a: Args<'_, '_>, r: &ReadArgs<'_>, t: TenantId) -> CmdResult {
    // Redis serves a woken reader at most 1000 entries unless COUNT says otherwise.
    let count = if r.count == 0 { 1000 } else { r.count };
    let proto = ctx.w.proto();
    for (i, key) in r.keys.iter().enumerate() {
        let body = if let Some((g, c)) = r.group {
            let state = match peek::<Stream, _>(ctx, t, key, |s| {
                (s.last_id, s.groups.get(g).map(|g| g.last_id))
            }) {
                Ok(Some((last, Some(glast)))) => (last, glast),
                // Deleted, replaced by another type, or its group destroyed.
                Ok(_) | Err(CmdError::WrongType) => return Err(group_gone()),
                Err(e) => return Err(e),
            };
            if state.0 <= state.1 {
                continue;
            }
            match serve_group(ctx, t, key, g, c, NEW, count, r.noack)? {
                Some(b) => b,
                None => continue,
            }
        } else {
            let gt = parse_strict(r.ids[i], 0)?;
            let b = match super::super::read::<Stream, _>(ctx, t, key, |s| {
                if s.last_id <= gt {
                    return None;
                }
                let start = gt.incr().unwrap_or(Sid::MAX);
                let (bytes, n, _) = range_bytes(s, start, Sid::MAX, count, false, proto);
                let mut out = Vec::new();
                let mut w = ReplyWriter::new(&mut out, proto);
                w.array(n as usize);
                w.raw(&bytes);
                Some(out)
            }) {
                Ok(b) => b.flatten(),
                Err(CmdError::WrongType) => None,
                Err(e) => return Err(e),
            };
            match b {
                Some(b) => b,
                None => continue,
            }
        };
        if proto == ProtocolVersion::Resp2 {
            ctx.w.array(1);
            ctx.w.array(2);
        } else {
            ctx.w.map(1);
        }
        ctx.w.bulk(key);
        ctx.w.raw(&body);
        return Ok(());
    }
    let keys = r.keys.clone();
    let kind = if r.group.is_some() {
        blocking::ANY_TYPE
    } else {
        KIND
    };
    blocking::block(
        ctx,
        a,
        &keys,
        kind,
        blocking::Timeout(r.block.unwrap_or(0)),
        blocking::Denied::NullArray,
    )
}

/// `XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]`
pub fn xread(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    read_generic(ctx, a, false)
}

/// `XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS key
/// [key ...] id [id ...]`
pub fn xreadgroup(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    read_generic(ctx, a, true)
}

/// The argument positions of XREAD's and XREADGROUP's keys (after STREAMS), for routing.
pub fn read_keys(args: Args<'_, '_>) -> std::ops::Range<usize> {
    let mut i = 1;
    while i < args.len() {
        if is(&args[i], "streams") {
            let at = i + 1;
            let n = (args.len() - at) / 2;
            return at..at + n;
        }
        // GROUP takes two arguments, BLOCK and COUNT one.
        i += if is(&args[i], "group") {
            3
        } else if is(&args[i], "noack") {
            1
        } else {
            2
        };
    }
    0..0
}
