//! Executes parsed memcached requests against the engine (lock held by the caller) and writes
//! memcached 1.6's replies: the text commands here, the meta commands in `meta.rs`, `stats` in
//! `stats.rs`.

use std::sync::atomic::Ordering;

use locus_engine::{ClassId, Engine, EngineError, Expire, SetOptions, TenantId};
use locus_protocol::memcache::{
    AutomoveSetting, MetaCommand, ReplyWriter, Request, Store, StoreMode,
};

use super::item::{self, Expiry, Meta};
use super::{Counters, DetailOp, McListener, McState, McTenant};
use crate::server::Shared;

/// What a memcached connection keeps between requests.
#[derive(Debug, Clone, Copy)]
pub struct McConn {
    /// Where its listener routes.
    pub listener: McListener,
    /// `quit`, or an error memcached closes on: close after writing the replies.
    pub close: bool,
    /// An `lru_crawler` crawl or dump to run before the next request.
    pub crawl: Option<super::crawler::Crawl>,
}

impl McConn {
    /// A new connection on `listener`.
    pub fn new(listener: McListener) -> Self {
        Self {
            listener,
            close: false,
            crawl: None,
        }
    }
}

/// Everything a request may touch.
pub struct McCtx<'a> {
    /// The engine (lock held).
    pub eng: &'a mut Engine,
    /// The memcached state.
    pub mc: &'a McState,
    /// Server-wide state (uptime, connections, configuration).
    pub shared: &'a Shared,
    /// This connection.
    pub conn: &'a mut McConn,
    /// The engine clock, read once per batch.
    pub now_ms: u64,
}

/// `SERVER_ERROR` for a key no memcached tenant owns on this listener (prefix mode without a
/// matching prefix and no default tenant).
pub const NO_TENANT: &str = "no tenant owns this key";

impl<'a> McCtx<'a> {
    /// The memcached tenant of `key`, with any delayed flush of it run first.
    pub(super) fn route(&mut self, key: &[u8]) -> Option<(TenantId, &'a McTenant)> {
        let mc: &'a McState = self.mc;
        let t = mc.route(self.conn.listener, key)?;
        if mc.run_due_flush(self.eng, t, self.now_ms) {
            self.shared.dumploads().note_write(t, &[], true);
        }
        Some((t, mc.tenant(t)?))
    }

    /// The connection's scope tenant (stats, flush_all, slabs).
    pub(super) fn scope(&self) -> Option<TenantId> {
        self.mc.scope(self.conn.listener)
    }
}

/// Executes one request, appending its reply to `out`.
pub fn execute(cx: &mut McCtx<'_>, req: &Request<'_>, out: &mut Vec<u8>) {
    execute_request(cx, req, out);
    if cx.shared.dumploads().any_dumped() {
        note_dumped_writes(cx, req);
    }
}

/// pRedis's dump/load: the keys `req` wrote (stored, changed, deleted or touched), or its
/// flush, supersede a dumped tenant's copies of them, as RESP's writes do (`exec::run`), even
/// when the reply says nothing changed (the key may be in the dump file, not in memory).
/// `mg` counts when it may write (`T` touches, `N` vivifies).
fn note_dumped_writes(cx: &mut McCtx<'_>, req: &Request<'_>) {
    let note = |cx: &mut McCtx<'_>, key: &[u8]| {
        if let Some(t) = cx.mc.route(cx.conn.listener, key) {
            cx.shared.dumploads().note_write(t, &[key], false);
        }
    };
    match req {
        Request::Store(s) => note(cx, s.key),
        Request::Incr { key, .. }
        | Request::Decr { key, .. }
        | Request::Delete { key, .. }
        | Request::Touch { key, .. } => note(cx, key),
        Request::Gat { keys, .. } => {
            for key in keys.iter() {
                note(cx, key);
            }
        }
        Request::Meta(m)
            if m.command != MetaCommand::Debug
                && (m.command != MetaCommand::Get || m.flags.has(b'T') || m.flags.has(b'N')) =>
        {
            note(cx, m.key.bytes());
        }
        Request::FlushAll { delay, .. } if delay.is_none_or(|d| i64::from(d) <= 0) => {
            if let Some(t) = cx.scope() {
                cx.shared.dumploads().note_write(t, &[], true);
            }
        }
        _ => {}
    }
}

