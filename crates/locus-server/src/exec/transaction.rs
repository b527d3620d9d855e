//! Transactions: MULTI EXEC DISCARD WATCH UNWATCH.
//!
//! Commands after MULTI are queued (owned copies, since they outlive the read buffer) and answered
//! `+QUEUED`; a command rejected while queuing (unknown, wrong arity, routing error) makes EXEC
//! answer EXECABORT. EXEC runs the queue under the engine lock the batch already holds, so the
//! transaction is atomic with respect to every other client.
//!
//! The queue is memory a client makes the server hold, as Redis counts it in the client's memory
//! and so in `used_memory`: each queued command is charged to its tenant's budget (evicting by the
//! tenant's policy, as a write does); when no room can be made, a write is answered `-OOM` and the
//! transaction fails at EXEC, as Redis's `processCommand` refuses a `denyoom` command and flags
//! the transaction. The charge is given back at EXEC, DISCARD, RESET and when the connection
//! closes.
//!
//! WATCH follows Redis's touchWatchedKey: every successful write command marks the clients
//! watching its keys dirty (FLUSHDB/FLUSHALL: every key of the tenant). A watched key that existed
//! at WATCH time and is gone at EXEC (expired or evicted) also fails the EXEC. Known gap: an
//! eviction or expiry of a key that is then re-created before EXEC is not detected.

use std::borrow::Cow;

use locus_protocol::ProtocolVersion;

use super::CommandSpec;
use super::{Args, CmdError, CmdResult, Ctx, dispatch};
use crate::server::{ConnState, Shared};
use locus_engine::TenantId;

/// What one queued command costs the server: its argument vector and each argument's
/// allocation (the allocator's rounding and header included), so that the charge follows the
/// memory the queue takes.
fn queued_bytes(args: Args<'_, '_>) -> u64 {
    let per_arg: u64 = args
        .iter()
        .map(|a| 24 + 16 + (a.len() as u64).div_ceil(16) * 16)
        .sum();
    48 + per_arg
}

/// Queues a command inside MULTI (`+QUEUED`), charged to the tenant it routes to.
///
/// # Errors
/// `-OOM` when the tenant's budget cannot hold it and it may grow memory (`denyoom`: the
/// transaction then fails at EXEC with EXECABORT, as in Redis); any other command that does not
/// fit is queued uncharged, as Redis lets commands that are not `denyoom` through.
pub fn queue(ctx: &mut Ctx<'_>, args: Args<'_, '_>, spec: &CommandSpec) -> CmdResult {
    let bytes = queued_bytes(args);
    if let Some(t) = ctx.tenant.or(ctx.conn.tenant) {
        match ctx.eng.charge_outside(t, bytes) {
            Ok(()) => match ctx.conn.multi_charged.iter_mut().find(|(ct, _)| *ct == t) {
                Some((_, n)) => *n += bytes,
                None => ctx.conn.multi_charged.push((t, bytes)),
            },
            Err(_) if super::has_flag(spec.flags, "denyoom") => {
                ctx.conn.multi_error = true;
                return Err(CmdError::Oom);
            }
            Err(_) => {}
        }
    }
    if let Some(q) = ctx.conn.multi.as_mut() {
        q.push(args.iter().map(|a| a.to_vec()).collect());
    }
    ctx.w.simple("QUEUED");
    Ok(())
}

/// Gives back what the queued commands were charged (the queue is gone or going).
pub fn release_queue(
    eng: &mut locus_engine::Engine,
    charged: &mut Vec<(locus_engine::TenantId, u64)>,
) {
    for (t, n) in charged.drain(..) {
        eng.release_outside(t, n);
    }
}

/// Commands that run immediately even inside MULTI.
pub fn runs_inside_multi(name: &str) -> bool {
    matches!(
        name,
        "exec" | "discard" | "multi" | "watch" | "quit" | "reset"
    )
}

/// MULTI
pub fn multi(ctx: &mut Ctx<'_>, _a: Args<'_, '_>) -> CmdResult {
    multi_unlocked(ctx.conn)?;
    ctx.w.ok();
    Ok(())
}

/// MULTI's state change (needs no engine: also while a script is busy); the caller replies OK.
///
/// # Errors
/// Nested MULTI.
pub fn multi_unlocked(conn: &mut ConnState) -> CmdResult {
    if conn.multi.is_some() {
        return Err(CmdError::msg("ERR MULTI calls can not be nested"));
    }
    conn.multi = Some(Vec::new());
    conn.multi_error = false;
    conn.multi_busy_bytes = 0;
    Ok(())
}

fn clear_watches(ctx: &mut Ctx<'_>) {
    clear_watches_of(ctx.shared(), ctx.conn);
}

/// Forgets the connection's watched keys and whether they were touched (needs no engine).
fn clear_watches_of(shared: &Shared, conn: &mut ConnState) {
    if !conn.watched.is_empty() {
        let keys = std::mem::take(&mut conn.watched);
        shared.unwatch_all(conn.info.id, &keys);
    } else {
        shared.clear_watch_dirty(conn.info.id);
    }
}

