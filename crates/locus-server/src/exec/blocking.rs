//! Blocking commands (BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP; the sorted sets' BZPOPMIN BZPOPMAX
//! BZMPOP use the same machinery): a client waits for a key without holding the engine lock.
//!
//! ```text
//!  BLPOP k 0 (every key empty) ─► block(): the client joins k's FIFO in the registry, no reply;
//!                                 its connection stops executing and awaits its slot
//!  LPUSH k x (any client, any write command naming k) ─► the dispatcher marks k ready
//!  after that command, still under the engine lock ─► serve(): for each ready key, while it
//!  holds the type its first waiter wants, run that waiter's command again on its behalf; the
//!  reply goes to the waiter's slot and wakes its connection (a pop that pushes, BLMOVE, marks
//!  its destination ready in turn: chains and circles are served in the same pass)
//!  deadline / CLIENT UNBLOCK / disconnect ─► the client leaves the registry (under the engine
//!  lock, so it is served or timed out, never both)
//! ```
//!
//! Running the command again (as Redis 7.2 does) means the served reply is exactly the one the
//! command gives when the key is there: BLMOVE onto a key of another type answers WRONGTYPE and
//! leaves the element, BLMPOP pops its COUNT, keyspace events and WATCH touches happen as for any
//! command. Ready keys are served after each top-level command, so the pushes of a MULTI/EXEC
//! are seen whole (`LPUSH k a` then `DEL k` in one transaction wakes nobody); waiters of a key
//! are served first come, first served. Inside EXEC a blocking command does not block: it
//! answers at once as on a timeout (`deny`).
//!
//! Tenants: the registry is keyed by (tenant, key), so a push wakes only the waiters of its own
//! tenant's key; CLIENT UNBLOCK and INFO's `blocked_clients` see only the clients the caller may
//! see ([`ClientInfo::visible_to`]).
//!
//! The API for a blocking command's handler, when it found nothing to pop:
//! [`parse_timeout`] (Redis's seconds, fractional, errors and rounding) and
//! [`block`]`(ctx, args, keys, kind, timeout, denied)`: `kind` is the type name that wakes it
//! (`"list"`, `"zset"`), `denied` the reply inside MULTI. The handler must be written so that
//! running it again when a key is ready either serves the client (writes its reply) or calls
//! [`block`] again, which then keeps the client waiting in its place. Writers need nothing: every
//! write command marks its keys ready ([`Blocking::signal_ready`], called by the dispatcher).

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use locus_engine::{Engine, TenantId};
use locus_protocol::{ProtocolVersion, ReplyWriter};
use parking_lot::Mutex;

use super::{Args, CmdError, CmdResult, Ctx, parse_f64};
use crate::server::{ClientInfo, ConnState, Shared};

/// The `kind` of a waiter that runs again after any write to its key, whatever the key then
/// holds or whether it still exists (XREADGROUP: it answers an error when its stream or group
/// went).
pub const ANY_TYPE: &str = "*";

/// Whether the command runs again for a waiting client (see [`serve`]).
pub fn rerunning(ctx: &Ctx<'_>) -> bool {
    ctx.conn.block.rerun
}

/// A blocking command's timeout: milliseconds, 0 = forever.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeout(pub u64);

