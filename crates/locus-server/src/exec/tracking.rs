//! Client-side caching commands and hooks: `CLIENT TRACKING`, `CLIENT CACHING`,
//! `CLIENT GETREDIR`, `CLIENT TRACKINGINFO`, the read path that remembers the keys a tracking
//! client fetched, and the end-of-command step that sends what the command caused (the table and
//! the delivery are in `server::tracking`).
//!
//! As Redis 7.0: a read-only command remembers its keys (OPTIN: only after `CLIENT CACHING yes`;
//! OPTOUT: unless `CLIENT CACHING no`; BCAST: never, prefixes instead); inside a script, a
//! read-only call makes the script's declared keys tracked (not the keys of the call); EVAL_RO,
//! EVALSHA_RO and FCALL_RO count only through the commands they call. The CACHING flag lasts for
//! the next command, or for a whole MULTI/EXEC.
//!
//! Tenancy: keys are remembered in the tenant the read routed to; BCAST prefixes are registered
//! in the connection's tenant (prefix tenancy: in the tenant whose key prefix the PREFIX starts
//! with, if the connection may act on it), so they only ever match that tenant's keys, and a
//! client sees key names as it sends them (with the tenant prefix in prefix tenancy). A REDIRECT
//! to a client the connection may not see (another tenant's, the admin's) is refused with the
//! error of an id that does not exist.

use locus_engine::{Engine, TenantId};

use super::{Args, CmdError, CmdResult, CommandSpec, Ctx, has_flag, is, lower};
use crate::config::TenancyMode;
use crate::server::{Shared, TrackingOptions};

/// What the read path needs to know of a connection's tracking (the rest is in the registry).
#[derive(Debug, Clone, Default)]
pub struct ConnTracking {
    /// CLIENT TRACKING ON.
    pub on: bool,
    /// BCAST mode (no keys remembered).
    pub bcast: bool,
    /// OPTIN mode.
    pub optin: bool,
    /// OPTOUT mode.
    pub optout: bool,
    /// CLIENT CACHING YES (optin) or NO (optout) given for the next command.
    pub caching: bool,
    /// A script of this connection is running.
    in_script: bool,
    /// ... and it called a read-only command (its declared keys are tracked).
    script_read: bool,
}

impl ConnTracking {
    /// Whether the keys of a read now are to be remembered.
    fn remembers(&self) -> bool {
        // OPTIN: only after CACHING YES; OPTOUT: unless CACHING NO.
        let opted_out = if self.optin {
            !self.caching
        } else {
            self.optout && self.caching
        };
        self.on && !self.bcast && !opted_out
    }
}

fn is_script(name: &str) -> bool {
    matches!(
        name,
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro"
    )
}

/// Before a handler of a tracking connection runs (the dispatcher, `conn.tracking.on`).
pub fn before(ctx: &mut Ctx<'_>, spec: &CommandSpec) {
    if is_script(spec.name) && !ctx.conn.tracking.in_script {
        ctx.conn.tracking.in_script = true;
        ctx.conn.tracking.script_read = false;
    }
}

/// After a handler of a tracking connection ran (successfully or not, as Redis's `call`):
/// remembers the keys a read-only command fetched.
pub fn after(ctx: &mut Ctx<'_>, spec: &CommandSpec, args: Args<'_, '_>) {
    let tr = &mut ctx.conn.tracking;
    if is_script(spec.name) {
        if !tr.in_script {
            return;
        }
        tr.in_script = false;
        if std::mem::take(&mut tr.script_read)
            && tr.remembers()
            && let Some(t) = ctx.tenant
        {
            let keys = super::counted_keys(spec, args);
            ctx.shared()
                .tracking()
                .remember(t, ctx.conn.info.id, keys.map(|k| &args[k][..]));
        }
        return;
    }
    if !has_flag(spec.flags, "readonly") {
        return;
    }
    if tr.in_script {
        tr.script_read = true;
        return;
    }
    if !tr.remembers() {
        return;
    }
    let Some(t) = ctx.tenant else {
        return;
    };
    let keys = super::key_positions(spec, args.len()).chain(super::counted_keys(spec, args));
    ctx.shared()
        .tracking()
        .remember(t, ctx.conn.info.id, keys.map(|k| &args[k][..]));
}

