//! The meta commands `mg`, `ms`, `md`, `ma`, `me` (memcached 1.6): return flags in request
//! order, quiet mode (`q` hides `EN` of `mg` and `HD` of the others; `NF`, `NS`, `EX` and errors
//! are always sent, as memcached 1.6.18 does), opaque and key echo, and the stale /
//! win-token machinery (`md I`, `ms I`, `mg R`, `N` vivify: `W`, `X`, `Z`).

use locus_engine::{Engine, TenantId};
use locus_protocol::memcache::{
    ArithmeticMode, MetaCommand, MetaLine, MetaRequest, MetaStatus, ReplyWriter, SetMode,
};

use super::exec::{self, Arith, McCtx, NO_TENANT, StoreError, load, put};
use super::item::{self, Meta};
use super::{Counters, McTenant};

/// Executes one meta command.
pub(super) fn execute(cx: &mut McCtx<'_>, w: &mut ReplyWriter<'_>, req: &MetaRequest<'_>) {
    let key = req.key.bytes().to_vec();
    let Some((t, mt)) = cx.route(&key) else {
        w.server_error(NO_TENANT);
        return;
    };
    Counters::bump(&mt.counters.cmd_meta);
    match req.command {
        MetaCommand::Get => mg(cx, w, req, t, mt, &key),
        MetaCommand::Set => ms(cx, w, req, t, mt, &key),
        MetaCommand::Delete => md(cx, w, req, t, mt, &key),
        MetaCommand::Arithmetic => ma(cx, w, req, t, mt, &key),
        MetaCommand::Debug => me(cx, w, req, t, &key),
    }
}

/// Seconds of TTL left, -1 without one (memcached's `t`). Rounded up: memcached's clock moves
/// in whole seconds, so an item set with `T30` shows `t30` until the next second starts.
fn ttl_left(eng: &mut Engine, t: TenantId, key: &[u8], now: u64) -> i64 {
    match eng.expire_at(t, key) {
        Some(Some(at)) => at.saturating_sub(now).div_ceil(1000) as i64,
        _ => -1,
    }
}

/// Seconds since the item was last accessed (memcached's `l`, `la=`).
fn idle_secs(eng: &mut Engine, t: TenantId, key: &[u8]) -> u64 {
    eng.object_info(t, key).map_or(0, |o| o.idle_ms / 1000)
}

/// The return flags of a hit or a store, in request order.
struct Returned {
    cas: u64,
    flags: u32,
    size: usize,
    ttl: i64,
    fetched_before: bool,
    idle: u64,
}

fn return_flags(line: &mut MetaLine<'_>, req: &MetaRequest<'_>, r: &Returned) {
    for f in req.flags.iter() {
        match f.letter {
            b'c' => {
                line.flag_u64(b'c', r.cas);
            }
            b'f' => {
                line.flag_u64(b'f', u64::from(r.flags));
            }
            b's' => {
                line.flag_u64(b's', r.size as u64);
            }
            b't' => {
                line.flag_i64(b't', r.ttl);
            }
            b'h' => {
                line.flag_u64(b'h', u64::from(r.fetched_before));
            }
            b'l' => {
                line.flag_u64(b'l', r.idle);
            }
            b'O' => {
                line.opaque(f.arg);
            }
            b'k' => {
                line.key(req.key.bytes(), req.key.is_binary());
            }
            _ => {}
        }
    }
}

/// A status line with only the `O` and `k` echo (misses, `NS`, `EX`, `NF`).
fn status(w: &mut ReplyWriter<'_>, s: MetaStatus, req: &MetaRequest<'_>) {
    w.meta(s).echo(req);
}

