//! Listeners, connections and the background tick.
//!
//! ```text
//!  tokio runtime (server.threads workers)
//!  ├─ accept task per listener ──► connection task per client
//!  │      connection: read ─► parse up to MAX_BATCH complete commands into one reused argument
//!  │                  vector ─► lock engine ONCE ─► execute all ─► unlock ─► one write of all
//!  │                  replies (pipelining: redis-benchmark -P 16 = one read + one write per 16)
//!  ├─ tick task (server.hz per second): coarse clock + engine.tick() + engine.run_active_expire(..)
//!  └─ shutdown: SIGINT / SIGTERM / SHUTDOWN / ServerHandle::shutdown ─► stop flag, watch channel
//!     (accept and tick tasks) and a wake of every connection waiting for input ─► all tasks end
//! ```
//!
//! The engine sits behind one `parking_lot::Mutex`; it is never held across an `.await`.
//!
//! Here: the shared state ([`Shared`], [`ServerStats`], [`ClientInfo`], [`ConnState`]) and the
//! tick; `conn` holds the accept loop and the connection path.
//!
//! Per-request cost: the hot path allocates nothing per command (the argument and slot vectors
//! live as long as the connection), looks commands up in a small open-addressing table, reads the
//! monotonic clock twice (INFO commandstats' time per command; a client's last-activity stamp
//! comes from the tick's coarse clock), and waits for input with a `biased` select over the
//! socket, a [`StopSignal`] (kill, shutdown or pub/sub messages: three atomic loads per poll) and
//! the idle timeout. BENCHMARKS.md ("Where the time goes") has the callgrind counts (measured
//! before the commandstats timing).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use locus_common::SharedClock;
use locus_engine::{Engine, TenantId};
use locus_protocol::{ProtocolError, ProtocolVersion, ReplyWriter, parse_into};
use parking_lot::{Mutex, RwLock};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::config::{ServerConfig, TenancyMode};
use crate::exec::{self, Ctx};
use crate::tenancy::Tenancy;

mod conn;
mod effects;
mod lock;
mod memcache;
mod pubsub;
pub mod querybuf;
mod tracking;

pub use conn::{MAX_BATCH, OUTPUT_FLUSH, accept_loop};
pub use lock::{
    EngineGuard, EngineLock, LockSnapshot, LockStats, ShutdownIo, assert_unlocked,
    forget_held_in_child, io_under_lock,
};
pub use memcache::accept_loop as memcache_accept_loop;
pub use pubsub::{Kind as SubKind, PubSub};
pub use tracking::{
    DEFAULT_MAX_KEYS as TRACKING_DEFAULT_MAX_KEYS, Options as TrackingOptions, Tracking,
};

/// Most keys remembered as `raw`-encoded (see [`Shared::note_encoding`]).
pub const MAX_RAW_KEYS: usize = 100_000;

/// WATCH registry: (tenant id, key) -> ids of the clients watching it.
pub type WatchMap = std::collections::HashMap<(u32, Vec<u8>), Vec<u64>>;

/// Server-wide counters (INFO stats / clients).
#[derive(Debug, Default)]
pub struct ServerStats {
    /// Connections accepted since start.
    pub total_connections: AtomicU64,
    /// Connections refused (maxclients).
    pub rejected_connections: AtomicU64,
    /// Currently connected clients.
    pub connected: AtomicU64,
    /// Clients closed for passing their output buffer limit.
    pub output_limit_disconnections: AtomicU64,
    /// Handlers that panicked (each answered its client with an error and closed it).
    pub internal_errors: AtomicU64,
    /// Commands executed.
    pub total_commands: AtomicU64,
    /// Bytes read from clients.
    pub net_input_bytes: AtomicU64,
    /// Bytes written to clients.
    pub net_output_bytes: AtomicU64,
    /// INFO commandstats: one entry per command of the table, by its position.
    pub commands: CommandStats,
}

/// Per-command counters of INFO commandstats (Redis's `calls`, `usec`, `rejected_calls`,
/// `failed_calls`).
#[derive(Debug, Default)]
pub struct CommandStat {
    /// Executions.
    pub calls: AtomicU64,
    /// Nanoseconds spent executing (INFO shows microseconds).
    pub nanos: AtomicU64,
    /// Refused before executing (arity, authentication, permissions, subscribed mode, ...).
    pub rejected: AtomicU64,
    /// Executed and answered with an error.
    pub failed: AtomicU64,
    /// Executions by duration: bucket `i < LATENCY_BUCKETS - 1` counts those of at most `2^i`
    /// µs (and more than the bucket before), the last one the rest (the metrics histogram).
    pub durations: [AtomicU64; LATENCY_BUCKETS],
}

/// Buckets of [`CommandStat::durations`]: 1 µs, 2 µs, 4 µs, ... 2^20 µs (about 1 s), and above.
pub const LATENCY_BUCKETS: usize = 22;

impl CommandStat {
    /// Counts one execution that took `nanos`: three relaxed adds on counters of its own command.
    #[inline]
    pub fn record(&self, nanos: u64) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.nanos.fetch_add(nanos, Ordering::Relaxed);
        self.durations[latency_bucket(nanos)].fetch_add(1, Ordering::Relaxed);
    }
}

/// The [`CommandStat::durations`] bucket of an execution of `nanos` (microseconds rounded up).
#[inline]
pub fn latency_bucket(nanos: u64) -> usize {
    let us = nanos.div_ceil(1000);
    if us <= 1 {
        0
    } else {
        ((64 - (us - 1).leading_zeros()) as usize).min(LATENCY_BUCKETS - 1)
    }
}

/// [`CommandStat`]s of every command in [`exec::table::COMMANDS`].
#[derive(Debug)]
pub struct CommandStats(Vec<CommandStat>);

impl Default for CommandStats {
    fn default() -> Self {
        Self(
            exec::table::COMMANDS
                .iter()
                .map(|_| CommandStat::default())
                .collect(),
        )
    }
}