/// Drains the engine's expired and evicted keys into invalidations (and keyspace
/// notifications, when asked for).
fn key_events(shared: &Shared, eng: &mut Engine) {
    super::notify::publish_key_events(shared, eng);
}

/// After each command a connection ran (the connection loop, when some client tracks or this
/// one does): drops table keys past the bound, settles the tables' memory charge, sends the
/// BCAST keys the command wrote, gives its own client what it caused (the invalidations of keys
/// evicted for it before its reply, which starts at byte `reply_start` of the writer, the rest
/// after), and ends a CLIENT CACHING that applied to this command. `found`: the command's
/// table position.
pub fn after_command(ctx: &mut Ctx<'_>, found: Option<usize>, reply_start: usize) {
    let sh = ctx.shared();
    let tr = sh.tracking();
    let id = ctx.conn.info.id;
    if tr.active() {
        tr.enforce_limit(sh);
        tr.settle(sh, ctx.eng);
        key_events(sh, ctx.eng);
        tr.flush_bcast(sh);
        if ctx.conn.close {
            // A closing client (QUIT) is no redirect target any more: the clients that redirect
            // to it learn it at their next invalidation (tracking-redir-broken).
            tr.closing(sh, id);
        }
    }
    tr.release_held(id, &mut ctx.w, reply_start);
    tr.set_current(0);
    let is_client = found.is_some_and(|i| super::table::COMMANDS[i].name == "client");
    if ctx.conn.multi.is_none() && !is_client {
        ctx.conn.tracking.caching = false;
    }
}

/// After a blocked client's command ran again (exec/blocking): what it caused for that client
/// follows its reply; `prev` is the client whose command was running before.
pub fn after_rerun(ctx: &mut Ctx<'_>, prev: u64) {
    let tr = ctx.shared().tracking();
    tr.flush_bcast(ctx.shared());
    // The served client's reply is alone in its own buffer (exec/blocking): it starts at 0.
    tr.release_held(ctx.conn.info.id, &mut ctx.w, 0);
    tr.set_current(prev);
}

/// The tick (`server.hz`): table bounds, memory charges, expired keys, BCAST keys; the engine's
/// key-event record is given back to the notifications' needs once nobody tracks.
pub fn tick(shared: &Shared, eng: &mut Engine) {
    let tr = shared.tracking();
    if tr.active() {
        if shared.notify_flags() == 0 {
            key_events(shared, eng);
        }
        tr.enforce_limit(shared);
        tr.flush_bcast(shared);
    } else if tr.stop_recording() {
        use super::notify::{EVICTED, EXPIRED, KEYEVENT, KEYSPACE};
        let f = shared.notify_flags();
        let need = f & (EXPIRED | EVICTED) != 0 && f & (KEYSPACE | KEYEVENT) != 0;
        eng.record_key_events(need);
        if !need {
            let _ = eng.take_key_events();
        }
    }
    tr.settle(shared, eng);
}

fn sub_arity(sub: &str) -> CmdError {
    CmdError::WrongArity(format!("client|{sub}"))
}