fn execute_request(cx: &mut McCtx<'_>, req: &Request<'_>, out: &mut Vec<u8>) {
    let pipelined = !out.is_empty();
    let mut w = ReplyWriter::new(out);
    match req {
        Request::Get { keys, cas } => {
            for key in keys.iter() {
                get_one(cx, &mut w, key, None, *cas);
            }
            w.end();
        }
        Request::Gat { exptime, keys, cas } => {
            for key in keys.iter() {
                get_one(cx, &mut w, key, Some(i64::from(*exptime)), *cas);
            }
            w.end();
        }
        Request::Store(s) => store_command(cx, &mut w, s),
        Request::Incr {
            key,
            delta,
            noreply,
        } => arith_command(cx, &mut w, key, *delta, true, *noreply),
        Request::Decr {
            key,
            delta,
            noreply,
        } => arith_command(cx, &mut w, key, *delta, false, *noreply),
        Request::Delete { key, noreply } => {
            let Some((t, mt)) = cx.route(key) else {
                reply_unless(*noreply, &mut w, |w| w.server_error(NO_TENANT));
                return;
            };
            mt.detail.record(key, DetailOp::Delete);
            let class = stored_class(cx.eng, t, key);
            if cx.eng.delete(t, key) {
                Counters::bump(&mt.counters.delete_hits);
                mt.class_op(class, |c| c.delete_hits += 1);
                reply_unless(*noreply, &mut w, ReplyWriter::deleted);
            } else {
                Counters::bump(&mt.counters.delete_misses);
                reply_unless(*noreply, &mut w, ReplyWriter::not_found);
            }
        }
        Request::Touch {
            key,
            exptime,
            noreply,
        } => {
            let Some((t, mt)) = cx.route(key) else {
                reply_unless(*noreply, &mut w, |w| w.server_error(NO_TENANT));
                return;
            };
            Counters::bump(&mt.counters.cmd_touch);
            let expired_before = cx.eng.expired_count(t);
            let class = stored_class(cx.eng, t, key);
            if touch(cx.eng, t, key, i64::from(*exptime), cx.now_ms) {
                Counters::bump(&mt.counters.touch_hits);
                mt.class_op(class, |c| c.touch_hits += 1);
                reply_unless(*noreply, &mut w, ReplyWriter::touched);
            } else {
                note_expired(cx.eng, t, mt, expired_before);
                Counters::bump(&mt.counters.touch_misses);
                reply_unless(*noreply, &mut w, ReplyWriter::not_found);
            }
        }
        Request::FlushAll { delay, noreply } => {
            if let Some(t) = cx.scope() {
                if let Some(mt) = cx.mc.tenant(t) {
                    Counters::bump(&mt.counters.cmd_flush);
                }
                let at = match delay.map(i64::from).filter(|d| *d > 0) {
                    None => None,
                    Some(d) => match item::expiry(d, cx.now_ms) {
                        Expiry::AtMs(at) => Some(at),
                        Expiry::Never | Expiry::Past => None,
                    },
                };
                cx.mc.flush(cx.eng, t, at);
            }
            reply_unless(*noreply, &mut w, ReplyWriter::ok);
        }
        Request::Version => w.version(super::MEMCACHED_VERSION),
        Request::Verbosity { level, noreply } => {
            if let Some(mt) = cx.scope().and_then(|t| cx.mc.tenant(t)) {
                mt.verbosity
                    .store(u64::from((*level).min(2)), Ordering::Relaxed);
            }
            reply_unless(*noreply, &mut w, ReplyWriter::ok);
        }
        Request::Quit => cx.conn.close = true,
        Request::Stats { args } => super::stats::stats(cx, &mut w, *args),
        Request::SlabsReassign { src, dst } => slabs_reassign(cx, &mut w, *src, *dst),
        Request::SlabsAutomove { setting, noreply } => {
            if let (AutomoveSetting::Level(level), Some(t)) = (setting, cx.scope()) {
                super::control::set_automove(cx.eng, cx.mc, t, *level != 0);
            }
            reply_unless(*noreply, &mut w, ReplyWriter::ok);
        }
        Request::LruCrawler(c) => super::crawler::command(cx, &mut w, c, pipelined),
        Request::CacheMemlimit { megabytes, noreply } => {
            cache_memlimit(cx, &mut w, *megabytes, *noreply);
        }
        // memcached without -A.
        Request::Shutdown { .. } => w.line(b"ERROR: shutdown not enabled"),
        Request::Meta(m) => super::meta::execute(cx, &mut w, m),
        Request::MetaNoop => w.meta_noop(),
    }
}