impl CommandStats {
    /// The counters of `spec` (an entry of the command table).
    pub fn of(&self, spec: &exec::CommandSpec) -> &CommandStat {
        // The entry's position from its address in the table (no search on the hot path).
        let base = exec::table::COMMANDS.as_ptr() as usize;
        let i = (spec as *const exec::CommandSpec as usize).wrapping_sub(base)
            / std::mem::size_of::<exec::CommandSpec>();
        &self.0[i.min(self.0.len() - 1)]
    }

    /// CONFIG RESETSTAT: every counter back to 0.
    pub fn reset(&self) {
        for s in &self.0 {
            for c in [&s.calls, &s.nanos, &s.rejected, &s.failed]
                .into_iter()
                .chain(&s.durations)
            {
                c.store(0, Ordering::Relaxed);
            }
        }
    }

    /// `(name, counters)` of every command called or rejected at least once, in table order.
    pub fn used(&self) -> impl Iterator<Item = (&'static str, &CommandStat)> {
        exec::table::COMMANDS
            .iter()
            .zip(&self.0)
            .filter(|(_, s)| {
                s.calls.load(Ordering::Relaxed) + s.rejected.load(Ordering::Relaxed) > 0
            })
            .map(|(c, s)| (c.name, s))
    }
}

/// What CLIENT LIST shows about a connection (shared between its task and the registry).
#[derive(Debug)]
pub struct ClientInfo {
    /// Client id (CLIENT ID, HELLO).
    pub id: u64,
    /// Peer address.
    pub addr: SocketAddr,
    /// Local address.
    pub laddr: SocketAddr,
    /// Creation time (server clock, ms).
    pub created_ms: u64,
    /// CLIENT SETNAME.
    pub name: Mutex<String>,
    /// CLIENT SETINFO LIB-NAME.
    pub lib_name: Mutex<String>,
    /// The user the connection authenticated as (CLIENT LIST `user=`).
    pub user: Mutex<String>,
    /// CLIENT SETINFO LIB-VER.
    pub lib_ver: Mutex<String>,
    /// Last command: its position in [`exec::table::COMMANDS`], or [`LAST_CMD_NONE`] before the
    /// first command, or [`LAST_CMD_UNKNOWN`] when it was not a known command (its lowercase name
    /// is then in `last_unknown_cmd`). A number, so that recording it costs one store per command.
    pub last_cmd: AtomicUsize,
    /// Lowercase name of the last command when it was unknown (see `last_cmd`).
    pub last_unknown_cmd: Mutex<String>,
    /// Last activity (server clock, ms, as of the latest tick: see [`Shared::coarse_now_ms`]).
    pub last_active_ms: AtomicU64,
    /// Selected db.
    pub db: AtomicU32,
    /// Whether the client administers the server (hidden from tenants' CLIENT LIST/KILL).
    pub admin: AtomicBool,
    /// Reply bytes built and not yet written to the socket (CLIENT LIST `omem`).
    pub omem: AtomicU64,
    /// Input bytes received and not yet executed (CLIENT LIST `qbuf`).
    pub qbuf: AtomicU64,
    /// Room left in the query buffer's allocation (CLIENT LIST `qbuf-free`: server/querybuf).
    pub qbuf_free: AtomicU64,
    /// The tick task asks the connection to resize its query buffer (server/querybuf).
    pub qbuf_cron: AtomicBool,
    /// Tenant id (u32::MAX = none).
    pub tenant: AtomicU32,
    /// The tenant the connection is bound to (`ConnState::owner`; u32::MAX = none): who may
    /// receive a tenant's tracking invalidations (server/tracking).
    pub owner: AtomicU32,
    /// 2 or 3.
    pub resp: AtomicU8,
    killed: AtomicBool,
    /// The connection task's waker while it waits for input (see [`StopSignal`]).
    waker: Mutex<Option<Waker>>,
    /// Pub/sub messages delivered and not yet moved to the connection's output.
    inbox: Mutex<Vec<u8>>,
    /// `inbox` is not empty (read without its lock while the task waits).
    inbox_pending: AtomicBool,
}

/// [`ClientInfo::last_cmd`] before the client's first command (CLIENT LIST shows `cmd=NULL`).
pub const LAST_CMD_NONE: usize = usize::MAX;
/// [`ClientInfo::last_cmd`] after an unknown command (the name is in `last_unknown_cmd`).
pub const LAST_CMD_UNKNOWN: usize = usize::MAX - 1;

impl ClientInfo {
    /// A new client `id` from `addr` to `laddr`, created at `now_ms`: no name, user `default`,
    /// no command yet, database 0, no tenant, RESP2. The one place that lists every field.
    pub fn new(id: u64, addr: SocketAddr, laddr: SocketAddr, now_ms: u64) -> Self {
        Self {
            id,
            addr,
            laddr,
            created_ms: now_ms,
            name: Mutex::new(String::new()),
            lib_name: Mutex::new(String::new()),
            lib_ver: Mutex::new(String::new()),
            user: Mutex::new("default".to_string()),
            last_cmd: AtomicUsize::new(LAST_CMD_NONE),
            last_unknown_cmd: Mutex::new(String::new()),
            last_active_ms: AtomicU64::new(now_ms),
            db: AtomicU32::new(0),
            admin: AtomicBool::new(false),
            omem: AtomicU64::new(0),
            qbuf: AtomicU64::new(0),
            qbuf_free: AtomicU64::new(0),
            qbuf_cron: AtomicBool::new(false),
            tenant: AtomicU32::new(u32::MAX),
            owner: AtomicU32::new(u32::MAX),
            resp: AtomicU8::new(2),
            killed: AtomicBool::new(false),
            waker: Mutex::new(None),
            inbox: Mutex::new(Vec::new()),
            inbox_pending: AtomicBool::new(false),
        }
    }

    /// Whether CLIENT KILL hit this client.
    pub fn killed(&self) -> bool {
        self.killed.load(Ordering::SeqCst)
    }

    fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        self.wake();
    }

    /// Wakes the connection task if it waits for input, so that it sees a kill or a shutdown.
    fn wake(&self) {
        if let Some(w) = self.waker.lock().take() {
            w.wake();
        }
    }

    /// Whether a connection of `scope` (`ConnState::scope`: `None` = the admin) may see or kill
    /// this client: the admin sees every client, a tenant only its own tenant's and never the
    /// admin's.
    pub fn visible_to(&self, scope: Option<Option<TenantId>>) -> bool {
        match scope {
            None => true,
            Some(t) => {
                !self.admin.load(Ordering::Relaxed)
                    && self.tenant.load(Ordering::Relaxed) == t.map_or(u32::MAX, |t| t.0)
            }
        }
    }

    /// Records the command about to run (`spec` = its table entry, `None` if unknown).
    #[inline]
    pub fn set_last_cmd(&self, spec: Option<usize>, name: &[u8]) {
        match spec {
            Some(i) => self.last_cmd.store(i, Ordering::Relaxed),
            None => {
                *self.last_unknown_cmd.lock() = String::from_utf8_lossy(name).to_ascii_lowercase();
                self.last_cmd.store(LAST_CMD_UNKNOWN, Ordering::Relaxed);
            }
        }
    }

    /// The last command's lowercase name, as CLIENT LIST shows it.
    pub fn last_cmd_name(&self) -> String {
        match self.last_cmd.load(Ordering::Relaxed) {
            LAST_CMD_NONE => "NULL".to_string(),
            LAST_CMD_UNKNOWN => self.last_unknown_cmd.lock().clone(),
            i => exec::table::COMMANDS
                .get(i)
                .map_or_else(|| "NULL".to_string(), |c| c.name.to_string()),
        }
    }
}

/// Resolves when the client was killed (CLIENT KILL) or the server is shutting down.
///
/// The connection loop polls it next to the socket read on every wait for input, so it must be
/// cheap: two atomic loads, and the task's waker is stored in the [`ClientInfo`] only when it
/// changed (not on every poll, unlike a fresh `Notify::notified()` or `watch::Receiver` future).
/// [`ClientInfo::kill`] and [`Shared::request_shutdown`] set their flag first, then take and
/// wake the stored waker; the poll stores the waker first, then checks the flags, so one of
/// the two always sees the other.
struct StopSignal<'a> {
    info: &'a ClientInfo,
    shared: &'a Shared,
    registered: Option<Waker>,
    /// Also resolve when pub/sub messages wait (the wait for input; not a write in progress).
    inbox: bool,
}

impl<'a> StopSignal<'a> {
    fn new(info: &'a ClientInfo, shared: &'a Shared, inbox: bool) -> Self {
        Self {
            info,
            shared,
            registered: None,
            inbox,
        }
    }

    fn stopped(&self) -> bool {
        self.info.killed() || self.shared.is_shutting_down()
    }

    /// Stopped, or (when asked) pub/sub messages to write: either ends the wait for input.
    fn attention(&self) -> bool {
        self.stopped()
            || (self.inbox
                && (self.info.inbox_pending() || self.info.qbuf_cron.load(Ordering::Relaxed)))
    }
}

impl Future for StopSignal<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.attention() {
            return Poll::Ready(());
        }
        if !self
            .registered
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            *self.info.waker.lock() = Some(cx.waker().clone());
            self.registered = Some(cx.waker().clone());
            if self.attention() {
                return Poll::Ready(());
            }
        }
        Poll::Pending
    }
}

/// Per-connection state owned by the connection task.
#[derive(Debug)]
pub struct ConnState {
    /// Shared view of this client.
    pub info: Arc<ClientInfo>,
    /// RESP version.
    pub proto: ProtocolVersion,
    /// Current tenant (None = unresolved).
    pub tenant: Option<TenantId>,
    /// Tenant given by the listener (port mode).
    pub listener_tenant: Option<TenantId>,
    /// Selected db number.
    pub db: u32,
    /// The ACL user this connection authenticated as (`default` until AUTH).
    pub user: String,
    /// AUTH passed (or not required).
    pub authenticated: bool,
    /// Administers the server: authenticated as the `[admin]` user, or any client of a
    /// single-tenant server without one.
    pub admin: bool,
    /// The tenant this connection may act on when it is not the admin: its listener's (port
    /// mode), its user's (after AUTH as a tenant's user), the only one (single mode); `None` =
    /// bound to no tenant (db and prefix mode without AUTH: data commands route as configured,
    /// server-wide commands are refused).
    pub owner: Option<TenantId>,
    /// Close after writing the replies.
    pub close: bool,
    /// CLIENT REPLY OFF: no replies until CLIENT REPLY ON (pub/sub pushes still go out).
    pub reply_off: bool,
    /// CLIENT REPLY SKIP was the previous command: this one's reply is dropped.
    pub skip_current: bool,
    /// CLIENT REPLY SKIP is running: the next command's reply is dropped.
    pub skip_next: bool,
    /// SUBSCRIBE'd channels, in subscription order, each in the tenant it was subscribed in.
    pub subs: Vec<(TenantId, Vec<u8>)>,
    /// PSUBSCRIBE'd patterns, likewise.
    pub psubs: Vec<(TenantId, Vec<u8>)>,
    /// Inside MULTI: the queued commands (owned: they outlive the read buffer).
    pub multi: Option<Vec<Vec<Vec<u8>>>>,
    /// A command was rejected while queuing: EXEC will answer EXECABORT.
    pub multi_error: bool,
    /// Bytes of arguments queued into this transaction while a script was busy (uncharged:
    /// bounded by `exec::scripting::busy`); reset by MULTI.
    pub multi_busy_bytes: usize,
    /// What the queued commands are charged to their tenants' budgets (see
    /// `exec::transaction::queue`), given back when the queue goes.
    pub multi_charged: Vec<(TenantId, u64)>,
    /// WATCHed keys: (tenant, key, existed when watched; `None` until the connection next holds
    /// the engine, for a WATCH answered while a script was busy: see
    /// `exec::transaction::settle_after_busy`).
    pub watched: Vec<(TenantId, Vec<u8>, Option<bool>)>,
    /// Blocking commands: waiting for a key, or not allowed to (exec/blocking).
    pub block: exec::blocking::ConnBlock,
    /// CLIENT TRACKING as the read path needs it (exec/tracking).
    pub tracking: exec::tracking::ConnTracking,
    /// A MIGRATE waiting for its round trip, run by the connection off the engine lock
    /// (exec/dump/migrate).
    pub migrate: Option<Box<exec::dump::migrate::Job>>,
}

