//! Busy scripts, as Redis: a script running longer than `busy-reply-threshold` (alias
//! `lua-time-limit`, ms, 0 = never) makes the server answer other clients `BUSY`, and
//! `SCRIPT KILL` / `FUNCTION KILL` stop it (unless it already wrote: `UNKILLABLE`),
//! `SHUTDOWN NOSAVE` stops it and the server.
//!
//! ```text
//!  script's client: holds the engine lock ── Lua hook every HOOK_EVERY instructions:
//!                                             past the threshold → `timed_out`; `kill` → error
//!  other clients:   lock_engine() tries the lock in short waits; while a timed-out script
//!                   holds it they are answered here, without the lock (answer_busy)
//! ```
//!
//! Known limit: the engine lock is one for all tenants today, so every tenant's clients get
//! `BUSY` (Redis has one tenant); with per-tenant shards only the script's tenant would.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use locus_protocol::ReplyWriter;

use crate::exec::{Args, is};
use crate::server::{ConnState, Shared};

/// Lua instructions between two checks of the clock and of a kill (Redis: 100,000).
pub const HOOK_EVERY: u32 = 100_000;

static BASE: LazyLock<Instant> = LazyLock::new(Instant::now);

fn now_ms() -> u64 {
    BASE.elapsed().as_millis() as u64
}

/// The running script's state, read without the engine lock.
#[derive(Debug, Default)]
pub struct Busy {
    running: AtomicBool,
    function: AtomicBool,
    /// The running script's tenant (`u32::MAX`: none), so that only its own clients kill it.
    tenant: std::sync::atomic::AtomicU32,
    started_ms: AtomicU64,
    timed_out: AtomicBool,
    kill: AtomicBool,
    wrote: AtomicBool,
    /// A FUNCTION LOAD runs its library's code (limited to LOAD_TIMEOUT_MS).
    loading: AtomicBool,
    /// Hand-offs of the runtime worker tried during this run (see [`hand_off_worker`]).
    handoffs: std::sync::atomic::AtomicU32,
    /// The VM's hook fires at every instruction (after a failed check, until the run ends).
    hook_armed: AtomicBool,
    /// The function FCALL runs, for FUNCTION STATS while it is busy.
    running_function: parking_lot::Mutex<RunningFunction>,
}

/// What FUNCTION STATS tells of a running function (`running_script`) and of its tenant's
/// libraries. The buffers are kept between runs, so an FCALL allocates nothing here.
#[derive(Debug, Default)]
struct RunningFunction {
    tenant: Option<locus_engine::TenantId>,
    name: String,
    /// The FCALL command's arguments, end to end; `ends` holds where each one ends.
    command: Vec<u8>,
    ends: Vec<usize>,
    libraries: usize,
    functions: usize,
}

/// Most hand-off attempts per run.
const MAX_HANDOFFS: u32 = 3;

/// A script past the threshold runs on a tokio worker thread and would starve the runtime: no
/// other worker polls the sockets while this one runs Lua, so no client could even be read
/// and answered BUSY. `block_in_place` hands this worker's scheduler to another thread; the
/// short sleep lets that thread take it before this one would take it back, after which this
/// thread finishes the script as a plain blocking thread. Only on a multi-thread runtime.
fn hand_off_worker() {
    use tokio::runtime::{Handle, RuntimeFlavor};
    if Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread) {
        tokio::task::block_in_place(|| std::thread::sleep(Duration::from_millis(1)));
    }
}

/// Longest a library's code may run at FUNCTION LOAD (Redis: 500 ms).
pub const LOAD_TIMEOUT_MS: u64 = 500;
/// The error of a library whose code runs too long.
pub const LOAD_TIMEOUT: &str = "FUNCTION LOAD timeout";

/// Why a script stopped early.
pub const KILLED_EVAL: &str = "ERR Script killed by user with SCRIPT KILL...";
/// Why a function stopped early.
pub const KILLED_FUNCTION: &str = "ERR Script killed by user with FUNCTION KILL...";

const BUSY_EVAL: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";

impl Busy {
    /// A script of `tenant` starts (under the engine lock).
    pub fn start(&self, function: bool, tenant: Option<locus_engine::TenantId>) {
        self.function.store(function, Ordering::Relaxed);
        self.tenant
            .store(tenant.map_or(u32::MAX, |t| t.0), Ordering::Relaxed);
        self.started_ms.store(now_ms(), Ordering::Relaxed);
        self.timed_out.store(false, Ordering::Relaxed);
        self.kill.store(false, Ordering::Relaxed);
        self.wrote.store(false, Ordering::Relaxed);
        self.handoffs.store(0, Ordering::Relaxed);
        self.running.store(true, Ordering::Release);
    }

