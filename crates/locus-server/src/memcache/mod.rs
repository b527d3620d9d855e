//! memcached's face: the text and meta protocols (parsed by `locus_protocol::memcache`) served
//! from the same engine as RESP, on the `[memcached]` listeners.
//!
//! ```text
//!   [memcached] port / [[tenant]] memcached_port
//!        │ accept (server/memcache.rs): read ─► parse a batch ─► lock engine once ─► exec ─► write
//!        ▼
//!   McState (here): which tenants are memcached tenants, per-tenant counters, CAS counters,
//!        delayed flush_all, slabs automove switches
//!   exec.rs: text commands │ meta.rs: meta commands │ stats.rs: stats, stats slabs/items/...
//!   item.rs: the 13-byte item header (flags, CAS, state) and exptime rules
//!   control.rs: the slab controller, confined to the memcached tenants' pools
//! ```
//!
//! Tenancy: a connection on a tenant's `memcached_port` acts on that tenant alone. On the shared
//! `[memcached] port`, keys route by prefix in prefix mode (as RESP keys do) and otherwise to the
//! default tenant; `stats`, `flush_all` and `slabs` act on the connection's *scope*: its
//! listener's tenant, else the default tenant, else nothing (server-wide fields only). No
//! command reads or changes another tenant's items or counters.

pub mod control;
pub mod crawler;
pub mod exec;
pub mod item;
mod meta;
pub mod stats;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use locus_engine::{Engine, TenantId};
use locus_protocol::memcache::MemcacheLimits;
use parking_lot::Mutex;

use crate::config::{ServerConfig, TenancyMode};
use crate::tenancy::Tenancy;

/// The memcached version Locus reports (`version`, `stats`): the protocol follows it.
pub const MEMCACHED_VERSION: &str = "1.6.18";

/// Per-tenant counters with memcached's `stats` names (all changed under the engine lock or
/// by the tenant's own connections; relaxed atomics).
#[derive(Debug, Default)]
pub struct Counters {
    /// `cmd_get`: keys asked by retrievals.
    pub cmd_get: AtomicU64,
    /// `cmd_set`: storage commands.
    pub cmd_set: AtomicU64,
    /// `cmd_flush`.
    pub cmd_flush: AtomicU64,
    /// `cmd_touch`.
    pub cmd_touch: AtomicU64,
    /// `cmd_meta`.
    pub cmd_meta: AtomicU64,
    /// `get_hits`.
    pub get_hits: AtomicU64,
    /// `get_misses`.
    pub get_misses: AtomicU64,
    /// `get_expired`: retrievals (`get`, `gat`, `mg`, `touch`) that found their item expired
    /// (the engine removed it on that lookup).
    pub get_expired: AtomicU64,
    /// `get_flushed` (always 0: a flush removes the items at once).
    pub get_flushed: AtomicU64,
    /// `delete_misses`.
    pub delete_misses: AtomicU64,
    /// `delete_hits`.
    pub delete_hits: AtomicU64,
    /// `incr_misses`.
    pub incr_misses: AtomicU64,
    /// `incr_hits`.
    pub incr_hits: AtomicU64,
    /// `decr_misses`.
    pub decr_misses: AtomicU64,
    /// `decr_hits`.
    pub decr_hits: AtomicU64,
    /// `cas_misses`.
    pub cas_misses: AtomicU64,
    /// `cas_hits`.
    pub cas_hits: AtomicU64,
    /// `cas_badval`.
    pub cas_badval: AtomicU64,
    /// `touch_hits`.
    pub touch_hits: AtomicU64,
    /// `touch_misses`.
    pub touch_misses: AtomicU64,
    /// `auth_cmds`: authentication attempts.
    pub auth_cmds: AtomicU64,
    /// `auth_errors`: failed ones.
    pub auth_errors: AtomicU64,
    /// `store_too_large`.
    pub store_too_large: AtomicU64,
    /// `store_no_memory`.
    pub store_no_memory: AtomicU64,
    /// `total_items`: items stored.
    pub total_items: AtomicU64,
    /// `bytes_read` by this tenant's listener connections.
    pub bytes_read: AtomicU64,
    /// `bytes_written` to them.
    pub bytes_written: AtomicU64,
    /// `curr_connections` on this tenant's listener.
    pub curr_connections: AtomicU64,
    /// `total_connections` on it.
    pub total_connections: AtomicU64,
    /// `rejected_connections`: connections refused past `[memcached] maxconns`.
    pub rejected_connections: AtomicU64,
    /// `idle_kicks`: connections closed for being idle past `server.timeout` (memcached's
    /// `idle_timeout`).
    pub idle_kicks: AtomicU64,
    /// `conn_yields`: times a connection with more requests already read gave up the engine
    /// lock after a full batch (`MAX_BATCH`, memcached's `-R` requests per event), so that
    /// other connections run.
    pub conn_yields: AtomicU64,
    /// `slab_reassign_evictions_nomem`: items a `slabs reassign` evicted because their class
    /// had no free chunk to move them to.
    pub reassign_evictions_nomem: AtomicU64,
}