/// A storage command the parser refused as too large (`buf` starts at its line): counted, and,
/// for `set`, the key's current item goes, as memcached unlinks it so that a stale value does
/// not survive the failed update.
pub fn refused_too_large(cx: &mut McCtx<'_>, buf: &[u8]) {
    let line = buf.split(|&b| b == b'\n').next().unwrap_or_default();
    let mut tokens = line.split(|&b| b == b' ').filter(|t| !t.is_empty());
    let (cmd, key) = (tokens.next(), tokens.next());
    let Some(key) = key else {
        return;
    };
    let Some((t, mt)) = cx.route(key) else {
        return;
    };
    Counters::bump(&mt.counters.store_too_large);
    if cmd == Some(b"set".as_slice()) {
        cx.eng.delete(t, key);
        cx.shared.dumploads().note_write(t, &[key], false);
    }
}

/// Writes a reply unless the client asked for none.
pub(super) fn reply_unless<'w>(
    noreply: bool,
    w: &mut ReplyWriter<'w>,
    f: impl FnOnce(&mut ReplyWriter<'w>),
) {
    if !noreply {
        f(w);
    }
}

/// The class of the item stored under `key`, if any (for per-class counters).
pub(super) fn stored_class(eng: &mut Engine, t: TenantId, key: &[u8]) -> Option<ClassId> {
    let (prefix, data) = eng.peek_with_meta(t, key)?;
    let len = prefix.map_or(0, <[u8]>::len) + data.len();
    eng.class_for(key.len(), len)
}

/// One key of `get`/`gets`/`gat`/`gats`.
fn get_one(
    cx: &mut McCtx<'_>,
    w: &mut ReplyWriter<'_>,
    key: &[u8],
    touch_exp: Option<i64>,
    with_cas: bool,
) {
    let now = cx.now_ms;
    let Some((t, mt)) = cx.route(key) else {
        return;
    };
    let c = &mt.counters;
    Counters::bump(if touch_exp.is_some() {
        &c.cmd_touch
    } else {
        &c.cmd_get
    });
    // The item is served as it was, then touched (a negative exptime: served once, then gone).
    let expired_before = cx.eng.expired_count(t);
    // One lookup: the item is read and its fetched bit set in place (memcached's
    // ITEM_FETCHED); an item written over RESP gets its header first (`adopt`), then the bit.
    let adopted = match cx.eng.get_with_meta_mut(t, key) {
        Some((prefix, data)) => {
            let (meta, data) = item::decode((prefix.as_deref(), data));
            if meta.cas == 0 {
                Some(data.to_vec())
            } else {
                if let Some(p) = prefix
                    && meta.state & item::FETCHED == 0
                {
                    item::set_state(p, item::FETCHED);
                }
                w.value(key, meta.flags, data, with_cas.then_some(meta.cas));
                mt.detail.record(key, DetailOp::Get(true));
                None
            }
        }
        None => {
            mt.detail.record(key, DetailOp::Get(false));
            note_expired(cx.eng, t, mt, expired_before);
            Counters::bump(if touch_exp.is_some() {
                &c.touch_misses
            } else {
                &c.get_misses
            });
            return;
        }
    };
    if let Some(data) = adopted {
        // Written over RESP: given a header (flags 0, its own CAS unique) at this first read.
        let meta = adopt(cx.eng, mt, t, key, &data);
        w.value(key, meta.flags, &data, with_cas.then_some(meta.cas));
        mt.detail.record(key, DetailOp::Get(true));
        if let Some(v) = cx.eng.peek_meta_mut(t, key) {
            item::set_state(v, item::FETCHED);
        }
    }
    match touch_exp {
        Some(exp) => {
            Counters::bump(&c.touch_hits);
            let class = stored_class(cx.eng, t, key);
            mt.class_op(class, |c| c.touch_hits += 1);
            touch(cx.eng, t, key, exp, now);
        }
        None => Counters::bump(&c.get_hits),
    }
}

/// Counts `get_expired` when a lookup since the tenant's expiry count was `before` found its
/// item expired (the engine removed it then), as memcached counts a retrieval that meets one;
/// the item's class counts it too (`stats items`' `reclaimed` leaves these out).
pub(super) fn note_expired(eng: &Engine, t: TenantId, mt: &McTenant, before: u64) {
    if eng.expired_count(t) > before {
        Counters::bump(&mt.counters.get_expired);
        mt.class_op(eng.last_expired_class(), |c| c.get_expired += 1);
    }
}