    /// The script ended (read [`Busy::killed`] first).
    pub fn end(&self) {
        self.running.store(false, Ordering::Release);
        self.timed_out.store(false, Ordering::Release);
        self.kill.store(false, Ordering::Release);
    }

    /// FCALL starts `name` for `tenant`, called with `command`; the tenant has `libraries`
    /// libraries of `functions` functions.
    pub fn set_running_function(
        &self,
        tenant: locus_engine::TenantId,
        name: &str,
        command: Args<'_, '_>,
        libraries: usize,
        functions: usize,
    ) {
        let mut r = self.running_function.lock();
        r.tenant = Some(tenant);
        r.name.clear();
        r.name.push_str(name);
        r.command.clear();
        r.ends.clear();
        for arg in command.iter() {
            r.command.extend_from_slice(arg);
            let end = r.command.len();
            r.ends.push(end);
        }
        r.libraries = libraries;
        r.functions = functions;
    }

    /// The FCALL ended.
    pub fn clear_running_function(&self) {
        self.running_function.lock().tenant = None;
    }

    /// Sets whether the per-instruction hook is on; the previous value.
    pub fn swap_hook_armed(&self, on: bool) -> bool {
        self.hook_armed.swap(on, Ordering::AcqRel)
    }

    /// The script ran a write command (it can no longer be killed).
    pub fn wrote(&self) {
        self.wrote.store(true, Ordering::Relaxed);
    }

    /// A FUNCTION LOAD starts running a library's code.
    pub fn start_load(&self) {
        self.started_ms.store(now_ms(), Ordering::Relaxed);
        self.loading.store(true, Ordering::Release);
    }

    /// The library's code ended.
    pub fn end_load(&self) {
        self.loading.store(false, Ordering::Release);
    }

    /// Called by the Lua hook: the kill message when the script must stop.
    pub fn check(&self) -> Option<&'static str> {
        if self.loading.load(Ordering::Acquire) {
            let ran = now_ms().saturating_sub(self.started_ms.load(Ordering::Relaxed));
            return (ran > LOAD_TIMEOUT_MS).then_some(LOAD_TIMEOUT);
        }
        if !self.running.load(Ordering::Acquire) {
            return None;
        }
        let limit = crate::exec::types::limits::BUSY_REPLY_THRESHOLD.get();
        if limit > 0
            && now_ms().saturating_sub(self.started_ms.load(Ordering::Relaxed)) >= limit as u64
        {
            self.timed_out.store(true, Ordering::Release);
            if self.handoffs.fetch_add(1, Ordering::Relaxed) < MAX_HANDOFFS {
                hand_off_worker();
            }
        }
        self.kill.load(Ordering::Acquire).then(|| {
            if self.function.load(Ordering::Relaxed) {
                KILLED_FUNCTION
            } else {
                KILLED_EVAL
            }
        })
    }

    /// A script runs past the threshold: other clients get BUSY.
    pub fn is_busy(&self) -> bool {
        self.running.load(Ordering::Acquire) && self.timed_out.load(Ordering::Acquire)
    }

    /// Whether the stop of the current run came from a kill.
    pub fn killed(&self) -> bool {
        self.kill.load(Ordering::Acquire)
    }
}

/// The engine lock for a batch, or `None` while a timed-out script holds it (the caller then
/// answers the batch with [`answer_busy`]).
pub fn lock_engine(shared: &Shared) -> Option<crate::server::EngineGuard<'_>> {
    shared.engine_unless(Duration::from_millis(2), || {
        shared.scripts().busy().is_busy()
    })
}

/// Arguments a transaction may hold when a command is queued while a script is busy (no engine
/// to charge it to): past it the command is refused BUSY and the EXEC aborts.
const BUSY_QUEUE_BYTES: usize = 64 << 10;

