//! Locus network server: listeners, connections, tenant resolution, command execution, INFO, config.
//!
//! Speaks the Redis protocol (RESP2 and RESP3, pipelining, inline commands) and memcached's text
//! and meta protocols in front of one [`locus_engine::Engine`], serving several tenants whose
//! keyspaces never mix.
//!
//! ```text
//!   locus serve (crates/locus) ──► ServerConfig (config/: TOML + CLI, validate())
//!                                      │
//!                              Server::bind ── Engine::new + add_tenant per [[tenant]]
//!                                      │        Tenancy (tenancy.rs: port/user/db/prefix tables)
//!                                      ▼
//!   tokio runtime ── accept loops ──► connection tasks (server/)    ──► exec/ (one file per
//!        │                              parse with locus-protocol        command family, table.rs
//!        └── tick task (hz)             execute a batch under ONE lock    = COMMAND INFO/DOCS)
//! ```
//!
//! Components:
//! * [`config`]: [`ServerConfig`], every option with its default; `validate()` lists every problem.
//! * [`tenancy`]: which tenant a connection or key belongs to.
//! * [`server`]: listeners, connections, pipelined execution, the background tick, shutdown.
//! * [`exec`]: the command table and handlers; typed [`exec::CmdError`] mapped to Redis's wording.
//! * [`glob`]: Redis's `stringmatch` for KEYS / SCAN MATCH / CONFIG GET.
//! * [`metrics`]: the operator's HTTP listener (`[metrics]`): Prometheus, the live page, JSON.
//! * [`snapshot`]: SAVE/BGSAVE, the snapshot file format, loading at start-up (`[snapshot]`).
//! * [`memcache`]: memcached's text and meta commands on the engine (`[memcached]`).
//! * [`dumpload`]: pRedis's dump/load of idle tenants, in bounded steps (`[dump_load]`).
//! * [`tiers`]: the slow-tier worker thread and `INFO tiers` (`[tier]`).
//! * [`malloc`]: the process allocator's settings for a long-running cache (glibc's mmap threshold).
//!
//! Entry points: [`run`] (blocking, used by `locus serve`), [`Server::bind`] then [`Server::run`]
//! or [`Server::spawn`] (in-process, used by tests, with an injectable clock).

pub mod config;
pub mod dumpload;
pub mod exec;
pub mod glob;
pub mod instant;
pub mod malloc;
pub mod memcache;
pub mod metrics;
pub mod server;
pub mod snapshot;
pub mod tenancy;
pub mod tiers;

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

pub use config::{ConfigError, ServerConfig, TenancyMode};
use locus_common::{SharedClock, SystemClock};
use locus_engine::{Engine, EngineError, TenantId};
use server::Shared;
use tenancy::Tenancy;

/// The Redis version Locus reports (HELLO, INFO): the command set and reply shapes follow it.
pub const REDIS_VERSION: &str = "7.2.0";

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// Invalid configuration.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The engine refused the configuration.
    #[error("engine: {0}")]
    Engine(#[from] EngineError),
    /// A listener could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The runtime could not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
}

/// A configured, bound, not yet running server.
pub struct Server {
    shared: Arc<Shared>,
    listeners: Vec<(std::net::TcpListener, Option<TenantId>)>,
    /// The `[metrics]` HTTP listener, when configured.
    metrics: Option<std::net::TcpListener>,
    /// The memcached listeners and their state (`[memcached]`).
    memcached: (
        Arc<memcache::McState>,
        Vec<(std::net::TcpListener, memcache::McListener)>,
    ),
    threads: usize,
    handle_signals: bool,
    /// What loading the snapshots at start-up did (`None`: snapshots off or not loaded).
    load_report: Option<snapshot::LoadReport>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("addrs", &self.local_addrs())
            .finish_non_exhaustive()
    }
}

/// One listening address and the tenant it serves (port mode), for the startup line.
#[derive(Debug, Clone)]
pub struct ListenerInfo {
    /// The bound address (port resolved when configured as 0).
    pub addr: SocketAddr,
    /// The tenant's name in port mode.
    pub tenant: Option<String>,
    /// Whether it speaks memcached's protocols (else RESP).
    pub memcached: bool,
}

