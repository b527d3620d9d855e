//! Client-side caching (Redis's `CLIENT TRACKING`): every tenant's tracking table and the
//! delivery of invalidation messages.
//!
//! ```text
//!  read by a tracking client (exec/tracking: after the handler)
//!    └─► remember: (tenant, key) ─► ids of the clients that may cache it
//!  write (Shared::touch_watched), expiry / eviction (the engine's key events), FLUSHDB/FLUSHALL
//!    └─► invalidate: the key's ids leave the table; each client gets `invalidate [key]`
//!        BCAST: the key waits under every matching prefix of the tenant until the end of the
//!        command (one message per prefix, as Redis sends them from beforeSleep)
//!  delivery: RESP3 push `>2 invalidate [keys]` to the client (or its REDIRECT target), or a
//!  `message __redis__:invalidate [keys]` to a RESP2 redirect target in subscribed mode; to the
//!  client whose command is running it is held and follows that command's reply, except the
//!  invalidation of a key the engine evicted to make room for the command: that one goes
//!  before the reply (Redis evicts before it runs a command, so its invalidations precede the
//!  reply, while those of the command's own writes and of the keys it found expired follow it)
//! ```
//!
//! Tenancy: the table, the prefixes and their counts are per tenant (keys are tenant-scoped), so
//! a write in one tenant only ever finds that tenant's trackers, and a client receives an
//! invalidation of tenant `t`'s key only while it may act on `t` (it is the admin, bound to `t`,
//! or bound to no tenant). Each tenant's table holds at most `tracking-table-max-keys` keys (past
//! it keys are dropped with an invalidation, as Redis does) and its bytes are charged to the
//! tenant's memory (`Engine::charge_outside`): a table that the tenant's budget cannot hold
//! drops keys the same way.
//!
//! Cost: with no tracking client, a write costs one atomic load here ([`Tracking::active`]); a
//! read costs a branch on the connection's own flag (exec/tracking).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use locus_engine::{Engine, TenantId};
use locus_protocol::{ProtocolVersion, ReplyWriter};
use parking_lot::Mutex;

use super::{ClientInfo, Shared};

/// Bytes one tracked key costs besides its name (the map entry and its id vector).
pub const KEY_OVERHEAD: u64 = 64;
/// Bytes one client id under a key or a prefix costs.
pub const ID_BYTES: u64 = 8;
/// Most keys dropped from a table in one pass (the rest at the next command or tick).
pub const EVICT_EFFORT: usize = 10_000;
/// Redis's default `tracking-table-max-keys`.
pub const DEFAULT_MAX_KEYS: u64 = 1_000_000;
/// The channel a RESP2 redirect target receives invalidations on.
pub const CHANNEL: &[u8] = b"__redis__:invalidate";

/// How a client tracks (CLIENT TRACKING ON's options).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// REDIRECT id (0: none).
    pub redirect: u64,
    /// BCAST.
    pub bcast: bool,
    /// OPTIN.
    pub optin: bool,
    /// OPTOUT.
    pub optout: bool,
    /// NOLOOP.
    pub noloop: bool,
}

/// A tracking client.
#[derive(Debug)]
struct Client {
    info: Arc<ClientInfo>,
    opts: Options,
    /// The redirect target was gone when an invalidation was due.
    broken: bool,
    /// BCAST prefixes, each in the tenant it was registered in, in registration order.
    prefixes: Vec<(u32, Vec<u8>)>,
    /// Tenants this client has keys tracked in (FLUSHDB/FLUSHALL tell it).
    tenants: Vec<u32>,
}

/// A BCAST prefix: its clients and the keys written under it since the last flush (with the id
/// of the client that wrote each, 0 for expiry, eviction and table evictions).
#[derive(Debug, Default)]
struct Prefix {
    clients: Vec<u64>,
    pending: Vec<(Vec<u8>, u64)>,
}

/// One tenant's tracking table.
#[derive(Debug, Default)]
struct Table {
    keys: HashMap<Vec<u8>, Vec<u64>>,
    /// Sum of the id vectors' lengths (INFO tracking_total_items).
    items: usize,
    prefixes: BTreeMap<Vec<u8>, Prefix>,
    /// What the table takes (see [`KEY_OVERHEAD`]), and what is charged to the tenant for it.
    bytes: u64,
    charged: u64,
}

impl Table {
    fn key_bytes(key: &[u8], ids: usize) -> u64 {
        KEY_OVERHEAD + key.len() as u64 + ID_BYTES * ids as u64
    }