/// A hexadecimal floating-point number as C's `strtold` reads one whole (Redis 7.0 reads a
/// timeout with it, so `0x10` is 16 seconds): a sign, `0x`, hex digits with an optional point,
/// then an optional binary exponent `p[+-]digits`.
fn parse_hex_float(b: &[u8]) -> Option<f64> {
    let (neg, rest) = match b.first()? {
        b'-' => (true, &b[1..]),
        b'+' => (false, &b[1..]),
        _ => (false, b),
    };
    let rest = rest
        .strip_prefix(b"0x")
        .or_else(|| rest.strip_prefix(b"0X"))?;
    let (mant, exp) = match rest.iter().position(|&c| c == b'p' || c == b'P') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let (mut v, mut digits, mut frac, mut point) = (0f64, 0usize, 0i64, false);
    for &c in mant {
        match c {
            b'.' if !point => point = true,
            _ => {
                let d = char::from(c).to_digit(16)?;
                v = v * 16.0 + f64::from(d);
                digits += 1;
                if point {
                    frac += 4;
                }
            }
        }
    }
    if digits == 0 {
        return None;
    }
    let mut e: i64 = 0;
    if let Some(x) = exp {
        let (eneg, ed) = match x.first()? {
            b'-' => (true, &x[1..]),
            b'+' => (false, &x[1..]),
            _ => (false, x),
        };
        if ed.is_empty() || !ed.iter().all(u8::is_ascii_digit) {
            return None;
        }
        for &c in ed {
            e = (e * 10 + i64::from(c - b'0')).min(100_000);
        }
        if eneg {
            e = -e;
        }
    }
    let v = v * 2f64.powi((e - frac).clamp(-100_000, 100_000) as i32);
    Some(if neg { -v } else { v })
}

/// Parses a timeout in seconds as Redis 7.0 does: a float, times 1000 rounded up to whole
/// milliseconds (0.0001 waits 1 ms; -0.0001 rounds to 0, forever), `timeout is negative` below
/// zero (and for values a C cast makes negative: infinities, 1e30).
///
/// # Errors
/// `timeout is not a float or out of range`, `timeout is negative`.
pub fn parse_timeout(a: &[u8]) -> Result<Timeout, CmdError> {
    let secs = parse_f64(a)
        .or_else(|| parse_hex_float(a))
        .ok_or_else(|| CmdError::msg("ERR timeout is not a float or out of range"))?;
    let ms = (secs * 1000.0).ceil();
    // The x86 conversion of an out-of-range double to a long long gives i64::MIN.
    let ms = if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&ms) {
        ms as i64
    } else {
        i64::MIN
    };
    if ms < 0 {
        return Err(CmdError::msg("ERR timeout is negative"));
    }
    Ok(Timeout(ms as u64))
}

/// What a blocking command answers inside MULTI (where it may not block).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denied {
    /// The null array (BLPOP, BRPOP, BLMPOP, BZPOPMIN, ...).
    NullArray,
    /// The null bulk string (BLMOVE, BRPOPLPUSH).
    Null,
}

/// Where a blocked client's reply is delivered.
#[derive(Debug, Default)]
pub struct Slot {
    reply: Mutex<Option<Vec<u8>>>,
    notify: tokio::sync::Notify,
}

impl Slot {
    /// Hands the waiting connection its reply and wakes it.
    pub fn deliver(&self, reply: Vec<u8>) {
        *self.reply.lock() = Some(reply);
        self.notify.notify_one();
    }

    /// The reply, once delivered.
    pub fn take(&self) -> Option<Vec<u8>> {
        self.reply.lock().take()
    }

    /// Resolves when a reply may have been delivered.
    pub async fn notified(&self) {
        self.notify.notified().await;
    }
}

/// A connection waiting for a key (or for a SAVE's child): its slot and deadline.
#[derive(Debug, Clone)]
pub struct Waiting {
    /// Where the reply arrives.
    pub slot: Arc<Slot>,
    /// When it times out (`None`: never).
    pub deadline: Option<std::time::Instant>,
}

impl Waiting {
    /// A fresh slot, nothing delivered yet.
    pub fn new(deadline: Option<std::time::Instant>) -> Self {
        Self {
            slot: Arc::new(Slot::default()),
            deadline,
        }
    }
}

/// A connection's blocking state ([`ConnState::block`]).
#[derive(Debug, Default)]
pub struct ConnBlock {
    /// Set by [`block`]: the connection stops executing and waits (taken by the connection).
    pub waiting: Option<Waiting>,
    /// Inside EXEC: blocking commands answer at once.
    pub deny: bool,
    /// Inside a script (EVAL, FCALL): as `deny`, and the commands Redis refuses or orders
    /// differently when a script calls them know it (XREAD/XREADGROUP BLOCK, SORT of a set).
    pub script: bool,
    /// The command runs again for a waiting client (see [`serve`]).
    rerun: bool,
    /// ... and found nothing again: the client keeps waiting.
    stay: bool,
}