impl Server {
    /// Validates `cfg`, builds the engine and its tenants, binds every listener.
    ///
    /// # Errors
    /// [`ServerError`] for an invalid configuration, an engine error or a bind failure.
    pub fn bind(
        cfg: ServerConfig,
        clock: SharedClock,
        config_file: Option<String>,
    ) -> Result<Server, ServerError> {
        cfg.validate()?;
        let mut engine = Engine::new(cfg.engine_config(), clock.clone())?;
        // A controller decides on the tick task, never inside a client's request (issue #23).
        engine.set_decisions_on_data_path(false);
        let mut ids = Vec::new();
        for t in cfg.tenant_sections() {
            ids.push(engine.add_tenant(cfg.tenant_config(&t))?);
        }
        cfg.install_controller(&mut engine)?;
        let tenancy = Tenancy::new(&cfg, &ids);
        // Snapshot files of older builds held memcached items in another form (snapshot).
        snapshot::set_memcached_tenants(
            cfg.tenant_sections()
                .iter()
                .filter(|s| cfg.memcached.port.is_some() || s.memcached_port.is_some())
                .map(|s| s.name.clone())
                .collect(),
        );
        let load_report = (cfg.snapshot.enabled() && cfg.snapshot.load).then(|| {
            let named: Vec<(TenantId, String)> =
                tenancy.names.iter().map(|(n, t)| (*t, n.clone())).collect();
            snapshot::load_all(
                &mut engine,
                &named,
                std::path::Path::new(cfg.snapshot.dir.trim()),
            )
        });
        // Dump files a crash left (pRedis's dump/load): back in, after the snapshot.
        let mut load_report = load_report;
        if cfg.snapshot.enabled() {
            let named: Vec<(TenantId, String)> =
                tenancy.names.iter().map(|(n, t)| (*t, n.clone())).collect();
            let lines = dumpload::load_leftovers(
                &mut engine,
                &named,
                std::path::Path::new(cfg.snapshot.dir.trim()),
            );
            if !lines.is_empty() {
                load_report
                    .get_or_insert_with(snapshot::LoadReport::default)
                    .lines
                    .extend(lines);
            }
        }
        let mut mc = memcache::McState::new(&cfg, &ids, &tenancy);
        if cfg.memcached_enabled() {
            let ctl = cfg
                .memcached
                .build_controller(&cfg.controller)
                .map_err(|problems| ConfigError::Invalid { problems })?;
            memcache::control::install(&mut engine, &mut mc, ctl);
            if cfg.controller.enabled() {
                mc.controller = Some(cfg.controller.name.clone());
            }
        }
        let ip: std::net::IpAddr = cfg.server.bind.parse().map_err(|_| ServerError::Bind {
            addr: cfg.server.bind.clone(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "not an IP address"),
        })?;
        let mut wanted: Vec<(u16, Option<TenantId>)> = Vec::new();
        if cfg.tenancy.mode != TenancyMode::Port || tenancy.default.is_some() {
            wanted.push((
                cfg.server.port,
                tenancy
                    .default
                    .filter(|_| cfg.tenancy.mode == TenancyMode::Port),
            ));
        }
        if cfg.tenancy.mode == TenancyMode::Port {
            for (s, id) in cfg.tenant_sections().iter().zip(&ids) {
                if let Some(p) = s.port {
                    wanted.push((p, Some(*id)));
                }
            }
        }
        let mut listeners = Vec::new();
        for (port, t) in wanted {
            let addr = SocketAddr::new(ip, port);
            let l = listen(addr, cfg.server.tcp_backlog).map_err(|source| ServerError::Bind {
                addr: addr.to_string(),
                source,
            })?;
            l.set_nonblocking(true)
                .map_err(|source| ServerError::Bind {
                    addr: addr.to_string(),
                    source,
                })?;
            listeners.push((l, t));
        }
        let metrics = match cfg
            .metrics
            .addr()
            .map_err(|p| ConfigError::Invalid { problems: vec![p] })?
        {
            None => None,
            Some(addr) => {
                let bind_err = |source| ServerError::Bind {
                    addr: addr.to_string(),
                    source,
                };
                let l = listen(addr, 128).map_err(bind_err)?;
                l.set_nonblocking(true).map_err(bind_err)?;
                Some(l)
            }
        };
        let mut mc_wanted: Vec<(u16, memcache::McListener)> = Vec::new();
        if let Some(p) = cfg.memcached.port {
            mc_wanted.push((p, memcache::McListener::new(None)));
        }
        for (s, id) in cfg.tenant_sections().iter().zip(&ids) {
            if let Some(p) = s.memcached_port {
                mc_wanted.push((p, memcache::McListener::new(Some(*id))));
            }
        }
        let mut mc_listeners = Vec::new();
        for (port, route) in mc_wanted {
            let addr = SocketAddr::new(ip, port);
            let bind_err = |source| ServerError::Bind {
                addr: addr.to_string(),
                source,
            };
            let l = listen(addr, cfg.server.tcp_backlog).map_err(bind_err)?;
            l.set_nonblocking(true).map_err(bind_err)?;
            mc_listeners.push((l, route));
        }
        let threads = cfg.server.threads;
        let notify = cfg.server.notify_keyspace_events.clone();
        let shared = Arc::new(Shared::new(engine, clock, tenancy, cfg, config_file));
        shared.set_notify_flags(&mut shared.engine(), &notify);
        shared.set_listeners(
            listeners
                .iter()
                .filter_map(|(l, t)| l.local_addr().ok().map(|a| (a, *t)))
                .collect(),
        );
        Ok(Server {
            shared,
            listeners,
            metrics,
            memcached: (Arc::new(mc), mc_listeners),
            threads,
            handle_signals: false,
            load_report,
        })
    }