/// Answers one command while a timed-out script runs: SCRIPT KILL, FUNCTION KILL and SHUTDOWN
/// NOSAVE act; Redis's other allow-busy commands that need no engine (HELLO, AUTH, QUIT, RESET,
/// MULTI, DISCARD, WATCH, UNWATCH, FUNCTION STATS) are answered, or queued inside MULTI as Redis
/// queues them; everything else gets `BUSY`.
pub fn answer_busy(
    shared: &Shared,
    conn: &mut ConnState,
    cmd: Args<'_, '_>,
    w: &mut ReplyWriter<'_>,
) {
    let busy = shared.scripts().busy();
    let function = busy.function.load(Ordering::Relaxed);
    let busy_err = if function { BUSY_FUNCTION } else { BUSY_EVAL };
    let sub = |name: &str| cmd.len() == 2 && is(&cmd[1], name);
    let kill_eval = is(&cmd[0], "script") && sub("kill");
    let kill_function = is(&cmd[0], "function") && sub("kill");
    // Inside MULTI Redis queues its allow-busy commands as any other (all but the transaction's
    // own, QUIT and RESET): a queued SCRIPT KILL kills nothing, and the EXEC is refused while the
    // script runs. Queued without the engine, so uncharged: at most BUSY_QUEUE_BYTES of them
    // (counted in `multi_busy_bytes`, O(1) a command).
    if conn.multi.is_some() {
        let queued_name = ["script", "function", "hello", "auth", "unwatch"]
            .into_iter()
            .find(|name| is(&cmd[0], name))
            .filter(|name| {
                !matches!(*name, "script" | "function")
                    || kill_eval
                    || kill_function
                    || (*name == "function" && sub("stats"))
            });
        if let Some(name) = queued_name {
            match precheck(shared, conn, name, cmd) {
                Err(e) => w.error(&e.wire()),
                Ok(_) => {
                    let adds: usize = cmd.iter().map(|a| a.len()).sum();
                    if conn.multi_busy_bytes + adds > BUSY_QUEUE_BYTES {
                        conn.multi_error = true;
                        w.error(busy_err);
                    } else {
                        conn.multi_busy_bytes += adds;
                        let queue = conn.multi.as_mut().expect("inside MULTI");
                        queue.push(cmd.iter().map(|a| a.to_vec()).collect());
                        w.simple("QUEUED");
                    }
                }
            }
            return;
        }
    }
    // Only the script's own tenant (or the admin) may kill it: another tenant's SCRIPT KILL or
    // FUNCTION KILL is answered BUSY like its other commands, and learns nothing of the script.
    let own = match conn.scope() {
        None => true,
        Some(t) => t.is_some_and(|t| t.0 == busy.tenant.load(Ordering::Relaxed)),
    };
    if (kill_eval || kill_function) && !own {
        w.error(busy_err);
        return;
    }
    if kill_eval || kill_function {
        if busy.wrote.load(Ordering::Relaxed) {
            w.error(
                "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.",
            );
        } else if kill_eval && function {
            w.error(BUSY_FUNCTION);
        } else if kill_function && !function {
            w.error(BUSY_EVAL);
        } else {
            busy.kill.store(true, Ordering::Release);
            w.ok();
        }
        return;
    }
    // What a new or reconnecting client needs, which Redis answers while busy (its allow-busy
    // commands): without HELLO a client that opens with `HELLO 3` (redis-py 8, node-redis with
    // RESP3) could not connect at all, not even to send SCRIPT KILL. None needs the engine.
    let answered = if is(&cmd[0], "hello") {
        Some(crate::exec::connection::hello_unlocked(
            shared, conn, w, cmd,
        ))
    } else if is(&cmd[0], "auth") {
        Some(crate::exec::connection::auth_unlocked(shared, conn, w, cmd))
    } else if is(&cmd[0], "quit") {
        w.ok();
        conn.close = true;
        Some(Ok(()))
    } else {
        None
    };
    if let Some(result) = answered {
        if let Err(e) = result {
            w.error(&e.wire());
        }
        return;
    }
    // EXEC is refused, as every command that is not allow-busy, and a refused EXEC discards the
    // transaction and the watches (Redis's rejectCommand: EXECABORT, in MULTI or not).
    if is(&cmd[0], "exec") {
        conn.multi = None;
        conn.multi_error = false;
        crate::exec::transaction::unwatch_unlocked(shared, conn);
        w.error(&format!(
            "EXECABORT Transaction discarded because of: {busy_err}"
        ));
        return;
    }
    // RESET, MULTI, DISCARD, WATCH and UNWATCH, allow-busy in Redis too, need no engine either:
    // what they leave for it is done when the connection next holds it
    // (transaction::settle_after_busy). All but UNWATCH run inside MULTI (WATCH and MULTI to
    // refuse themselves); UNWATCH was queued there (above).
    let unlocked = ["reset", "multi", "discard", "watch", "unwatch"]
        .into_iter()
        .find(|name| is(&cmd[0], name));
    if let Some(name) = unlocked {
        use crate::exec::transaction;
        let r = precheck(shared, conn, name, cmd).and_then(|t| match name {
            "reset" => {
                crate::exec::connection::reset_unlocked(shared, conn, w);
                Ok(())
            }
            "multi" => transaction::multi_unlocked(conn),
            "discard" => transaction::discard_unlocked(shared, conn),
            "watch" => transaction::watch_unlocked(shared, conn, t, cmd),
            _ => {
                transaction::unwatch_unlocked(shared, conn);
                Ok(())
            }
        });
        match r {
            Ok(()) if name != "reset" => w.ok(),
            Ok(()) => {}
            Err(e) => w.error(&e.wire()),
        }
        return;
    }
    // FUNCTION STATS may run while a function is busy (Redis flags it allow-busy), to decide
    // whether to kill it; for an EVAL Redis answers BUSY. Only the running function's own tenant
    // sees it: the others are answered BUSY as for every command.
    if is(&cmd[0], "function") && sub("stats") && function {
        let r = busy.running_function.lock();
        if r.tenant.is_some() && r.tenant == conn.tenant {
            let ran = now_ms().saturating_sub(busy.started_ms.load(Ordering::Relaxed));
            w.map(2);
            w.bulk(b"running_script");
            w.map(3);
            w.bulk(b"name");
            w.bulk(r.name.as_bytes());
            w.bulk(b"command");
            w.array(r.ends.len());
            let mut start = 0;
            for &end in &r.ends {
                w.bulk(&r.command[start..end]);
                start = end;
            }
            w.bulk(b"duration_ms");
            w.integer(ran as i64);
            w.bulk(b"engines");
            w.map(1);
            w.bulk(b"LUA");
            w.map(2);
            w.bulk(b"libraries_count");
            w.integer(r.libraries as i64);
            w.bulk(b"functions_count");
            w.integer(r.functions as i64);
            return;
        }
    }
    // A refused command inside MULTI aborts the transaction (MULTI and DISCARD ran above).
    if conn.multi.is_some() {
        conn.multi_error = true;
    }
    if is(&cmd[0], "shutdown") && cmd.len() == 2 && is(&cmd[1], "nosave") && conn.admin {
        busy.kill.store(true, Ordering::Release);
        shared.request_shutdown();
        conn.close = true;
        return;
    }
    w.error(busy_err);
}