impl Counters {
    /// Adds 1 to `c`.
    #[inline]
    pub fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// Zeroes the command counters (`stats reset`); connection gauges stay.
    pub fn reset(&self) {
        for c in [
            &self.cmd_get,
            &self.cmd_set,
            &self.cmd_flush,
            &self.cmd_touch,
            &self.cmd_meta,
            &self.get_hits,
            &self.get_misses,
            &self.get_expired,
            &self.get_flushed,
            &self.delete_misses,
            &self.delete_hits,
            &self.incr_misses,
            &self.incr_hits,
            &self.decr_misses,
            &self.decr_hits,
            &self.cas_misses,
            &self.cas_hits,
            &self.cas_badval,
            &self.touch_hits,
            &self.touch_misses,
            &self.auth_cmds,
            &self.auth_errors,
            &self.store_too_large,
            &self.store_no_memory,
            &self.total_items,
            &self.bytes_read,
            &self.bytes_written,
            &self.total_connections,
            &self.idle_kicks,
            &self.rejected_connections,
            &self.conn_yields,
            &self.reassign_evictions_nomem,
        ] {
            c.store(0, Ordering::Relaxed);
        }
    }
}

/// Per (tenant, class) counters memcached's `stats slabs` shows and the engine does not keep.
#[derive(Debug, Default, Clone, Copy)]
pub struct ClassOps {
    /// `delete_hits`.
    pub delete_hits: u64,
    /// `incr_hits`.
    pub incr_hits: u64,
    /// `decr_hits`.
    pub decr_hits: u64,
    /// `cas_hits`.
    pub cas_hits: u64,
    /// `cas_badval`.
    pub cas_badval: u64,
    /// `touch_hits`.
    pub touch_hits: u64,
    /// Retrievals that met an item of this class expired (the tenant's `get_expired`, by
    /// class): `stats items`' `reclaimed` is the class's other expiries.
    pub get_expired: u64,
}

/// Most key prefixes `stats detail` keeps per tenant; keys of further prefixes are not counted
/// (memcached keeps any number, which a client could grow without bound).
pub const MAX_DETAIL_PREFIXES: usize = 10_000;

/// memcached's per-prefix statistics (`stats detail on|off|dump`): for each key prefix (the
/// key up to its first `:`), the gets, hits, sets and deletes of the text commands, counted
/// while detail is on.
#[derive(Debug, Default)]
pub struct Detail {
    on: AtomicBool,
    prefixes: Mutex<Vec<(Vec<u8>, [u64; 4])>>,
}

/// Which `stats detail` counter.
#[derive(Debug, Clone, Copy)]
pub enum DetailOp {
    /// A retrieval of the key; `true` when it hit.
    Get(bool),
    /// A storage command.
    Set,
    /// A `delete`.
    Delete,
}