/// Applies memcached's exptime to an existing item; false when there is none. A negative (or
/// past) exptime removes it.
pub(super) fn touch(eng: &mut Engine, t: TenantId, key: &[u8], exptime: i64, now: u64) -> bool {
    if !eng.exists(t, key) {
        return false;
    }
    match item::expiry(exptime, now) {
        Expiry::Never => {
            eng.set_expire(t, key, None);
        }
        Expiry::AtMs(at) => {
            eng.set_expire(t, key, Some(at));
        }
        Expiry::Past => {
            eng.delete(t, key);
        }
    }
    true
}

/// Why a store failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StoreError {
    /// Larger than the engine can hold.
    TooLarge,
    /// Memory is full and the class may not evict.
    NoMemory,
}

impl StoreError {
    pub(super) fn write(self, w: &mut ReplyWriter<'_>) {
        match self {
            StoreError::TooLarge => w.server_error("object too large for cache"),
            StoreError::NoMemory => w.server_error("out of memory storing object"),
        }
    }
}

/// Writes an item: header `meta`, data `parts`, expiry `exp` (`None`: keep the current TTL).
pub(super) fn put(
    eng: &mut Engine,
    mt: &McTenant,
    t: TenantId,
    key: &[u8],
    meta: Meta,
    parts: &[&[u8]],
    exp: Option<Expiry>,
) -> Result<(), StoreError> {
    let expire = match exp {
        None => Expire::Keep,
        Some(Expiry::Never) => Expire::Persist,
        Some(Expiry::AtMs(at)) => Expire::AtMs(at),
        Some(Expiry::Past) => {
            // memcached stores it already expired: nobody ever sees it.
            eng.delete(t, key);
            Counters::bump(&mt.counters.total_items);
            return Ok(());
        }
    };
    let opts = SetOptions {
        expire,
        ..SetOptions::default()
    };
    // The item is laid out in this thread's scratch buffer (the engine copies it into its
    // chunk), so a store allocates nothing.
    let stored = item::with_encoded(meta, parts, |value| eng.set_with_meta(t, key, value, opts));
    match stored {
        Ok(_) => {
            Counters::bump(&mt.counters.total_items);
            Ok(())
        }
        Err(e) => {
            let err = match e {
                EngineError::OutOfMemory => {
                    Counters::bump(&mt.counters.store_no_memory);
                    StoreError::NoMemory
                }
                _ => {
                    Counters::bump(&mt.counters.store_too_large);
                    StoreError::TooLarge
                }
            };
            Err(err)
        }
    }
}

/// The current item of `key`, copied (`None`: missing or not a memcached item).
pub(super) fn load(eng: &mut Engine, t: TenantId, key: &[u8]) -> Option<(Meta, Vec<u8>)> {
    let (meta, data) = item::decode(eng.peek_with_meta(t, key)?);
    Some((meta, data.to_vec()))
}

/// The current item's header of `key` (`None`: missing or not a memcached item), its data
/// untouched.
fn load_meta(eng: &mut Engine, t: TenantId, key: &[u8]) -> Option<Meta> {
    eng.peek_with_meta(t, key).map(|v| item::decode(v).0)
}

/// Gives a value the RESP face wrote (no header: CAS 0) a header, so that memcached sees it as
/// an item of its own: flags 0, a new CAS unique; its data and TTL stay (the caller marks it
/// fetched). Returns the header; when the budget cannot take the 13 bytes, the value stays
/// as it was and reads with CAS 0 (a `cas` against it answers EXISTS).
pub(super) fn adopt(eng: &mut Engine, mt: &McTenant, t: TenantId, key: &[u8], data: &[u8]) -> Meta {
    let meta = Meta {
        flags: 0,
        cas: mt.next_cas(),
        state: 0,
    };
    let opts = SetOptions {
        expire: Expire::Keep,
        ..SetOptions::default()
    };
    match item::with_encoded(meta, &[data], |v| eng.set_with_meta(t, key, v, opts)) {
        Ok(_) => meta,
        Err(_) => Meta::default(),
    }
}

