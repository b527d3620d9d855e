//! `CLIENT PAUSE timeout [WRITE|ALL]` and `CLIENT UNPAUSE`, as Redis 7.0 documents them, per
//! tenant.
//!
//! A pause holds the commands of the clients it covers: under `ALL` every command, under `WRITE`
//! (the default of neither word is `ALL`, as Redis) the commands that may change the data set or
//! reach other clients: Redis's `write` and `may_replicate` commands (PUBLISH, PFCOUNT, EVAL and
//! EVALSHA of a script without the `no-writes` flag, FCALL of such a function, SCRIPT FLUSH, ...)
//! and an EXEC whose queue holds one. A held command is not refused: its connection stops before
//! it (the replies of the commands before it go out), waits with no lock held until the pause
//! ends (timeout or UNPAUSE), then runs it and goes on. Commands with bad arity or that are not
//! authenticated are answered at once, as Redis answers them before its pause check. A
//! transaction's commands run together: a pause set inside EXEC starts after it.
//!
//! Tenants: a tenant's CLIENT PAUSE holds only the clients of its own tenant (never the admin's,
//! never another tenant's); the admin's holds every client, the admin's own included, as Redis.
//! A tenant's UNPAUSE ends its own pause; the admin's ends every pause.
//!
//! Cost when nothing is paused: one relaxed atomic load per command ([`ACTIVE`]); while some
//! tenant is paused, two more for the other tenants' commands (the admin's flag and their own),
//! no lock (tenants with an id of 1024 or more take a short lock instead).

use std::collections::HashMap;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use locus_engine::TenantId;
use parking_lot::Mutex;

use super::{Args, CmdError, CmdResult, CommandSpec, Ctx, has_flag, is, lookup, lower, parse_i64};
use crate::server::{ConnState, Shared};

/// Longest a paused client sleeps before it checks the pause again.
const RECHECK: Duration = Duration::from_millis(100);

/// Some pause may be in force (checked before every command; cleared when the last ends).
pub static ACTIVE: AtomicBool = AtomicBool::new(false);

/// What a pause holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// Commands that may write (Redis's `WRITE`).
    Write,
    /// Every command (Redis's `ALL`).
    All,
}

#[derive(Debug, Clone, Copy)]
struct Pause {
    kind: Kind,
    until: Instant,
}

/// Whose pause: the admin's (`None`: every client) or a tenant's.
type Owner = Option<TenantId>;

#[derive(Default)]
struct State {
    pauses: HashMap<Owner, Pause>,
    /// Clients waiting for a pause to end: id -> (admin, tenant) for INFO's `blocked_clients`.
    waiting: HashMap<u64, (bool, Option<TenantId>)>,
}

static STATE: LazyLock<Mutex<State>> = LazyLock::new(|| Mutex::new(State::default()));

/// Tenants whose pause flag is an atomic of its own (the others' clients take the state's lock
/// to check, while some pause is in force).
const FLAGGED: usize = 1024;
/// The admin's pause may be in force (set and cleared under the state's lock).
static ADMIN_FLAG: AtomicBool = AtomicBool::new(false);
/// Tenant `t`'s pause may be in force, for `t < FLAGGED`: so that one tenant's pause costs the
/// other tenants' commands two atomic loads, never a lock.
static TENANT_FLAGS: [AtomicBool; FLAGGED] = [const { AtomicBool::new(false) }; FLAGGED];

fn flag(owner: Owner) -> Option<&'static AtomicBool> {
    match owner {
        None => Some(&ADMIN_FLAG),
        Some(t) => TENANT_FLAGS.get(t.0 as usize),
    }
}
/// Woken at every UNPAUSE (a timeout wakes each waiter by its own deadline).
static UNPAUSED: LazyLock<tokio::sync::Notify> = LazyLock::new(tokio::sync::Notify::new);

/// The tenant whose pause covers a connection (its scope; in prefix tenancy an unbound
/// connection is covered by the tenant its command's first key belongs to).
fn conn_tenant(shared: &Shared, st: &ConnState, spec: &CommandSpec, a: Args<'_, '_>) -> Owner {
    if let Some(Some(t)) = st.scope() {
        return Some(t);
    }
    let tenancy = shared.tenancy();
    if tenancy.mode == crate::config::TenancyMode::Prefix {
        let mut keys = super::key_positions(spec, a.len()).chain(super::counted_keys(spec, a));
        if let Some(k) = keys.next() {
            return tenancy.for_key(&a[k]);
        }
    }
    st.tenant
}