impl Detail {
    /// `stats detail on|off`.
    pub fn set_on(&self, on: bool) {
        self.on.store(on, Ordering::Relaxed);
    }

    /// Counts `op` on `key` when detail is on and the key has a prefix.
    pub fn record(&self, key: &[u8], op: DetailOp) {
        if !self.on.load(Ordering::Relaxed) {
            return;
        }
        let Some(end) = key.iter().position(|&b| b == b':') else {
            return;
        };
        let prefix = &key[..end];
        let mut v = self.prefixes.lock();
        let i = match v.iter().position(|(p, _)| p.as_slice() == prefix) {
            Some(i) => i,
            None if v.len() < MAX_DETAIL_PREFIXES => {
                v.push((prefix.to_vec(), [0; 4]));
                v.len() - 1
            }
            None => return,
        };
        let c = &mut v[i].1;
        match op {
            DetailOp::Get(hit) => {
                c[0] += 1;
                c[1] += u64::from(hit);
            }
            DetailOp::Set => c[2] += 1,
            DetailOp::Delete => c[3] += 1,
        }
    }

    /// The `PREFIX <p> get <n> hit <n> set <n> del <n>` lines, in first-seen order.
    pub fn dump(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (p, c) in self.prefixes.lock().iter() {
            out.extend_from_slice(b"PREFIX ");
            out.extend_from_slice(p);
            out.extend_from_slice(
                format!(" get {} hit {} set {} del {}\r\n", c[0], c[1], c[2], c[3]).as_bytes(),
            );
        }
        out
    }

    /// `stats reset`: the prefixes go (detail stays on or off).
    pub fn clear(&self) {
        self.prefixes.lock().clear();
    }
}

/// One memcached tenant's state.
#[derive(Debug)]
pub struct McTenant {
    /// Its counters.
    pub counters: Counters,
    /// Its class counters, by engine class id.
    pub class_ops: Mutex<Vec<ClassOps>>,
    /// The last CAS unique handed out (each modification takes the next).
    cas: AtomicU64,
    /// A delayed `flush_all`: its clock time in ms, 0 = none.
    flush_at_ms: AtomicU64,
    /// `slabs automove`: whether the slab controller may move this tenant's pages (shared with
    /// the controller filter).
    pub automove: Arc<AtomicBool>,
    /// `verbosity` (kept and shown by `stats settings`; Locus logs nothing per command).
    pub verbosity: AtomicU64,
    /// `lru_crawler` settings.
    pub crawler: crawler::CrawlerSettings,
    /// `stats detail`.
    pub detail: Detail,
    /// The tenant's `user` and `password`, when it has both (ASCII authentication).
    credentials: Option<(String, String)>,
    /// Whether the shared `[memcached] port` reaches this tenant.
    on_shared_port: bool,
}

impl McTenant {
    fn new(automove: Arc<AtomicBool>) -> Self {
        Self {
            crawler: crawler::CrawlerSettings::default(),
            detail: Detail::default(),
            credentials: None,
            on_shared_port: false,
            counters: Counters::default(),
            class_ops: Mutex::new(Vec::new()),
            cas: AtomicU64::new(0),
            flush_at_ms: AtomicU64::new(0),
            automove,
            verbosity: AtomicU64::new(0),
        }
    }

    /// The next CAS unique.
    pub fn next_cas(&self) -> u64 {
        self.cas.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Adds to a class counter.
    pub fn class_op(&self, class: Option<locus_engine::ClassId>, f: impl FnOnce(&mut ClassOps)) {
        if let Some(c) = class {
            let mut v = self.class_ops.lock();
            let i = c.0 as usize;
            if v.len() <= i {
                v.resize(i + 1, ClassOps::default());
            }
            f(&mut v[i]);
        }
    }
}

/// Where one memcached connection routes: its listener's tenant, and the tenant it has
/// authenticated as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct McListener {
    /// The tenant of a `memcached_port` (every key, every command); `None` for the shared port.
    pub tenant: Option<TenantId>,
    /// The tenant whose credentials the connection presented (`[memcached] auth`): only its
    /// keys are served, and it is the connection's scope. `None` before authentication and
    /// without `auth`.
    pub bound: Option<TenantId>,
}