impl ConnState {
    /// A new connection's state before its first RESET-like setup (`ConnState::reset` applies
    /// the tenancy): RESP2, no tenant, database 0, user `default`, nothing subscribed, queued,
    /// watched or tracked. The one place that lists every field: other states start here.
    pub fn new(info: Arc<ClientInfo>, listener_tenant: Option<TenantId>) -> Self {
        Self {
            info,
            proto: ProtocolVersion::Resp2,
            tenant: None,
            listener_tenant,
            db: 0,
            user: "default".to_string(),
            authenticated: true,
            admin: false,
            owner: None,
            close: false,
            reply_off: false,
            skip_current: false,
            skip_next: false,
            subs: Vec::new(),
            psubs: Vec::new(),
            multi: None,
            multi_error: false,
            multi_busy_bytes: 0,
            multi_charged: Vec::new(),
            watched: Vec::new(),
            block: exec::blocking::ConnBlock::default(),
            tracking: exec::tracking::ConnTracking::default(),
            migrate: None,
        }
    }

    /// An authenticated RESP2 connection `id` on tenant `t`, attached to no server and no
    /// socket (tests of the command layer: exec/effects).
    #[cfg(test)]
    pub(crate) fn detached(id: u64, t: TenantId) -> Self {
        let addr: SocketAddr = ([127, 0, 0, 1], 0).into();
        let info = ClientInfo::new(id, addr, addr, 0);
        info.tenant.store(t.0, Ordering::Relaxed);
        info.owner.store(t.0, Ordering::Relaxed);
        Self {
            tenant: Some(t),
            owner: Some(t),
            ..Self::new(Arc::new(info), None)
        }
    }

    /// Back to a new connection's state (RESET).
    pub fn reset(&mut self, tenancy: &Tenancy, auth_required: bool) {
        self.proto = ProtocolVersion::Resp2;
        self.tenant = tenancy.initial(self.listener_tenant);
        self.db = 0;
        self.user = "default".to_string();
        self.authenticated =
            !auth_required && tenancy.port_password(self.listener_tenant).is_none();
        self.admin = tenancy.admin_by_default();
        self.owner = tenancy.initial_owner(self.listener_tenant);
        self.multi = None;
        self.multi_error = false;
        self.info.name.lock().clear();
        self.publish(tenancy);
    }

    /// Channels plus patterns subscribed (a client with any is in Redis's subscribed mode).
    pub fn subscriptions(&self) -> usize {
        self.subs.len() + self.psubs.len()
    }

    /// Drops every subscription (disconnect, RESET).
    pub fn unsubscribe_all(&mut self, pubsub: &mut PubSub) {
        let id = self.info.id;
        for (t, name) in self.subs.drain(..) {
            pubsub.unsubscribe(SubKind::Channel, t, &name, id);
        }
        for (t, name) in self.psubs.drain(..) {
            pubsub.unsubscribe(SubKind::Pattern, t, &name, id);
        }
    }

    /// The tenant whose clients, settings and statistics this connection may see: `None` for the
    /// admin (all of them), else its owner, else the tenant it currently routes to.
    pub fn scope(&self) -> Option<Option<TenantId>> {
        if self.admin {
            None
        } else {
            Some(self.owner.or(self.tenant))
        }
    }

    /// Mirrors db/tenant/resp into the shared [`ClientInfo`].
    pub fn publish(&self, _tenancy: &Tenancy) {
        if *self.info.user.lock() != self.user {
            self.info.user.lock().clone_from(&self.user);
        }
        self.info.admin.store(self.admin, Ordering::Relaxed);
        self.info.db.store(self.db, Ordering::Relaxed);
        self.info
            .tenant
            .store(self.tenant.map_or(u32::MAX, |t| t.0), Ordering::Relaxed);
        self.info
            .owner
            .store(self.owner.map_or(u32::MAX, |t| t.0), Ordering::Relaxed);
        self.info.resp.store(self.proto.number(), Ordering::Relaxed);
    }
}

/// State shared by every task.
pub struct Shared {
    /// The engine, behind its measured lock.
    engine: EngineLock,
    /// The server's clock (the engine's too).
    clock: SharedClock,
    /// Tenant resolution tables.
    tenancy: Tenancy,
    /// The effective configuration (CONFIG SET updates it).
    config: RwLock<ServerConfig>,
    /// Counters.
    stats: ServerStats,
    /// Connected clients by id.
    clients: Mutex<BTreeMap<u64, Arc<ClientInfo>>>,
    /// Next client id.
    next_client_id: AtomicU64,
    /// Start time (server clock, ms).
    start_ms: u64,
    /// Listening addresses with their tenant (port mode).
    listeners: RwLock<Vec<(SocketAddr, Option<TenantId>)>>,
    /// Path of the configuration file, if any (INFO server).
    config_file: Option<String>,
    /// Pub/sub subscriptions of every tenant.
    pubsub: Mutex<PubSub>,
    /// Clients blocked on keys (BLPOP and friends).
    blocking: exec::blocking::Blocking,
    /// `notify-keyspace-events` as flags (see `exec::notify`), read on every write.
    notify_flags: AtomicU32,
    /// WATCH registry: (tenant, key) -> client ids watching it.
    watches: Mutex<WatchMap>,
    /// Number of live watch entries (fast check on every write).
    watch_count: std::sync::atomic::AtomicUsize,
    /// Clients whose watched keys were modified (their EXEC fails).
    dirty: Mutex<std::collections::HashSet<u64>>,
    /// Keys whose encoding Redis would not derive from the value's shape: `raw` after APPEND /
    /// SETRANGE, `embstr` for an INCRBYFLOAT result (see [`Shared::note_encoding`]).
    raw_keys: Mutex<std::collections::HashMap<(u32, Vec<u8>), &'static str>>,
    /// `raw_keys.len()`, read without the lock on every write.
    raw_count: std::sync::atomic::AtomicUsize,
    shutdown: watch::Sender<bool>,
    /// Set by [`Shared::request_shutdown`]: read on every command without a lock.
    stopping: AtomicBool,
    /// The clock as of the latest tick (see [`Shared::coarse_now_ms`]).
    coarse_ms: AtomicU64,
    /// SAVE / BGSAVE state, the change count, the running child.
    snapshots: crate::snapshot::Snapshots,
    /// pRedis's automatic dump/load of the tenants whose `dump_load` is not `never`.
    dumploads: crate::dumpload::DumpLoads,
    /// The emulated slow tier's delay per access in ns (0: no tiers or a real slow backend),
    /// read without the lock by every connection batch.
    tier_delay_ns: u64,
    /// What the tier worker thread and the emulated delay did (INFO tiers, metrics).
    tier_workers: crate::tiers::WorkerCounters,
    /// Every tenant's Lua VM and script cache (exec/scripting).
    scripts: crate::exec::scripting::Scripts,
    /// Client-side caching: the tracking tables and the tracking clients (server/tracking).
    tracking: Tracking,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

impl Shared {
    /// The hard output-buffer limit of the pubsub class (`client-output-buffer-limit pubsub`),
    /// in bytes: what every message a client did not ask for (pub/sub, keyspace notifications,
    /// tracking invalidations, MONITOR lines) may pile up to before the client is dropped.
    pub fn pubsub_hard_limit(&self) -> u64 {
        self.config().limits.client_output_buffer_limit.pubsub.hard
    }