fn mg(
    cx: &mut McCtx<'_>,
    w: &mut ReplyWriter<'_>,
    req: &MetaRequest<'_>,
    t: TenantId,
    mt: &McTenant,
    key: &[u8],
) {
    let now = cx.now_ms;
    let f = &req.flags;
    Counters::bump(&mt.counters.cmd_get);
    let mut vivified = false;
    let expired_before = cx.eng.expired_count(t);
    if !cx.eng.exists(t, key) {
        super::exec::note_expired(cx.eng, t, mt, expired_before);
        let Some(ttl) = f.vivify() else {
            Counters::bump(&mt.counters.get_misses);
            cx.eng.get(t, key);
            if !f.quiet() {
                status(w, MetaStatus::En, req);
            }
            return;
        };
        // N: a miss creates an empty item and hands this client the recache token.
        Counters::bump(&mt.counters.get_misses);
        let meta = Meta {
            flags: 0,
            cas: mt.next_cas(),
            state: item::WIN_SENT,
        };
        if let Err(e) = put(
            cx.eng,
            mt,
            t,
            key,
            meta,
            &[],
            Some(item::expiry(i64::from(ttl), now)),
        ) {
            e.write(w);
            return;
        }
        vivified = true;
    } else {
        Counters::bump(&mt.counters.get_hits);
    }
    let idle = if f.has(b'l') {
        idle_secs(cx.eng, t, key)
    } else {
        0
    };
    if let Some(ttl) = f.ttl() {
        Counters::bump(&mt.counters.cmd_touch);
        Counters::bump(&mt.counters.touch_hits);
        exec::touch(cx.eng, t, key, i64::from(ttl), now);
    }
    let ttl = ttl_left(cx.eng, t, key, now);
    let Some((meta, data)) = cx
        .eng
        .get_with_meta(t, key)
        .map(item::decode)
        .map(|(m, d)| (m, d.to_vec()))
        .map(|(m, d)| match m.cas {
            // Written over RESP: given a header at this first read (exec::adopt).
            0 => (exec::adopt(cx.eng, mt, t, key, &d), d),
            _ => (m, d),
        })
    else {
        // A T with a past time removed it.
        if !f.quiet() {
            status(w, MetaStatus::En, req);
        }
        return;
    };
    let prev = if vivified { 0 } else { meta.state };
    let stale = prev & item::STALE != 0;
    let token_sent = prev & item::WIN_SENT != 0;
    let recache = f.recache().is_some_and(|r| ttl != -1 && ttl < i64::from(r));
    let win = vivified || (!token_sent && (stale || recache));
    let r = Returned {
        cas: meta.cas,
        flags: meta.flags,
        size: data.len(),
        ttl,
        fetched_before: prev & item::FETCHED != 0,
        idle,
    };
    {
        let mut line = if f.has(b'v') {
            w.meta_value(data.len())
        } else {
            w.meta(MetaStatus::Hd)
        };
        return_flags(&mut line, req, &r);
        if token_sent {
            line.flag(b'Z');
        }
        if stale {
            line.flag(b'X');
        }
        if win {
            line.flag(b'W');
        }
    }
    if f.has(b'v') {
        w.data_block(&data);
    }
    // `u` (no LRU bump) leaves the item unfetched, as memcached does: a later `h` says 0.
    let fetched = if f.has(b'u') { 0 } else { item::FETCHED };
    let set = fetched | if win { item::WIN_SENT } else { 0 };
    if meta.state & set != set
        && let Some(v) = cx.eng.peek_meta_mut(t, key)
    {
        item::set_state(v, set);
    }
}