/// Whether a script command's script (or function) lacks the `no-writes` flag: Redis's
/// `evalGetCommandFlags` (an unknown sha or function counts as writing).
fn script_may_write(
    shared: &Shared,
    t: Option<TenantId>,
    spec: &CommandSpec,
    a: Args<'_, '_>,
) -> bool {
    match spec.name {
        "eval" => match super::scripting::vm::shebang(&a[1]) {
            Ok((f, _)) => !f.no_writes,
            Err(_) => true,
        },
        "evalsha" | "fcall" => t.is_none_or(|t| {
            !shared
                .scripts()
                .no_writes(t, spec.name == "fcall", &a[1])
                .unwrap_or(false)
        }),
        _ => false,
    }
}

/// Whether a command is one `WRITE` holds (Redis's `is_may_replicate_command`).
fn may_replicate(
    shared: &Shared,
    st: &ConnState,
    t: Option<TenantId>,
    spec: &CommandSpec,
    a: Args<'_, '_>,
) -> bool {
    if spec.is_write || matches!(spec.name, "pfcount" | "publish" | "spublish") {
        return true;
    }
    match spec.name {
        "eval" | "evalsha" | "fcall" => return script_may_write(shared, t, spec, a),
        "script" => return a.get(1).is_some_and(|s| is(s, "flush")),
        "function" => {
            return a.get(1).is_some_and(|s| {
                ["load", "delete", "flush", "restore"]
                    .iter()
                    .any(|w| is(s, w))
            });
        }
        "exec" => {}
        _ => return has_flag(spec.flags, "may_replicate"),
    }
    // EXEC: what its queue holds.
    st.multi.as_ref().is_some_and(|q| {
        q.iter().any(|cmd| {
            let args: Vec<std::borrow::Cow<'_, [u8]>> = cmd
                .iter()
                .map(|x| std::borrow::Cow::Borrowed(&x[..]))
                .collect();
            !args.is_empty()
                && lookup(&args[0])
                    .is_some_and(|s| s.name != "exec" && may_replicate(shared, st, t, s, &args))
        })
    })
}

/// The end of the pause `st`'s command must wait for, if one holds it. Called only while
/// [`ACTIVE`]; commands that fail their arity or authentication checks are never held.
pub fn holds(
    shared: &Shared,
    st: &ConnState,
    spec: &CommandSpec,
    a: Args<'_, '_>,
) -> Option<Instant> {
    let argc = a.len() as i32;
    if (spec.arity > 0 && argc != spec.arity) || (spec.arity < 0 && argc < -spec.arity) {
        return None;
    }
    if !st.authenticated && !spec.no_auth {
        return None;
    }
    let t = conn_tenant(shared, st, spec, a);
    let own =
        !st.admin && t.is_some_and(|t| flag(Some(t)).is_none_or(|f| f.load(Ordering::Relaxed)));
    if !own && !ADMIN_FLAG.load(Ordering::Relaxed) {
        return None;
    }
    let now = Instant::now();
    let covering: Vec<Pause> = {
        let mut s = STATE.lock();
        s.pauses.retain(|o, p| {
            let keep = p.until > now;
            if !keep && let Some(f) = flag(*o) {
                f.store(false, Ordering::Relaxed);
            }
            keep
        });
        if s.pauses.is_empty() {
            ACTIVE.store(false, Ordering::Relaxed);
            return None;
        }
        let mut v = Vec::new();
        if let Some(p) = s.pauses.get(&None) {
            v.push(*p);
        }
        if !st.admin
            && let Some(t) = t
            && let Some(p) = s.pauses.get(&Some(t))
        {
            v.push(*p);
        }
        v
    };
    if covering.is_empty() {
        return None;
    }
    let mut writes: Option<bool> = None;
    let mut until: Option<Instant> = None;
    for p in covering {
        let applies = p.kind == Kind::All
            || *writes.get_or_insert_with(|| may_replicate(shared, st, t, spec, a));
        if applies {
            until = until.max(Some(p.until));
        }
    }
    until
}

/// Waits, with no lock held, until the pause that held the connection's command ends (its
/// timeout, an UNPAUSE) or `stop` resolves; the caller then runs the command again through the
/// pause check. Counted in INFO's `blocked_clients` meanwhile.
pub async fn wait(
    id: u64,
    admin: bool,
    tenant: Option<TenantId>,
    until: Instant,
    stop: impl std::future::Future<Output = ()>,
) {
    let notified = UNPAUSED.notified();
    STATE.lock().waiting.insert(id, (admin, tenant));
    // Woken by UNPAUSE, the pause's end, or a stop; at the latest after RECHECK (an UNPAUSE
    // between the check and this wait is then seen): the caller checks again either way.
    let wake = until.min(Instant::now() + RECHECK);
    tokio::select! {
        () = notified => {}
        () = tokio::time::sleep_until(wake.into()) => {}
        () = stop => {}
    }
    STATE.lock().waiting.remove(&id);
}

