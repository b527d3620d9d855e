//! `stats`, `stats slabs`, `stats items`, `stats settings`, `stats sizes`, `stats conns`,
//! `stats reset`, with memcached 1.6's names and meanings, for the connection's scope tenant only
//! (server-wide fields such as `pid` and `uptime` aside).

use std::sync::atomic::Ordering;

use locus_protocol::memcache::{ReplyWriter, Tokens};

use super::exec::McCtx;
use super::{ClassOps, MEMCACHED_VERSION};

/// Executes `stats [args]`.
pub(super) fn stats(cx: &mut McCtx<'_>, w: &mut ReplyWriter<'_>, args: Tokens<'_>) {
    let mut it = args.into_iter();
    match (it.next(), it.next()) {
        (None, _) => general(cx, w),
        (Some(b"slabs"), None) => slabs(cx, w),
        (Some(b"cachedump"), Some(class)) => cachedump(cx, w, class, it.next()),
        (Some(b"items"), None) => items(cx, w),
        (Some(b"settings"), None) => settings(cx, w),
        (Some(b"sizes"), None) => {
            w.stat("sizes_status", b"disabled");
            w.end();
        }
        (Some(b"conns"), None) => {
            // Connections are listed by memcached with their file descriptors; a tenant sees
            // none of the others' here.
            w.end();
        }
        // memcached's per-prefix counters, kept per tenant.
        (Some(b"detail"), Some(arg @ (b"on" | b"off"))) if it.next().is_none() => {
            if let Some(mt) = cx.scope().and_then(|t| cx.mc.tenant(t)) {
                mt.detail.set_on(arg == b"on");
            }
            w.ok();
        }
        (Some(b"detail"), Some(b"dump")) if it.next().is_none() => {
            if let Some(mt) = cx.scope().and_then(|t| cx.mc.tenant(t)) {
                w.raw(&mt.detail.dump());
            }
            w.end();
        }
        (Some(b"detail"), _) => w.client_error("usage: stats detail on|off|dump"),
        (Some(b"reset"), None) => {
            if let Some(t) = cx.scope() {
                if let Some(mt) = cx.mc.tenant(t) {
                    mt.counters.reset();
                    for c in [
                        &mt.crawler.starts,
                        &mt.crawler.reclaimed,
                        &mt.crawler.checked,
                    ] {
                        c.store(0, Ordering::Relaxed);
                    }
                    mt.class_ops.lock().clear();
                    mt.detail.clear();
                }
                cx.eng.reset_tenant_stats(t);
            }
            w.reset();
        }
        _ => w.error(),
    }
}