/// CLIENT TRACKING | CACHING | GETREDIR | TRACKINGINFO (`sub` lowercase).
pub fn client(ctx: &mut Ctx<'_>, a: Args<'_, '_>, sub: &str) -> CmdResult {
    match sub {
        "tracking" => {
            if a.len() < 3 {
                return Err(sub_arity(sub));
            }
            tracking(ctx, a)
        }
        "caching" => {
            if a.len() != 3 {
                return Err(sub_arity(sub));
            }
            let tr = &mut ctx.conn.tracking;
            if !tr.on {
                return Err(CmdError::msg(
                    "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled",
                ));
            }
            if is(&a[2], "yes") {
                if !tr.optin {
                    return Err(CmdError::msg(
                        "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
                    ));
                }
            } else if is(&a[2], "no") {
                if !tr.optout {
                    return Err(CmdError::msg(
                        "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
                    ));
                }
            } else {
                return Err(CmdError::Syntax);
            }
            tr.caching = true;
            ctx.w.ok();
            Ok(())
        }
        "getredir" => {
            if a.len() != 2 {
                return Err(sub_arity(sub));
            }
            let redir = match ctx.shared().tracking().options_of(ctx.conn.info.id) {
                Some((o, _, _)) if ctx.conn.tracking.on => o.redirect as i64,
                _ => -1,
            };
            ctx.w.integer(redir);
            Ok(())
        }
        "trackinginfo" => {
            if a.len() != 2 {
                return Err(sub_arity(sub));
            }
            trackinginfo(ctx);
            Ok(())
        }
        _ => Err(CmdError::msg(format!(
            "ERR unknown subcommand '{sub}'. Try CLIENT HELP."
        ))),
    }
}

/// `CLIENT TRACKINGINFO`: flags (a set), redirect, prefixes, as Redis 7.0.
fn trackinginfo(ctx: &mut Ctx<'_>) {
    let tr = ctx.conn.tracking.clone();
    let reg = ctx.shared().tracking().options_of(ctx.conn.info.id);
    let mut flags: Vec<&str> = vec![if tr.on { "on" } else { "off" }];
    let (redirect, prefixes) = match (&reg, tr.on) {
        (Some((o, broken, prefixes)), true) => {
            for (set, name) in [
                (o.bcast, "bcast"),
                (o.optin, "optin"),
                (o.optin && tr.caching, "caching-yes"),
                (o.optout, "optout"),
                (o.optout && tr.caching, "caching-no"),
                (o.noloop, "noloop"),
                (*broken, "broken_redirect"),
            ] {
                if set {
                    flags.push(name);
                }
            }
            (o.redirect as i64, prefixes.clone())
        }
        _ => (-1, Vec::new()),
    };
    ctx.w.map(3);
    ctx.w.bulk(b"flags");
    ctx.w.set(flags.len());
    for f in flags {
        ctx.w.bulk(f.as_bytes());
    }
    ctx.w.bulk(b"redirect");
    ctx.w.integer(redirect);
    ctx.w.bulk(b"prefixes");
    ctx.w.array(prefixes.len());
    for p in &prefixes {
        ctx.w.bulk(p);
    }
}

