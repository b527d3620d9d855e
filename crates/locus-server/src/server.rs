//! Listeners, connections and the background tick.
//!
//! ```text
//!  tokio runtime (server.threads workers)
//!  ├─ accept task per listener ──► connection task per client
//!  │      connection: read ─► parse ALL complete commands ─► lock engine ONCE ─► execute all
//!  │                  ─► unlock ─► one write of all replies (pipelining: redis-benchmark -P 16)
//!  ├─ tick task (server.hz per second): engine.tick() + engine.run_active_expire(..)
//!  └─ shutdown: SIGINT / SIGTERM / SHUTDOWN / ServerHandle::shutdown ─► watch channel ─► all tasks end
//! ```
//!
//! The engine sits behind one `parking_lot::Mutex`; it is never held across an `.await`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use locus_common::SharedClock;
use locus_engine::{Engine, TenantId};
use locus_protocol::{ProtocolError, ProtocolVersion, ReplyWriter, parse};
use parking_lot::{Mutex, RwLock};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};

use crate::config::{ServerConfig, TenancyMode};
use crate::exec::{self, Ctx};
use crate::tenancy::Tenancy;

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
    /// Commands executed.
    pub total_commands: AtomicU64,
    /// Bytes read from clients.
    pub net_input_bytes: AtomicU64,
    /// Bytes written to clients.
    pub net_output_bytes: AtomicU64,
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
    /// CLIENT SETINFO LIB-VER.
    pub lib_ver: Mutex<String>,
    /// Last command name.
    pub last_cmd: Mutex<String>,
    /// Last activity (server clock, ms).
    pub last_active_ms: AtomicU64,
    /// Selected db.
    pub db: AtomicU32,
    /// Tenant id (u32::MAX = none).
    pub tenant: AtomicU32,
    /// 2 or 3.
    pub resp: AtomicU8,
    killed: AtomicBool,
    kill: Notify,
}

impl ClientInfo {
    /// Whether CLIENT KILL hit this client.
    pub fn killed(&self) -> bool {
        self.killed.load(Ordering::Relaxed)
    }

    fn kill(&self) {
        self.killed.store(true, Ordering::Relaxed);
        self.kill.notify_one();
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
    /// Close after writing the replies.
    pub close: bool,
    /// Inside MULTI: the queued commands (owned: they outlive the read buffer).
    pub multi: Option<Vec<Vec<Vec<u8>>>>,
    /// A command was rejected while queuing: EXEC will answer EXECABORT.
    pub multi_error: bool,
    /// WATCHed keys: (tenant, key, existed when watched).
    pub watched: Vec<(TenantId, Vec<u8>, bool)>,
}

impl ConnState {
    /// Back to a new connection's state (RESET).
    pub fn reset(&mut self, tenancy: &Tenancy, auth_required: bool) {
        self.proto = ProtocolVersion::Resp2;
        self.tenant = tenancy.initial(self.listener_tenant);
        self.db = 0;
        self.user = "default".to_string();
        self.authenticated = !auth_required;
        self.multi = None;
        self.multi_error = false;
        self.info.name.lock().clear();
        self.publish(tenancy);
    }