impl ConnBlock {
    /// Whether the command that just ran left the client waiting (it blocked, or ran again for
    /// a waiting client and found nothing): SLOWLOG logs it only once served.
    pub fn waits(&self) -> bool {
        self.waiting.is_some() || self.stay
    }
}

/// The connection a waiting client's command runs in again.
#[derive(Debug, Clone)]
struct Snapshot {
    proto: ProtocolVersion,
    db: u32,
    user: String,
    admin: bool,
    owner: Option<TenantId>,
    listener_tenant: Option<TenantId>,
}

/// A waiting client: its tenant, keys and command (what [`Effects::block`] registers).
///
/// [`Effects::block`]: super::effects::Effects::block
#[derive(Debug)]
pub struct Entry {
    info: Arc<ClientInfo>,
    slot: Arc<Slot>,
    tenant: TenantId,
    keys: Vec<Vec<u8>>,
    kind: &'static str,
    args: Vec<Vec<u8>>,
    conn: Snapshot,
    /// CLIENT REPLY OFF / SKIP was in force: the reply is dropped.
    quiet: bool,
}

impl Entry {
    /// The tenant whose keys it waits for.
    pub fn tenant(&self) -> TenantId {
        self.tenant
    }

    /// The keys it waits for (each once).
    pub fn keys(&self) -> &[Vec<u8>] {
        &self.keys
    }
}

#[derive(Debug, Default)]
struct Registry {
    clients: HashMap<u64, Entry>,
    /// (tenant, key) -> waiting client ids, first come first.
    keys: HashMap<(u32, Vec<u8>), VecDeque<u64>>,
    /// Keys written since the last [`serve`] that clients wait for, in order.
    ready: Vec<(u32, Vec<u8>)>,
}

impl Registry {
    /// Forgets client `id` in the FIFO of every key it waits for.
    fn unlink(&mut self, id: u64, t: TenantId, keys: &[Vec<u8>]) {
        for k in keys {
            let slot = (t.0, k.clone());
            if let Some(q) = self.keys.get_mut(&slot) {
                q.retain(|c| *c != id);
                if q.is_empty() {
                    self.keys.remove(&slot);
                }
            }
        }
    }

    fn remove(&mut self, id: u64) -> Option<Entry> {
        let e = self.clients.remove(&id)?;
        self.unlink(id, e.tenant, &e.keys);
        Some(e)
    }
}

/// The server's blocked clients (in [`Shared`]).
#[derive(Debug, Default)]
pub struct Blocking {
    reg: Mutex<Registry>,
    /// Clients waiting (read without the lock on every write).
    waiting: AtomicUsize,
    /// Ready keys wait to be served.
    ready: AtomicBool,
}

impl Blocking {
    /// Whether any client waits (cheap: one atomic load).
    #[inline]
    pub fn any_waiting(&self) -> bool {
        self.waiting.load(Ordering::Relaxed) != 0
    }

