//! `MEMORY` (USAGE, STATS, HELP) and `OBJECT` (ENCODING, FREQ, IDLETIME, REFCOUNT, HELP).

use locus_engine::Policy;

use crate::exec::{Args, CmdError, CmdResult, Ctx, int_arg, is, lower};

use super::{help, unknown_sub};

/// `MEMORY USAGE key [SAMPLES n] | HELP`
pub fn memory(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let sub = lower(&a[1]);
    match sub.as_str() {
        "usage" => {
            if a.len() != 3 && a.len() != 5 {
                return Err(CmdError::WrongArity("memory|usage".into()));
            }
            if a.len() == 5 && (!is(&a[3], "samples") || int_arg(&a[4]).is_err()) {
                return Err(CmdError::Syntax);
            }
            let t = ctx.t()?;
            match ctx.eng.object_info(t, &a[2]) {
                Some(o) => ctx.w.integer(o.charged_bytes as i64),
                None => ctx.w.null(),
            }
        }
        "help" => help(
            ctx,
            &[
                "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "USAGE <key> [SAMPLES <count>]",
                "    Return memory in bytes used by <key> (the size class chunk it occupies).",
                "HELP",
                "    Print this help.",
            ],
        ),
        _ => return Err(unknown_sub("memory", &a[1])),
    }
    Ok(())
}

pub(super) fn encoding(v_is_int: bool, len: usize) -> &'static str {
    if v_is_int {
        "int"
    } else if len <= 44 {
        "embstr"
    } else {
        "raw"
    }
}

/// OBJECT ENCODING|IDLETIME|FREQ|REFCOUNT|TIER key | HELP (TIER is Locus's own)
pub fn object(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let sub = lower(&a[1]);
    if sub == "help" {
        help(
            ctx,
            &[
                "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "ENCODING <key>",
                "    Return the kind of internal representation used in order to store the value associated with a <key>.",
                "FREQ <key>",
                "    Return the access frequency index of the <key>.",
                "IDLETIME <key>",
                "    Return the idle time of the <key>, that is the approximated number of seconds elapsed since the last access to the key.",
                "REFCOUNT <key>",
                "    Return the number of references of the value associated with the specified <key>.",
                "TIER <key>",
                "    (Locus) Return the memory tier holding the <key>: fast or slow (needs [tier]).",
                "HELP",
                "    Print this help.",
            ],
        );
        return Ok(());
    }
    if !["encoding", "idletime", "freq", "refcount", "tier"].contains(&sub.as_str()) {
        return Err(unknown_sub("object", &a[1]));
    }
    if a.len() != 3 {
        return Err(CmdError::WrongArity(format!("object|{sub}")));
    }
    let t = ctx.t()?;
    if sub == "tier" {
        // Locus's own: which tier holds the key, read without touching it (no hit, no move).
        if ctx.eng.tier_stats().is_none() {
            return Err(CmdError::msg(
                "ERR this server has no memory tiers ([tier] is not configured)",
            ));
        }
        match ctx.eng.item_tier(t, &a[2]) {
            Some(tier) => ctx.w.bulk(tier.name().as_bytes()),
            None => ctx.w.null(),
        }
        return Ok(());
    }
    // As Redis: a missing key is a nil before the policy is looked at.
    let Some(o) = ctx.eng.object_info(t, &a[2]) else {
        ctx.w.null();
        return Ok(());
    };
    // The tenant's policy decides what its items' recency field holds (the engine keeps one
    // field per item, as Redis: an LRU stamp or an LFU counter).
    let policy: Policy = ctx.eng.tenant_config(t).policy;
    if sub == "freq" && !policy.is_lfu() {
        return Err(CmdError::msg(
            "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ));
    }
    if sub == "idletime" && policy.is_lfu() {
        return Err(CmdError::msg(
            "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ));
    }
    match sub.as_str() {
        "encoding" => {
            let obj_enc = match ctx.eng.peek_value(t, &a[2]) {
                Some(locus_engine::ValueRef::Obj(o)) => Some(o.encoding()),
                _ => None,
            };
            let enc = if let Some(e) = obj_enc {
                e
            } else if let Some(e) = ctx.shared().forced_encoding(t, &a[2]) {
                e
            } else {
                let is_int = o.value_len <= 20
                    && ctx
                        .eng
                        .peek(t, &a[2])
                        .is_some_and(|v| crate::exec::parse_i64(v).is_some());
                encoding(is_int, o.value_len)
            };
            ctx.w.bulk(enc.as_bytes());
        }
        "idletime" => ctx.w.integer((o.idle_ms / 1000) as i64),
        "freq" => ctx.w.integer(i64::from(o.lfu_freq)),
        _ => ctx.w.integer(1),
    }
    Ok(())
}