    /// Takes `key` out of the table: the ids that tracked it.
    fn take(&mut self, key: &[u8]) -> Option<Vec<u64>> {
        let ids = self.keys.remove(key)?;
        self.items -= ids.len();
        self.bytes = self.bytes.saturating_sub(Self::key_bytes(key, ids.len()));
        Some(ids)
    }
}

/// What to send.
#[derive(Debug, Clone)]
enum Msg {
    /// `invalidate [keys]`.
    Keys(Vec<Vec<u8>>),
    /// `invalidate nil` (FLUSHDB / FLUSHALL).
    Null,
    /// `tracking-redir-broken id` (to the tracking client itself).
    Broken(u64),
}

#[derive(Debug, Default)]
struct Inner {
    tables: HashMap<u32, Table>,
    clients: HashMap<u64, Client>,
    /// The (tenant, prefix) pairs with keys waiting (so a flush visits only those).
    pending: Vec<(u32, Vec<u8>)>,
}

/// The tracking state of the server (in [`Shared`]).
#[derive(Debug)]
pub struct Tracking {
    /// Clients with tracking on.
    on: AtomicUsize,
    /// The client whose command is running (0: none): its own writes are NOLOOP's loop, and
    /// what it is sent waits for the command's reply.
    current: AtomicU64,
    /// `tracking-table-max-keys` (0: no limit), per tenant.
    max_keys: AtomicU64,
    /// Some BCAST prefix has keys waiting.
    bcast_pending: AtomicBool,
    /// Tracking turned the engine's key-event record on (given back once nobody tracks).
    recording: AtomicBool,
    inner: Mutex<Inner>,
    /// Messages for a client whose command is running, by client id: (id, before the reply,
    /// the encoded message).
    held: Mutex<Vec<(u64, bool, Vec<u8>)>>,
}

impl Default for Tracking {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_KEYS)
    }
}

impl Shared {
    /// The connected client `id`, if any.
    pub fn client_by_id(&self, id: u64) -> Option<Arc<ClientInfo>> {
        self.clients.lock().get(&id).cloned()
    }
}

/// Whether `info` may receive an invalidation of a key of tenant `t`: the admin, a client bound
/// to `t`, or one bound to no tenant (it may route to any).
fn may_receive(info: &ClientInfo, t: u32) -> bool {
    if info.admin.load(Ordering::Relaxed) {
        return true;
    }
    let owner = info.owner.load(Ordering::Relaxed);
    owner == u32::MAX || owner == t
}

impl Tracking {
    /// No client tracking, tables bounded to `max_keys` keys per tenant (0: no bound).
    pub fn new(max_keys: u64) -> Self {
        Self {
            on: AtomicUsize::new(0),
            current: AtomicU64::new(0),
            max_keys: AtomicU64::new(max_keys),
            bcast_pending: AtomicBool::new(false),
            recording: AtomicBool::new(false),
            inner: Mutex::new(Inner::default()),
            held: Mutex::new(Vec::new()),
        }
    }

    /// Whether some client tracks: the one check every write makes.
    #[inline]
    pub fn active(&self) -> bool {
        self.on.load(Ordering::Relaxed) != 0
    }

    /// Sets `tracking-table-max-keys` (enforced at the next command or tick).
    pub fn set_max_keys(&self, n: u64) {
        self.max_keys.store(n, Ordering::Relaxed);
    }

    /// The client whose command is running (0: none).
    #[inline]
    pub fn current(&self) -> u64 {
        self.current.load(Ordering::Relaxed)
    }

    /// Marks client `id`'s command as running (0: none).
    #[inline]
    pub fn set_current(&self, id: u64) {
        self.current.store(id, Ordering::Relaxed);
    }