impl McListener {
    /// A listener's routing, before any authentication.
    pub fn new(tenant: Option<TenantId>) -> Self {
        Self {
            tenant,
            bound: None,
        }
    }
}

/// The memcached side of the server: built once at bind, shared by the memcached connections.
#[derive(Debug)]
pub struct McState {
    /// By `TenantId.0`: `Some` for the memcached tenants.
    tenants: Vec<Option<McTenant>>,
    tenancy: Tenancy,
    /// The parser's limits.
    pub limits: MemcacheLimits,
    /// The slab controller's name (`stats settings`), if any runs.
    pub controller: Option<String>,
    /// Whether the memcached tenants' own slab controller runs, so that their classes give
    /// surplus free memory back while `slabs automove` is on ([`control::install`]).
    pub gives_back_free: bool,
    /// `[memcached]` settings shown by `stats settings`: growth factor, chunk size.
    pub growth_factor: f64,
    /// memcached's `-n`.
    pub chunk_size: u32,
    /// Whether the shared port exists.
    pub shared_port: bool,
    /// `[memcached] auth`: connections authenticate before their first command.
    pub auth: bool,
    /// `[memcached] maxconns`: most connections of one tenant.
    pub maxconns: u64,
}

impl McState {
    /// The memcached tenants of `cfg` (engine ids `ids` of `cfg.tenant_sections()`): those with
    /// a `memcached_port`, and those the shared port reaches (prefix mode: every tenant with a
    /// prefix; otherwise the default tenant).
    pub fn new(cfg: &ServerConfig, ids: &[TenantId], tenancy: &Tenancy) -> Self {
        let sections = cfg.tenant_sections();
        let shared_port = cfg.memcached.port.is_some();
        let mut tenants: Vec<Option<McTenant>> = Vec::new();
        for (s, id) in sections.iter().zip(ids) {
            let reached = s.memcached_port.is_some()
                || (shared_port
                    && (tenancy.default == Some(*id)
                        || (tenancy.mode == TenancyMode::Prefix && s.prefix.is_some())));
            let i = id.0 as usize;
            if tenants.len() <= i {
                tenants.resize_with(i + 1, || None);
            }
            if reached {
                let mut mt = McTenant::new(Arc::new(AtomicBool::new(true)));
                mt.credentials = s.user.clone().zip(s.password.clone());
                mt.on_shared_port = shared_port
                    && (tenancy.default == Some(*id)
                        || (tenancy.mode == TenancyMode::Prefix && s.prefix.is_some()));
                tenants[i] = Some(mt);
            }
        }
        Self {
            tenants,
            tenancy: tenancy.clone(),
            limits: MemcacheLimits {
                max_item_size: usize::try_from(cfg.memcached.max_item_size.0).unwrap_or(usize::MAX),
                ..MemcacheLimits::default()
            },
            controller: None,
            gives_back_free: false,
            growth_factor: cfg.memcached.growth_factor,
            chunk_size: cfg.memcached.chunk_size,
            shared_port,
            auth: cfg.memcached.auth,
            maxconns: cfg.memcached.maxconns,
        }
    }

