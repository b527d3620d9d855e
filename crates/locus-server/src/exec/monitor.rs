//! `MONITOR`: a stream of every command the server runs, one line each, as Redis 7.0 writes it:
//! `+1700000000.123456 [0 127.0.0.1:5555] "set" "k" "v"` (the db, the client's address, or `lua`
//! for a command a script called; arguments quoted and escaped as Redis's `sdscatrepr`).
//!
//! What is shown, as Redis: a command after it ran (failed ones too; not those refused before
//! running: unknown, wrong arity, not authenticated, queued in MULTI, which shows at EXEC), EVAL,
//! EVALSHA and FCALL before they run (so a script's commands follow their script), never the
//! administrative commands (Redis's `admin` flag: CONFIG, CLIENT KILL/LIST/PAUSE, SLOWLOG, ...).
//! Passwords are redacted as `"(redacted)"`: AUTH's arguments, HELLO's after AUTH, MIGRATE's
//! after AUTH / AUTH2.
//!
//! Tenants: a tenant's monitor sees the commands its own tenant's clients run in its tenant, never
//! another tenant's, nor the admin's; the admin's monitor sees every command.
//!
//! Memory: a monitor's lines wait in its inbox (as pub/sub messages do) under the `pubsub` class
//! of `client-output-buffer-limit`: past its hard limit, or its soft limit for its seconds, the
//! monitor is disconnected. (Redis counts a monitor in the `normal` class, unlimited by
//! default; Locus bounds it so a monitor that never reads cannot grow the server.)
//!
//! Cost when no monitor is attached: one relaxed atomic load per command ([`ACTIVE`]).

use std::cell::Cell;
use std::sync::Arc;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicBool, Ordering};

use locus_engine::TenantId;
use parking_lot::Mutex;

use super::{Args, CmdError, CmdResult, CommandSpec, Ctx, has_flag, is, lower};
use crate::server::ClientInfo;

/// Some monitor is attached (checked on every command).
pub static ACTIVE: AtomicBool = AtomicBool::new(false);

struct Monitor {
    info: Arc<ClientInfo>,
    /// What it may see (`ConnState::scope`): `None` = every command.
    scope: Option<Option<TenantId>>,
}

static MONITORS: LazyLock<Mutex<Vec<Monitor>>> = LazyLock::new(|| Mutex::new(Vec::new()));

thread_local! {
    /// Depth of script calls running on this thread (`redis.call` within EVAL / FCALL).
    static IN_SCRIPT: Cell<u32> = const { Cell::new(0) };
}

/// Runs `f` as a command called by a script (its monitor line says `lua`).
pub fn in_script<R>(f: impl FnOnce() -> R) -> R {
    IN_SCRIPT.with(|d| d.set(d.get() + 1));
    let r = f();
    IN_SCRIPT.with(|d| d.set(d.get().saturating_sub(1)));
    r
}

/// Whether client `id` is a monitor.
pub fn is_monitor(id: u64) -> bool {
    ACTIVE.load(Ordering::Relaxed) && MONITORS.lock().iter().any(|m| m.info.id == id)
}

/// Removes client `id` from the monitors (disconnect, RESET).
pub fn remove(id: u64) {
    if !ACTIVE.load(Ordering::Relaxed) {
        return;
    }
    let mut m = MONITORS.lock();
    m.retain(|x| x.info.id != id);
    ACTIVE.store(!m.is_empty(), Ordering::Relaxed);
}

/// `MONITOR`
pub fn monitor(ctx: &mut Ctx<'_>, _a: Args<'_, '_>) -> CmdResult {
    // Inside EXEC (Redis: a client that expects one reply per command cannot monitor).
    if ctx.conn.block.deny {
        return Err(CmdError::msg(
            "ERR MONITOR isn't allowed for DENY BLOCKING client",
        ));
    }
    let scope = ctx.conn.scope();
    if scope == Some(None) {
        return Err(super::privilege::noperm("monitor"));
    }
    let mut m = MONITORS.lock();
    // Already a monitor: nothing, not even a reply (Redis).
    if m.iter().any(|x| x.info.id == ctx.conn.info.id) {
        return Ok(());
    }
    m.push(Monitor {
        info: ctx.conn.info.clone(),
        scope,
    });
    ACTIVE.store(true, Ordering::Relaxed);
    ctx.w.ok();
    Ok(())
}

/// Whether Redis hides this command from monitors (its `admin` flag, per subcommand).
fn hidden(spec: &CommandSpec, a: Args<'_, '_>) -> bool {
    if has_flag(spec.flags, "admin") {
        return true;
    }
    let sub = |words: &[&str]| a.get(1).is_some_and(|s| words.iter().any(|w| is(s, w)));
    match spec.name {
        "config" | "monitor" | "latency" | "debug" => true,
        "client" => sub(&["kill", "list", "pause", "unpause", "no-evict", "tracking"]),
        "acl" => !sub(&["whoami", "help", "cat", "genpass"]),
        _ => false,
    }
}