/// What the dispatcher checks before a command runs (authentication, arity, the tenant it routes
/// to, subscribed mode), for the commands answered here: the routed tenant. A refusal inside
/// MULTI aborts the transaction, as the dispatcher's does.
fn precheck(
    shared: &Shared,
    conn: &mut ConnState,
    name: &str,
    cmd: Args<'_, '_>,
) -> Result<Option<locus_engine::TenantId>, crate::exec::CmdError> {
    use crate::exec::CmdError;
    let spec = crate::exec::lookup(name.as_bytes()).expect("a command of the table");
    let argc = cmd.len() as i32;
    let r = if !conn.authenticated && !spec.no_auth {
        Err(CmdError::msg("NOAUTH Authentication required."))
    } else if (spec.arity > 0 && argc != spec.arity) || (spec.arity < 0 && argc < -spec.arity) {
        Err(CmdError::WrongArity(spec.name.to_string()))
    } else {
        crate::exec::route_of(shared, conn, spec, cmd).and_then(|t| {
            crate::exec::privilege::check_route_of(shared, conn, t)?;
            if conn.proto == locus_protocol::ProtocolVersion::Resp2
                && conn.subscriptions() > 0
                && !crate::exec::pubsub::allowed_when_subscribed(spec.name)
            {
                return Err(CmdError::msg(format!(
                    "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                    spec.name
                )));
            }
            Ok(t)
        })
    };
    if r.is_err() && conn.multi.is_some() {
        conn.multi_error = true;
    }
    r
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn the_hook_marks_a_long_script_and_kills_it() {
        let busy = Arc::new(Busy::default());
        let vm = crate::exec::scripting::vm::TenantVm::new(busy.clone()).unwrap();
        crate::exec::types::limits::set(&crate::exec::types::limits::BUSY_REPLY_THRESHOLD, 1);
        busy.start(false, None);
        vm.lua
            .load("local i = 0 while i < 3e7 do i = i + 1 end")
            .exec()
            .unwrap();
        assert!(
            busy.is_busy(),
            "the hook did not run or did not see the threshold"
        );
        busy.kill.store(true, Ordering::Release);
        let e = vm.lua.load("while true do end").exec().unwrap_err();
        assert!(e.to_string().contains("killed by user"), "{e}");
        busy.end();
        crate::exec::types::limits::set(&crate::exec::types::limits::BUSY_REPLY_THRESHOLD, 5000);
    }
}