    /// Turns tracking on for `info` (or changes its options: Redis's enableTracking), with BCAST
    /// `prefixes` (tenant, prefix) added. The caller validated the options.
    pub fn enable(
        &self,
        eng: &mut Engine,
        info: &Arc<ClientInfo>,
        opts: Options,
        prefixes: Vec<(TenantId, Vec<u8>)>,
    ) {
        let mut inner = self.inner.lock();
        let inner = &mut *inner;
        let c = inner.clients.entry(info.id).or_insert_with(|| {
            self.on.fetch_add(1, Ordering::Relaxed);
            Client {
                info: info.clone(),
                opts: Options::default(),
                broken: false,
                prefixes: Vec::new(),
                tenants: Vec::new(),
            }
        });
        let was_empty = self.on.load(Ordering::Relaxed) == 1;
        c.opts = opts;
        c.broken = false;
        for (t, p) in prefixes {
            if c.prefixes.iter().any(|(ct, cp)| *ct == t.0 && *cp == p) {
                continue;
            }
            let table = inner.tables.entry(t.0).or_default();
            let entry = table.prefixes.entry(p.clone()).or_insert_with(|| {
                table.bytes += Table::key_bytes(&p, 0);
                Prefix::default()
            });
            entry.clients.push(info.id);
            table.bytes += ID_BYTES;
            c.prefixes.push((t.0, p));
        }
        if was_empty {
            // Expired and evicted keys must reach the tracking clients.
            eng.record_key_events(true);
            self.recording.store(true, Ordering::Relaxed);
        }
    }

    /// Turns tracking off for client `id` (Redis's disableTracking): its prefixes go; the keys it
    /// read stay until written or dropped, unless no client tracks any more (the tables empty).
    pub fn disable(&self, id: u64) {
        let mut inner = self.inner.lock();
        let Some(c) = inner.clients.remove(&id) else {
            return;
        };
        for (t, p) in &c.prefixes {
            if let Some(table) = inner.tables.get_mut(t)
                && let Some(entry) = table.prefixes.get_mut(p)
            {
                entry.clients.retain(|x| *x != id);
                table.bytes = table.bytes.saturating_sub(ID_BYTES);
                if entry.clients.is_empty() {
                    table.prefixes.remove(p);
                    table.bytes = table.bytes.saturating_sub(Table::key_bytes(p, 0));
                }
            }
        }
        if self.on.fetch_sub(1, Ordering::Relaxed) == 1 {
            // Nobody left to invalidate: the tables go (their charge at the next settle).
            inner.pending.clear();
            for table in inner.tables.values_mut() {
                table.keys.clear();
                table.prefixes.clear();
                table.items = 0;
                table.bytes = 0;
            }
        }
    }

    /// Whether tracking turned the engine's key-event record on and nobody tracks any more
    /// (then the caller gives the record back to the notifications' needs).
    pub fn stop_recording(&self) -> bool {
        !self.active() && self.recording.swap(false, Ordering::Relaxed)
    }

    /// Client `id` is closing (QUIT, a protocol error): it leaves the client table now, so that
    /// no invalidation is redirected to it any more and its redirecting clients learn it.
    pub fn closing(&self, shared: &Shared, id: u64) {
        shared.clients.lock().remove(&id);
    }

    /// Client `id`'s options and whether its redirect broke, if it tracks.
    pub fn options_of(&self, id: u64) -> Option<(Options, bool, Vec<Vec<u8>>)> {
        let inner = self.inner.lock();
        inner.clients.get(&id).map(|c| {
            (
                c.opts.clone(),
                c.broken,
                c.prefixes.iter().map(|(_, p)| p.clone()).collect(),
            )
        })
    }

    /// Client `id`'s BCAST prefixes (all tenants).
    pub fn prefixes_of(&self, id: u64) -> Vec<Vec<u8>> {
        self.options_of(id).map(|(_, _, p)| p).unwrap_or_default()
    }