    /// Whether keys wait to be served (cheap).
    #[inline]
    pub fn has_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }

    /// A write changed `key` of tenant `t`: clients waiting for it are served after the
    /// current command (if it then holds the type they want).
    pub fn signal_ready(&self, t: TenantId, key: &[u8]) {
        if !self.any_waiting() {
            return;
        }
        let mut r = self.reg.lock();
        let slot = (t.0, key.to_vec());
        if r.keys.contains_key(&slot) && !r.ready.contains(&slot) {
            r.ready.push(slot);
            self.ready.store(true, Ordering::Relaxed);
        }
    }

    /// FLUSHDB / FLUSHALL emptied tenant `t`: every key its clients wait for is served after
    /// the command (a waiting XREADGROUP then answers NOGROUP; the others keep waiting).
    pub fn signal_tenant(&self, t: TenantId) {
        if !self.any_waiting() {
            return;
        }
        let mut r = self.reg.lock();
        let keys: Vec<(u32, Vec<u8>)> = r.keys.keys().filter(|k| k.0 == t.0).cloned().collect();
        for k in keys {
            if !r.ready.contains(&k) {
                r.ready.push(k);
            }
        }
        if !r.ready.is_empty() {
            self.ready.store(true, Ordering::Relaxed);
        }
    }

    /// Whether client `id` is blocked (CLIENT LIST's `b` flag).
    pub fn is_blocked(&self, id: u64) -> bool {
        self.any_waiting() && self.reg.lock().clients.contains_key(&id)
    }

    /// Blocked clients that `scope` may see (INFO's `blocked_clients`).
    pub fn count_visible(&self, scope: Option<Option<TenantId>>) -> usize {
        if !self.any_waiting() {
            return 0;
        }
        self.reg
            .lock()
            .clients
            .values()
            .filter(|e| e.info.visible_to(scope))
            .count()
    }

    /// `entry`'s client waits for its keys (exec/effects: `Effects::block`).
    pub fn add(&self, entry: Entry) {
        let id = entry.info.id;
        let mut r = self.reg.lock();
        for k in &entry.keys {
            r.keys
                .entry((entry.tenant.0, k.clone()))
                .or_default()
                .push_back(id);
        }
        r.clients.insert(id, entry);
        self.waiting.store(r.clients.len(), Ordering::Relaxed);
    }

    fn take(&self, id: u64) -> Option<Entry> {
        let mut r = self.reg.lock();
        let e = r.remove(id)?;
        self.waiting.store(r.clients.len(), Ordering::Relaxed);
        Some(e)
    }

    /// Client `id`'s deadline passed: it leaves the registry and gets the timeout reply (a
    /// null array). `None` when it was served meanwhile: its reply is in its slot.
    pub fn time_out(&self, shared: &Shared, id: u64) -> Option<Vec<u8>> {
        // Under the engine lock: never while [`serve`] runs its command.
        let _eng = shared.engine();
        let e = self.take(id)?;
        count_call(shared, &e, false);
        Some(timeout_reply(&e))
    }

    /// Client `id` disconnected (or was killed) while waiting.
    pub fn cancel(&self, shared: &Shared, id: u64) {
        let _eng = shared.engine();
        self.take(id);
    }
}