    /// The bound addresses, with their tenant in port mode.
    pub fn local_addrs(&self) -> Vec<ListenerInfo> {
        let mut v: Vec<ListenerInfo> = self
            .shared
            .listeners()
            .iter()
            .map(|(a, t)| ListenerInfo {
                addr: *a,
                tenant: t.map(|t| self.shared.tenancy().name(t).to_string()),
                memcached: false,
            })
            .collect();
        v.extend(self.memcached.1.iter().filter_map(|(l, route)| {
            Some(ListenerInfo {
                addr: l.local_addr().ok()?,
                tenant: route
                    .tenant
                    .map(|t| self.shared.tenancy().name(t).to_string()),
                memcached: true,
            })
        }));
        v
    }

    /// The bound address of the `[metrics]` HTTP listener, if configured.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// What loading the snapshots at start-up did (`None`: snapshots off or loading off).
    pub fn load_report(&self) -> Option<&snapshot::LoadReport> {
        self.load_report.as_ref()
    }

    /// Number of tenants.
    pub fn tenant_count(&self) -> usize {
        self.shared.tenancy().names.len()
    }

    /// Stop on SIGINT / SIGTERM (for `locus serve`; off for in-process tests).
    pub fn with_signals(mut self, on: bool) -> Self {
        self.handle_signals = on;
        self
    }

