//! `INFO`: Redis's sections (server, clients, memory, stats, keyspace, ...) plus `tenants` and `locus`.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use locus_engine::{Engine, TenantId};

use crate::exec::{Args, CmdResult, Ctx, lower};

pub(super) fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if bytes < 1024 {
        format!("{bytes}B")
    } else if b < 1024.0 * 1024.0 {
        format!("{:.2}K", b / 1024.0)
    } else if b < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2}M", b / (1024.0 * 1024.0))
    } else {
        format!("{:.2}G", b / (1024.0 * 1024.0 * 1024.0))
    }
}

/// CPU seconds of this process from `/proc/self/stat` (user, system, children's user, children's
/// system) and of its main thread (user, system); zeros where `/proc` is not there. The kernel
/// reports them in USER_HZ ticks, 100 a second on Linux.
fn cpu_seconds() -> [f64; 6] {
    let ticks = |path: &str, fields: &[usize]| -> Vec<f64> {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        // Fields after the command name, which is in parentheses and may hold spaces.
        let rest = text.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<&str> = rest.split_whitespace().collect();
        fields
            .iter()
            .map(|&i| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 100.0)
            .collect()
    };
    // After ")": state is field 0, utime 11, stime 12, cutime 13, cstime 14.
    let p = ticks("/proc/self/stat", &[11, 12, 13, 14]);
    let main = ticks(
        &format!("/proc/self/task/{}/stat", std::process::id()),
        &[11, 12],
    );
    [p[0], p[1], p[2], p[3], main[0], main[1]]
}

