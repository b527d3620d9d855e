//! Transactions: MULTI EXEC DISCARD WATCH UNWATCH.
//!
//! Commands after MULTI are queued (owned copies, since they outlive the read buffer) and answered
//! `+QUEUED`; a command rejected while queuing (unknown, wrong arity, routing error) makes EXEC
//! answer EXECABORT. EXEC runs the queue under the engine lock the batch already holds, so the
//! transaction is atomic with respect to every other client.
//!
//! WATCH follows Redis's touchWatchedKey: every successful write command marks the clients
//! watching its keys dirty (FLUSHDB/FLUSHALL: every key of the tenant). A watched key that existed
//! at WATCH time and is gone at EXEC (expired or evicted) also fails the EXEC. Known gap: an
//! eviction or expiry of a key that is then re-created before EXEC is not detected.

use std::borrow::Cow;

use locus_protocol::ProtocolVersion;

use super::{Args, CmdError, CmdResult, Ctx, dispatch};

/// Commands that run immediately even inside MULTI.
pub fn runs_inside_multi(name: &str) -> bool {
    matches!(
        name,
        "exec" | "discard" | "multi" | "watch" | "unwatch" | "quit" | "reset"
    )
}

/// MULTI
pub fn multi(ctx: &mut Ctx<'_>, _a: Args<'_, '_>) -> CmdResult {
    if ctx.conn.multi.is_some() {
        return Err(CmdError::msg("ERR MULTI calls can not be nested"));
    }
    ctx.conn.multi = Some(Vec::new());
    ctx.conn.multi_error = false;
    ctx.w.ok();
    Ok(())
}

fn clear_watches(ctx: &mut Ctx<'_>) {
    if !ctx.conn.watched.is_empty() {
        let keys = std::mem::take(&mut ctx.conn.watched);
        ctx.shared.unwatch_all(ctx.conn.info.id, &keys);
    } else {
        ctx.shared.clear_watch_dirty(ctx.conn.info.id);
    }
}

/// EXEC
pub fn exec(ctx: &mut Ctx<'_>, _a: Args<'_, '_>) -> CmdResult {
    let Some(queue) = ctx.conn.multi.take() else {
        return Err(CmdError::msg("ERR EXEC without MULTI"));
    };
    if std::mem::take(&mut ctx.conn.multi_error) {
        clear_watches(ctx);
        return Err(CmdError::msg(
            "EXECABORT Transaction discarded because of previous errors.",
        ));
    }
    let id = ctx.conn.info.id;
    let mut aborted = ctx.shared.watch_dirty(id);
    if !aborted {
        let watched = ctx.conn.watched.clone();
        aborted = watched
            .iter()
            .any(|(t, k, existed)| *existed && !ctx.eng.exists(*t, k));
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
    if ctx.conn.multi.take().is_none() {
        return Err(CmdError::msg("ERR DISCARD without MULTI"));
    }
    ctx.conn.multi_error = false;
    clear_watches(ctx);
    ctx.w.ok();
    Ok(())
}

/// `WATCH key [key ...]`
pub fn watch(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    if ctx.conn.multi.is_some() {
        return Err(CmdError::msg("ERR WATCH inside MULTI is not allowed"));
    }
    let t = ctx.t()?;
    for k in &a[1..] {
        if ctx
            .conn
            .watched
            .iter()
            .any(|(wt, wk, _)| *wt == t && wk[..] == k[..])
        {
            continue;
        }
        let existed = ctx.eng.exists(t, k);
        ctx.shared.add_watch(ctx.conn.info.id, t, k);
        ctx.conn.watched.push((t, k.to_vec(), existed));
    }
    ctx.w.ok();
    Ok(())
}

/// UNWATCH
pub fn unwatch(ctx: &mut Ctx<'_>, _a: Args<'_, '_>) -> CmdResult {
    clear_watches(ctx);
    ctx.w.ok();
    Ok(())
}