    /// ASCII authentication on `listener`: the memcached tenant it serves whose user and
    /// password these are (a tenant's credentials open only its own tenant, on a listener that
    /// reaches it). Counts `auth_cmds`, and `auth_errors` on failure, for the tenant the
    /// listener serves (the shared port: the tenant reached, else its default tenant), so no
    /// tenant sees another's attempts.
    pub fn authenticate(
        &self,
        listener: McListener,
        user: &[u8],
        password: &[u8],
    ) -> Option<TenantId> {
        let found = self.tenant_ids().into_iter().find(|&t| {
            let Some(mt) = self.tenant(t) else {
                return false;
            };
            let reaches = match listener.tenant {
                Some(own) => own == t,
                None => mt.on_shared_port,
            };
            reaches
                && mt.credentials.as_ref().is_some_and(|(u, p)| {
                    // Both compared whole, so timing does not tell which part was wrong.
                    let user_ok = locus_protocol::memcache::secrets_equal(u.as_bytes(), user);
                    let pass_ok = locus_protocol::memcache::secrets_equal(p.as_bytes(), password);
                    user_ok & pass_ok
                })
        });
        let counted = found
            .or_else(|| self.scope(listener))
            .and_then(|t| self.tenant(t));
        if let Some(mt) = counted {
            Counters::bump(&mt.counters.auth_cmds);
            if found.is_none() {
                Counters::bump(&mt.counters.auth_errors);
            }
        }
        found
    }

    /// The memcached tenants' ids.
    pub fn tenant_ids(&self) -> Vec<TenantId> {
        self.tenants
            .iter()
            .enumerate()
            .filter(|(_, t)| t.is_some())
            .map(|(i, _)| TenantId(i as u32))
            .collect()
    }

    /// The state of memcached tenant `t`.
    pub fn tenant(&self, t: TenantId) -> Option<&McTenant> {
        self.tenants.get(t.0 as usize).and_then(Option::as_ref)
    }

    /// The tenant's name.
    pub fn name(&self, t: TenantId) -> &str {
        self.tenancy.name(t)
    }

    /// The tenant a key of a connection on `listener` belongs to (only memcached tenants).
    pub fn route(&self, listener: McListener, key: &[u8]) -> Option<TenantId> {
        let t = match listener.tenant {
            Some(t) => Some(t),
            None if self.tenancy.mode == TenancyMode::Prefix => self.tenancy.for_key(key),
            None => self.tenancy.default,
        }?;
        (self.tenant(t).is_some() && listener.bound.is_none_or(|b| b == t)).then_some(t)
    }

    /// The tenant whose counters, flush and slabs a connection on `listener` acts on.
    pub fn scope(&self, listener: McListener) -> Option<TenantId> {
        listener
            .bound
            .or(listener.tenant)
            .or(self.tenancy.default)
            .filter(|t| self.tenant(*t).is_some())
    }

    /// Runs tenant `t`'s delayed `flush_all` if it is due (before any command of the tenant);
    /// returns whether it ran.
    pub fn run_due_flush(&self, eng: &mut Engine, t: TenantId, now_ms: u64) -> bool {
        if let Some(mt) = self.tenant(t) {
            let at = mt.flush_at_ms.load(Ordering::Relaxed);
            if at != 0 && at <= now_ms {
                mt.flush_at_ms.store(0, Ordering::Relaxed);
                flush_tenant(eng, mt, t);
                return true;
            }
        }
        false
    }

    /// `flush_all` on tenant `t`: now (`at_ms` None) or at a clock time.
    pub fn flush(&self, eng: &mut Engine, t: TenantId, at_ms: Option<u64>) {
        if let Some(mt) = self.tenant(t) {
            match at_ms {
                None => {
                    mt.flush_at_ms.store(0, Ordering::Relaxed);
                    flush_tenant(eng, mt, t);
                }
                Some(at) => mt.flush_at_ms.store(at.max(1), Ordering::Relaxed),
            }
        }
    }
}

/// memcached marks flushed items invisible and counts the gets that meet one (`get_flushed`);
/// here the items go at once, so `get_flushed` stays 0.
fn flush_tenant(eng: &mut Engine, _mt: &McTenant, t: TenantId) {
    eng.flush(t);
}