/// `set`/`add`/`replace`/`append`/`prepend`/`cas`.
fn store_command(cx: &mut McCtx<'_>, w: &mut ReplyWriter<'_>, s: &Store<'_>) {
    let now = cx.now_ms;
    let Some((t, mt)) = cx.route(s.key) else {
        reply_unless(s.noreply, w, |w| w.server_error(NO_TENANT));
        return;
    };
    Counters::bump(&mt.counters.cmd_set);
    mt.detail.record(s.key, DetailOp::Set);
    // Only append and prepend need the old data; set needs nothing of the old item, the other
    // modes its header.
    let current: Option<(Meta, Vec<u8>)> = match s.mode {
        StoreMode::Set => None,
        StoreMode::Append | StoreMode::Prepend => load(cx.eng, t, s.key),
        StoreMode::Add | StoreMode::Replace | StoreMode::Cas => {
            load_meta(cx.eng, t, s.key).map(|m| (m, Vec::new()))
        }
    };
    let exp = Some(item::expiry(i64::from(s.exptime), now));
    let meta = Meta {
        flags: s.flags,
        cas: 0,
        state: 0,
    };
    let class = || cx.eng.class_for(s.key.len(), s.data.len() + item::HEADER);
    let r = match (s.mode, &current) {
        (StoreMode::Add, Some(_)) | (StoreMode::Replace, None) => {
            // memcached's add bumps the existing item as a fetch would (not counted).
            reply_unless(s.noreply, w, ReplyWriter::not_stored);
            return;
        }
        (StoreMode::Append | StoreMode::Prepend, None) => {
            reply_unless(s.noreply, w, ReplyWriter::not_stored);
            return;
        }
        (StoreMode::Cas, None) => {
            Counters::bump(&mt.counters.cas_misses);
            reply_unless(s.noreply, w, ReplyWriter::not_found);
            return;
        }
        // CAS 0: a value the RESP face wrote since (or no memcached read gave it a unique).
        (StoreMode::Cas, Some((old, _))) if old.cas == 0 || Some(old.cas) != s.cas => {
            Counters::bump(&mt.counters.cas_badval);
            let c = class();
            mt.class_op(c, |c| c.cas_badval += 1);
            reply_unless(s.noreply, w, ReplyWriter::exists);
            return;
        }
        (StoreMode::Append, Some((old, data))) => {
            let meta = Meta {
                cas: mt.next_cas(),
                state: 0,
                ..*old
            };
            put(cx.eng, mt, t, s.key, meta, &[data, s.data], None)
        }
        (StoreMode::Prepend, Some((old, data))) => {
            let meta = Meta {
                cas: mt.next_cas(),
                state: 0,
                ..*old
            };
            put(cx.eng, mt, t, s.key, meta, &[s.data, data], None)
        }
        (mode, _) => {
            if mode == StoreMode::Cas {
                Counters::bump(&mt.counters.cas_hits);
                let c = class();
                mt.class_op(c, |c| c.cas_hits += 1);
            }
            let meta = Meta {
                cas: mt.next_cas(),
                ..meta
            };
            put(cx.eng, mt, t, s.key, meta, &[s.data], exp)
        }
    };
    match r {
        Ok(()) => reply_unless(s.noreply, w, ReplyWriter::stored),
        Err(e) => {
            // memcached unlinks the old item of a failed set so a stale value does not survive.
            if s.mode == StoreMode::Set {
                cx.eng.delete(t, s.key);
            }
            reply_unless(s.noreply, w, |w| e.write(w));
        }
    }
}

/// The outcome of incr/decr on an existing item.
pub(super) enum Arith {
    /// No such item.
    Missing,
    /// The data is not a number.
    NonNumeric,
    /// The new value, and the item's CAS after the change.
    Done(u64, u64),
    /// The new item could not be stored.
    Failed(StoreError),
}

/// incr/decr: wraps at 2^64 up, stops at 0 down; the data keeps its length when the new number
/// fits (padded with spaces, as memcached's in-place update), flags and TTL stay, CAS changes.
pub(super) fn arith(
    eng: &mut Engine,
    mt: &McTenant,
    t: TenantId,
    key: &[u8],
    delta: u64,
    incr: bool,
    new_cas: Option<u64>,
) -> Arith {
    let Some((meta, data)) = load(eng, t, key) else {
        return Arith::Missing;
    };
    let Some(n) = item::parse_counter(&data) else {
        return Arith::NonNumeric;
    };
    let n = if incr {
        n.wrapping_add(delta)
    } else {
        n.saturating_sub(delta)
    };
    let cas = new_cas.unwrap_or_else(|| mt.next_cas());
    let meta = Meta { cas, ..meta };
    match put(
        eng,
        mt,
        t,
        key,
        meta,
        &[&item::counter_data(n, data.len())],
        None,
    ) {
        Ok(()) => Arith::Done(n, cas),
        Err(e) => Arith::Failed(e),
    }
}