/// Counts the call of a blocking command answered without running it again (timed out, or
/// CLIENT UNBLOCK): the dispatcher did not count it when it blocked.
fn count_call(shared: &Shared, e: &Entry, failed: bool) {
    if let Some(spec) = e.args.first().and_then(|name| super::lookup(name)) {
        let stat = shared.stats().commands.of(spec);
        stat.record(0);
        if failed {
            stat.failed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn timeout_reply(e: &Entry) -> Vec<u8> {
    let mut out = Vec::new();
    if !e.quiet {
        let mut w = ReplyWriter::new(&mut out, e.conn.proto);
        // WAIT (exec/wait.rs) answers the replicas that acknowledged: none.
        if e.kind == super::wait::KIND {
            w.integer(0);
        } else {
            w.null_array();
        }
    }
    out
}

/// Nothing to pop: blocks the client on `keys` (of the routed tenant) until one holds a `kind`
/// value or `timeout` passes; inside EXEC answers `denied` at once; when the command runs again
/// for a waiting client, keeps it waiting. Writes no reply otherwise.
///
/// # Errors
/// [`CmdError::NoTenant`] (routing invariant).
pub fn block(
    ctx: &mut Ctx<'_>,
    a: Args<'_, '_>,
    keys: &[&[u8]],
    kind: &'static str,
    timeout: Timeout,
    denied: Denied,
) -> CmdResult {
    if ctx.conn.block.rerun {
        ctx.conn.block.stay = true;
        return Ok(());
    }
    if ctx.conn.block.deny {
        match denied {
            Denied::NullArray => ctx.w.null_array(),
            Denied::Null => ctx.w.null(),
        }
        return Ok(());
    }
    let t = ctx.t()?;
    let slot = Arc::new(Slot::default());
    // A timeout of more than ten years is forever (and past what the timer can express).
    let deadline = (timeout.0 > 0 && timeout.0 <= 10 * 365 * 86_400_000)
        .then(|| std::time::Instant::now() + std::time::Duration::from_millis(timeout.0));
    let mut uniq: Vec<Vec<u8>> = Vec::with_capacity(keys.len());
    for k in keys {
        if !uniq.iter().any(|u| u[..] == k[..]) {
            uniq.push(k.to_vec());
        }
    }
    let entry = Entry {
        info: ctx.conn.info.clone(),
        slot: slot.clone(),
        tenant: t,
        keys: uniq,
        kind,
        args: a.iter().map(|x| x.to_vec()).collect(),
        conn: Snapshot {
            proto: ctx.conn.proto,
            db: ctx.conn.db,
            user: ctx.conn.user.clone(),
            admin: ctx.conn.admin,
            owner: ctx.conn.owner,
            listener_tenant: ctx.conn.listener_tenant,
        },
        quiet: ctx.conn.reply_off || ctx.conn.skip_current,
    };
    ctx.fx.block(entry);
    ctx.conn.block.waiting = Some(Waiting { slot, deadline });
    Ok(())
}

/// CLIENT UNBLOCK: unblocks client `id` if it waits and `scope` may see it, with the timeout
/// reply or (`error`) Redis's UNBLOCKED error. True when it did.
pub fn unblock(shared: &Shared, scope: Option<Option<TenantId>>, id: u64, error: bool) -> bool {
    let b = shared.blocking();
    let visible = b
        .reg
        .lock()
        .clients
        .get(&id)
        .is_some_and(|e| e.info.visible_to(scope));
    if !visible {
        return false;
    }
    let Some(e) = b.take(id) else {
        return false;
    };
    count_call(shared, &e, error);
    let reply = if error {
        let mut out = Vec::new();
        if !e.quiet {
            ReplyWriter::new(&mut out, e.conn.proto)
                .error("UNBLOCKED client unblocked via CLIENT UNBLOCK");
        }
        out
    } else {
        timeout_reply(&e)
    };
    e.slot.deliver(reply);
    true
}

/// Serves the clients waiting for the keys written since the last call (the dispatcher calls
/// it after each command, under the engine lock).
pub fn serve(eng: &mut Engine, shared: &Shared) {
    let b = shared.blocking();
    if !b.has_ready() {
        return;
    }
    loop {
        let ready = {
            let mut r = b.reg.lock();
            b.ready.store(false, Ordering::Relaxed);
            std::mem::take(&mut r.ready)
        };
        if ready.is_empty() {
            break;
        }
        for (t, key) in ready {
            serve_key(eng, shared, TenantId(t), &key);
        }
    }
}

/// Serves the waiters of one key, first come first, while it holds the type they want.
fn serve_key(eng: &mut Engine, shared: &Shared, t: TenantId, key: &[u8]) {
    let b = shared.blocking();
    let ids: Vec<u64> = b
        .reg
        .lock()
        .keys
        .get(&(t.0, key.to_vec()))
        .map(|q| q.iter().copied().collect())
        .unwrap_or_default();
    for id in ids {
        let kind = eng.key_type(t, key);
        // The waiter leaves the client table while its command runs (its place in the key
        // FIFOs stays): nothing else can reach it, the engine lock is held.
        let Some(entry) = b.reg.lock().clients.remove(&id) else {
            continue;
        };
        if entry.kind != ANY_TYPE && kind != Some(entry.kind) {
            b.reg.lock().clients.insert(id, entry);
            continue;
        }
        let (out, stay) = rerun(eng, shared, &entry);
        let mut r = b.reg.lock();
        if stay {
            r.clients.insert(id, entry);
            continue;
        }
        r.unlink(id, entry.tenant, &entry.keys);
        b.waiting.store(r.clients.len(), Ordering::Relaxed);
        drop(r);
        entry
            .slot
            .deliver(if entry.quiet { Vec::new() } else { out });
    }
}

/// Runs a waiting client's command again in a connection like its own: (reply, still waiting).
fn rerun(eng: &mut Engine, shared: &Shared, e: &Entry) -> (Vec<u8>, bool) {
    let mut conn = ConnState {
        proto: e.conn.proto,
        tenant: Some(e.tenant),
        db: e.conn.db,
        user: e.conn.user.clone(),
        admin: e.conn.admin,
        owner: e.conn.owner,
        block: ConnBlock {
            rerun: true,
            ..ConnBlock::default()
        },
        ..ConnState::new(e.info.clone(), e.conn.listener_tenant)
    };
    let mut out = Vec::new();
    let args: Vec<Cow<'_, [u8]>> = e.args.iter().map(|a| Cow::Borrowed(&a[..])).collect();
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut ctx = Ctx {
            eng,
            fx: shared,
            server: Some(shared),
            conn: &mut conn,
            w: ReplyWriter::new(&mut out, e.conn.proto),
            tenant: None,
        };
        let tracking = ctx.shared().tracking().active();
        let prev = ctx.shared().tracking().current();
        if tracking {
            ctx.shared().tracking().set_current(ctx.conn.info.id);
        }
        super::dispatch(&mut ctx, &args);
        // Invalidations for the served client follow its reply (Redis's BLMOVE test).
        if tracking {
            super::tracking::after_rerun(&mut ctx, prev);
        }
    }));
    if ran.is_err() {
        shared
            .stats()
            .internal_errors
            .fetch_add(1, Ordering::Relaxed);
        out.clear();
        ReplyWriter::new(&mut out, e.conn.proto).error(&format!(
            "ERR internal error while executing '{}'",
            String::from_utf8_lossy(&e.args[0]).to_ascii_lowercase()
        ));
        return (out, false);
    }
    let stay = conn.block.stay;
    if stay {
        out.clear();
    }
    (out, stay)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_round_as_redis_does() {
        assert_eq!(parse_timeout(b"0"), Ok(Timeout(0)));
        assert_eq!(parse_timeout(b"1"), Ok(Timeout(1000)));
        assert_eq!(parse_timeout(b"0.001"), Ok(Timeout(1)));
        assert_eq!(parse_timeout(b"0.0001"), Ok(Timeout(1)));
        assert_eq!(parse_timeout(b"-0.0001"), Ok(Timeout(0)));
        assert_eq!(parse_timeout(b"1.5"), Ok(Timeout(1500)));
        // strtold's hexadecimal floats, as Redis 7.0 reads them.
        assert_eq!(parse_timeout(b"0x10"), Ok(Timeout(16_000)));
        assert_eq!(parse_timeout(b"0X1.8"), Ok(Timeout(1500)));
        assert_eq!(parse_timeout(b"0x1p-2"), Ok(Timeout(250)));
        assert_eq!(parse_timeout(b"+0x.8P1"), Ok(Timeout(1000)));
        assert_eq!(
            parse_timeout(b"-0x1"),
            Err(CmdError::msg("ERR timeout is negative"))
        );
        for neg in [&b"-1"[..], b"inf", b"-inf", b"1e30"] {
            assert_eq!(
                parse_timeout(neg),
                Err(CmdError::msg("ERR timeout is negative")),
                "{}",
                String::from_utf8_lossy(neg)
            );
        }
        for bad in [
            &b"abc"[..],
            b"",
            b" 1",
            b"nan",
            b"0x10x",
            b"0x",
            b"0x1p",
            b"0x.p1",
        ] {
            assert_eq!(
                parse_timeout(bad),
                Err(CmdError::msg("ERR timeout is not a float or out of range"))
            );
        }
    }
}