/// memcached 1.6.18's general stats, in its order, for the scope tenant. Fixed at 0, each
/// for want of the mechanism in Locus (docs/memcached.md lists them with the reason):
/// `rusage_*` (the process's CPU is every tenant's), memcached's buffer pools
/// (`response_obj_*`, `read_buf_*`), `reserved_fds`, `get_flushed` (a flush removes the items at
/// once, so no get meets a flushed one), `listen_disabled_*` (Locus never stops accepting: past
/// `maxconns` it answers the error, `rejected_connections`), `hash_is_expanding` (the index
/// grows at once under the lock), the slab mover's rescue counters, the LRU maintainer's and
/// the logger's, NAPI ids, `slab_global_page_pool` (free pages belong to no tenant: showing them
/// would tell one tenant what the others use), `expired_unfetched`, `evicted_unfetched`,
/// `lrutail_reflocked`. Left out as memcached leaves them out without the mechanism: its LRU
/// maintainer's and segmented LRU's counters.
fn general(cx: &mut McCtx<'_>, w: &mut ReplyWriter<'_>) {
    let scope = cx.scope();
    let now_s = cx.now_ms / 1000;
    w.stat_u64("pid", u64::from(std::process::id()));
    w.stat_u64("uptime", cx.shared.uptime_secs());
    w.stat_u64("time", now_s);
    w.stat("version", MEMCACHED_VERSION.as_bytes());
    w.stat("libevent", b"locus");
    w.stat_u64("pointer_size", 64);
    w.stat("rusage_user", b"0.000000");
    w.stat("rusage_system", b"0.000000");
    let cfg = cx.shared.config();
    w.stat_u64("max_connections", cx.mc.maxconns.min(cfg.server.maxclients));
    let threads = cfg.server.threads as u64;
    let idle_timeout = !cfg.server.timeout.0.is_zero();
    drop(cfg);
    let mt = scope.and_then(|t| cx.mc.tenant(t));
    let get = |f: fn(&super::Counters) -> &std::sync::atomic::AtomicU64| {
        mt.map_or(0, |m| f(&m.counters).load(Ordering::Relaxed))
    };
    let crawler = |f: fn(&super::crawler::CrawlerSettings) -> &std::sync::atomic::AtomicU64| {
        mt.map_or(0, |m| f(&m.crawler).load(Ordering::Relaxed))
    };
    w.stat_u64("curr_connections", get(|c| &c.curr_connections));
    w.stat_u64("total_connections", get(|c| &c.total_connections));
    w.stat_u64("rejected_connections", get(|c| &c.rejected_connections));
    if idle_timeout {
        // As memcached, only with an idle timeout.
        w.stat_u64("idle_kicks", get(|c| &c.idle_kicks));
    }
    w.stat_u64("connection_structures", get(|c| &c.curr_connections));
    for name in [
        "response_obj_oom",
        "response_obj_count",
        "response_obj_bytes",
        "read_buf_count",
        "read_buf_bytes",
        "read_buf_bytes_free",
        "read_buf_oom",
        "reserved_fds",
    ] {
        w.stat_u64(name, 0);
    }
    w.stat_u64("cmd_get", get(|c| &c.cmd_get));
    w.stat_u64("cmd_set", get(|c| &c.cmd_set));
    w.stat_u64("cmd_flush", get(|c| &c.cmd_flush));
    w.stat_u64("cmd_touch", get(|c| &c.cmd_touch));
    w.stat_u64("cmd_meta", get(|c| &c.cmd_meta));
    w.stat_u64("get_hits", get(|c| &c.get_hits));
    w.stat_u64("get_misses", get(|c| &c.get_misses));
    let get_expired = get(|c| &c.get_expired);
    w.stat_u64("get_expired", get_expired);
    w.stat_u64("get_flushed", get(|c| &c.get_flushed));
    w.stat_u64("delete_misses", get(|c| &c.delete_misses));
    w.stat_u64("delete_hits", get(|c| &c.delete_hits));
    w.stat_u64("incr_misses", get(|c| &c.incr_misses));
    w.stat_u64("incr_hits", get(|c| &c.incr_hits));
    w.stat_u64("decr_misses", get(|c| &c.decr_misses));
    w.stat_u64("decr_hits", get(|c| &c.decr_hits));
    w.stat_u64("cas_misses", get(|c| &c.cas_misses));
    w.stat_u64("cas_hits", get(|c| &c.cas_hits));
    w.stat_u64("cas_badval", get(|c| &c.cas_badval));
    w.stat_u64("touch_hits", get(|c| &c.touch_hits));
    w.stat_u64("touch_misses", get(|c| &c.touch_misses));
    w.stat_u64("store_too_large", get(|c| &c.store_too_large));
    w.stat_u64("store_no_memory", get(|c| &c.store_no_memory));
    w.stat_u64("auth_cmds", get(|c| &c.auth_cmds));
    w.stat_u64("auth_errors", get(|c| &c.auth_errors));
    w.stat_u64("bytes_read", get(|c| &c.bytes_read));
    w.stat_u64("bytes_written", get(|c| &c.bytes_written));
    w.stat_u64("limit_maxbytes", limit_maxbytes(cx, scope));
    w.stat_u64("accepting_conns", 1);
    w.stat_u64("listen_disabled_num", 0);
    w.stat_u64("time_in_listen_disabled_us", 0);
    w.stat_u64("threads", threads);
    w.stat_u64("conn_yields", get(|c| &c.conn_yields));
    // The tenant's index: memcached's hash table (a 4-byte handle and a control byte a bucket).
    let buckets = scope.map_or(0, |t| cx.eng.index_buckets(t));
    w.stat_u64("hash_power_level", u64::from(buckets.max(1).ilog2()));
    w.stat_u64("hash_bytes", buckets * 5);
    w.stat_u64("hash_is_expanding", 0);
    // Items moved off a page the tenant's classes gave back (their surplus free memory).
    let rescued: u64 = scope.map_or(0, |t| cx.eng.class_stats(t).iter().map(|c| c.rescued).sum());
    w.stat_u64("slab_reassign_rescues", rescued);
    w.stat_u64("slab_reassign_chunk_rescues", 0);
    w.stat_u64(
        "slab_reassign_evictions_nomem",
        get(|c| &c.reassign_evictions_nomem),
    );
    for name in [
        "slab_reassign_inline_reclaim",
        "slab_reassign_busy_items",
        "slab_reassign_busy_deletes",
        "slab_reassign_running",
    ] {
        w.stat_u64(name, 0);
    }
    let moved: u64 = scope.map_or(0, |t| {
        cx.eng.class_stats(t).iter().map(|c| c.pages_in).sum()
    });
    w.stat_u64("slabs_moved", moved);
    // As memcached, the crawler's pair only while it is enabled; no `lru_maintainer_juggles`:
    // there is no LRU maintainer thread (memcached prints it only with one).
    let crawler_on = mt.is_none_or(|m| m.crawler.enabled.load(Ordering::Relaxed));
    if crawler_on {
        w.stat_u64("lru_crawler_running", 0);
        w.stat_u64("lru_crawler_starts", crawler(|c| &c.starts));
    }
    for name in [
        "malloc_fails",
        "log_worker_dropped",
        "log_worker_written",
        "log_watcher_skipped",
        "log_watcher_sent",
        "log_watchers",
        "unexpected_napi_ids",
        "round_robin_fallback",
    ] {
        w.stat_u64(name, 0);
    }
    let ts = scope.map(|t| cx.eng.tenant_stats(t));
    // As memcached's: the items' own bytes (key, value and the 13-byte item header), not the
    // pages or the allocations that hold them.
    w.stat_u64("bytes", ts.as_ref().map_or(0, |s| s.item_bytes));
    w.stat_u64("curr_items", ts.as_ref().map_or(0, |s| s.items));
    w.stat_u64("total_items", get(|c| &c.total_items));
    w.stat_u64("slab_global_page_pool", 0);
    w.stat_u64("expired_unfetched", 0);
    w.stat_u64("evicted_unfetched", 0);
    w.stat_u64("evictions", ts.as_ref().map_or(0, |s| s.evictions));
    // Expired items whose memory the engine took back by itself (its expiry sweeps, a store
    // over them): all expirations but those a retrieval or a crawl met.
    let crawler_reclaimed = crawler(|c| &c.reclaimed);
    let expired = ts.as_ref().map_or(0, |s| s.expired);
    w.stat_u64(
        "reclaimed",
        expired.saturating_sub(get_expired + crawler_reclaimed),
    );
    w.stat_u64("crawler_reclaimed", crawler_reclaimed);
    w.stat_u64("crawler_items_checked", crawler(|c| &c.checked));
    w.stat_u64("lrutail_reflocked", 0);
    // memcached's segmented LRU's counters (`evicted_active`, `moves_*`, `direct_reclaims`,
    // `lru_bumps_dropped`) are printed only with its segmented LRU, which Locus has not.
    w.end();
}