/// Builds the INFO text for the given sections (lowercase; empty = default sections).
pub fn info_text(ctx: &mut Ctx<'_>, sections: &[String]) -> String {
    let all = sections.iter().any(|s| s == "all" || s == "everything");
    let want =
        |s: &str| all || sections.is_empty() || sections.iter().any(|x| x == s || x == "default");
    let mut out = String::new();
    let sh = ctx.shared();
    let cfg = sh.config().clone();
    let uptime = sh.uptime_secs();
    let st = ctx.eng.stats();
    // A tenant's connection sees its own tenant's figures only (exec::privilege).
    let scope = ctx.conn.scope();
    let tenants: Vec<TenantId> = ctx
        .eng
        .tenant_ids()
        .into_iter()
        .filter(|t| scope.is_none_or(|s| s == Some(*t)))
        .collect();
    let tstats: Vec<_> = tenants
        .iter()
        .map(|&t| (t, ctx.eng.tenant_stats(t)))
        .collect();
    let own = scope.map(|_| tstats.first().map(|(_, s)| s));
    let sep = |out: &mut String| {
        if !out.is_empty() {
            out.push_str("\r\n");
        }
    };
    // A tenant sees nothing of the process that would tell it about the others or about the
    // host: no process id, no configuration file path, no process-wide CPU time (which moves
    // with the other tenants' load).
    let tenant_view = scope.is_some();
    if want("server") {
        sep(&mut out);
        let ports: Vec<String> = sh
            .listeners()
            .iter()
            .map(|(a, _)| a.port().to_string())
            .collect();
        let _ = write!(
            out,
            "# Server\r\nredis_version:{}\r\nlocus_version:{}\r\nredis_mode:standalone\r\nos:{} {}\r\narch_bits:{}\r\nmultiplexing_api:tokio\r\n{}tcp_port:{}\r\nserver_time_usec:{}\r\nuptime_in_seconds:{}\r\nuptime_in_days:{}\r\nhz:{}\r\nconfigured_hz:{}\r\nio_threads_active:0\r\n{}tenancy_mode:{}\r\n",
            crate::REDIS_VERSION,
            env!("CARGO_PKG_VERSION"),
            std::env::consts::OS,
            std::env::consts::ARCH,
            usize::BITS,
            if tenant_view {
                String::new()
            } else {
                format!("process_id:{}\r\n", std::process::id())
            },
            ports.first().cloned().unwrap_or_default(),
            sh.clock().now_us(),
            uptime,
            uptime / 86400,
            cfg.server.hz,
            cfg.server.hz,
            if tenant_view {
                String::new()
            } else {
                format!("config_file:{}\r\n", sh.config_file().unwrap_or_default())
            },
            sh.tenancy().mode,
        );
    }
    if want("clients") {
        sep(&mut out);
        let _ = write!(
            out,
            "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\nblocked_clients:{}\r\ntracking_clients:{}\r\n",
            // Killed clients are gone at once, as in Redis (their tasks end a moment later).
            sh.count_visible(scope) as u64,
            cfg.server.maxclients,
            sh.blocking().count_visible(scope) + crate::exec::pause::waiting_visible(scope),
            crate::exec::tracking::info_counts(sh, scope)[0],
        );
    }
    if want("memory") {
        sep(&mut out);
        let policy = tstats
            .first()
            .map_or(cfg.eviction.policy.clone(), |(_, s)| {
                s.policy.name().to_string()
            });
        let (obuf, qbuf) = sh.client_buffers(scope);
        // A tenant: its pages, items and budget instead of the server's.
        let (used, dataset, charged, overhead, maxmemory, pages_used) = match own {
            None => (
                st.used_bytes,
                st.item_bytes,
                st.charged_bytes + st.large_bytes,
                st.metadata_bytes,
                st.maxmemory,
                st.pages_used,
            ),
            Some(None) => (0, 0, 0, 0, 0, 0),
            Some(Some(o)) => (
                o.pages.saturating_mul(st.page_size) + o.large_bytes,
                o.item_bytes,
                o.charged_bytes + o.large_bytes,
                o.metadata_bytes,
                o.max_bytes.unwrap_or(st.maxmemory),
                o.pages,
            ),
        };
        let _ = write!(
            out,
            "# Memory\r\nused_memory:{}\r\nused_memory_human:{}\r\nused_memory_dataset:{}\r\nused_memory_items_charged:{}\r\nused_memory_overhead:{}\r\nmaxmemory:{}\r\nmaxmemory_human:{}\r\nmaxmemory_policy:{}\r\npage_size:{}\r\npages_used:{}\r\npages_total:{}\r\nmem_clients_normal:{}\r\nclient_output_buffers:{}\r\nclient_query_buffers:{}\r\nmem_allocator:locus-pages\r\n",
            used,
            human(used),
            dataset,
            charged,
            overhead,
            maxmemory,
            human(maxmemory),
            policy,
            st.page_size,
            pages_used,
            st.pages_total,
            obuf + qbuf,
            obuf,
            qbuf,
        );
        // Redis 7.0 lists both in its Memory section (exec/lazyfree).
        let (lazy_pending, lazyfreed) = crate::exec::lazyfree::counts(scope);
        let _ = write!(
            out,
            "lazyfree_pending_objects:{lazy_pending}\r\nlazyfreed_objects:{lazyfreed}\r\n"
        );
        // Redis leaves replication and AOF buffers out of what maxmemory bounds; everything in
        // Locus's used_memory (query buffers included) counts toward the budget.
        out.push_str("mem_not_counted_for_evict:0\r\n");
        // Scripting (exec/scripting): the Lua VMs and script caches of the tenants in scope.
        let lua = sh.scripts().stats(scope);
        let _ = write!(
            out,
            "used_memory_lua:{}\r\nused_memory_vm_eval:{}\r\nused_memory_lua_human:{}\r\nused_memory_scripts_eval:{}\r\nnumber_of_cached_scripts:{}\r\n",
            lua.lua_bytes,
            lua.lua_bytes,
            human(lua.lua_bytes as u64),
            lua.body_bytes,
            lua.scripts,
        );
    }
    if want("persistence") {
        sep(&mut out);
        // Snapshots (SAVE/BGSAVE); no AOF. The count of changes is server-wide traffic: the
        // admin's only.
        let st = sh.snapshots().status(sh.clock().now_ms());
        let _ = write!(
            out,
            "# Persistence\r\nloading:0\r\nasync_loading:0\r\nrdb_changes_since_last_save:{}\r\nrdb_bgsave_in_progress:{}\r\nrdb_last_save_time:{}\r\nrdb_last_bgsave_status:{}\r\nrdb_last_bgsave_time_sec:{}\r\nrdb_current_bgsave_time_sec:{}\r\nrdb_saves:{}\r\nlatest_fork_usec:{}\r\naof_enabled:0\r\naof_rewrite_in_progress:0\r\n",
            if scope.is_none() { st.changes } else { 0 },
            u8::from(st.in_progress),
            st.lastsave,
            if st.last_ok { "ok" } else { "err" },
            st.last_bgsave_secs,
            st.current_secs,
            st.saves,
            st.fork_usec,
        );
        if scope.is_none() && !st.last_error.is_empty() {
            let _ = write!(
                out,
                "locus_snapshot_last_error:{}\r\n",
                st.last_error.replace(['\r', '\n'], " ")
            );
        }
    }
    if want("stats") {
        sep(&mut out);
        let hits: u64 = tstats.iter().map(|(_, s)| s.hits).sum();
        let misses: u64 = tstats.iter().map(|(_, s)| s.misses).sum();
        out.push_str("# Stats\r\n");
        if scope.is_none() {
            // Server-wide traffic: the admin's only (it would show other tenants' activity).
            let _ = write!(
                out,
                "total_connections_received:{}\r\ntotal_commands_processed:{}\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\nrejected_connections:{}\r\nclient_output_buffer_limit_disconnections:{}\r\ntotal_error_replies:{}\r\n",
                sh.stats().total_connections.load(Ordering::Relaxed),
                sh.stats().total_commands.load(Ordering::Relaxed),
                sh.stats().net_input_bytes.load(Ordering::Relaxed),
                sh.stats().net_output_bytes.load(Ordering::Relaxed),
                sh.stats().rejected_connections.load(Ordering::Relaxed),
                sh.stats()
                    .output_limit_disconnections
                    .load(Ordering::Relaxed),
                crate::exec::errorstats::total(),
            );
        }
        // The admin's: the server's rates; a tenant's: its own (crate::instant).
        out.push_str(&crate::instant::info_lines(scope));
        let (expired, evicted) = match scope {
            None => (st.expired, st.evictions),
            Some(_) => (
                tstats.iter().map(|(_, s)| s.expired).sum(),
                tstats.iter().map(|(_, s)| s.evictions).sum(),
            ),
        };
        let _ = write!(
            out,
            "expired_keys:{expired}\r\nevicted_keys:{evicted}\r\nkeyspace_hits:{hits}\r\nkeyspace_misses:{misses}\r\n",
        );
        // Client-side caching: the tables of the tenants in scope (exec/tracking).
        let [_, keys, items, prefixes] = crate::exec::tracking::info_counts(sh, scope);
        let _ = write!(
            out,
            "tracking_total_keys:{keys}\r\ntracking_total_items:{items}\r\ntracking_total_prefixes:{prefixes}\r\n",
        );
        // MIGRATE opens a connection per call and closes it: none is ever cached.
        out.push_str("migrate_cached_sockets:0\r\n");
    }
    if want("replication") {
        sep(&mut out);
        out.push_str(
            "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_repl_offset:0\r\n",
        );
    }
    if want("cpu") && !tenant_view {
        sep(&mut out);
        let cpu = cpu_seconds();
        let _ = write!(
            out,
            "# CPU\r\nused_cpu_sys:{:.6}\r\nused_cpu_user:{:.6}\r\nused_cpu_sys_children:{:.6}\r\nused_cpu_user_children:{:.6}\r\nused_cpu_sys_main_thread:{:.6}\r\nused_cpu_user_main_thread:{:.6}\r\n",
            cpu[1], cpu[0], cpu[3], cpu[2], cpu[5], cpu[4]
        );
    }
    // Not in the default set, as in Redis.
    if all || sections.iter().any(|x| x == "commandstats") {
        sep(&mut out);
        out.push_str("# Commandstats\r\n");
        // Server-wide: the admin's only (a tenant would see the others' traffic).
        if scope.is_none() {
            for (name, c) in sh.stats().commands.used() {
                let calls = c.calls.load(Ordering::Relaxed);
                let nanos = c.nanos.load(Ordering::Relaxed);
                let usec = nanos / 1000;
                let per_call = if calls == 0 {
                    0.0
                } else {
                    nanos as f64 / 1000.0 / calls as f64
                };
                let _ = write!(
                    out,
                    "cmdstat_{name}:calls={calls},usec={usec},usec_per_call={per_call:.2},rejected_calls={},failed_calls={}\r\n",
                    c.rejected.load(Ordering::Relaxed),
                    c.failed.load(Ordering::Relaxed),
                );
            }
        }
    }
    if want("errorstats") {
        sep(&mut out);
        out.push_str("# Errorstats\r\n");
        // Server-wide: the admin's only, as commandstats.
        if scope.is_none() {
            crate::exec::errorstats::info_lines(&mut out);
        }
    }
    if want("keyspace") {
        sep(&mut out);
        out.push_str("# Keyspace\r\n");
        // The caller's own keyspace only (tenants never see each other); in db mode it is listed
        // under its db number.
        if let Some(t) = ctx.conn.tenant
            && let Some((_, s)) = tstats.iter().find(|(id, _)| *id == t)
            && s.items > 0
        {
            let _ = write!(
                out,
                "db{}:keys={},expires={},avg_ttl=0\r\n",
                ctx.conn.db, s.items, s.volatile_items
            );
        }
    }
    if want("tenants") || all {
        sep(&mut out);
        out.push_str("# Tenants\r\n");
        for (t, s) in &tstats {
            let _ = write!(
                out,
                "tenant_{}:min={},max={},used_bytes={},pages={},items={},hits={},misses={},evictions={},expired={},samples={},policy={}\r\n",
                sh.tenancy().name(*t),
                s.min_bytes,
                s.max_bytes.map_or("none".to_string(), |m| m.to_string()),
                s.pages.saturating_mul(st.page_size) + s.large_bytes,
                s.pages,
                s.items,
                s.hits,
                s.misses,
                s.evictions,
                s.expired,
                s.samples,
                s.policy.name(),
            );
        }
    }
    // pRedis's dump/load, one line per tenant (of the caller's scope) that uses it.
    if (want("dumpload") || all) && sh.dumploads().enabled() {
        sep(&mut out);
        out.push_str("# Dumpload\r\n");
        for (t, _) in &tstats {
            if let Some(d) = sh.dumploads().status(*t) {
                let _ = write!(
                    out,
                    "dumpload_{}:mode={},state={},dumps={},loads={},last_dump_ms={},last_load_ms={},items_dumped={},items_loaded={},last_dump_usec={},dump_steps={},dump_step_items_max={},last_load_usec={},last_error={}\r\n",
                    sh.tenancy().name(*t),
                    d.mode.replace([',', ' '], "_"),
                    d.state,
                    d.dumps,
                    d.loads,
                    d.last_dump_ms,
                    d.last_load_ms,
                    d.items_dumped,
                    d.items_loaded,
                    d.dump_usec,
                    d.dump_steps,
                    d.dump_step_items_max,
                    d.load_usec,
                    d.last_error.replace(['\r', '\n', ','], " "),
                );
            }
        }
    }
    if want("locus") || want("controller") {
        sep(&mut out);
        locus_section(&mut out, ctx.eng, ctx.shared(), scope);
    }
    // Not in the default set (it would change every untiered server's INFO).
    if all || sections.iter().any(|x| x == "tiers") {
        sep(&mut out);
        tiers_section(&mut out, ctx.eng, ctx.shared(), scope, &tenants);
    }
    out
}