fn ms(
    cx: &mut McCtx<'_>,
    w: &mut ReplyWriter<'_>,
    req: &MetaRequest<'_>,
    t: TenantId,
    mt: &McTenant,
    key: &[u8],
) {
    let now = cx.now_ms;
    let f = &req.flags;
    Counters::bump(&mt.counters.cmd_set);
    let mode = req.set_mode().unwrap_or(SetMode::Set);
    let current = load(cx.eng, t, key);
    let mut state = 0;
    let mut ttl = Some(item::expiry(i64::from(f.ttl().unwrap_or(0)), now));
    if let Some(want) = f.compare_cas() {
        match &current {
            None => {
                Counters::bump(&mt.counters.cas_misses);
                ms_failed(w, MetaStatus::Nf, req);
                return;
            }
            Some((old, _)) if old.cas != want => {
                // I: an older CAS still stores, as a stale item that keeps the old item's TTL
                // and its win token's state (memcached's CAS_STALE).
                if f.has(b'I') && want < old.cas {
                    state = item::STALE | (old.state & item::WIN_SENT);
                    ttl = None;
                    Counters::bump(&mt.counters.cas_hits);
                } else {
                    Counters::bump(&mt.counters.cas_badval);
                    ms_failed(w, MetaStatus::Ex, req);
                    return;
                }
            }
            Some(_) => Counters::bump(&mt.counters.cas_hits),
        }
    }
    let cas = f.new_cas().unwrap_or_else(|| mt.next_cas());
    let fresh = Meta {
        flags: f.client_flags().unwrap_or(0),
        cas,
        state,
    };
    let r = match (mode, &current) {
        (SetMode::Add, Some(_)) | (SetMode::Replace, None) => {
            ms_failed(w, MetaStatus::Ns, req);
            return;
        }
        (SetMode::Append | SetMode::Prepend, None) => match f.vivify() {
            Some(n) => put(
                cx.eng,
                mt,
                t,
                key,
                fresh,
                &[req.data],
                Some(item::expiry(i64::from(n), now)),
            ),
            None => {
                ms_failed(w, MetaStatus::Ns, req);
                return;
            }
        },
        (SetMode::Append, Some((old, data))) => {
            let meta = Meta { cas, state, ..*old };
            put(cx.eng, mt, t, key, meta, &[data, req.data], None)
        }
        (SetMode::Prepend, Some((old, data))) => {
            let meta = Meta { cas, state, ..*old };
            put(cx.eng, mt, t, key, meta, &[req.data, data], None)
        }
        _ => put(cx.eng, mt, t, key, fresh, &[req.data], ttl),
    };
    match r {
        Ok(()) => {
            if f.quiet() {
                return;
            }
            let ret = Returned {
                cas,
                flags: fresh.flags,
                size: req.data.len(),
                ttl: ttl_left(cx.eng, t, key, now),
                fetched_before: false,
                idle: 0,
            };
            return_flags(&mut w.meta(MetaStatus::Hd), req, &ret);
        }
        Err(e) => {
            if mode == SetMode::Set {
                cx.eng.delete(t, key);
            }
            e.write(w);
        }
    }
}

/// An `ms` that stored nothing (`NF`, `NS`, `EX`): memcached 1.6.18 returns `c0` for a `c` flag
/// (the CAS of the item it did not store) with the `O` and `k` echo, in request order.
fn ms_failed(w: &mut ReplyWriter<'_>, s: MetaStatus, req: &MetaRequest<'_>) {
    let mut line = w.meta(s);
    for f in req.flags.iter() {
        match f.letter {
            b'c' => {
                line.flag_u64(b'c', 0);
            }
            b'O' => {
                line.opaque(f.arg);
            }
            b'k' => {
                line.key(req.key.bytes(), req.key.is_binary());
            }
            _ => {}
        }
    }
}

fn md(
    cx: &mut McCtx<'_>,
    w: &mut ReplyWriter<'_>,
    req: &MetaRequest<'_>,
    t: TenantId,
    mt: &McTenant,
    key: &[u8],
) {
    let now = cx.now_ms;
    let f = &req.flags;
    let Some((old, data)) = load(cx.eng, t, key) else {
        Counters::bump(&mt.counters.delete_misses);
        status(w, MetaStatus::Nf, req);
        return;
    };
    if f.compare_cas().is_some_and(|c| c != old.cas) {
        status(w, MetaStatus::Ex, req);
        return;
    }
    Counters::bump(&mt.counters.delete_hits);
    let class = exec::stored_class(cx.eng, t, key);
    mt.class_op(class, |c| c.delete_hits += 1);
    let cas = f.new_cas().unwrap_or_else(|| mt.next_cas());
    let r = if f.has(b'I') {
        // Invalidate: the item stays, stale, and the next fetch wins the recache token.
        let meta = Meta {
            cas,
            state: (old.state | item::STALE) & !item::WIN_SENT,
            ..old
        };
        let exp = f.ttl().map(|n| item::expiry(i64::from(n), now));
        put(cx.eng, mt, t, key, meta, &[&data], exp)
    } else if f.has(b'x') {
        // x: the value goes (and the client flags), the item stays.
        let meta = Meta {
            flags: 0,
            cas,
            state: old.state,
        };
        put(cx.eng, mt, t, key, meta, &[], None)
    } else {
        cx.eng.delete(t, key);
        Ok(())
    };
    match r {
        Ok(()) if f.quiet() => {}
        Ok(()) => status(w, MetaStatus::Hd, req),
        Err(e) => e.write(w),
    }
}