/// The bytes the tenant may use: its cap, else the whole budget.
fn limit_maxbytes(cx: &McCtx<'_>, scope: Option<locus_engine::TenantId>) -> u64 {
    let total = cx.eng.config().maxmemory;
    scope
        .and_then(|t| cx.eng.tenant_config(t).max_bytes)
        .map_or(total, |m| m.min(total))
}

fn class_ops(cx: &McCtx<'_>, t: locus_engine::TenantId, class: usize) -> ClassOps {
    cx.mc
        .tenant(t)
        .and_then(|m| m.class_ops.lock().get(class).copied())
        .unwrap_or_default()
}

fn slabs(cx: &mut McCtx<'_>, w: &mut ReplyWriter<'_>) {
    let Some(t) = cx.scope() else {
        w.stat_u64("active_slabs", 0);
        w.stat_u64("total_malloced", 0);
        w.end();
        return;
    };
    let page = cx.eng.config().page_size;
    let classes = cx.eng.class_stats(t);
    let mut active = 0;
    // The tenant's pages and its large items' allocations (memcached's chunked items are
    // slab memory too).
    let mut malloced = cx.eng.tenant_stats(t).large_bytes;
    for c in &classes {
        if c.pages == 0 && c.items == 0 {
            continue;
        }
        active += 1;
        malloced += c.pages * page;
        let id = u64::from(c.class.0) + 1;
        let per_page = page / u64::from(c.chunk_size).max(1);
        let ops = class_ops(cx, t, c.class.0 as usize);
        let s = |w: &mut ReplyWriter<'_>, name: &str, v: u64| {
            w.stat_u64(&format!("{id}:{name}"), v);
        };
        s(w, "chunk_size", u64::from(c.chunk_size));
        s(w, "chunks_per_page", per_page);
        s(w, "total_pages", c.pages);
        s(w, "total_chunks", c.chunks);
        s(w, "used_chunks", c.items);
        s(w, "free_chunks", c.chunks.saturating_sub(c.items));
        s(w, "free_chunks_end", 0);
        s(w, "get_hits", c.hits);
        s(w, "cmd_set", c.sets);
        s(w, "delete_hits", ops.delete_hits);
        s(w, "incr_hits", ops.incr_hits);
        s(w, "decr_hits", ops.decr_hits);
        s(w, "cas_hits", ops.cas_hits);
        s(w, "cas_badval", ops.cas_badval);
        s(w, "touch_hits", ops.touch_hits);
        // Locus's own: pages this class received and gave (slab controller, slabs reassign).
        s(w, "pages_moved_in", c.pages_in);
        s(w, "pages_moved_out", c.pages_out);
    }
    w.stat_u64("active_slabs", active);
    w.stat_u64("total_malloced", malloced);
    w.end();
}