/// Appends `b` as Redis's `sdscatrepr` quotes it.
fn repr(out: &mut String, b: &[u8]) {
    out.push('"');
    for &c in b {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            7 => out.push_str("\\a"),
            8 => out.push_str("\\b"),
            0x20..=0x7e => out.push(c as char),
            _ => out.push_str(&format!("\\x{c:02x}")),
        }
    }
    out.push('"');
}

/// Which arguments Redis 7.0 replaces by `(redacted)`.
fn redacted(name: &str, a: Args<'_, '_>) -> Vec<bool> {
    let mut r = vec![false; a.len()];
    match name {
        "auth" => r.iter_mut().skip(1).for_each(|x| *x = true),
        "hello" => {
            let mut i = 2;
            while i < a.len() {
                if is(&a[i], "auth") && i + 2 < a.len() {
                    r[i + 1] = true;
                    r[i + 2] = true;
                    i += 3;
                } else if is(&a[i], "setname") {
                    i += 2;
                } else {
                    i += 1;
                }
            }
        }
        "migrate" => {
            let mut i = 6;
            while i < a.len() {
                if is(&a[i], "auth") && i + 1 < a.len() {
                    r[i + 1] = true;
                    i += 2;
                } else if is(&a[i], "auth2") && i + 2 < a.len() {
                    r[i + 1] = true;
                    r[i + 2] = true;
                    i += 3;
                } else if is(&a[i], "keys") {
                    break;
                } else {
                    i += 1;
                }
            }
        }
        _ => {}
    }
    r
}

/// The monitor line of a command (without the leading `+` and the line end).
fn line(db: u32, who: &str, a: Args<'_, '_>, name: &str) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let mut s = format!("{}.{:06} [{db} {who}]", now.as_secs(), now.subsec_micros());
    let hide = redacted(name, a);
    for (x, h) in a.iter().zip(hide) {
        s.push(' ');
        if h {
            s.push_str("\"(redacted)\"");
        } else {
            repr(&mut s, x);
        }
    }
    s
}

/// Feeds a command to the monitors that may see it: after it ran, or before for the script
/// commands (`before`). The caller checked [`ACTIVE`].
pub fn feed(ctx: &Ctx<'_>, spec: &CommandSpec, a: Args<'_, '_>, before: bool) {
    let scripted = has_flag(spec.flags, "skip_monitor");
    if scripted != before || (!scripted && hidden(spec, a)) {
        return;
    }
    let from_admin = ctx.conn.admin;
    let tenant = ctx.tenant.or(ctx.conn.tenant);
    let who = if IN_SCRIPT.with(Cell::get) > 0 {
        "lua".to_string()
    } else {
        ctx.conn.info.addr.to_string()
    };
    let mut text: Option<String> = None;
    let limit = ctx.shared().pubsub_hard_limit();
    let mut monitors = MONITORS.lock();
    let mut dropped = 0;
    monitors.retain(|m| {
        let visible = match m.scope {
            None => true,
            Some(s) => !from_admin && tenant.is_some() && s == tenant,
        };
        if !visible {
            return true;
        }
        let l = text.get_or_insert_with(|| line(ctx.conn.db, &who, a, &lower(&a[0])));
        let kept = m.info.deliver(limit, |w| w.simple(l));
        if !kept {
            dropped += 1;
        }
        kept
    });
    if dropped > 0 {
        ctx.shared()
            .stats()
            .output_limit_disconnections
            .fetch_add(dropped, Ordering::Relaxed);
    }
    ACTIVE.store(!monitors.is_empty(), Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    fn args(v: &[&[u8]]) -> Vec<Cow<'static, [u8]>> {
        v.iter().map(|x| Cow::Owned(x.to_vec())).collect()
    }

    #[test]
    fn lines_quote_and_redact_as_redis() {
        let a = args(&[b"set", b"k\"1", b"a\r\n\x01\\"]);
        let l = line(0, "127.0.0.1:5555", &a, "set");
        assert!(
            l.ends_with(r#" [0 127.0.0.1:5555] "set" "k\"1" "a\r\n\x01\\""#),
            "{l}"
        );
        let a = args(&[b"hello", b"3", b"AUTH", b"u", b"p", b"SETNAME", b"n"]);
        let l = line(2, "lua", &a, "hello");
        assert!(
            l.ends_with(r#"[2 lua] "hello" "3" "AUTH" "(redacted)" "(redacted)" "SETNAME" "n""#),
            "{l}"
        );
        let a = args(&[b"auth", b"u", b"p"]);
        assert!(line(0, "x", &a, "auth").ends_with(r#""auth" "(redacted)" "(redacted)""#));
        let a = args(&[
            b"migrate", b"h", b"1", b"key", b"9", b"5000", b"AUTH2", b"u", b"p",
        ]);
        assert!(
            line(0, "x", &a, "migrate").ends_with(r#""5000" "AUTH2" "(redacted)" "(redacted)""#)
        );
    }
}