/// One tier's counters as `k=v` pairs (INFO tiers).
fn tier_counters(c: &locus_engine::tier::TierCounters) -> String {
    format!(
        "pages={},items={},charged_bytes={},hits={},moved_in={},evictions_reactive={},evictions_proactive={},evictions_page_reclaim={}",
        c.pages,
        c.items,
        c.charged_bytes,
        c.hits,
        c.moved_in,
        c.evictions.reactive,
        c.evictions.proactive,
        c.evictions.page_reclaim,
    )
}

/// The `# Tiers` INFO section (sdTMM): `tiers:0` without `[tier]`. The settings for everyone;
/// the tiers' pages, free space and totals (every tenant's traffic) for the admin only; per
/// tenant, the `tenants` visible to the caller (a tenant: its own only).
pub(super) fn tiers_section(
    out: &mut String,
    eng: &Engine,
    sh: &crate::server::Shared,
    scope: Option<Option<TenantId>>,
    tenants: &[TenantId],
) {
    out.push_str("# Tiers\r\n");
    let (Some(ts), Some(cfg)) = (eng.tier_stats(), eng.config().tier.as_ref()) else {
        out.push_str("tiers:0\r\n");
        return;
    };
    let page = eng.stats().page_size;
    let _ = write!(
        out,
        "tiers:2\r\ntier_slow_backend:{}\r\ntier_emulated_delay_ns:{}\r\ntier_low_watermark:{}\r\ntier_high_watermark:{}\r\ntier_promotion:{}\r\n",
        cfg.slow_backend,
        ts.slow_access_ns,
        cfg.low_watermark,
        cfg.high_watermark,
        format!("{:?}", cfg.promotion).to_ascii_lowercase(),
    );
    let per: Vec<(TenantId, locus_engine::TenantTierStats)> = tenants
        .iter()
        .filter_map(|&t| eng.tenant_tier_stats(t).map(|s| (t, s)))
        .collect();
    for tier in locus_engine::Tier::ALL {
        let i = tier.index();
        let _ = write!(
            out,
            "tier_{}:budget_pages={},budget_bytes={}",
            tier.name(),
            ts.budget_pages[i],
            ts.budget_pages[i] * page
        );
        if scope.is_none() {
            let sum = |f: &dyn Fn(&locus_engine::tier::TierCounters) -> u64| -> u64 {
                per.iter().map(|(_, s)| f(&s.tiers[i])).sum()
            };
            let _ = write!(
                out,
                ",pages={},free_share={:.4},charged_bytes={},items={},hits={},moved_in={},evictions_reactive={},evictions_proactive={},evictions_page_reclaim={}",
                ts.used_pages[i],
                ts.free_share[i],
                ts.charged_bytes[i],
                sum(&|c| c.items),
                sum(&|c| c.hits),
                sum(&|c| c.moved_in),
                sum(&|c| c.evictions.reactive),
                sum(&|c| c.evictions.proactive),
                sum(&|c| c.evictions.page_reclaim),
            );
        }
        out.push_str("\r\n");
    }
    if scope.is_none() {
        let w = sh.tier_workers();
        let _ = write!(
            out,
            "tier_promotions:{}\r\ntier_demotions:{}\r\ntier_mean_reuse:{}\r\ntier_worker_runs:{}\r\ntier_worker_thread_steps:{}\r\ntier_worker_lock_usec:{}\r\ntier_worker_max_step_usec:{}\r\ntier_emulated_delay_usec:{}\r\n",
            per.iter().map(|(_, s)| s.promotions).sum::<u64>(),
            per.iter().map(|(_, s)| s.demotions).sum::<u64>(),
            ts.mean_reuse
                .map_or("none".to_string(), |m| format!("{m:.1}")),
            ts.worker_runs,
            w.steps.load(Ordering::Relaxed),
            w.lock_ns.load(Ordering::Relaxed) / 1000,
            w.max_step_ns.load(Ordering::Relaxed) / 1000,
            w.delay_ns.load(Ordering::Relaxed) / 1000,
        );
    }
    for (t, s) in &per {
        let name = sh.tenancy().name(*t);
        let _ = write!(
            out,
            "tenant_{name}:promotions={},demotions={},chained_demotions={},fast_target_bytes={}\r\n",
            s.promotions,
            s.demotions,
            s.chained_demotions,
            s.fast_target_bytes
                .map_or("none".to_string(), |b| b.to_string()),
        );
        for tier in locus_engine::Tier::ALL {
            let _ = write!(
                out,
                "tenant_{name}_{}:{}\r\n",
                tier.name(),
                tier_counters(&s.tiers[tier.index()])
            );
        }
    }
}