/// EXEC
pub fn exec(ctx: &mut Ctx<'_>, _a: Args<'_, '_>) -> CmdResult {
    let Some(queue) = ctx.conn.multi.take() else {
        return Err(CmdError::msg("ERR EXEC without MULTI"));
    };
    // The queue's charge goes before its commands run: they make room for their own writes.
    release_queue(ctx.eng, &mut ctx.conn.multi_charged);
    if std::mem::take(&mut ctx.conn.multi_error) {
        clear_watches(ctx);
        return Err(CmdError::msg(
            "EXECABORT Transaction discarded because of previous errors.",
        ));
    }
    let id = ctx.conn.info.id;
    let mut aborted = ctx.shared().watch_dirty(id);
    if !aborted {
        let watched = ctx.conn.watched.clone();
        aborted = watched
            .iter()
            .any(|(t, k, existed)| *existed == Some(true) && !ctx.eng.exists(*t, k));
    }
    clear_watches(ctx);
    if aborted {
        ctx.w.null_array();
        return Ok(());
    }
    ctx.w.array(queue.len());
    // Blocking commands answer at once inside a transaction (exec/blocking).
    ctx.conn.block.deny = true;
    for cmd in &queue {
        let args: Vec<Cow<'_, [u8]>> = cmd.iter().map(|a| Cow::Borrowed(&a[..])).collect();
        ctx.tenant = None;
        dispatch(ctx, &args);
    }
    ctx.conn.block.deny = false;
    // HELLO inside MULTI changes the protocol for later replies only.
    if ctx.conn.proto != ctx.w.proto() {
        let p: ProtocolVersion = ctx.conn.proto;
        ctx.w.set_proto(p);
    }
    Ok(())
}

/// DISCARD
pub fn discard(ctx: &mut Ctx<'_>, _a: Args<'_, '_>) -> CmdResult {
    discard_unlocked(ctx.shared(), ctx.conn)?;
    release_queue(ctx.eng, &mut ctx.conn.multi_charged);
    ctx.w.ok();
    Ok(())
}

/// DISCARD without the queue's charge (given back by the caller, or by [`settle_after_busy`]
/// while a script is busy); the caller replies OK.
///
/// # Errors
/// DISCARD without MULTI.
pub fn discard_unlocked(shared: &Shared, conn: &mut ConnState) -> CmdResult {
    if conn.multi.take().is_none() {
        return Err(CmdError::msg("ERR DISCARD without MULTI"));
    }
    conn.multi_error = false;
    clear_watches_of(shared, conn);
    Ok(())
}

/// `WATCH key [key ...]`
pub fn watch(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let shared = ctx.shared();
    let eng = &mut *ctx.eng;
    watch_keys(shared, ctx.conn, t, &a[1..], |k| Some(eng.exists(t, k)))?;
    ctx.w.ok();
    Ok(())
}

/// Adds `keys` of tenant `t` to the connection's watched keys; `exists` tells whether a key
/// exists now (`None`: not known yet).
fn watch_keys(
    shared: &Shared,
    conn: &mut ConnState,
    t: TenantId,
    keys: Args<'_, '_>,
    mut exists: impl FnMut(&[u8]) -> Option<bool>,
) -> CmdResult {
    if conn.multi.is_some() {
        return Err(CmdError::msg("ERR WATCH inside MULTI is not allowed"));
    }
    for k in keys {
        if conn
            .watched
            .iter()
            .any(|(wt, wk, _)| *wt == t && wk[..] == k[..])
        {
            continue;
        }
        let existed = exists(k);
        shared.add_watch(conn.info.id, t, k);
        conn.watched.push((t, k.to_vec(), existed));
    }
    Ok(())
}

/// WATCH while a script is busy (Redis flags it allow-busy), routed to `t` by the caller: the
/// keys are watched at once, so a write the script makes to one of them from now on fails the
/// EXEC, as in Redis. Whether each key exists is read when the connection next holds the engine
/// ([`settle_after_busy`]).
///
/// # Errors
/// WATCH inside MULTI, as [`watch`].
pub fn watch_unlocked(
    shared: &Shared,
    conn: &mut ConnState,
    t: Option<TenantId>,
    a: Args<'_, '_>,
) -> CmdResult {
    let t = t.ok_or(CmdError::NoTenant)?;
    watch_keys(shared, conn, t, &a[1..], |_| None)
}

/// UNWATCH
pub fn unwatch(ctx: &mut Ctx<'_>, _a: Args<'_, '_>) -> CmdResult {
    clear_watches(ctx);
    ctx.w.ok();
    Ok(())
}

/// UNWATCH while a script is busy (Redis flags it allow-busy): it needs no engine.
pub fn unwatch_unlocked(shared: &Shared, conn: &mut ConnState) {
    clear_watches_of(shared, conn);
}

/// What the commands answered while a script was busy left for the engine, done when the
/// connection next holds it (the start of each locked batch; cheap when there is nothing): the
/// existence of the keys WATCHed meanwhile, the charge of a transaction RESET or discarded
/// meanwhile.
///
/// The keys WATCHed while busy are the last ones of the list (every WATCH under the engine
/// lock comes after this ran). A key the script wrote after the WATCH made the EXEC fail
/// already; any other key is as the WATCH found it, unless it expired or was evicted since, which
/// Locus then misses (EXEC runs) where Redis, whose WATCH read the key then, would fail the EXEC.
pub fn settle_after_busy(eng: &mut locus_engine::Engine, conn: &mut ConnState) {
    if conn.multi.is_none() && !conn.multi_charged.is_empty() {
        release_queue(eng, &mut conn.multi_charged);
    }
    if conn.watched.last().is_some_and(|w| w.2.is_none()) {
        for (t, k, existed) in conn.watched.iter_mut().rev() {
            if existed.is_some() {
                break;
            }
            *existed = Some(eng.exists(*t, k));
        }
    }
}