    /// Serves until shutdown (SHUTDOWN, a signal when enabled). Blocks the calling thread.
    ///
    /// # Errors
    /// [`ServerError::Runtime`] if the tokio runtime cannot start, [`ServerError::Bind`] if a
    /// listener cannot be registered with it.
    pub fn run(self) -> Result<(), ServerError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(self.threads)
            .thread_name("locus-worker")
            .enable_all()
            .build()
            .map_err(ServerError::Runtime)?;
        let shared = self.shared.clone();
        let signals = self.handle_signals;
        rt.block_on(async move {
            let mut tasks = Vec::new();
            for (l, t) in self.listeners {
                let addr = l.local_addr().map(|a| a.to_string()).unwrap_or_default();
                let l = tokio::net::TcpListener::from_std(l)
                    .map_err(|source| ServerError::Bind { addr, source })?;
                tasks.push(tokio::spawn(server::accept_loop(shared.clone(), l, t)));
            }
            let (mc, mc_listeners) = self.memcached;
            for (l, route) in mc_listeners {
                let addr = l.local_addr().map(|a| a.to_string()).unwrap_or_default();
                let l = tokio::net::TcpListener::from_std(l)
                    .map_err(|source| ServerError::Bind { addr, source })?;
                tasks.push(tokio::spawn(server::memcache_accept_loop(
                    shared.clone(),
                    mc.clone(),
                    l,
                    route,
                )));
            }
            tasks.push(tokio::spawn(server::tick_loop(shared.clone())));
            // sdTMM's workers on a thread of their own (a no-op thread without tiers).
            let tier_thread = {
                let sh = shared.clone();
                std::thread::Builder::new()
                    .name("locus-tiers".into())
                    .spawn(move || tiers::worker_loop(&sh))
                    .map_err(ServerError::Runtime)?
            };
            if let Some(l) = self.metrics {
                let addr = l.local_addr().map(|a| a.to_string()).unwrap_or_default();
                let l = tokio::net::TcpListener::from_std(l)
                    .map_err(|source| ServerError::Bind { addr, source })?;
                tasks.push(tokio::spawn(metrics::run(shared.clone(), l)));
            }
            if signals {
                let sh = shared.clone();
                tokio::spawn(async move {
                    wait_for_signal().await;
                    // A clean stop saves first when `[snapshot] on_shutdown` says so; a failed
                    // save still stops (the operator asked for the process to end).
                    let _ = server::save_before_shutdown(&sh, &mut sh.engine(), false);
                    sh.request_shutdown();
                });
            }
            for t in tasks {
                let _ = t.await;
            }
            // Give connection tasks a moment to flush their last replies and close.
            for _ in 0..50 {
                if shared
                    .stats()
                    .connected
                    .load(std::sync::atomic::Ordering::Relaxed)
                    == 0
                {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            let _ = tier_thread.join();
            Ok(())
        })
    }

    /// Runs the server on a background thread (in-process tests).
    pub fn spawn(self) -> ServerHandle {
        let shared = self.shared.clone();
        let addrs = self.local_addrs();
        let metrics = self.metrics_addr();
        let thread = std::thread::Builder::new()
            .name("locus-server".into())
            .spawn(move || self.run())
            .ok();
        ServerHandle {
            shared,
            addrs,
            metrics,
            thread,
        }
    }
}

#[cfg(unix)]
async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
}

#[cfg(not(unix))]
async fn wait_for_signal() {
    let _ = tokio::signal::ctrl_c().await;
}

/// A server running on a background thread.
#[derive(Debug)]
pub struct ServerHandle {
    shared: Arc<Shared>,
    addrs: Vec<ListenerInfo>,
    metrics: Option<SocketAddr>,
    thread: Option<JoinHandle<Result<(), ServerError>>>,
}

impl ServerHandle {
    /// The bound addresses.
    pub fn addrs(&self) -> &[ListenerInfo] {
        &self.addrs
    }

    /// The `[metrics]` HTTP listener's address, if configured.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics
    }

    /// The address serving `tenant` (port mode), or the main listener for `None`.
    pub fn addr_of(&self, tenant: Option<&str>) -> Option<SocketAddr> {
        self.addrs
            .iter()
            .find(|l| l.tenant.as_deref() == tenant)
            .map(|l| l.addr)
    }

    /// Runs `f` with the engine locked (tests inspect state directly).
    pub fn with_engine<R>(&self, f: impl FnOnce(&mut Engine) -> R) -> R {
        f(&mut self.shared.engine())
    }

    /// Whether the server is stopping or stopped.
    pub fn is_shutting_down(&self) -> bool {
        self.shared.is_shutting_down()
    }

    /// Stops the server and waits for its thread.
    ///
    /// # Errors
    /// The error the server thread ended with, if any.
    pub fn shutdown(mut self) -> Result<(), ServerError> {
        self.shared.request_shutdown();
        self.join()
    }

    /// Waits for the server thread to end (after SHUTDOWN).
    ///
    /// # Errors
    /// The error the server thread ended with, if any.
    pub fn join(&mut self) -> Result<(), ServerError> {
        match self.thread.take() {
            Some(t) => t.join().unwrap_or(Ok(())),
            None => Ok(()),
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.shared.request_shutdown();
        let _ = self.join();
    }
}