fn items(cx: &mut McCtx<'_>, w: &mut ReplyWriter<'_>) {
    let Some(t) = cx.scope() else {
        w.end();
        return;
    };
    for c in cx.eng.class_stats(t) {
        if c.items == 0 && c.evictions.total() == 0 {
            continue;
        }
        let ops = class_ops(cx, t, c.class.0 as usize);
        let id = u64::from(c.class.0) + 1;
        let s = |w: &mut ReplyWriter<'_>, name: &str, v: u64| {
            w.stat_u64(&format!("items:{id}:{name}"), v);
        };
        s(w, "number", c.items);
        s(w, "number_hot", 0);
        s(w, "number_warm", 0);
        s(w, "number_cold", c.items);
        s(w, "age_hot", 0);
        s(w, "age_warm", 0);
        s(w, "age", 0);
        s(w, "mem_requested", c.item_bytes);
        s(w, "evicted", c.evictions.total());
        s(w, "evicted_nonzero", c.evicted_ttl);
        s(w, "evicted_time", 0);
        s(w, "outofmemory", 0);
        s(w, "tailrepairs", 0);
        // As the tenant's `reclaimed`: expired items the engine took back by itself (its
        // expiry sweeps, or a store over the key), not those a retrieval or a crawl met.
        s(
            w,
            "reclaimed",
            c.expired.saturating_sub(ops.get_expired + c.crawled),
        );
        s(w, "expired_unfetched", 0);
        s(w, "evicted_unfetched", 0);
        s(w, "evicted_active", 0);
        s(w, "crawler_reclaimed", c.crawled);
        s(w, "crawler_items_checked", c.crawl_checked);
        s(w, "lrutail_reflocked", 0);
        s(w, "moves_to_cold", 0);
        s(w, "moves_to_warm", 0);
        s(w, "moves_within_lru", 0);
        s(w, "direct_reclaims", 0);
        s(w, "hits_to_hot", 0);
        s(w, "hits_to_warm", 0);
        s(w, "hits_to_cold", c.hits);
        s(w, "hits_to_temp", 0);
    }
    w.end();
}

/// Keys examined at most by one `stats cachedump` (it holds the engine lock).
const CACHEDUMP_SCAN: usize = 100_000;