/// The `# Locus` INFO section: the memory controller and, per tenant, pages, target, K and miss
/// penalty (`pool_<tenant>:pages=..,target=..|none,samples=..,penalty_us=..,penalty_samples=..`).
pub(super) fn locus_section(
    out: &mut String,
    eng: &Engine,
    sh: &crate::server::Shared,
    scope: Option<Option<TenantId>>,
) {
    let st = eng.stats();
    let cc = eng.control_config();
    let last = eng.last_control_record().map(|r| r.at_request);
    if scope.is_some() {
        // A tenant: the controller's name and its own pool; the server-wide counters would
        // show other tenants' activity.
        let _ = write!(
            out,
            "# Locus\r\ncontroller:{}\r\n",
            eng.controller_name()
                .unwrap_or(crate::config::NO_CONTROLLER)
        );
    } else {
        locus_globals(out, eng, sh, cc, last, &st);
    }
    let targets = eng.targets();
    for t in eng
        .tenant_ids()
        .into_iter()
        .filter(|t| scope.is_none_or(|s| s == Some(*t)))
    {
        let ts = eng.tenant_stats(t);
        let (penalty, samples) = eng.penalty(t);
        let _ = write!(
            out,
            "pool_{}:pages={},target={},samples={},penalty_us={:.1},penalty_samples={}\r\n",
            sh.tenancy().name(t),
            ts.pages,
            targets
                .get(t.0 as usize)
                .copied()
                .flatten()
                .map_or("none".to_string(), |x| x.to_string()),
            ts.samples,
            penalty,
            samples,
        );
        class_lines(out, eng, sh.tenancy().name(t), t, &targets);
    }
}