/// A listening socket with Redis's options: `SO_REUSEADDR` (a restart rebinds at once) and a
/// listen backlog of `backlog` (`tcp-backlog`; the kernel caps it at `net.core.somaxconn`), so a
/// burst of connects queues instead of waiting for SYN retries.
fn listen(addr: SocketAddr, backlog: u32) -> std::io::Result<std::net::TcpListener> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    s.set_reuse_address(true)?;
    if addr.is_ipv6() {
        s.set_only_v6(true)?;
    }
    s.bind(&addr.into())?;
    s.listen(i32::try_from(backlog).unwrap_or(i32::MAX))?;
    Ok(s.into())
}

/// Validates `cfg`, binds, and serves with the system clock until SIGINT/SIGTERM/SHUTDOWN.
///
/// # Errors
/// [`ServerError`] if the configuration is invalid or a listener cannot be bound.
pub fn run(cfg: ServerConfig) -> Result<(), ServerError> {
    Server::bind(cfg, Arc::new(SystemClock), None)?
        .with_signals(true)
        .run()
}

/// A handler panic is contained to its connection: tested over real sockets with a command that
/// exists only in test builds (`locus.test-panic`, see `server/conn.rs`).
#[cfg(test)]
mod panic_containment {
    use std::io::{Read, Write};
    use std::net::{SocketAddr, TcpStream};
    use std::time::Duration;

    use super::*;

    fn connect(addr: SocketAddr) -> TcpStream {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s
    }