    /// The keyspace notification flags in force.
    pub fn notify_flags(&self) -> u32 {
        self.notify_flags.load(Ordering::Relaxed)
    }

    /// Applies `notify-keyspace-events` (already validated): the flags, and the engine's record
    /// of expired and evicted keys, kept only while they are asked for.
    pub fn set_notify_flags(&self, eng: &mut Engine, text: &str) {
        use crate::exec::notify::{EVICTED, EXPIRED, KEYEVENT, KEYSPACE, parse_flags};
        let f = parse_flags(text.as_bytes()).unwrap_or(0);
        self.notify_flags.store(f, Ordering::Relaxed);
        eng.record_key_events(
            (f & (EXPIRED | EVICTED) != 0 && f & (KEYSPACE | KEYEVENT) != 0)
                || self.tracking.active(),
        );
    }

    /// Every tenant's Lua VM and script cache.
    pub fn scripts(&self) -> &crate::exec::scripting::Scripts {
        &self.scripts
    }

    /// Client-side caching (CLIENT TRACKING).
    pub fn tracking(&self) -> &Tracking {
        &self.tracking
    }

    /// The pub/sub registry.
    pub fn pubsub(&self) -> parking_lot::MutexGuard<'_, PubSub> {
        self.pubsub.lock()
    }

    /// Clients blocked on keys (BLPOP and friends: exec/blocking).
    pub fn blocking(&self) -> &exec::blocking::Blocking {
        &self.blocking
    }