/// Per-key penalty classes of tenant `t` (only in its own scope or the admin's): one line per
/// class pool, `class_<tenant>_<k>:range_us=lo-hi|default,keys=..,bytes=..,pages=..,target=..,
/// penalty_us=..,penalty_samples=..,hits=..,misses=..` (`k` 0 is the default class).
fn class_lines(out: &mut String, eng: &Engine, name: &str, t: TenantId, targets: &[Option<u64>]) {
    for (k, c) in eng.class_pools(t).iter().enumerate() {
        let range = c.range.map_or("default".to_string(), |(lo, hi)| {
            let (a, _) = locus_engine::control::penalty_class_range(lo);
            let (_, b) = locus_engine::control::penalty_class_range(hi);
            format!("{a}-{b}")
        });
        let _ = write!(
            out,
            "class_{name}_{k}:range_us={range},keys={},bytes={},pages={},target={},penalty_us={:.1},penalty_samples={},hits={},misses={}\r\n",
            c.stats.items,
            c.stats.item_bytes,
            c.stats.pages,
            targets
                .get(c.pool.0 as usize)
                .copied()
                .flatten()
                .map_or("none".to_string(), |x| x.to_string()),
            c.penalty.0,
            c.penalty.1,
            c.stats.hits,
            c.stats.misses,
        );
    }
}