    /// Sends `req` and reads until `want` bytes arrived or the peer closed.
    fn call(s: &mut TcpStream, req: &[u8], want: usize) -> Vec<u8> {
        s.write_all(req).unwrap();
        let mut out = Vec::new();
        let mut buf = [0u8; 512];
        while out.len() < want {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
        out
    }

    #[test]
    fn a_panicking_handler_answers_its_client_closes_it_and_nothing_else() {
        let mut cfg = ServerConfig::default();
        cfg.server.port = 0;
        cfg.server.threads = 1;
        let handle = Server::bind(cfg, Arc::new(SystemClock), None)
            .unwrap()
            .spawn();
        let addr = handle.addrs()[0].addr;
        let mut other = connect(addr);
        assert_eq!(
            call(&mut other, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n", 5),
            b"+OK\r\n"
        );
        // The panicking client: the command before the panic is answered, the panic becomes an
        // error reply, the command after it is never run, and the connection is closed.
        let mut victim = connect(addr);
        let mut req = b"*1\r\n$4\r\nPING\r\n".to_vec();
        req.extend_from_slice(b"*1\r\n$16\r\nLOCUS.TEST-PANIC\r\n");
        req.extend_from_slice(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nlater\r\n");
        let got = call(&mut victim, &req, usize::MAX);
        let text = String::from_utf8_lossy(&got);
        assert_eq!(
            text,
            "+PONG\r\n-ERR internal error while executing 'locus.test-panic'; closing this \
             connection\r\n"
        );
        // Everyone else is served, the engine lock was released, the value is untouched.
        assert_eq!(
            call(&mut other, b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", 7),
            b"$1\r\nv\r\n"
        );
        let mut fresh = connect(addr);
        assert_eq!(call(&mut fresh, b"*1\r\n$4\r\nPING\r\n", 7), b"+PONG\r\n");
        let info = call(&mut fresh, b"*2\r\n$4\r\nINFO\r\n$5\r\nlocus\r\n", 64);
        let info = String::from_utf8_lossy(&info).into_owned();
        let mut rest = info;
        while !rest.contains("internal_errors:") {
            let more = call(&mut fresh, b"", 1);
            assert!(!more.is_empty(), "INFO locus has internal_errors");
            rest.push_str(&String::from_utf8_lossy(&more));
        }
        assert!(rest.contains("internal_errors:1\r\n"), "{rest}");
        assert!(!handle.is_shutting_down());
        handle.shutdown().unwrap();
    }

    /// Issue 23, acceptance 4: a command that panics half way through its writes (two SETs
    /// done, then the panic) answers its client with an error, and leaves its tenant and every
    /// other tenant consistent: the engine's invariants hold (indexes, page accounting, TTLs),
    /// the writes made before the panic are whole, the other tenant's data is untouched, and
    /// both tenants are served on, on the same engine.
    #[test]
    fn a_panic_half_way_through_the_writes_leaves_every_tenant_consistent() {
        let text = "[server]\nport = 0\nthreads = 2\n[memory]\nmaxmemory = \"8mb\"\n\
                    [tenancy]\nmode = \"db\"\n\
                    [[tenant]]\nname = \"a\"\ndb = 0\n[[tenant]]\nname = \"b\"\ndb = 1\n";
        let cfg = ServerConfig::from_toml(text, "test").unwrap();
        let handle = Server::bind(cfg, Arc::new(SystemClock), None)
            .unwrap()
            .spawn();
        let addr = handle.addrs()[0].addr;
        let cmd = |parts: &[&str]| {
            let mut r = format!("*{}\r\n", parts.len());
            for p in parts {
                r.push_str(&format!("${}\r\n{p}\r\n", p.len()));
            }
            r.into_bytes()
        };
        // Tenant b (db 1) holds 500 keys; tenant a (db 0) 500 of its own.
        let mut b = connect(addr);
        assert_eq!(call(&mut b, &cmd(&["SELECT", "1"]), 5), b"+OK\r\n");
        let mut a = connect(addr);
        for i in 0..500 {
            let (k, v) = (format!("k{i}"), format!("b-{i}"));
            assert_eq!(call(&mut b, &cmd(&["SET", &k, &v]), 5), b"+OK\r\n");
            let v = format!("a-{i}");
            assert_eq!(call(&mut a, &cmd(&["SET", &k, &v]), 5), b"+OK\r\n");
        }
        // a's command writes two keys (one new, one overwritten) and panics.
        let got = call(
            &mut a,
            &cmd(&["LOCUS.TEST-PANIC", "fresh", "1", "k7", "rewritten"]),
            usize::MAX,
        );
        assert!(
            String::from_utf8_lossy(&got).starts_with("-ERR internal error while executing"),
            "{}",
            String::from_utf8_lossy(&got)
        );
        handle.with_engine(|e| e.check_invariants());
        // The writes before the panic are whole; everything else of a is as it was.
        let mut a = connect(addr);
        assert_eq!(call(&mut a, &cmd(&["GET", "fresh"]), 7), b"$1\r\n1\r\n");
        assert_eq!(
            call(&mut a, &cmd(&["GET", "k7"]), 15),
            b"$9\r\nrewritten\r\n"
        );
        assert_eq!(call(&mut a, &cmd(&["DBSIZE"]), 6), b":501\r\n");
        // b is untouched and served.
        for i in (0..500).step_by(37) {
            let want = format!("b-{i}");
            let reply = format!("${}\r\n{want}\r\n", want.len());
            assert_eq!(
                call(&mut b, &cmd(&["GET", &format!("k{i}")]), reply.len()),
                reply.as_bytes()
            );
        }
        assert_eq!(call(&mut b, &cmd(&["DBSIZE"]), 6), b":500\r\n");
        // Both write on.
        assert_eq!(call(&mut a, &cmd(&["SET", "after", "x"]), 5), b"+OK\r\n");
        assert_eq!(call(&mut b, &cmd(&["SET", "after", "y"]), 5), b"+OK\r\n");
        handle.with_engine(|e| e.check_invariants());
        handle.shutdown().unwrap();
    }
}
