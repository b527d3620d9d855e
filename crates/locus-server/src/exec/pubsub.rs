//! Pub/sub: SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE PUNSUBSCRIBE PUBLISH PUBSUB, per tenant (the
//! registry and the delivery are in `server::pubsub`).
//!
//! Replies are Redis's: one `subscribe`/`unsubscribe` push per channel with the client's
//! subscription count after it, RESP3 push frames (`>`) or RESP2 arrays. A RESP2 client with a
//! subscription is in subscribed mode: the dispatcher refuses every command but these, PING,
//! QUIT and RESET.

use locus_engine::TenantId;

use super::{Args, CmdResult, Ctx, lower};
use crate::server::SubKind;

/// Whether `name` runs in RESP2 subscribed mode.
pub fn allowed_when_subscribed(name: &str) -> bool {
    matches!(
        name,
        "subscribe"
            | "unsubscribe"
            | "psubscribe"
            | "punsubscribe"
            | "ssubscribe"
            | "sunsubscribe"
            | "ping"
            | "quit"
            | "reset"
    )
}

/// SUBSCRIBE and friends, whose replies are pushes (sent even under CLIENT REPLY OFF).
pub fn is_subscription_command(name: &str) -> bool {
    matches!(
        name,
        "subscribe" | "unsubscribe" | "psubscribe" | "punsubscribe"
    )
}

fn kind_words(kind: SubKind) -> (&'static [u8], &'static [u8]) {
    match kind {
        SubKind::Channel => (b"subscribe", b"unsubscribe"),
        SubKind::Pattern => (b"psubscribe", b"punsubscribe"),
    }
}

fn subscribe_generic(ctx: &mut Ctx<'_>, a: Args<'_, '_>, kind: SubKind) -> CmdResult {
    let t = ctx.t()?;
    let info = ctx.conn.info.clone();
    let mut reg = ctx.shared().pubsub();
    for name in &a[1..] {
        let list = match kind {
            SubKind::Channel => &mut ctx.conn.subs,
            SubKind::Pattern => &mut ctx.conn.psubs,
        };
        if !list.iter().any(|(lt, n)| *lt == t && n[..] == name[..]) {
            list.push((t, name.to_vec()));
            reg.subscribe(kind, t, name, &info);
        }
        let count = ctx.conn.subscriptions();
        ctx.w.push(3);
        ctx.w.bulk(kind_words(kind).0);
        ctx.w.bulk(name);
        ctx.w.integer(count as i64);
    }
    Ok(())
}

fn unsubscribe_generic(ctx: &mut Ctx<'_>, a: Args<'_, '_>, kind: SubKind) -> CmdResult {
    let word = kind_words(kind).1;
    let id = ctx.conn.info.id;
    // With no argument: every channel (pattern) of the connection, in whichever tenant.
    let targets: Vec<(Option<TenantId>, Vec<u8>)> = if a.len() == 1 {
        let list = match kind {
            SubKind::Channel => &ctx.conn.subs,
            SubKind::Pattern => &ctx.conn.psubs,
        };
        list.iter().map(|(t, n)| (Some(*t), n.clone())).collect()
    } else {
        a[1..].iter().map(|n| (None, n.to_vec())).collect()
    };
    if targets.is_empty() {
        ctx.w.push(3);
        ctx.w.bulk(word);
        ctx.w.null();
        ctx.w.integer(ctx.conn.subscriptions() as i64);
        return Ok(());
    }
    let current = ctx.conn.tenant;
    let mut reg = ctx.shared().pubsub();
    for (t, name) in targets {
        if let Some(t) = t.or(current) {
            let list = match kind {
                SubKind::Channel => &mut ctx.conn.subs,
                SubKind::Pattern => &mut ctx.conn.psubs,
            };
            if let Some(i) = list.iter().position(|(lt, n)| *lt == t && *n == name) {
                list.remove(i);
                reg.unsubscribe(kind, t, &name, id);
            }
        }
        ctx.w.push(3);
        ctx.w.bulk(word);
        ctx.w.bulk(&name);
        ctx.w.integer(ctx.conn.subscriptions() as i64);
    }
    Ok(())
}

/// `SUBSCRIBE channel [channel ...]`
pub fn subscribe(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    subscribe_generic(ctx, a, SubKind::Channel)
}

/// `UNSUBSCRIBE [channel ...]`
pub fn unsubscribe(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    unsubscribe_generic(ctx, a, SubKind::Channel)
}

/// `PSUBSCRIBE pattern [pattern ...]`
pub fn psubscribe(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    subscribe_generic(ctx, a, SubKind::Pattern)
}

/// `PUNSUBSCRIBE [pattern ...]`
pub fn punsubscribe(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    unsubscribe_generic(ctx, a, SubKind::Pattern)
}

/// `PUBLISH channel message`: the number of subscribers (channel and pattern) reached, in the
/// caller's tenant only.
pub fn publish(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let hard = ctx.shared().pubsub_hard_limit();
    let (n, dropped) = ctx.shared().pubsub().publish(t, &a[1], &a[2], hard);
    if dropped > 0 {
        ctx.shared()
            .stats()
            .output_limit_disconnections
            .fetch_add(dropped, std::sync::atomic::Ordering::Relaxed);
    }
    // A client subscribed to what it publishes (RESP3) gets the message before the count, as
    // Redis appends it to the client's output first.
    let mut mine = Vec::new();
    if ctx.conn.info.take_inbox(&mut mine) {
        ctx.w.raw(&mine);
    }
    ctx.w.integer(n as i64);
    Ok(())
}

/// `PUBSUB CHANNELS [pattern] | NUMSUB [channel ...] | NUMPAT | HELP`, for the caller's tenant.
pub fn pubsub(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let sub = lower(&a[1]);
    let arity = |ok: bool| super::admin::sub_arity(ok, "pubsub", &sub);
    match sub.as_str() {
        "channels" => {
            arity(a.len() <= 3)?;
            let t = ctx.t()?;
            let names = ctx.shared().pubsub().channels(t, a.get(2).map(|p| &p[..]));
            ctx.w.array(names.len());
            for n in &names {
                ctx.w.bulk(n);
            }
        }
        "numsub" => {
            let t = ctx.t()?;
            let reg = ctx.shared().pubsub();
            // A flat array in RESP3 too (Redis 7.0 answers no map here).
            ctx.w.array((a.len() - 2) * 2);
            for name in &a[2..] {
                ctx.w.bulk(name);
                ctx.w.integer(reg.numsub(t, name) as i64);
            }
        }
        "numpat" => {
            arity(a.len() == 2)?;
            let t = ctx.t()?;
            let n = ctx.shared().pubsub().numpat(t);
            ctx.w.integer(n as i64);
        }
        "help" => super::admin::help(
            ctx,
            &[
                "PUBSUB <subcommand> [<arg> ...]. Subcommands are (this tenant's channels only):",
                "CHANNELS [<pattern>]",
                "    Channels with at least one subscriber, all or those matching <pattern>.",
                "NUMPAT",
                "    How many distinct patterns clients are subscribed to.",
                "NUMSUB [<channel> ...]",
                "    Each channel with its number of subscribers (pattern subscribers excluded).",
                "HELP",
                "    Print this help.",
            ],
        ),
        _ => return Err(super::admin::unknown_sub("pubsub", &a[1])),
    }
    Ok(())
}