/// Whether one of two prefixes starts the other (Redis's stringCheckPrefix).
fn overlap(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

fn prefix_overlap_error(new: &[u8], other: &[u8], existing: bool) -> CmdError {
    CmdError::msg(format!(
        "ERR Prefix '{}' overlaps with {} '{}'. Prefixes for a single client must not overlap.",
        String::from_utf8_lossy(new),
        if existing {
            "an existing prefix"
        } else {
            "another provided prefix"
        },
        String::from_utf8_lossy(other)
    ))
}

/// The first overlap among a client's `existing` prefixes and the `new` ones, in Redis's order
/// (for each new prefix: an existing one, then a later new one). Many prefixes are checked in
/// O(n log n) (sorted, neighbours compared: a prefix and anything it starts sort next to each
/// other), so a long PREFIX list cannot hold the server.
fn find_overlap(existing: &[Vec<u8>], new: &[Vec<u8>]) -> Option<CmdError> {
    if new.len().saturating_mul(existing.len() + new.len()) <= 1 << 12 {
        for (i, p) in new.iter().enumerate() {
            if let Some(e) = existing.iter().find(|e| overlap(e, p)) {
                return Some(prefix_overlap_error(p, e, true));
            }
            if let Some(q) = new[i + 1..].iter().find(|q| overlap(p, q)) {
                return Some(prefix_overlap_error(p, q, false));
            }
        }
        return None;
    }
    let mut all: Vec<(&[u8], Option<usize>)> = existing
        .iter()
        .map(|e| (&e[..], None))
        .chain(new.iter().enumerate().map(|(i, p)| (&p[..], Some(i))))
        .collect();
    all.sort();
    for w in all.windows(2) {
        let ((a, ia), (b, ib)) = (w[0], w[1]);
        if !overlap(a, b) {
            continue;
        }
        return match (ia, ib) {
            (Some(_), None) => Some(prefix_overlap_error(a, b, true)),
            (None, Some(_)) => Some(prefix_overlap_error(b, a, true)),
            (Some(i), Some(j)) if i < j => Some(prefix_overlap_error(a, b, false)),
            (Some(_), Some(_)) => Some(prefix_overlap_error(b, a, false)),
            // Two existing prefixes never overlap (they were checked when added).
            (None, None) => continue,
        };
    }
    None
}

/// The tenant a BCAST prefix is registered in: in prefix tenancy the tenant whose key prefix it
/// starts with, else the connection's (its owner's, or the one it routes to).
fn prefix_tenant(ctx: &Ctx<'_>, prefix: &[u8]) -> Result<TenantId, CmdError> {
    let tenancy = ctx.shared().tenancy();
    let t = if tenancy.mode == TenancyMode::Prefix
        && let Some((_, t)) = tenancy.prefixes.iter().find(|(p, _)| prefix.starts_with(p))
    {
        *t
    } else {
        ctx.conn
            .owner
            .or(ctx.conn.tenant)
            .ok_or(CmdError::NoTenant)?
    };
    super::privilege::check_route(ctx, Some(t))?;
    Ok(t)
}

/// `CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p ...] [BCAST] [OPTIN] [OPTOUT] [NOLOOP]`.
fn tracking(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let mut opts = TrackingOptions::default();
    let mut prefixes: Vec<Vec<u8>> = Vec::new();
    let mut j = 3;
    while j < a.len() {
        let more = j + 1 < a.len();
        let opt = lower(&a[j]);
        match opt.as_str() {
            "redirect" if more => {
                j += 1;
                if opts.redirect != 0 {
                    return Err(CmdError::msg(
                        "ERR A client can only redirect to a single other client",
                    ));
                }
                let id = super::int_arg(&a[j])?;
                let scope = ctx.conn.scope();
                let found = u64::try_from(id).ok().and_then(|id| {
                    ctx.shared()
                        .client_by_id(id)
                        .filter(|c| c.visible_to(scope))
                });
                // Another tenant's client (or the admin's) is refused as an id that does not
                // exist: the reply tells nothing of who is connected elsewhere.
                let Some(target) = found else {
                    return Err(CmdError::msg(
                        "ERR The client ID you want redirect to does not exist",
                    ));
                };
                opts.redirect = target.id;
            }
            "bcast" => opts.bcast = true,
            "optin" => opts.optin = true,
            "optout" => opts.optout = true,
            "noloop" => opts.noloop = true,
            "prefix" if more => {
                j += 1;
                prefixes.push(a[j].to_vec());
            }
            _ => return Err(CmdError::Syntax),
        }
        j += 1;
    }
    let id = ctx.conn.info.id;
    if is(&a[2], "on") {
        let cur = ctx.conn.tracking.clone();
        if !opts.bcast && !prefixes.is_empty() {
            return Err(CmdError::msg(
                "ERR PREFIX option requires BCAST mode to be enabled",
            ));
        }
        if cur.on && cur.bcast != opts.bcast {
            return Err(CmdError::msg(
                "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.",
            ));
        }
        if opts.bcast && (opts.optin || opts.optout) {
            return Err(CmdError::msg(
                "ERR OPTIN and OPTOUT are not compatible with BCAST",
            ));
        }
        if opts.optin && opts.optout {
            return Err(CmdError::msg(
                "ERR You can't specify both OPTIN mode and OPTOUT mode",
            ));
        }
        if (opts.optin && cur.optout) || (opts.optout && cur.optin) {
            return Err(CmdError::msg(
                "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.",
            ));
        }
        let mut resolved = Vec::new();
        if opts.bcast {
            let existing = ctx.shared().tracking().prefixes_of(id);
            if let Some(e) = find_overlap(&existing, &prefixes) {
                return Err(e);
            }
            if prefixes.is_empty() {
                prefixes.push(Vec::new());
            }
            for p in prefixes {
                resolved.push((prefix_tenant(ctx, &p)?, p));
            }
        }
        let info = ctx.conn.info.clone();
        ctx.shared()
            .tracking()
            .enable(ctx.eng, &info, opts.clone(), resolved);
        let t = &mut ctx.conn.tracking;
        t.on = true;
        t.bcast = opts.bcast;
        t.optin = opts.optin;
        t.optout = opts.optout;
    } else if is(&a[2], "off") {
        off(ctx);
    } else {
        return Err(CmdError::Syntax);
    }
    ctx.w.ok();
    Ok(())
}

/// Turns the connection's tracking off (CLIENT TRACKING OFF, RESET).
pub fn off(ctx: &mut Ctx<'_>) {
    off_of(ctx.shared(), ctx.conn);
}

/// [`off`] without the engine (RESET while a script is busy).
pub fn off_of(shared: &Shared, conn: &mut crate::server::ConnState) {
    if conn.tracking.on {
        shared.tracking().disable(conn.info.id);
    }
    conn.tracking = ConnTracking::default();
}

/// INFO's fields for the tenants `scope` may see: `tracking_clients` (clients section) and the
/// stats section's `tracking_total_keys`, `tracking_total_items`, `tracking_total_prefixes`.
pub fn info_counts(shared: &Shared, scope: Option<Option<TenantId>>) -> [usize; 4] {
    let (c, k, i, p) = shared.tracking().stats(scope);
    [c, k, i, p]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_overlap_when_one_starts_the_other() {
        assert!(overlap(b"foo", b"foobar"));
        assert!(overlap(b"foobar", b"foo"));
        assert!(overlap(b"", b"x"));
        assert!(overlap(b"a:", b"a:"));
        assert!(!overlap(b"a:", b"b:"));
        assert!(!overlap(b"bar", b"baz"));
    }

    #[test]
    fn many_prefixes_are_checked_for_overlap_as_few_are() {
        let v = |xs: &[&str]| xs.iter().map(|x| x.as_bytes().to_vec()).collect::<Vec<_>>();
        let msg = |e: Option<CmdError>| e.map(|e| e.wire());
        // Few: Redis's own order.
        assert_eq!(
            msg(find_overlap(&v(&["BAR"]), &v(&["BARB"]))).as_deref(),
            Some(
                "ERR Prefix 'BARB' overlaps with an existing prefix 'BAR'. Prefixes for a single client must not overlap."
            )
        );
        assert!(find_overlap(&v(&["a:"]), &v(&["b:", "c:"])).is_none());
        // Many: the same verdicts.
        let many: Vec<Vec<u8>> = (0..5000)
            .map(|i| format!("p{i:05}:").into_bytes())
            .collect();
        assert!(find_overlap(&[], &many).is_none());
        let mut dup = many.clone();
        dup.push(b"p00042:x".to_vec());
        assert!(
            msg(find_overlap(&[], &dup)).unwrap().starts_with(
                "ERR Prefix 'p00042:' overlaps with another provided prefix 'p00042:x'"
            )
        );
        assert!(
            msg(find_overlap(&v(&["p01000"]), &many))
                .unwrap()
                .starts_with("ERR Prefix 'p01000:' overlaps with an existing prefix 'p01000'")
        );
    }

    #[test]
    fn optin_and_optout_decide_what_is_remembered() {
        let on = ConnTracking {
            on: true,
            ..ConnTracking::default()
        };
        assert!(on.remembers());
        assert!(!ConnTracking::default().remembers());
        let bcast = ConnTracking {
            bcast: true,
            ..on.clone()
        };
        assert!(!bcast.remembers());
        let mut optin = ConnTracking {
            optin: true,
            ..on.clone()
        };
        assert!(!optin.remembers());
        optin.caching = true;
        assert!(optin.remembers());
        let mut optout = ConnTracking { optout: true, ..on };
        assert!(optout.remembers());
        optout.caching = true;
        assert!(!optout.remembers());
    }
}