fn arith_command(
    cx: &mut McCtx<'_>,
    w: &mut ReplyWriter<'_>,
    key: &[u8],
    delta: u64,
    incr: bool,
    noreply: bool,
) {
    let Some((t, mt)) = cx.route(key) else {
        reply_unless(noreply, w, |w| w.server_error(NO_TENANT));
        return;
    };
    let class = stored_class(cx.eng, t, key);
    let c = &mt.counters;
    match arith(cx.eng, mt, t, key, delta, incr, None) {
        Arith::Missing => {
            Counters::bump(if incr { &c.incr_misses } else { &c.decr_misses });
            reply_unless(noreply, w, ReplyWriter::not_found);
        }
        Arith::NonNumeric => reply_unless(noreply, w, |w| {
            w.client_error("cannot increment or decrement non-numeric value")
        }),
        Arith::Done(n, _) => {
            Counters::bump(if incr { &c.incr_hits } else { &c.decr_hits });
            mt.class_op(class, |c| {
                if incr {
                    c.incr_hits += 1;
                } else {
                    c.decr_hits += 1;
                }
            });
            reply_unless(noreply, w, |w| w.number(n));
        }
        Arith::Failed(e) => reply_unless(noreply, w, |w| e.write(w)),
    }
}

/// `slabs reassign <src> <dst>`: one page of the scope tenant's class `src` (memcached's ids
/// start at 1; -1: any other class with a page) moves to `dst`, its items evicted.
fn slabs_reassign(cx: &mut McCtx<'_>, w: &mut ReplyWriter<'_>, src: i32, dst: i32) {
    let Some(t) = cx.scope() else {
        w.line(b"BADCLASS invalid src or dst class id");
        return;
    };
    let nclasses = cx.eng.size_classes().len() as i32;
    let valid = |c: i32| (1..=nclasses).contains(&c);
    if !valid(dst) || !(src == -1 || valid(src)) {
        w.line(b"BADCLASS invalid src or dst class id");
        return;
    }
    if src == dst {
        w.line(b"SAME src and dst class are identical");
        return;
    }
    let pool = cx.eng.pool_of(t);
    let to = (pool, ClassId((dst - 1) as u16));
    let src = if src == -1 {
        match (1..=nclasses)
            .find(|&c| c != dst && cx.eng.pages_of(pool, ClassId((c - 1) as u16)) > 1)
        {
            Some(c) => c,
            None => {
                w.line(b"NOSPARE source class has no spare pages");
                return;
            }
        }
    } else {
        src
    };
    // memcached keeps a class's last page.
    let from = (pool, ClassId((src - 1) as u16));
    if cx.eng.pages_of(pool, from.1) < 2 {
        w.line(b"NOSPARE source class has no spare pages");
        return;
    }
    // As memcached's page mover: the page's items move to free chunks of their class first,
    // and only those that find none are evicted.
    match cx.eng.move_page_rescuing(from, to) {
        Ok((_, evicted)) => {
            if let Some(mt) = cx.mc.tenant(t) {
                mt.counters
                    .reassign_evictions_nomem
                    .fetch_add(evicted, Ordering::Relaxed);
            }
            w.ok();
        }
        Err(_) => w.line(b"NOSPARE source class has no spare pages"),
    }
}

/// `cache_memlimit <MB>`: the engine's memory budget, which only the administrator may change:
/// on a single-tenant server without an `[admin]` user (every client administers it, as in
/// memcached) it is `maxmemory`; with several tenants a tenant may not resize the others' memory.
fn cache_memlimit(cx: &mut McCtx<'_>, w: &mut ReplyWriter<'_>, megabytes: u32, noreply: bool) {
    if megabytes < 8 {
        reply_unless(noreply, w, |w| {
            w.line(b"MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m")
        });
        return;
    }
    if !cx.shared.tenancy().admin_by_default() {
        reply_unless(noreply, w, |w| {
            w.client_error("cache_memlimit changes every tenant's memory: use the admin's CONFIG SET maxmemory")
        });
        return;
    }
    let bytes = u64::from(megabytes) << 20;
    match cx.eng.set_maxmemory(bytes) {
        Ok(()) => {
            cx.shared.config_mut().memory.maxmemory = locus_common::ByteSize(bytes);
            reply_unless(noreply, w, ReplyWriter::ok);
        }
        Err(e) => reply_unless(noreply, w, |w| w.server_error(&e.to_string())),
    }
}