    /// Records that client `id` read `keys` of tenant `t`.
    pub fn remember<'k>(&self, t: TenantId, id: u64, keys: impl Iterator<Item = &'k [u8]>) {
        let mut inner = self.inner.lock();
        let inner = &mut *inner;
        let Some(c) = inner.clients.get_mut(&id) else {
            return;
        };
        if !c.tenants.contains(&t.0) {
            c.tenants.push(t.0);
        }
        let table = inner.tables.entry(t.0).or_default();
        for k in keys {
            match table.keys.get_mut(k) {
                Some(ids) => {
                    if !ids.contains(&id) {
                        ids.push(id);
                        table.items += 1;
                        table.bytes += ID_BYTES;
                    }
                }
                None => {
                    table.keys.insert(k.to_vec(), vec![id]);
                    table.items += 1;
                    table.bytes += Table::key_bytes(k, 1);
                }
            }
        }
    }

    /// `key` of tenant `t` changed: by the running command when `by_command` (NOLOOP applies to
    /// its client), else by expiry.
    pub fn invalidate(&self, shared: &Shared, t: TenantId, key: &[u8], by_command: bool) {
        let writer = if by_command {
            self.current.load(Ordering::Relaxed)
        } else {
            0
        };
        self.invalidate_as(shared, t, key, writer, false);
    }

    /// The engine evicted `key` of tenant `t` (to make room for the running command, if any):
    /// the running command's client is told before its reply.
    pub fn evicted(&self, shared: &Shared, t: TenantId, key: &[u8]) {
        self.invalidate_as(shared, t, key, 0, true);
    }

    /// `key` of tenant `t` changed, written by client `writer` (0: nobody); `early`: what is
    /// held for the running command's client goes before its reply.
    fn invalidate_as(&self, shared: &Shared, t: TenantId, key: &[u8], writer: u64, early: bool) {
        if !self.active() {
            return;
        }
        let mut out = Vec::new();
        {
            let mut inner = self.inner.lock();
            let inner = &mut *inner;
            let Some(table) = inner.tables.get_mut(&t.0) else {
                return;
            };
            if !table.prefixes.is_empty() {
                let mut matched = |p: &[u8], entry: &mut Prefix| {
                    if entry.pending.is_empty() {
                        inner.pending.push((t.0, p.to_vec()));
                    }
                    entry.pending.push((key.to_vec(), writer));
                };
                if table.prefixes.len() <= key.len() + 1 {
                    for (p, entry) in table.prefixes.iter_mut() {
                        if key.starts_with(p) {
                            matched(p, entry);
                        }
                    }
                } else {
                    // Many prefixes: look up each of the key's own prefixes instead (a tenant
                    // with thousands of prefixes costs its writes O(key length · log n)).
                    for l in 0..=key.len() {
                        if let Some(entry) = table.prefixes.get_mut(&key[..l]) {
                            matched(&key[..l], entry);
                        }
                    }
                }
                if !inner.pending.is_empty() {
                    self.bcast_pending.store(true, Ordering::Relaxed);
                }
            }
            let Some(ids) = table.take(key) else {
                return;
            };
            for id in ids {
                let Some(c) = inner.clients.get(&id) else {
                    continue;
                };
                // A client in BCAST mode now gets its keys by prefix (Redis: keys it read
                // before switching are not sent).
                if c.opts.bcast || (c.opts.noloop && id == writer) {
                    continue;
                }
                out.push((id, Msg::Keys(vec![key.to_vec()])));
            }
        }
        self.send(shared, t.0, out, early);
    }

    /// FLUSHDB / FLUSHALL of tenant `t`: its table empties and every tracking client tied to it
    /// (it read keys there, has prefixes there, or routes there) gets a null invalidation.
    pub fn flush(&self, shared: &Shared, t: TenantId) {
        if !self.active() {
            return;
        }
        let mut out = Vec::new();
        {
            let mut inner = self.inner.lock();
            let inner = &mut *inner;
            if let Some(table) = inner.tables.get_mut(&t.0) {
                table.keys.clear();
                table.items = 0;
                for p in table.prefixes.values_mut() {
                    p.pending.clear();
                }
                table.bytes = table
                    .prefixes
                    .iter()
                    .map(|(p, e)| Table::key_bytes(p, e.clients.len()))
                    .sum();
            }
            for (id, c) in inner.clients.iter_mut() {
                let tied = c.tenants.contains(&t.0)
                    || c.prefixes.iter().any(|(pt, _)| *pt == t.0)
                    || c.info.tenant.load(Ordering::Relaxed) == t.0;
                c.tenants.retain(|x| *x != t.0);
                if tied {
                    out.push((*id, Msg::Null));
                }
            }
        }
        self.send(shared, t.0, out, false);
    }

    /// Sends the BCAST keys waiting under every prefix: one message per prefix and client,
    /// without the keys a NOLOOP client wrote itself.
    pub fn flush_bcast(&self, shared: &Shared) {
        if !self.bcast_pending.swap(false, Ordering::Relaxed) {
            return;
        }
        let mut per_tenant: Vec<(u32, Vec<(u64, Msg)>)> = Vec::new();
        {
            let mut inner = self.inner.lock();
            let inner = &mut *inner;
            for (t, p) in std::mem::take(&mut inner.pending) {
                let Some(entry) = inner
                    .tables
                    .get_mut(&t)
                    .and_then(|tb| tb.prefixes.get_mut(&p))
                else {
                    continue;
                };
                let pending = std::mem::take(&mut entry.pending);
                let mut out = Vec::new();
                for id in &entry.clients {
                    let Some(c) = inner.clients.get(id) else {
                        continue;
                    };
                    let keys: Vec<Vec<u8>> = pending
                        .iter()
                        .filter(|(_, w)| !(c.opts.noloop && *w == *id))
                        .map(|(k, _)| k.clone())
                        .collect();
                    if !keys.is_empty() {
                        out.push((*id, Msg::Keys(keys)));
                    }
                }
                if !out.is_empty() {
                    per_tenant.push((t, out));
                }
            }
        }
        for (t, out) in per_tenant {
            self.send(shared, t, out, false);
        }
    }

    /// Drops keys from every table over `tracking-table-max-keys` (at most [`EVICT_EFFORT`] a
    /// pass), each with an invalidation to its clients, as Redis's trackingLimitUsedSlots.
    pub fn enforce_limit(&self, shared: &Shared) {
        let max = self.max_keys.load(Ordering::Relaxed);
        if max == 0 || !self.active() {
            return;
        }
        let over: Vec<(u32, usize)> = {
            let inner = self.inner.lock();
            inner
                .tables
                .iter()
                .filter(|(_, tb)| tb.keys.len() as u64 > max)
                .map(|(t, tb)| (*t, (tb.keys.len() - max as usize).min(EVICT_EFFORT)))
                .collect()
        };
        for (t, n) in over {
            self.drop_keys(shared, t, n, 0);
        }
    }

    /// Drops `n` keys of tenant `t`'s table (or, with `n == 0`, as many as it takes to bring the
    /// table to `target_bytes`), each with an invalidation. Returns how many went.
    fn drop_keys(&self, shared: &Shared, t: u32, n: usize, target_bytes: u64) -> usize {
        let mut out = Vec::new();
        let mut dropped = 0;
        {
            let mut inner = self.inner.lock();
            let inner = &mut *inner;
            let Some(table) = inner.tables.get_mut(&t) else {
                return 0;
            };
            let mut victims: Vec<Vec<u8>> = Vec::new();
            if n > 0 {
                victims.extend(table.keys.keys().take(n).cloned());
            } else {
                let mut bytes = table.bytes;
                for (k, ids) in &table.keys {
                    if bytes <= target_bytes {
                        break;
                    }
                    bytes = bytes.saturating_sub(Table::key_bytes(k, ids.len()));
                    victims.push(k.clone());
                }
            }
            for k in victims {
                let Some(ids) = table.take(&k) else {
                    continue;
                };
                dropped += 1;
                for id in ids {
                    if inner.clients.get(&id).is_some_and(|c| !c.opts.bcast) {
                        out.push((id, Msg::Keys(vec![k.clone()])));
                    }
                }
            }
        }
        self.send(shared, t, out, false);
        dropped
    }

    /// Brings what each tenant is charged for its table in line with what the table takes: a
    /// growth the tenant's memory cannot hold drops keys (with invalidations) instead.
    pub fn settle(&self, shared: &Shared, eng: &mut Engine) {
        let diffs: Vec<(u32, u64, u64)> = {
            let inner = self.inner.lock();
            inner
                .tables
                .iter()
                .filter(|(_, tb)| tb.bytes != tb.charged)
                .map(|(t, tb)| (*t, tb.bytes, tb.charged))
                .collect()
        };
        for (t, bytes, charged) in diffs {
            let tid = TenantId(t);
            let now = if bytes > charged {
                match eng.charge_outside(tid, bytes - charged) {
                    Ok(()) => bytes,
                    Err(_) => {
                        self.drop_keys(shared, t, 0, charged);
                        charged
                    }
                }
            } else {
                eng.release_outside(tid, charged - bytes);
                bytes
            };
            let mut inner = self.inner.lock();
            if let Some(tb) = inner.tables.get_mut(&t) {
                tb.charged = now;
                // Dropping keys may have left the table below its charge: settle that now.
                if tb.bytes < tb.charged {
                    eng.release_outside(tid, tb.charged - tb.bytes);
                    tb.charged = tb.bytes;
                }
            }
        }
    }

    /// Moves what was held for client `id` while its command ran to `out`, whose reply to that
    /// command starts at byte `reply_start`: the invalidations of keys evicted for the command
    /// before the reply (in the order they came), the rest after it.
    pub fn release_held(&self, id: u64, out: &mut ReplyWriter<'_>, reply_start: usize) {
        let mut held = self.held.lock();
        if held.is_empty() {
            return;
        }
        let mut before = Vec::new();
        held.retain(|(hid, early, bytes)| {
            if *hid != id {
                return true;
            }
            if *early {
                before.extend_from_slice(bytes);
            } else {
                out.raw(bytes);
            }
            false
        });
        if !before.is_empty() {
            out.insert_raw(reply_start.min(out.len()), &before);
        }
    }

    /// INFO: (tracking clients, keys, items, prefixes) of the tenants `scope` may see.
    pub fn stats(&self, scope: Option<Option<TenantId>>) -> (usize, usize, usize, usize) {
        let inner = self.inner.lock();
        let clients = inner
            .clients
            .values()
            .filter(|c| c.info.visible_to(scope))
            .count();
        let (mut keys, mut items, mut prefixes) = (0, 0, 0);
        for (t, tb) in &inner.tables {
            if scope.is_none_or(|s| s == Some(TenantId(*t))) {
                keys += tb.keys.len();
                items += tb.items;
                prefixes += tb.prefixes.len();
            }
        }
        (clients, keys, items, prefixes)
    }

    /// Bytes tenant `t`'s table takes (and is charged, once settled).
    pub fn table_bytes(&self, t: TenantId) -> u64 {
        self.inner.lock().tables.get(&t.0).map_or(0, |tb| tb.bytes)
    }

    /// Delivers `msgs` (tracking client id, message) about keys of tenant `t`; `early`: held
    /// ones go before the running command's reply.
    fn send(&self, shared: &Shared, t: u32, msgs: Vec<(u64, Msg)>, early: bool) {
        if msgs.is_empty() {
            return;
        }
        let hard = shared.pubsub_hard_limit();
        for (id, msg) in msgs {
            // Who gets it: the client, or its redirect target.
            let (client, redirect) = {
                let inner = self.inner.lock();
                match inner.clients.get(&id) {
                    Some(c) => (c.info.clone(), c.opts.redirect),
                    None => continue,
                }
            };
            if !may_receive(&client, t) {
                continue;
            }
            let (target, redirected) = if redirect != 0 {
                let found = shared.clients.lock().get(&redirect).cloned();
                match found.filter(|r| !r.killed() && may_receive(r, t)) {
                    Some(r) => (r, true),
                    None => {
                        if let Some(c) = self.inner.lock().clients.get_mut(&id) {
                            c.broken = true;
                        }
                        if client.resp.load(Ordering::Relaxed) == 3 {
                            self.deliver(
                                shared,
                                &client,
                                hard,
                                &Msg::Broken(redirect),
                                false,
                                early,
                            );
                        }
                        continue;
                    }
                }
            } else {
                (client, false)
            };
            let resp3 = target.resp.load(Ordering::Relaxed) == 3;
            if resp3 {
                self.deliver(shared, &target, hard, &msg, false, early);
            } else if redirected && shared.pubsub().is_subscriber(target.id) {
                self.deliver(shared, &target, hard, &msg, true, early);
            }
            // A RESP2 client without a redirect cannot be told (Redis sends nothing either).
        }
    }

    /// Writes `msg` for `target`: held when its own command is running (to go before its reply
    /// when `early`, else after), else to its inbox (within the pubsub class's hard output
    /// limit: past it the client is disconnected, as a subscriber).
    fn deliver(
        &self,
        shared: &Shared,
        target: &ClientInfo,
        hard: u64,
        msg: &Msg,
        pubsub: bool,
        early: bool,
    ) {
        let write = |w: &mut ReplyWriter<'_>| {
            match msg {
                Msg::Broken(id) => {
                    w.push(2);
                    w.bulk(b"tracking-redir-broken");
                    w.integer(*id as i64);
                    return;
                }
                _ if pubsub => {
                    w.push(3);
                    w.bulk(b"message");
                    w.bulk(CHANNEL);
                }
                _ => {
                    w.push(2);
                    w.bulk(b"invalidate");
                }
            }
            match msg {
                Msg::Keys(keys) => {
                    w.array(keys.len());
                    for k in keys {
                        w.bulk(k);
                    }
                }
                _ => w.null(),
            }
        };
        if target.id == self.current.load(Ordering::Relaxed) {
            let proto = if target.resp.load(Ordering::Relaxed) == 3 {
                ProtocolVersion::Resp3
            } else {
                ProtocolVersion::Resp2
            };
            let mut bytes = Vec::new();
            write(&mut ReplyWriter::new(&mut bytes, proto));
            self.held.lock().push((target.id, early, bytes));
        } else if !target.deliver(hard, write) {
            shared
                .stats()
                .output_limit_disconnections
                .fetch_add(1, Ordering::Relaxed);
        }
    }
}