    /// Mirrors db/tenant/resp into the shared [`ClientInfo`].
    pub fn publish(&self, _tenancy: &Tenancy) {
        self.info.db.store(self.db, Ordering::Relaxed);
        self.info
            .tenant
            .store(self.tenant.map_or(u32::MAX, |t| t.0), Ordering::Relaxed);
        self.info.resp.store(self.proto.number(), Ordering::Relaxed);
    }
}

/// State shared by every task.
pub struct Shared {
    /// The engine.
    pub engine: Mutex<Engine>,
    /// The server's clock (the engine's too).
    pub clock: SharedClock,
    /// Tenant resolution tables.
    pub tenancy: Tenancy,
    /// The effective configuration (CONFIG SET updates it).
    pub config: RwLock<ServerConfig>,
    /// Counters.
    pub stats: ServerStats,
    /// Connected clients by id.
    pub clients: Mutex<BTreeMap<u64, Arc<ClientInfo>>>,
    /// Next client id.
    pub next_client_id: AtomicU64,
    /// Start time (server clock, ms).
    pub start_ms: u64,
    /// Listening addresses with their tenant (port mode).
    pub listeners: RwLock<Vec<(SocketAddr, Option<TenantId>)>>,
    /// Path of the configuration file, if any (INFO server).
    pub config_file: Option<String>,
    /// WATCH registry: (tenant, key) -> client ids watching it.
    pub watches: Mutex<WatchMap>,
    /// Number of live watch entries (fast check on every write).
    pub watch_count: std::sync::atomic::AtomicUsize,
    /// Clients whose watched keys were modified (their EXEC fails).
    pub dirty: Mutex<std::collections::HashSet<u64>>,
    /// Keys whose encoding Redis would not derive from the value's shape: `raw` after APPEND /
    /// SETRANGE, `embstr` for an INCRBYFLOAT result (see [`Shared::note_encoding`]).
    pub raw_keys: Mutex<std::collections::HashMap<(u32, Vec<u8>), &'static str>>,
    /// `raw_keys.len()`, read without the lock on every write.
    pub raw_count: std::sync::atomic::AtomicUsize,
    shutdown: watch::Sender<bool>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

impl Shared {
    /// Builds the shared state around an engine.
    pub fn new(
        engine: Engine,
        clock: SharedClock,
        tenancy: Tenancy,
        config: ServerConfig,
        config_file: Option<String>,
    ) -> Self {
        let start_ms = clock.now_ms();
        Self {
            engine: Mutex::new(engine),
            clock,
            tenancy,
            config: RwLock::new(config),
            stats: ServerStats::default(),
            clients: Mutex::new(BTreeMap::new()),
            next_client_id: AtomicU64::new(1),
            start_ms,
            listeners: RwLock::new(Vec::new()),
            config_file,
            watches: Mutex::new(std::collections::HashMap::new()),
            watch_count: std::sync::atomic::AtomicUsize::new(0),
            dirty: Mutex::new(std::collections::HashSet::new()),
            raw_keys: Mutex::new(std::collections::HashMap::new()),
            raw_count: std::sync::atomic::AtomicUsize::new(0),
            shutdown: watch::channel(false).0,
        }
    }

    /// Whether new connections must AUTH before running commands.
    pub fn auth_required(&self) -> bool {
        !self.config.read().server.requirepass.is_empty()
            || (self.tenancy.mode == TenancyMode::User && self.tenancy.default.is_none())
    }

    /// Asks every task to stop.
    pub fn request_shutdown(&self) {
        self.shutdown.send_replace(true);
    }

    /// Whether shutdown was requested.
    pub fn is_shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }

    fn shutdown_rx(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    /// Marks every client watching `(tenant, key)` dirty (Redis's touchWatchedKey).
    pub fn touch_watched(&self, tenant: TenantId, key: &[u8]) {
        if self.watch_count.load(Ordering::Relaxed) == 0 {
            return;
        }
        let w = self.watches.lock();
        if let Some(ids) = w.get(&(tenant.0, key.to_vec())) {
            self.dirty.lock().extend(ids.iter().copied());
        }
    }

    /// Marks every client watching any key of `tenant` dirty (FLUSHDB / FLUSHALL).
    pub fn touch_all_watched(&self, tenant: TenantId) {
        if self.watch_count.load(Ordering::Relaxed) == 0 {
            return;
        }
        let w = self.watches.lock();
        let mut d = self.dirty.lock();
        for ((t, _), ids) in w.iter() {
            if *t == tenant.0 {
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
    pub fn unwatch_all(&self, client: u64, keys: &[(TenantId, Vec<u8>, bool)]) {
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
            if pred(c) {
                c.kill();
                n += 1;
            }
        }
        n
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
            "id={} addr={} laddr={} fd=-1 name={} age={} idle={} flags=N db={} sub=0 psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd={} user=default redir=-1 resp={} lib-name={} lib-ver={} tenant={}\n",
            c.id,
            c.addr,
            c.laddr,
            c.name.lock(),
            now_ms.saturating_sub(c.created_ms) / 1000,
            now_ms.saturating_sub(c.last_active_ms.load(Ordering::Relaxed)) / 1000,
            c.db.load(Ordering::Relaxed),
            c.last_cmd.lock(),
            c.resp.load(Ordering::Relaxed),
            c.lib_name.lock(),
            c.lib_ver.lock(),
            tenant_name,
        )
    }

    /// CLIENT LIST text, optionally only some ids.
    pub fn client_list(&self, ids: Option<&[u64]>, now_ms: u64) -> String {
        let clients: Vec<Arc<ClientInfo>> = self.clients.lock().values().cloned().collect();
        clients
            .iter()
            .filter(|c| ids.is_none_or(|ids| ids.contains(&c.id)))
            .map(|c| self.client_line(c, now_ms))
            .collect()
    }
}

/// Accepts connections on one listener until shutdown.
pub async fn accept_loop(shared: Arc<Shared>, listener: TcpListener, tenant: Option<TenantId>) {
    let mut shutdown = shared.shutdown_rx();
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = shutdown.wait_for(|s| *s) => return,
        };
        let (sock, addr) = match accepted {
            Ok(x) => x,
            Err(_) => {
                // EMFILE and friends: back off briefly instead of spinning.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = sock.set_nodelay(true);
        let max = shared.config.read().server.maxclients;
        if shared.stats.connected.load(Ordering::Relaxed) >= max {
            shared
                .stats
                .rejected_connections
                .fetch_add(1, Ordering::Relaxed);
            tokio::spawn(async move {
                let mut sock = sock;
                let _ = sock
                    .write_all(b"-ERR max number of clients reached\r\n")
                    .await;
            });
            continue;
        }
        shared.stats.connected.fetch_add(1, Ordering::Relaxed);
        shared
            .stats
            .total_connections
            .fetch_add(1, Ordering::Relaxed);
        let laddr = sock.local_addr().unwrap_or(addr);
        let now = shared.clock.now_ms();
        let info = Arc::new(ClientInfo {
            id: shared.next_client_id.fetch_add(1, Ordering::Relaxed),
            addr,
            laddr,
            created_ms: now,
            name: Mutex::new(String::new()),
            lib_name: Mutex::new(String::new()),
            lib_ver: Mutex::new(String::new()),
            last_cmd: Mutex::new("NULL".to_string()),
            last_active_ms: AtomicU64::new(now),
            db: AtomicU32::new(0),
            tenant: AtomicU32::new(u32::MAX),
            resp: AtomicU8::new(2),
            killed: AtomicBool::new(false),
            kill: Notify::new(),
        });
        shared.clients.lock().insert(info.id, info.clone());
        let sh = shared.clone();
        tokio::spawn(async move {
            let id = info.id;
            connection(sh.clone(), sock, info, tenant).await;
            sh.clients.lock().remove(&id);
            sh.stats.connected.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

const READ_CHUNK: usize = 16 * 1024;

/// Most commands executed under one engine lock acquisition.
pub const MAX_BATCH: usize = 1024;

async fn connection(
    shared: Arc<Shared>,
    mut sock: TcpStream,
    info: Arc<ClientInfo>,
    listener_tenant: Option<TenantId>,
) {
    let mut st = ConnState {
        info: info.clone(),
        proto: ProtocolVersion::Resp2,
        tenant: None,
        listener_tenant,
        db: 0,
        user: "default".to_string(),
        authenticated: true,
        close: false,
        multi: None,
        multi_error: false,
        watched: Vec::new(),
    };
    st.reset(&shared.tenancy, shared.auth_required());
    let mut shutdown = shared.shutdown_rx();
    let mut inbuf: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let mut out: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    loop {
        let (timeout, limits, qbuf_limit) = {
            let c = shared.config.read();
            (
                c.server.timeout.0,
                c.limits.protocol_limits(),
                c.limits.client_query_buffer_limit.0,
            )
        };
        if inbuf.capacity() - inbuf.len() < READ_CHUNK {
            inbuf.reserve(READ_CHUNK);
        }
        let idle = async {
            if timeout.is_zero() {
                std::future::pending::<()>().await;
            } else {
                tokio::time::sleep(timeout).await;
            }
        };
        let n = tokio::select! {
            r = sock.read_buf(&mut inbuf) => match r {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            },
            _ = info.kill.notified() => break,
            _ = shutdown.wait_for(|s| *s) => break,
            _ = idle => break,
        };
        shared
            .stats
            .net_input_bytes
            .fetch_add(n as u64, Ordering::Relaxed);
        // Execute in batches of at most MAX_BATCH commands, so one client's deep pipeline cannot
        // hold the engine lock for long; stop when no complete command is left.
        let mut consumed = 0;
        loop {
            let n = process(&shared, &mut st, &inbuf[consumed..], &limits, &mut out);
            consumed += n;
            if n == 0 || st.close || consumed == inbuf.len() {
                break;
            }
        }
        inbuf.drain(..consumed);
        if !st.close && inbuf.len() as u64 > qbuf_limit {
            ReplyWriter::new(&mut out, st.proto)
                .error("ERR Protocol error: client query buffer limit exceeded");
            st.close = true;
        }
        if !out.is_empty() {
            shared
                .stats
                .net_output_bytes
                .fetch_add(out.len() as u64, Ordering::Relaxed);
            if sock.write_all(&out).await.is_err() {
                break;
            }
            out.clear();
            if out.capacity() > 1 << 20 {
                out.shrink_to(READ_CHUNK);
            }
        }
        if inbuf.is_empty() && inbuf.capacity() > 1 << 20 {
            inbuf.shrink_to(READ_CHUNK);
        }
        if st.close || info.killed() {
            break;
        }
    }
    if !st.watched.is_empty() {
        shared.unwatch_all(info.id, &st.watched);
    }
    let _ = sock.shutdown().await;
}

/// Parses every complete command in `buf`, executes them under one engine lock, appends the
/// replies to `out`. Returns the bytes consumed.
fn process(
    shared: &Shared,
    st: &mut ConnState,
    buf: &[u8],
    limits: &locus_protocol::Limits,
    out: &mut Vec<u8>,
) -> usize {
    let mut pos = 0;
    let mut batch: Vec<Result<locus_protocol::Command<'_>, ProtocolError>> = Vec::new();
    while pos < buf.len() {
        match parse(&buf[pos..], limits) {
            Ok(Some((cmd, n))) => {
                pos += n;
                if !cmd.is_empty() {
                    batch.push(Ok(cmd));
                    if batch.len() >= MAX_BATCH {
                        break;
                    }
                }
            }
            Ok(None) => break,
            Err(e) => {
                match e.framing_lost() {
                    Some(n) => pos += n,
                    None => pos = buf.len(),
                }
                let fatal = e.framing_lost().is_none();
                batch.push(Err(e));
                if fatal {
                    break;
                }
            }
        }
    }
    if batch.is_empty() {
        return pos;
    }
    let now = shared.clock.now_ms();
    // CLIENT LIST shows the latest command, including the one running now.
    if let Some(Ok(cmd)) = batch.iter().rev().find(|c| c.is_ok()) {
        *st.info.last_cmd.lock() = String::from_utf8_lossy(&cmd.args[0]).to_ascii_lowercase();
    }
    {
        let mut eng = shared.engine.lock();
        let proto = st.proto;
        let mut ctx = Ctx {
            eng: &mut eng,
            shared,
            conn: st,
            w: ReplyWriter::new(out, proto),
            tenant: None,
        };
        let mut executed = 0u64;
        for item in &batch {
            match item {
                Ok(cmd) => {
                    executed += 1;
                    ctx.tenant = None;
                    exec::dispatch(&mut ctx, &cmd.args);
                }
                Err(e) => {
                    ctx.w.error(&e.to_string());
                    if e.framing_lost().is_none() {
                        ctx.conn.close = true;
                    }
                }
            }
            if ctx.conn.close || ctx.shared.is_shutting_down() {
                break;
            }
        }
        shared
            .stats
            .total_commands
            .fetch_add(executed, Ordering::Relaxed);
    }
    st.info.last_active_ms.store(now, Ordering::Relaxed);
    pos
}

/// The background task: `hz` times a second, tick the engine and sweep expired keys.
pub async fn tick_loop(shared: Arc<Shared>) {
    let mut shutdown = shared.shutdown_rx();
    loop {
        let hz = shared.config.read().server.hz.max(1);
        let period = Duration::from_millis(1000 / u64::from(hz));
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
        let mut eng = shared.engine.lock();
        eng.tick();
        eng.run_active_expire(ACTIVE_EXPIRE_KEYS_PER_TICK);
    }
}

/// Keys the active expiry sweep may examine per tick (bounded lock hold time).
pub const ACTIVE_EXPIRE_KEYS_PER_TICK: usize = 200;