/// `stats cachedump <class> [limit]`: `ITEM <key> [<bytes> b; <exptime> s]` for items of the
/// class (memcached lists its LRU; here in storage order), at most `limit` (0: memcached's
/// 2 MB worth of lines), from a bounded scan of the scope tenant's keys.
fn cachedump(cx: &mut McCtx<'_>, w: &mut ReplyWriter<'_>, class: &[u8], limit: Option<&[u8]>) {
    let parse = |b: &[u8]| std::str::from_utf8(b).ok()?.parse::<u64>().ok();
    let (Some(class), Some(t)) = (parse(class), cx.scope()) else {
        w.end();
        return;
    };
    let limit = limit.and_then(parse).filter(|&l| l > 0).unwrap_or(u64::MAX);
    let mut cursor = 0;
    let mut seen = 0;
    let mut listed = 0;
    let mut keys = Vec::new();
    loop {
        keys.clear();
        cursor = cx.eng.scan(t, cursor, 256, &mut keys);
        for k in &keys {
            seen += 1;
            let Some((bytes, len)) = cx
                .eng
                .peek_with_meta(t, k)
                .map(|(p, d)| (d.len(), p.map_or(0, <[u8]>::len) + d.len()))
            else {
                continue;
            };
            if cx.eng.class_for(k.len(), len).map(|c| u64::from(c.0) + 1) != Some(class) {
                continue;
            }
            let exp = match cx.eng.expire_at(t, k) {
                Some(Some(at)) => at / 1000,
                _ => 0,
            };
            let mut line = b"ITEM ".to_vec();
            line.extend_from_slice(k);
            line.extend_from_slice(format!(" [{bytes} b; {exp} s]").as_bytes());
            w.line(&line);
            listed += 1;
            if listed >= limit {
                break;
            }
        }
        if cursor == 0 || listed >= limit || seen >= CACHEDUMP_SCAN {
            break;
        }
    }
    w.end();
}

fn settings(cx: &mut McCtx<'_>, w: &mut ReplyWriter<'_>) {
    let scope = cx.scope();
    let cfg = cx.shared.config();
    w.stat_u64("maxbytes", limit_maxbytes(cx, scope));
    w.stat_u64("maxconns", cx.mc.maxconns.min(cfg.server.maxclients));
    w.stat_u64("tcpport", u64::from(cfg.memcached.port.unwrap_or(0)));
    w.stat_u64("udpport", 0);
    w.stat("inter", cfg.server.bind.as_bytes());
    let verbosity = scope
        .and_then(|t| cx.mc.tenant(t))
        .map_or(0, |m| m.verbosity.load(Ordering::Relaxed));
    w.stat_u64("verbosity", verbosity);
    w.stat_u64("oldest", 0);
    w.stat("evictions", b"on");
    w.stat(
        "growth_factor",
        format!("{:.2}", cx.mc.growth_factor).as_bytes(),
    );
    w.stat_u64("chunk_size", u64::from(cx.mc.chunk_size));
    w.stat_u64("num_threads", cfg.server.threads as u64);
    w.stat("cas_enabled", b"yes");
    w.stat_u64("tcp_backlog", u64::from(cfg.server.tcp_backlog));
    w.stat("binding_protocol", b"ascii");
    w.stat("auth_enabled_sasl", b"no");
    w.stat(
        "auth_enabled_ascii",
        if cx.mc.auth { b"yes".as_slice() } else { b"no" },
    );
    w.stat_u64("item_size_max", cx.mc.limits.max_item_size as u64);
    w.stat("slab_reassign", b"yes");
    let automove = scope
        .and_then(|t| cx.mc.tenant(t))
        .is_some_and(|m| m.automove.load(Ordering::Relaxed))
        && cx.mc.controller.is_some();
    w.stat_u64("slab_automove", u64::from(automove));
    w.stat(
        "slab_automove_controller",
        cx.mc.controller.as_deref().unwrap_or("none").as_bytes(),
    );
    w.stat_u64("slab_chunk_max", cx.eng.config().page_size / 2);
    let crawler = scope.and_then(|t| cx.mc.tenant(t)).map(|m| &m.crawler);
    let enabled = crawler.is_none_or(|c| c.enabled.load(Ordering::Relaxed));
    w.stat(
        "lru_crawler",
        if enabled { b"yes".as_slice() } else { b"no" },
    );
    w.stat_u64(
        "lru_crawler_sleep",
        crawler.map_or(100, |c| u64::from(c.sleep_us.load(Ordering::Relaxed))),
    );
    w.stat_u64(
        "lru_crawler_tocrawl",
        crawler.map_or(0, |c| u64::from(c.tocrawl.load(Ordering::Relaxed))),
    );
    w.stat("flush_enabled", b"yes");
    w.stat("dump_enabled", b"yes");
    w.stat_u64("idle_timeout", cfg.server.timeout.0.as_secs());
    w.end();
}
