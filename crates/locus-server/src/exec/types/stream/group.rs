//! Consumer groups: XGROUP (CREATE CREATECONSUMER DELCONSUMER DESTROY SETID HELP), XACK,
//! XPENDING, XCLAIM, XAUTOCLAIM, and XINFO (STREAM [FULL] GROUPS CONSUMERS HELP).
//!
//! Replies, error words and the order of checks are Redis 7.0's. Replies that depend on the
//! group are built inside the write (into a buffer in the connection's protocol) and copied
//! out, since the reply writer and the engine cannot be borrowed together.

use locus_protocol::{ProtocolVersion, ReplyWriter};

use super::super::super::{Args, CmdError, CmdResult, Ctx, int_arg, is, lower, parse_i64};
use super::super::{check_type, peek, read, touched, write};
use super::cmds::{event, parse_end, parse_start, parse_strict, range_bytes, reply_entry};
use super::{Group, Sid, Stream, now_ms};

/// Redis's `addReplyHelp`: the header line, `lines`, and HELP's own.
fn help_lines(ctx: &mut Ctx<'_>, cmd: &str, lines: &[&str]) {
    ctx.w.array(lines.len() + 3);
    ctx.w.simple(&format!(
        "{cmd} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    ));
    for l in lines {
        ctx.w.simple(l);
    }
    ctx.w.simple("HELP");
    ctx.w.simple("    Print this help.");
}

fn text(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

fn sub_syntax(cmd: &str, sub: &[u8]) -> CmdError {
    CmdError::msg(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
        text(sub),
        cmd.to_ascii_uppercase()
    ))
}

fn unknown_sub(cmd: &str, sub: &[u8]) -> CmdError {
    CmdError::msg(format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        text(sub),
        cmd.to_ascii_uppercase()
    ))
}

/// Redis's command-table arity for `cmd|sub`.
fn sub_arity(a: Args<'_, '_>, cmd: &str, sub: &str, arity: i32) -> CmdResult {
    let n = a.len() as i32;
    if (arity > 0 && n != arity) || (arity < 0 && n < -arity) {
        return Err(CmdError::WrongArity(format!("{cmd}|{sub}")));
    }
    Ok(())
}

/// `XGROUP CREATE|CREATECONSUMER|DELCONSUMER|DESTROY|SETID|HELP ...`
pub fn xgroup(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let sub = lower(&a[1]);
    let arity = match sub.as_str() {
        "create" => -5,
        "setid" => -5,
        "createconsumer" | "delconsumer" => 5,
        "destroy" => 4,
        "help" => 2,
        _ => return Err(unknown_sub("xgroup", &a[1])),
    };
    sub_arity(a, "xgroup", &sub, arity)?;
    if sub == "help" {
        help_lines(
            ctx,
            "XGROUP",
            &[
                "CREATE <key> <groupname> <id|$> [option]",
                "    Create a new consumer group. Options are:",
                "    * MKSTREAM",
                "      Create the empty stream if it does not exist.",
                "    * ENTRIESREAD entries_read",
                "      Set the group's entries_read counter (internal use).",
                "CREATECONSUMER <key> <groupname> <consumer>",
                "    Create a new consumer in the specified group.",
                "DELCONSUMER <key> <groupname> <consumer>",
                "    Remove the specified consumer.",
                "DESTROY <key> <groupname>",
                "    Remove the specified group.",
                "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
                "    Set the current group ID and entries_read counter.",
            ],
        );
        return Ok(());
    }
    let mut mkstream = false;
    let mut entries_read: i64 = -1;
    let create = sub == "create";
    let setid = sub == "setid";
    let mut i = 5;
    while i < a.len() {
        if create && is(&a[i], "mkstream") {
            mkstream = true;
            i += 1;
        } else if (create || setid) && is(&a[i], "entriesread") && i + 1 < a.len() {
            entries_read = int_arg(&a[i + 1])?;
            if entries_read < 0 && entries_read != -1 {
                return Err(CmdError::msg(
                    "ERR value for ENTRIESREAD must be positive or -1",
                ));
            }
            i += 2;
        } else {
            return Err(sub_syntax("xgroup", &a[1]));
        }
    }
    let t = ctx.t()?;
    let key = &a[2][..];
    let group = &a[3][..];
    // (exists, group exists, last id)
    let state = peek::<Stream, _>(ctx, t, key, |s| (s.groups.contains_key(group), s.last_id))?;
    if !mkstream {
        let Some((has_group, _)) = state else {
            return Err(CmdError::msg(
                "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.",
            ));
        };
        if !has_group && matches!(sub.as_str(), "setid" | "createconsumer" | "delconsumer") {
            return Err(CmdError::msg(format!(
                "NOGROUP No such consumer group '{}' for key name '{}'",
                text(group),
                text(key)
            )));
        }
    }
    match sub.as_str() {
        "create" => {
            if a.len() > 8 {
                return Err(sub_syntax("xgroup", &a[1]));
            }
            let id = if &a[4][..] == b"$" {
                state.map_or(Sid::MIN, |(_, last)| last)
            } else {
                parse_strict(&a[4], 0)?
            };
            let cost = (super::GROUP_COST + group.len() as u64) * 2;
            let r = write::<Stream, bool>(ctx, t, key, cost, true, |s| {
                s.create_group(group, id, entries_read)
            })?;
            match r {
                Some((true, _)) => {
                    touched(ctx, t, key);
                    event(ctx, t, key, "xgroup-create");
                    ctx.w.ok();
                    Ok(())
                }
                Some((false, w)) => {
                    if w.created {
                        touched(ctx, t, key);
                    }
                    Err(CmdError::msg(
                        "BUSYGROUP Consumer Group name already exists",
                    ))
                }
                None => Err(CmdError::NoSuchKey),
            }
        }
        "setid" => {
            if a.len() != 5 && a.len() != 7 {
                return Err(sub_syntax("xgroup", &a[1]));
            }
            let id = if &a[4][..] == b"$" {
                state.map_or(Sid::MIN, |(_, last)| last)
            } else {
                super::cmds::parse_id(&a[4], 0)?
            };
            write::<Stream, ()>(ctx, t, key, 0, false, |s| {
                if let Some(g) = s.groups.get_mut(group) {
                    g.last_id = id;
                    g.entries_read = entries_read;
                }
            })?;
            touched(ctx, t, key);
            event(ctx, t, key, "xgroup-setid");
            ctx.w.ok();
            Ok(())
        }
        "destroy" => {
            let r =
                write::<Stream, bool>(ctx, t, key, 0, false, |s| s.groups.remove(group).is_some())?;
            let done = r.is_some_and(|(d, _)| d);
            if done {
                // Its readers waiting in XREADGROUP get NOGROUP (XGROUP is not flagged write,
                // as in Redis, so the dispatcher does not signal the key).
                ctx.fx.key_ready(t, key);
                touched(ctx, t, key);
                event(ctx, t, key, "xgroup-destroy");
            }
            ctx.w.integer(i64::from(done));
            Ok(())
        }
        "createconsumer" => {
            let name = &a[4][..];
            let cost = super::CONSUMER_COST + name.len() as u64;
            let now = now_ms();
            let r = write::<Stream, bool>(ctx, t, key, cost, false, |s| {
                s.groups
                    .get_mut(group)
                    .is_some_and(|g| g.create_consumer(name, now))
            })?;
            let created = r.is_some_and(|(c, _)| c);
            if created {
                touched(ctx, t, key);
                event(ctx, t, key, "xgroup-createconsumer");
            }
            ctx.w.integer(i64::from(created));
            Ok(())
        }
        "delconsumer" => {
            let name = &a[4][..];
            let r = write::<Stream, Option<usize>>(ctx, t, key, 0, false, |s| {
                s.groups
                    .get_mut(group)
                    .and_then(|g| g.delete_consumer(name))
            })?;
            let pending = r.and_then(|(p, _)| p);
            if pending.is_some() {
                touched(ctx, t, key);
                event(ctx, t, key, "xgroup-delconsumer");
            }
            ctx.w.integer(pending.unwrap_or(0) as i64);
            Ok(())
        }
        _ => Err(sub_syntax("xgroup", &a[1])),
    }
}

/// `XACK key group id [id ...]`
pub fn xack(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let key = &a[1][..];
    let group = &a[2][..];
    let has = peek::<Stream, _>(ctx, t, key, |s| s.groups.contains_key(group))?;
    if has != Some(true) {
        ctx.w.integer(0);
        return Ok(());
    }
    let ids = a[3..]
        .iter()
        .map(|x| parse_strict(x, 0))
        .collect::<Result<Vec<_>, _>>()?;
    let r = write::<Stream, usize>(ctx, t, key, 0, false, |s| match s.groups.get_mut(group) {
        Some(g) => ids.iter().filter(|&&id| g.ack(id)).count(),
        None => 0,
    })?;
    let n = r.map_or(0, |(n, _)| n);
    if n > 0 {
        touched(ctx, t, key);
    }
    ctx.w.integer(n as i64);
    Ok(())
}

fn nogroup(key: &[u8], group: &[u8]) -> CmdError {
    CmdError::msg(format!(
        "NOGROUP No such key '{}' or consumer group '{}'",
        text(key),
        text(group)
    ))
}

/// `XPENDING key group [[IDLE min-idle-time] start end count [consumer]]`
pub fn xpending(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let argc = a.len();
    let justinfo = argc == 3;
    if argc != 3 && !(6..=9).contains(&argc) {
        return Err(CmdError::Syntax);
    }
    let mut start = Sid::MIN;
    let mut end = Sid::MAX;
    let mut count: i64 = 0;
    let mut minidle: i64 = 0;
    let mut consumer: Option<&[u8]> = None;
    if argc >= 6 {
        let mut at = 3;
        if is(&a[3], "idle") {
            minidle = int_arg(&a[4])?;
            if argc < 8 {
                return Err(CmdError::Syntax);
            }
            at += 2;
        }
        count = int_arg(&a[at + 2])?.max(0);
        start = parse_start(&a[at])?;
        end = parse_end(&a[at + 1])?;
        if at + 3 < argc {
            consumer = Some(&a[at + 3][..]);
        }
    }
    let t = ctx.t()?;
    let key = &a[1][..];
    let group = &a[2][..];
    let proto = ctx.w.proto();
    let now = now_ms();
    let r = read::<Stream, _>(ctx, t, key, |s| {
        let g = s.groups.get(group)?;
        let mut out = Vec::new();
        let mut w = ReplyWriter::new(&mut out, proto);
        if justinfo {
            w.array(4);
            w.integer(g.pel.len() as i64);
            match (g.pel.first_key_value(), g.pel.last_key_value()) {
                (Some((f, _)), Some((l, _))) => {
                    w.bulk(f.text().as_bytes());
                    w.bulk(l.text().as_bytes());
                    let busy: Vec<_> = g
                        .consumers
                        .iter()
                        .filter(|(_, c)| !c.pel.is_empty())
                        .collect();
                    w.array(busy.len());
                    for (name, c) in busy {
                        w.array(2);
                        w.bulk(name);
                        w.bulk_int(c.pel.len() as i64);
                    }
                }
                _ => {
                    w.null();
                    w.null();
                    w.null_array();
                }
            }
            return Some(out);
        }
        let ids: Vec<Sid> = match consumer {
            Some(c) => match g.consumers.get(c) {
                Some(c) => c.pel.range(start..=end.max(start)).copied().collect(),
                None => Vec::new(),
            },
            None => g
                .pel
                .range(start..=end.max(start))
                .map(|(k, _)| *k)
                .collect(),
        };
        let mut rows = Vec::new();
        let mut left = count;
        for id in ids {
            if left == 0 || id > end {
                break;
            }
            let Some(n) = g.pel.get(&id) else {
                continue;
            };
            if minidle > 0 && now - n.delivery_time < minidle {
                continue;
            }
            left -= 1;
            rows.push((id, n));
        }
        w.array(rows.len());
        for (id, n) in rows {
            w.array(4);
            w.bulk(id.text().as_bytes());
            w.bulk(&n.consumer);
            w.integer((now - n.delivery_time).max(0));
            w.integer(n.delivery_count as i64);
        }
        Some(out)
    })?;
    match r.flatten() {
        Some(b) => {
            ctx.w.raw(&b);
            Ok(())
        }
        None => Err(nogroup(key, group)),
    }
}

/// `XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-time-milliseconds]
/// [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid]`
pub fn xclaim(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let key = &a[1][..];
    let group = &a[2][..];
    let name = &a[3][..];
    let has = peek::<Stream, _>(ctx, t, key, |s| s.groups.contains_key(group))?;
    if has != Some(true) {
        return Err(nogroup(key, group));
    }
    let minidle = parse_i64(&a[4])
        .ok_or_else(|| CmdError::msg("ERR Invalid min-idle-time argument for XCLAIM"))?
        .max(0);
    let mut ids = Vec::new();
    let mut j = 5;
    while j < a.len() {
        match parse_strict(&a[j], 0) {
            Ok(id) => ids.push(id),
            Err(_) => break,
        }
        j += 1;
    }
    let now = now_ms();
    let mut force = false;
    let mut justid = false;
    let mut retry: i64 = -1;
    let mut time: i64 = -1;
    let mut last_id = Sid::MIN;
    while j < a.len() {
        let more = a.len() - 1 - j;
        let o = &a[j][..];
        let num = |x: &[u8], what: &str| {
            parse_i64(x).ok_or_else(|| {
                CmdError::msg(format!("ERR Invalid {what} option argument for XCLAIM"))
            })
        };
        if is(o, "force") {
            force = true;
        } else if is(o, "justid") {
            justid = true;
        } else if is(o, "idle") && more > 0 {
            j += 1;
            time = now.wrapping_sub(num(&a[j], "IDLE")?);
        } else if is(o, "time") && more > 0 {
            j += 1;
            time = num(&a[j], "TIME")?;
        } else if is(o, "retrycount") && more > 0 {
            j += 1;
            retry = num(&a[j], "RETRYCOUNT")?;
        } else if is(o, "lastid") && more > 0 {
            j += 1;
            last_id = parse_strict(&a[j], 0)?;
        } else {
            return Err(CmdError::msg(format!(
                "ERR Unrecognized XCLAIM option '{}'",
                text(o)
            )));
        }
        j += 1;
    }
    let time = if time == -1 || time < 0 || time > now {
        now
    } else {
        time
    };
    let proto = ctx.w.proto();
    let bound = ids.len() as u64 * super::NACK_COST + super::CONSUMER_COST + name.len() as u64;
    let r = write::<Stream, (Vec<u8>, bool, bool)>(ctx, t, key, bound, false, |s| {
        let mut out = Vec::new();
        let mut n = 0usize;
        let mut changed = false;
        let mut created = false;
        let mut body = Vec::new();
        {
            let mut w = ReplyWriter::new(&mut body, proto);
            let Some(g) = s.groups.get_mut(group) else {
                return (out, false, false);
            };
            if last_id > g.last_id {
                g.last_id = last_id;
                changed = true;
            }
            for &id in &ids {
                let exists = s.contains(id);
                let g = s.groups.get_mut(group).expect("checked");
                if !exists {
                    if g.ack(id) {
                        changed = true;
                    }
                    continue;
                }
                let pending = g.pel.get(&id).map(|p| (p.delivery_time, p.delivery_count));
                if pending.is_none() && !force {
                    continue;
                }
                if let Some((time, _)) = pending
                    && minidle > 0
                    && now - time < minidle
                {
                    continue;
                }
                let count = if retry >= 0 {
                    Some(retry as u64)
                } else if justid {
                    Some(pending.map_or(0, |p| p.1))
                } else {
                    None
                };
                created |= claim_one(s, group, name, id, now, time, count, justid, &mut w);
                changed = true;
                n += 1;
            }
        }
        let mut w = ReplyWriter::new(&mut out, proto);
        w.array(n);
        w.raw(&body);
        (out, changed, created)
    })?;
    finish_claim(ctx, t, key, group, r)
}

/// `XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]`
pub fn xautoclaim(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let minidle = parse_i64(&a[4])
        .ok_or_else(|| CmdError::msg("ERR Invalid min-idle-time argument for XAUTOCLAIM"))?
        .max(0);
    let start = parse_start(&a[5])?;
    let mut count: i64 = 100;
    let mut justid = false;
    let mut j = 6;
    while j < a.len() {
        let more = a.len() - 1 - j;
        if is(&a[j], "count") && more > 0 {
            // Redis caps COUNT so that COUNT * 10 attempts fits a long.
            let max = i64::MAX / 16;
            count = parse_i64(&a[j + 1])
                .filter(|c| (1..=max).contains(c))
                .ok_or_else(|| CmdError::msg("ERR COUNT must be > 0"))?;
            j += 1;
        } else if is(&a[j], "justid") {
            justid = true;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    let t = ctx.t()?;
    let key = &a[1][..];
    let group = &a[2][..];
    let name = &a[3][..];
    let has = peek::<Stream, _>(ctx, t, key, |s| (s.groups.contains_key(group), s.len()))?;
    let Some((true, len)) = has else {
        return Err(nogroup(key, group));
    };
    let proto = ctx.w.proto();
    let now = now_ms();
    let _ = len;
    let bound = super::CONSUMER_COST + name.len() as u64;
    let r = write::<Stream, (Vec<u8>, bool, bool)>(ctx, t, key, bound, false, |s| {
        let mut body = Vec::new();
        let mut claimed = 0usize;
        let mut deleted = Vec::new();
        let mut created = false;
        let mut left = count as u64;
        let mut attempts = (count as u64).saturating_mul(10);
        let mut next = Sid::MIN;
        {
            let mut w = ReplyWriter::new(&mut body, proto);
            let pel: Vec<Sid> = match s.groups.get(group) {
                Some(g) => g.pel.range(start..).map(|(k, _)| *k).collect(),
                None => Vec::new(),
            };
            let mut it = pel.into_iter();
            let mut cursor = None;
            while attempts > 0 && left > 0 {
                let Some(id) = it.next() else {
                    break;
                };
                attempts -= 1;
                let exists = s.contains(id);
                let g = s.groups.get_mut(group).expect("checked");
                if !exists {
                    g.ack(id);
                    deleted.push(id);
                    left -= 1;
                    continue;
                }
                let idle = now - g.pel[&id].delivery_time;
                if minidle > 0 && idle < minidle {
                    continue;
                }
                let count = justid.then(|| g.pel[&id].delivery_count);
                created |= claim_one(s, group, name, id, now, now, count, justid, &mut w);
                claimed += 1;
                left -= 1;
            }
            if let Some(id) = it.next() {
                cursor = Some(id);
            }
            if let Some(c) = cursor {
                next = c;
            }
        }
        let mut out = Vec::new();
        let mut w = ReplyWriter::new(&mut out, proto);
        w.array(3);
        w.bulk(next.text().as_bytes());
        w.array(claimed);
        w.raw(&body);
        w.array(deleted.len());
        for d in &deleted {
            w.bulk(d.text().as_bytes());
        }
        let changed = claimed > 0 || !deleted.is_empty();
        (out, changed, created)
    })?;
    finish_claim(ctx, t, key, group, r)
}

/// What a claim wrote: (reply, the group changed, the consumer was created).
type Claimed = (Vec<u8>, bool, bool);

/// The end of XCLAIM and XAUTOCLAIM: touches, events, the reply.
fn finish_claim(
    ctx: &mut Ctx<'_>,
    t: locus_engine::TenantId,
    key: &[u8],
    group: &[u8],
    r: Option<(Claimed, super::super::Wrote)>,
) -> CmdResult {
    let Some(((bytes, changed, created), _)) = r else {
        return Err(nogroup(key, group));
    };
    if changed {
        touched(ctx, t, key);
    }
    if created {
        event(ctx, t, key, "xgroup-createconsumer");
    }
    ctx.w.raw(&bytes);
    Ok(())
}

/// Gives pending (or, forced, new) entry `id` to consumer `name` (created when absent: true
/// then), delivered at `time`, `count` deliveries (`None`: one more), and writes it: its ID
/// (`justid`) or the entry.
#[expect(
    clippy::too_many_arguments,
    reason = "one claimed entry and the claim's options"
)]
fn claim_one(
    s: &mut Stream,
    group: &[u8],
    name: &[u8],
    id: Sid,
    now: i64,
    time: i64,
    count: Option<u64>,
    justid: bool,
    w: &mut ReplyWriter<'_>,
) -> bool {
    let g = s.groups.get_mut(group).expect("the caller found the group");
    let created = !g.consumers.contains_key(name);
    g.consumer(name, now);
    g.assign(id, name, time, count);
    if justid {
        w.bulk(id.text().as_bytes());
    } else {
        s.range(id, id, false, |id, e| {
            reply_entry(w, id, &e);
            false
        });
    }
    created
}

fn reply_lag(w: &mut ReplyWriter<'_>, s: &Stream, g: &Group) {
    match s.lag(g) {
        Some(l) => w.integer(l),
        None => w.null(),
    }
}

fn reply_entries_read(w: &mut ReplyWriter<'_>, g: &Group) {
    if g.entries_read >= 0 {
        w.integer(g.entries_read);
    } else {
        w.null();
    }
}

fn stream_info(
    s: &Stream,
    w: &mut ReplyWriter<'_>,
    full: bool,
    count: u64,
    proto: ProtocolVersion,
) {
    w.map(if full { 9 } else { 10 });
    w.bulk(b"length");
    w.integer(s.len() as i64);
    w.bulk(b"radix-tree-keys");
    w.integer(s.nodes() as i64);
    w.bulk(b"radix-tree-nodes");
    w.integer(s.nodes() as i64 + 1);
    w.bulk(b"last-generated-id");
    w.bulk(s.last_id.text().as_bytes());
    w.bulk(b"max-deleted-entry-id");
    w.bulk(s.max_deleted.text().as_bytes());
    w.bulk(b"entries-added");
    w.integer(s.entries_added as i64);
    w.bulk(b"recorded-first-entry-id");
    w.bulk(s.first_id.text().as_bytes());
    if !full {
        w.bulk(b"groups");
        w.integer(s.groups.len() as i64);
        for (label, rev) in [(&b"first-entry"[..], false), (b"last-entry", true)] {
            w.bulk(label);
            let mut found = false;
            s.range(Sid::MIN, Sid::MAX, rev, |id, e| {
                reply_entry(w, id, &e);
                found = true;
                false
            });
            if !found {
                w.null();
            }
        }
        return;
    }
    w.bulk(b"entries");
    let (bytes, n, _) = range_bytes(s, Sid::MIN, Sid::MAX, count, false, proto);
    w.array(n as usize);
    w.raw(&bytes);
    w.bulk(b"groups");
    w.array(s.groups.len());
    let cap = |n: usize| if count == 0 { n } else { n.min(count as usize) };
    for (name, g) in &s.groups {
        w.map(7);
        w.bulk(b"name");
        w.bulk(name);
        w.bulk(b"last-delivered-id");
        w.bulk(g.last_id.text().as_bytes());
        w.bulk(b"entries-read");
        reply_entries_read(w, g);
        w.bulk(b"lag");
        reply_lag(w, s, g);
        w.bulk(b"pel-count");
        w.integer(g.pel.len() as i64);
        w.bulk(b"pending");
        w.array(cap(g.pel.len()));
        for (id, n) in g.pel.iter().take(cap(g.pel.len())) {
            w.array(4);
            w.bulk(id.text().as_bytes());
            w.bulk(&n.consumer);
            w.integer(n.delivery_time);
            w.integer(n.delivery_count as i64);
        }
        w.bulk(b"consumers");
        w.array(g.consumers.len());
        for (cname, c) in &g.consumers {
            w.map(4);
            w.bulk(b"name");
            w.bulk(cname);
            w.bulk(b"seen-time");
            w.integer(c.seen_time);
            w.bulk(b"pel-count");
            w.integer(c.pel.len() as i64);
            w.bulk(b"pending");
            w.array(cap(c.pel.len()));
            for id in c.pel.iter().take(cap(c.pel.len())) {
                let n = &g.pel[id];
                w.array(3);
                w.bulk(id.text().as_bytes());
                w.integer(n.delivery_time);
                w.integer(n.delivery_count as i64);
            }
        }
    }
}

/// `XINFO STREAM key [FULL [COUNT count]] | GROUPS key | CONSUMERS key group | HELP`
pub fn xinfo(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let sub = lower(&a[1]);
    let arity = match sub.as_str() {
        "stream" => -3,
        "groups" => 3,
        "consumers" => 4,
        "help" => 2,
        _ => return Err(unknown_sub("xinfo", &a[1])),
    };
    sub_arity(a, "xinfo", &sub, arity)?;
    if sub == "help" {
        help_lines(
            ctx,
            "XINFO",
            &[
                "CONSUMERS <key> <groupname>",
                "    Show consumers of <groupname>.",
                "GROUPS <key>",
                "    Show the stream consumer groups.",
                "STREAM <key> [FULL [COUNT <count>]",
                "    Show information about the stream.",
            ],
        );
        return Ok(());
    }
    let t = ctx.t()?;
    let key = &a[2][..];
    if !check_type::<Stream>(ctx, t, key)? {
        return Err(CmdError::NoSuchKey);
    }
    let proto = ctx.w.proto();
    let now = now_ms();
    // STREAM's options are checked once the key is known to be a stream.
    let (full, count) = if sub == "stream" {
        let opts = &a[3..];
        if opts.is_empty() {
            (false, 10)
        } else {
            if (opts.len() != 1 && opts.len() != 3) || !is(&opts[0], "full") {
                return Err(sub_syntax("xinfo", &a[1]));
            }
            let mut count = 10;
            if opts.len() == 3 {
                if !is(&opts[1], "count") {
                    return Err(sub_syntax("xinfo", &a[1]));
                }
                let c = int_arg(&opts[2])?;
                count = if c < 0 { 10 } else { c as u64 };
            }
            (true, count)
        }
    } else {
        (false, 0)
    };
    let r = read::<Stream, Result<Vec<u8>, CmdError>>(ctx, t, key, |s| {
        let mut out = Vec::new();
        let mut w = ReplyWriter::new(&mut out, proto);
        match sub.as_str() {
            "consumers" => {
                let gname = &a[3][..];
                let Some(g) = s.groups.get(gname) else {
                    return Err(CmdError::msg(format!(
                        "NOGROUP No such consumer group '{}' for key name '{}'",
                        text(gname),
                        text(key)
                    )));
                };
                w.array(g.consumers.len());
                for (name, c) in &g.consumers {
                    w.map(3);
                    w.bulk(b"name");
                    w.bulk(name);
                    w.bulk(b"pending");
                    w.integer(c.pel.len() as i64);
                    w.bulk(b"idle");
                    w.integer((now - c.seen_time).max(0));
                }
            }
            "groups" => {
                w.array(s.groups.len());
                for (name, g) in &s.groups {
                    w.map(6);
                    w.bulk(b"name");
                    w.bulk(name);
                    w.bulk(b"consumers");
                    w.integer(g.consumers.len() as i64);
                    w.bulk(b"pending");
                    w.integer(g.pel.len() as i64);
                    w.bulk(b"last-delivered-id");
                    w.bulk(g.last_id.text().as_bytes());
                    w.bulk(b"entries-read");
                    reply_entries_read(&mut w, g);
                    w.bulk(b"lag");
                    reply_lag(&mut w, s, g);
                }
            }
            _ => stream_info(s, &mut w, full, count, proto),
        }
        Ok(out)
    })?;
    match r {
        None => Err(CmdError::NoSuchKey),
        Some(Err(e)) => Err(e),
        Some(Ok(b)) => {
            ctx.w.raw(&b);
            Ok(())
        }
    }
}