/// Clients waiting for a pause that `scope` may see (INFO's `blocked_clients`).
pub fn waiting_visible(scope: Option<Option<TenantId>>) -> usize {
    if !ACTIVE.load(Ordering::Relaxed) && STATE.lock().waiting.is_empty() {
        return 0;
    }
    STATE
        .lock()
        .waiting
        .values()
        .filter(|(admin, t)| match scope {
            None => true,
            Some(s) => !admin && *t == s,
        })
        .count()
}

/// `CLIENT PAUSE timeout [WRITE|ALL]`
pub fn client_pause(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    if !(3..=4).contains(&a.len()) {
        return Err(CmdError::WrongArity("client|pause".into()));
    }
    let owner = match ctx.conn.scope() {
        None => None,
        Some(Some(t)) => Some(t),
        Some(None) => return Err(super::privilege::noperm("client|pause")),
    };
    let ms = parse_i64(&a[2])
        .ok_or_else(|| CmdError::msg("ERR timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err(CmdError::msg("ERR timeout is negative"));
    }
    let kind = match a.get(3) {
        None => Kind::All,
        Some(m) if is(m, "all") => Kind::All,
        Some(m) if is(m, "write") => Kind::Write,
        Some(_) => {
            return Err(CmdError::msg("ERR CLIENT PAUSE mode must be WRITE or ALL"));
        }
    };
    let until = Instant::now() + Duration::from_millis(ms as u64);
    {
        let mut s = STATE.lock();
        // As Redis: a second pause keeps the stricter kind and the later end.
        let p = s.pauses.entry(owner).or_insert(Pause { kind, until });
        p.kind = p.kind.max(kind);
        p.until = p.until.max(until);
        if let Some(f) = flag(owner) {
            f.store(true, Ordering::Relaxed);
        }
        ACTIVE.store(true, Ordering::Relaxed);
    }
    sync_expiry(ctx.eng);
    ctx.w.ok();
    Ok(())
}

/// Some tenant's expiry is held by a pause (so that [`sync_expiry`] releases it when the pause ends).
static EXPIRY_HELD: AtomicBool = AtomicBool::new(false);

/// Holds the expiry of every tenant a pause in force covers, and releases the others (Redis
/// keeps expired keys during a pause: a read answers a miss, nothing is removed, so nothing
/// changes under the pause). Called when a pause starts or ends, and by the tick (a pause that
/// times out is released there). Nothing to do, at the cost of two atomic loads, when no pause
/// is or was in force.
pub fn sync_expiry(eng: &mut locus_engine::Engine) {
    if !ACTIVE.load(Ordering::Relaxed) && !EXPIRY_HELD.load(Ordering::Relaxed) {
        return;
    }
    let now = Instant::now();
    let s = STATE.lock();
    let in_force = |o: Owner| s.pauses.get(&o).is_some_and(|p| p.until > now);
    let all = in_force(None);
    let mut any = false;
    for t in eng.tenant_ids() {
        let held = all || in_force(Some(t));
        any |= held;
        eng.set_expiry_held(t, held);
    }
    EXPIRY_HELD.store(any, Ordering::Relaxed);
}

/// `CLIENT UNPAUSE`
pub fn client_unpause(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    if a.len() != 2 {
        return Err(CmdError::WrongArity(format!("client|{}", lower(&a[1]))));
    }
    {
        let mut s = STATE.lock();
        match ctx.conn.scope() {
            None => {
                for o in s.pauses.keys() {
                    if let Some(f) = flag(*o) {
                        f.store(false, Ordering::Relaxed);
                    }
                }
                s.pauses.clear();
            }
            Some(Some(t)) => {
                s.pauses.remove(&Some(t));
                if let Some(f) = flag(Some(t)) {
                    f.store(false, Ordering::Relaxed);
                }
            }
            Some(None) => return Err(super::privilege::noperm("client|unpause")),
        }
        if s.pauses.is_empty() {
            ACTIVE.store(false, Ordering::Relaxed);
        }
    }
    UNPAUSED.notify_waiters();
    sync_expiry(ctx.eng);
    ctx.w.ok();
    Ok(())
}