    /// Locks the engine (handlers get it locked by the dispatcher; this is for the tasks that
    /// run outside a command: expiry cycles, controller ticks, the embedding API).
    pub fn engine(&self) -> EngineGuard<'_> {
        self.engine.lock()
    }

    /// The engine lock's counters: acquisitions, waits and holds (the admin's INFO and metrics).
    pub fn engine_lock_stats(&self) -> &LockStats {
        self.engine.stats()
    }

    /// The engine lock if it comes within `wait` (exec/scripting/busy: a batch that finds a
    /// long-running script answers BUSY instead of waiting).
    pub fn try_engine_for(&self, wait: std::time::Duration) -> Option<EngineGuard<'_>> {
        self.engine.try_lock_for(wait)
    }

    /// The engine lock, waited for in slices of `slice` unless `give_up` says to stop between
    /// two (exec/scripting/busy: a batch that finds a timed-out script answers BUSY instead).
    pub fn engine_unless(
        &self,
        slice: std::time::Duration,
        give_up: impl Fn() -> bool,
    ) -> Option<EngineGuard<'_>> {
        self.engine.lock_unless(slice, give_up)
    }

    /// Whether another thread holds the engine lock right now (a hint: it may be taken or
    /// released the next moment).
    pub fn engine_busy(&self) -> bool {
        self.engine.is_locked()
    }

    /// The server's clock (the engine's too).
    pub fn clock(&self) -> &SharedClock {
        &self.clock
    }

    /// Tenant resolution tables (fixed at start).
    pub fn tenancy(&self) -> &Tenancy {
        &self.tenancy
    }

    /// The effective configuration, for reading.
    pub fn config(&self) -> parking_lot::RwLockReadGuard<'_, ServerConfig> {
        self.config.read()
    }

    /// The effective configuration, for `CONFIG SET` and `LOCUS.TENANT ... SET` after they
    /// validated the change.
    pub fn config_mut(&self) -> parking_lot::RwLockWriteGuard<'_, ServerConfig> {
        self.config.write()
    }

    /// Server-wide counters.
    pub fn stats(&self) -> &ServerStats {
        &self.stats
    }

    /// Seconds since the server started.
    pub fn uptime_secs(&self) -> u64 {
        self.clock.now_ms().saturating_sub(self.start_ms) / 1000
    }

    /// The configuration file the server was started with, if any.
    pub fn config_file(&self) -> Option<&str> {
        self.config_file.as_deref()
    }

    /// Listening addresses with their tenant (port mode).
    pub fn listeners(&self) -> Vec<(SocketAddr, Option<TenantId>)> {
        self.listeners.read().clone()
    }

    /// Records the addresses actually bound (ports chosen by the kernel included).
    pub fn set_listeners(&self, l: Vec<(SocketAddr, Option<TenantId>)>) {
        *self.listeners.write() = l;
    }

    /// Whether some client WATCHes keys, some key has a noted encoding or some client tracks
    /// keys (CLIENT TRACKING): writes must then report the keys they touch
    /// ([`Shared::touch_watched`], [`Shared::note_encoding`]).
    pub fn tracks_writes(&self) -> bool {
        self.watch_count.load(Ordering::Relaxed) != 0
            || self.raw_count.load(Ordering::Relaxed) != 0
            || self.tracking.active()
    }

    /// Whether a key `client` watches was modified since it started watching (EXEC fails).
    pub fn watch_dirty(&self, client: u64) -> bool {
        self.dirty.lock().contains(&client)
    }

    /// Forgets that `client`'s watched keys were modified (MULTI/EXEC/DISCARD/UNWATCH).
    pub fn clear_watch_dirty(&self, client: u64) {
        self.dirty.lock().remove(&client);
    }

    /// Builds the shared state around an engine.
    pub fn new(
        engine: Engine,
        clock: SharedClock,
        tenancy: Tenancy,
        config: ServerConfig,
        config_file: Option<String>,
    ) -> Self {
        let start_ms = clock.now_ms();
        // Error replies are counted from here on (INFO errorstats).
        crate::exec::errorstats::install();
        let dumploads = dump_loads(&config, &tenancy);
        let tier_delay_ns = crate::tiers::emulated_ns(&engine);
        Self {
            tier_delay_ns,
            tier_workers: crate::tiers::WorkerCounters::default(),
            scripts: crate::exec::scripting::Scripts::default(),
            tracking: Tracking::new(config.server.tracking_table_max_keys),
            dumploads,
            engine: EngineLock::new(engine),
            clock,
            tenancy,
            config: RwLock::new(config),
            stats: ServerStats::default(),
            clients: Mutex::new(BTreeMap::new()),
            next_client_id: AtomicU64::new(1),
            start_ms,
            listeners: RwLock::new(Vec::new()),
            config_file,
            pubsub: Mutex::new(PubSub::default()),
            blocking: exec::blocking::Blocking::default(),
            notify_flags: AtomicU32::new(0),
            watches: Mutex::new(std::collections::HashMap::new()),
            watch_count: std::sync::atomic::AtomicUsize::new(0),
            dirty: Mutex::new(std::collections::HashSet::new()),
            raw_keys: Mutex::new(std::collections::HashMap::new()),
            raw_count: std::sync::atomic::AtomicUsize::new(0),
            shutdown: watch::channel(false).0,
            stopping: AtomicBool::new(false),
            coarse_ms: AtomicU64::new(start_ms),
            snapshots: crate::snapshot::Snapshots::new(start_ms),
        }
    }

    /// The emulated slow tier's delay per access in ns (0: none to spend).
    pub fn tier_delay_ns(&self) -> u64 {
        self.tier_delay_ns
    }

    /// The tier worker thread's and the emulated delay's counters.
    pub fn tier_workers(&self) -> &crate::tiers::WorkerCounters {
        &self.tier_workers
    }

    /// pRedis's dump/load state (tick task, write hook, INFO).
    pub fn dumploads(&self) -> &crate::dumpload::DumpLoads {
        &self.dumploads
    }

    /// Snapshot state (SAVE, BGSAVE, LASTSAVE, INFO persistence).
    pub fn snapshots(&self) -> &crate::snapshot::Snapshots {
        &self.snapshots
    }

    /// Every tenant with its name, and the snapshot directory when snapshots are on.
    pub fn snapshot_targets(&self) -> Option<(Vec<(TenantId, String)>, std::path::PathBuf)> {
        let cfg = self.config();
        if !cfg.snapshot.enabled() {
            return None;
        }
        let tenants = self
            .tenancy
            .names
            .iter()
            .map(|(n, t)| (*t, n.clone()))
            .collect();
        Some((tenants, std::path::PathBuf::from(cfg.snapshot.dir.trim())))
    }

    /// Whether new connections must AUTH before running commands.
    pub fn auth_required(&self) -> bool {
        !self.config.read().server.requirepass.is_empty()
            || (self.tenancy.mode == TenancyMode::User && self.tenancy.default.is_none())
            // Tenants with users in db or prefix mode: clients bind to one by AUTH.
            || (matches!(self.tenancy.mode, TenancyMode::Db | TenancyMode::Prefix)
                && !self.tenancy.users.is_empty())
    }

    /// Asks every task to stop: the accept and tick loops through the watch channel, the
    /// connections waiting for input through their [`StopSignal`].
    pub fn request_shutdown(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.shutdown.send_replace(true);
        for c in self.clients.lock().values() {
            c.wake();
        }
    }

    /// The server clock as the tick task last read it (`server.hz` times a second), for
    /// timestamps that only need that resolution (a client's last activity, shown in seconds by
    /// CLIENT LIST), without a clock read per request. Redis stamps `lastinteraction` the same
    /// way, from the time its cron caches.
    pub fn coarse_now_ms(&self) -> u64 {
        self.coarse_ms.load(Ordering::Relaxed)
    }

    /// Refreshes [`Shared::coarse_now_ms`] from the clock (the tick task, every tick).
    pub fn refresh_coarse_clock(&self) {
        self.coarse_ms.store(self.clock.now_ms(), Ordering::Relaxed);
    }

    /// Whether shutdown was requested.
    pub fn is_shutting_down(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    pub(crate) fn shutdown_rx(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    /// A command that reports its own writes changed `key` of `tenant`: one change counted for
    /// the snapshots (Redis's `dirty`: rdb_changes_since_last_save, save points), and its
    /// watchers touched.
    pub fn key_changed(&self, tenant: TenantId, key: &[u8]) {
        self.snapshots().note_write();
        self.touch_watched(tenant, key);
    }

    /// Marks every client watching `(tenant, key)` dirty (Redis's touchWatchedKey) and
    /// invalidates the key for the clients tracking it (Redis's trackingInvalidateKey).
    pub fn touch_watched(&self, tenant: TenantId, key: &[u8]) {
        self.tracking.invalidate(self, tenant, key, true);
        if self.watch_count.load(Ordering::Relaxed) == 0 {
            return;
        }
        let w = self.watches.lock();
        if let Some(ids) = w.get(&(tenant.0, key.to_vec())) {
            self.dirty.lock().extend(ids.iter().copied());
        }
    }

    /// Marks every client watching any key of `tenant` dirty (FLUSHDB / FLUSHALL), and empties
    /// the tenant's tracking table with a null invalidation to its trackers.
    pub fn touch_all_watched(&self, tenant: TenantId, mut exists: impl FnMut(&[u8]) -> bool) {
        self.tracking.flush(self, tenant);
        if self.watch_count.load(Ordering::Relaxed) == 0 {
            return;
        }
        let w = self.watches.lock();
        let mut d = self.dirty.lock();
        for ((t, key), ids) in w.iter() {
            // As Redis: a watched key the flush does not remove (it did not exist) is untouched.
            if *t == tenant.0 && exists(key) {
                d.extend(ids.iter().copied());
            }
        }
    }

    /// Records how a write command leaves the encoding of its keys (for OBJECT ENCODING): the
    /// pseudo-command `raw` marks keys raw (APPEND to an existing key, SETRANGE), every other write
    /// replaces the value.
    pub fn note_encoding(&self, cmd: &str, tenant: TenantId, keys: &[&[u8]]) {
        let forced = matches!(cmd, "raw" | "embstr");
        if !forced && self.raw_count.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut set = self.raw_keys.lock();
        match cmd {
            // The APPEND / SETRANGE handlers decide (Redis: APPEND creating a key encodes it
            // normally; SETRANGE with an empty value changes nothing).
            "append" | "setrange" => {}
            "raw" | "embstr" => {
                if set.len() >= MAX_RAW_KEYS {
                    // Bounded memory: forget (OBJECT ENCODING then reports by value shape).
                    set.clear();
                }
                let enc: &'static str = if cmd == "raw" { "raw" } else { "embstr" };
                for k in keys {
                    set.insert((tenant.0, k.to_vec()), enc);
                }
            }
            "rename" | "renamenx" if keys.len() == 2 => {
                let was = set.remove(&(tenant.0, keys[0].to_vec()));
                set.remove(&(tenant.0, keys[1].to_vec()));
                if let Some(enc) = was {
                    set.insert((tenant.0, keys[1].to_vec()), enc);
                }
            }
            "flushdb" | "flushall" => set.retain(|(t, _), _| *t != tenant.0),
            "expire" | "pexpire" | "expireat" | "pexpireat" | "persist" | "getex" => {}
            _ => {
                for k in keys {
                    set.remove(&(tenant.0, k.to_vec()));
                }
            }
        }
        self.raw_count.store(set.len(), Ordering::Relaxed);
    }

    /// The encoding OBJECT ENCODING must report for this key if not the one its value's shape
    /// gives.
    pub fn forced_encoding(&self, tenant: TenantId, key: &[u8]) -> Option<&'static str> {
        if self.raw_count.load(Ordering::Relaxed) == 0 {
            return None;
        }
        self.raw_keys.lock().get(&(tenant.0, key.to_vec())).copied()
    }

    /// Registers a watch.
    pub fn add_watch(&self, client: u64, tenant: TenantId, key: &[u8]) {
        let mut w = self.watches.lock();
        let ids = w.entry((tenant.0, key.to_vec())).or_default();
        if !ids.contains(&client) {
            ids.push(client);
            self.watch_count.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Drops every watch of `client` (EXEC, DISCARD, UNWATCH, disconnect).
    pub fn unwatch_all(&self, client: u64, keys: &[(TenantId, Vec<u8>, Option<bool>)]) {
        let mut w = self.watches.lock();
        for (t, k, _) in keys {
            let id = (t.0, k.clone());
            if let Some(ids) = w.get_mut(&id)
                && let Some(pos) = ids.iter().position(|c| *c == client)
            {
                ids.swap_remove(pos);
                self.watch_count.fetch_sub(1, Ordering::Relaxed);
                if ids.is_empty() {
                    w.remove(&id);
                }
            }
        }
        self.dirty.lock().remove(&client);
    }

    /// Kills every client matching `pred`; returns how many.
    pub fn kill_clients(&self, pred: impl Fn(&ClientInfo) -> bool) -> usize {
        let clients = self.clients.lock();
        let mut n = 0;
        for c in clients.values() {
            // A client killed already is gone as far as anyone asks (its task may still run).
            if !c.killed() && pred(c) {
                c.kill();
                n += 1;
            }
        }
        n
    }

    /// Bytes held in client buffers (pending replies, unexecuted input) of the clients `scope`
    /// may see: (output, input).
    pub fn client_buffers(&self, scope: Option<Option<TenantId>>) -> (u64, u64) {
        self.clients
            .lock()
            .values()
            .filter(|c| c.visible_to(scope))
            .fold((0, 0), |(o, q), c| {
                (
                    o + c.omem.load(Ordering::Relaxed),
                    q + c.qbuf.load(Ordering::Relaxed) + c.qbuf_free.load(Ordering::Relaxed),
                )
            })
    }

    /// Connected clients that `scope` may see ([`ClientInfo::visible_to`]).
    pub fn count_visible(&self, scope: Option<Option<TenantId>>) -> usize {
        self.clients
            .lock()
            .values()
            .filter(|c| c.visible_to(scope) && !c.killed())
            .count()
    }

    /// Kills the clients matching `pred` that `scope` may see ([`ClientInfo::visible_to`]).
    pub fn kill_visible(
        &self,
        scope: Option<Option<TenantId>>,
        pred: impl Fn(&ClientInfo) -> bool,
    ) -> usize {
        self.kill_clients(|c| c.visible_to(scope) && pred(c))
    }

    /// One CLIENT LIST line (with its trailing newline).
    pub fn client_line(&self, c: &ClientInfo, now_ms: u64) -> String {
        let tenant = c.tenant.load(Ordering::Relaxed);
        let tenant_name = if tenant == u32::MAX {
            ""
        } else {
            self.tenancy.name(TenantId(tenant))
        };
        format!(
            "id={} addr={} laddr={} fd=-1 name={} age={} idle={} flags={} db={} sub=0 psub=0 ssub=0 multi=-1 qbuf={} qbuf-free={} argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem={} tot-mem={} events=r cmd={} user={} redir=-1 resp={} lib-name={} lib-ver={} tenant={}\n",
            c.id,
            c.addr,
            c.laddr,
            c.name.lock(),
            now_ms.saturating_sub(c.created_ms) / 1000,
            now_ms.saturating_sub(c.last_active_ms.load(Ordering::Relaxed)) / 1000,
            if self.blocking.is_blocked(c.id) {
                "b"
            } else {
                "N"
            },
            c.db.load(Ordering::Relaxed),
            c.qbuf.load(Ordering::Relaxed),
            c.qbuf_free.load(Ordering::Relaxed),
            c.omem.load(Ordering::Relaxed),
            c.qbuf.load(Ordering::Relaxed)
                + c.qbuf_free.load(Ordering::Relaxed)
                + c.omem.load(Ordering::Relaxed),
            c.last_cmd_name(),
            c.user.lock(),
            c.resp.load(Ordering::Relaxed),
            c.lib_name.lock(),
            c.lib_ver.lock(),
            tenant_name,
        )
    }

    /// CLIENT LIST text, optionally only some ids.
    pub fn client_list(
        &self,
        ids: Option<&[u64]>,
        scope: Option<Option<TenantId>>,
        now_ms: u64,
    ) -> String {
        let clients: Vec<Arc<ClientInfo>> = self.clients.lock().values().cloned().collect();
        clients
            .iter()
            .filter(|c| c.visible_to(scope) && ids.is_none_or(|ids| ids.contains(&c.id)))
            .map(|c| self.client_line(c, now_ms))
            .collect()
    }
}

/// Saves before a clean stop: always when `force` (SHUTDOWN SAVE), else when snapshots are on
/// and `[snapshot] on_shutdown` says so. A running BGSAVE child is killed first (its files
/// removed), as Redis does, whether or not this saves. The caller holds the engine lock.
///
/// # Errors
/// Why the save failed, or that snapshots are off when `force`.
pub fn save_before_shutdown(shared: &Shared, eng: &mut Engine, force: bool) -> Result<(), String> {
    let Some((tenants, dir)) = shared.snapshot_targets() else {
        return if force {
            Err("snapshots are off ([snapshot] dir is empty)".to_string())
        } else {
            Ok(())
        };
    };
    shared.snapshots().kill_child(&dir);
    if !force && !shared.config().snapshot.on_shutdown {
        return Ok(());
    }
    // Dumped tenants' items go back into memory first, so the snapshot holds them and the
    // keys written or deleted while dumped are honoured.
    for line in shared.dumploads().load_all_back(eng, &dir) {
        eprintln!("{line}");
    }
    // The one disk write under the engine lock: the server is stopping (see `ShutdownIo`).
    let _stopping = ShutdownIo::begin();
    shared.snapshots().save(eng, &tenants, &dir)
}

/// The dump/load state of `config`'s tenants (validated: a bad setting counts as `never`).
fn dump_loads(config: &ServerConfig, tenancy: &Tenancy) -> crate::dumpload::DumpLoads {
    let (Ok(cfg), Ok(modes)) = (config.dump_load.detector_config(), config.dump_load_modes())
    else {
        return crate::dumpload::DumpLoads::default();
    };
    let tenants = config
        .tenant_sections()
        .into_iter()
        .zip(modes)
        .filter_map(|(sec, mode)| {
            let id = tenancy
                .names
                .iter()
                .find(|(n, _)| *n == sec.name)
                .map(|(_, t)| *t)?;
            let text = sec.dump_load.unwrap_or_else(|| "never".to_string());
            Some((id, sec.name, text, mode))
        })
        .collect();
    crate::dumpload::DumpLoads::new(cfg, tenants)
}

/// The background task: `hz` times a second, tick the engine and sweep expired keys.
pub async fn tick_loop(shared: Arc<Shared>) {
    let mut shutdown = shared.shutdown_rx();
    loop {
        let hz = shared.config().server.hz.max(1);
        let period = Duration::from_millis(1000 / u64::from(hz));
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
        shared.refresh_coarse_clock();
        querybuf::cron(&shared, hz);
        {
            let s = shared.stats();
            crate::instant::sample(
                shared.clock().now_ms(),
                (
                    s.total_commands.load(Ordering::Relaxed),
                    s.net_input_bytes.load(Ordering::Relaxed),
                    s.net_output_bytes.load(Ordering::Relaxed),
                ),
                shared.tenancy().names.iter().map(|(_, t)| *t),
            );
        }
        // A tick that cannot take the engine lock soon (a long script holds it) is skipped
        // rather than block a runtime worker: the clients answered BUSY meanwhile need one.
        let Some(mut eng) = shared.try_engine_for(Duration::from_millis(50)) else {
            continue;
        };
        eng.tick();
        let began = std::time::Instant::now();
        // A CLIENT PAUSE in force holds its tenants' expiry; one that timed out releases it.
        exec::pause::sync_expiry(&mut eng);
        crate::exec::lazyfree::settle(&mut eng);
        eng.run_active_expire(ACTIVE_EXPIRE_KEYS_PER_TICK);
        // LATENCY's `expire-cycle` event (the server's own log).
        crate::exec::latency::add_sample_if_needed(
            None,
            "expire-cycle",
            began.elapsed().as_millis() as u64,
        );
        if shared.notify_flags() != 0 {
            crate::exec::notify::publish_key_events(&shared, &mut eng);
        }
        crate::exec::tracking::tick(&shared, &mut eng);
        // Reap a finished BGSAVE child; start one a save point (or BGSAVE SCHEDULE) asks for.
        if let Some((tenants, dir)) = shared.snapshot_targets() {
            let points = shared.config().snapshot.save_points().unwrap_or_default();
            let now = shared.clock().now_ms();
            if shared.snapshots().poll(now, &points) {
                let _ = shared.snapshots().bgsave(&eng, &tenants, &dir);
            }
            // pRedis's dump/load: feed the detectors, dump or load a tenant when due.
            if shared.dumploads().enabled() {
                for line in shared.dumploads().step(&mut eng, &dir) {
                    eprintln!("{line}");
                }
            }
        }
    }
}

/// Keys the active expiry sweep may examine per tick (bounded lock hold time).
pub const ACTIVE_EXPIRE_KEYS_PER_TICK: usize = 200;