/// `INFO [section ...]`
pub fn info(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let sections: Vec<String> = a[1..].iter().map(|s| lower(s)).collect();
    let text = info_text(ctx, &sections);
    ctx.w.verbatim("txt", text.as_bytes());
    Ok(())
}

/// The server-wide lines of `# Locus` (the admin's).
fn locus_globals(
    out: &mut String,
    eng: &Engine,
    sh: &crate::server::Shared,
    cc: Option<locus_engine::control::ControlConfig>,
    last: Option<u64>,
    st: &locus_engine::EngineStats,
) {
    let _ = write!(
        out,
        "# Locus\r\ncontroller:{}\r\ncontroller_interval:{}\r\ncontroller_max_moves:{}\r\ncontroller_offload:{}\r\ncontroller_dropped_events:{}\r\ncontroller_decisions:{}\r\ncontroller_requests:{}\r\ncontroller_last_decision_at_request:{}\r\npages_total:{}\r\npages_used:{}\r\ninternal_errors:{}\r\n",
        eng.controller_name()
            .unwrap_or(crate::config::NO_CONTROLLER),
        cc.map_or("none".to_string(), |c| c.interval.to_string()),
        cc.map_or(0, |c| c.max_moves),
        u8::from(eng.controller_offloaded()),
        eng.controller_dropped_events(),
        eng.control_decisions(),
        eng.control_requests(),
        last.map_or("none".to_string(), |r| r.to_string()),
        st.pages_total,
        st.pages_used,
        sh.stats().internal_errors.load(Ordering::Relaxed),
    );
    // The engine lock every tenant shares: how long it was held is how long others waited.
    let l = sh.engine_lock_stats().snapshot();
    let _ = write!(
        out,
        "engine_lock_acquisitions:{}\r\nengine_lock_contended:{}\r\nengine_lock_wait_us:{}\r\nengine_lock_hold_us:{}\r\nengine_lock_max_wait_us:{}\r\nengine_lock_max_hold_us:{}\r\nio_under_lock:{}\r\n",
        l.acquisitions,
        l.contended,
        l.wait_ns / 1000,
        l.hold_ns / 1000,
        l.max_wait_ns / 1000,
        l.max_hold_ns / 1000,
        crate::server::io_under_lock(),
    );
}