fn ma(
    cx: &mut McCtx<'_>,
    w: &mut ReplyWriter<'_>,
    req: &MetaRequest<'_>,
    t: TenantId,
    mt: &McTenant,
    key: &[u8],
) {
    let now = cx.now_ms;
    let f = &req.flags;
    let incr = req.arithmetic_mode() != Some(ArithmeticMode::Decr);
    let c = &mt.counters;
    let class = exec::stored_class(cx.eng, t, key);
    let current = load(cx.eng, t, key);
    let (n, cas) = match &current {
        None => {
            Counters::bump(if incr { &c.incr_misses } else { &c.decr_misses });
            let Some(ttl) = f.vivify() else {
                status(w, MetaStatus::Nf, req);
                return;
            };
            // N: a miss creates the counter with J (default 0), not changed by this call.
            let n = f.initial().unwrap_or(0);
            let cas = f.new_cas().unwrap_or_else(|| mt.next_cas());
            let meta = Meta {
                flags: 0,
                cas,
                state: 0,
            };
            let digits = itoa::Buffer::new().format(n).as_bytes().to_vec();
            let exp = Some(item::expiry(i64::from(ttl), now));
            if let Err(e) = put(cx.eng, mt, t, key, meta, &[&digits], exp) {
                e.write(w);
                return;
            }
            (n, cas)
        }
        Some((old, _)) => {
            if f.compare_cas().is_some_and(|want| want != old.cas) {
                status(w, MetaStatus::Ex, req);
                return;
            }
            match exec::arith(
                cx.eng,
                mt,
                t,
                key,
                f.delta().unwrap_or(1),
                incr,
                f.new_cas(),
            ) {
                Arith::Missing => {
                    status(w, MetaStatus::Nf, req);
                    return;
                }
                Arith::NonNumeric => {
                    w.client_error("cannot increment or decrement non-numeric value");
                    return;
                }
                Arith::Failed(e) => {
                    StoreError::write(e, w);
                    return;
                }
                Arith::Done(n, cas) => {
                    Counters::bump(if incr { &c.incr_hits } else { &c.decr_hits });
                    mt.class_op(class, |k| {
                        if incr {
                            k.incr_hits += 1;
                        } else {
                            k.decr_hits += 1;
                        }
                    });
                    (n, cas)
                }
            }
        }
    };
    if let Some(ttl) = f.ttl() {
        exec::touch(cx.eng, t, key, i64::from(ttl), now);
    }
    let digits = itoa::Buffer::new().format(n).as_bytes().to_vec();
    let ret = Returned {
        cas,
        flags: 0,
        size: digits.len(),
        ttl: ttl_left(cx.eng, t, key, now),
        fetched_before: false,
        idle: 0,
    };
    if f.has(b'v') {
        return_flags(&mut w.meta_value(digits.len()), req, &ret);
        w.data_block(&digits);
    } else if !f.quiet() {
        return_flags(&mut w.meta(MetaStatus::Hd), req, &ret);
    }
}

fn me(cx: &mut McCtx<'_>, w: &mut ReplyWriter<'_>, req: &MetaRequest<'_>, t: TenantId, key: &[u8]) {
    let now = cx.now_ms;
    let Some((meta, data)) = load(cx.eng, t, key) else {
        w.meta(MetaStatus::En);
        return;
    };
    let exp = ttl_left(cx.eng, t, key, now);
    let idle = idle_secs(cx.eng, t, key);
    let stored = data.len() + item::HEADER;
    let class = cx
        .eng
        .class_for(key.len(), stored)
        .map_or(0, |c| u64::from(c.0) + 1);
    let size = (locus_engine::ITEM_HEADER_BYTES as usize + key.len() + stored) as u64;
    w.meta_debug(key, req.key.is_binary())
        .field_i64("exp", exp)
        .field_u64("la", idle)
        .field_u64("cas", meta.cas)
        .field(
            "fetch",
            if meta.state & item::FETCHED != 0 {
                b"yes"
            } else {
                b"no"
            },
        )
        .field_u64("cls", class)
        .field_u64("size", size);
}
