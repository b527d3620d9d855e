//! `CONFIG GET/SET/RESETSTAT/HELP`: the configurable parameters, validated as the configuration file is.

use std::sync::atomic::Ordering;

use locus_common::ByteSize;

use crate::config::{ServerConfig, parse_policy};
use crate::exec::privilege::{TENANT_SETTABLE, noperm};
use crate::exec::{Args, CmdError, CmdResult, Ctx, is, lower};
use crate::glob::glob_match;

use super::{help, unknown_sub};

/// Redis's wording for a bad `maxmemory-policy` (its order), plus Locus's extra policy.
pub(super) const POLICY_CHOICES: &str = "argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction, allkeys-exact-lru, allkeys-hyperbolic";

/// The parameters CONFIG GET knows, with their current value.
pub(super) fn config_params(
    cfg: &ServerConfig,
    eng: &locus_engine::Engine,
) -> Vec<(&'static str, String)> {
    let first = eng.tenant_ids().first().copied();
    let policy = first.map_or(cfg.eviction.policy.clone(), |t| {
        eng.tenant_config(t).policy.name().to_string()
    });
    let samples = first.map_or(cfg.eviction.samples, |t| eng.tenant_config(t).samples);
    let mut limits = Vec::new();
    for l in crate::exec::types::limits::ALL {
        for (i, n) in l.names.iter().enumerate() {
            if i == 0 || *n != l.names[0] {
                limits.push((*n, l.get().to_string()));
            }
        }
    }
    let mut params = vec![
        ("maxmemory", eng.config().maxmemory.to_string()),
        ("maxmemory-policy", policy),
        ("maxmemory-samples", samples.to_string()),
        ("maxmemory-eviction-tenacity", "10".into()),
        ("maxclients", cfg.server.maxclients.to_string()),
        ("timeout", cfg.server.timeout.0.as_secs().to_string()),
        ("port", cfg.server.port.to_string()),
        ("bind", cfg.server.bind.clone()),
        ("hz", cfg.server.hz.to_string()),
        ("databases", cfg.server.databases.to_string()),
        ("tcp-backlog", cfg.server.tcp_backlog.to_string()),
        (
            "tcp-keepalive",
            cfg.server.tcp_keepalive.0.as_secs().to_string(),
        ),
        (
            "proto-max-bulk-len",
            cfg.limits.proto_max_bulk_len.0.to_string(),
        ),
        (
            "client-query-buffer-limit",
            cfg.limits.client_query_buffer_limit.0.to_string(),
        ),
        (
            "client-output-buffer-limit",
            cfg.limits.client_output_buffer_limit.to_string(),
        ),
        ("requirepass", cfg.server.requirepass.clone()),
        (
            "notify-keyspace-events",
            cfg.server.notify_keyspace_events.clone(),
        ),
        (
            "tracking-table-max-keys",
            cfg.server.tracking_table_max_keys.to_string(),
        ),
        ("lfu-log-factor", eng.config().lfu_log_factor.to_string()),
        ("lfu-decay-time", eng.config().lfu_decay_time.to_string()),
        ("io-threads", cfg.server.threads.to_string()),
        (
            "hll-sparse-max-bytes",
            crate::exec::hll::sparse_max_bytes().to_string(),
        ),
        (
            "slowlog-log-slower-than",
            crate::exec::slowlog::LOG_SLOWER_THAN
                .load(Ordering::Relaxed)
                .to_string(),
        ),
        (
            "latency-monitor-threshold",
            crate::exec::latency::THRESHOLD_MS
                .load(Ordering::Relaxed)
                .to_string(),
        ),
        (
            "slowlog-max-len",
            crate::exec::slowlog::MAX_LEN
                .load(Ordering::Relaxed)
                .to_string(),
        ),
    ];
    params.extend(limits);
    params.extend(super::compat::params());
    params.extend(
        crate::exec::lazyfree::SETTINGS
            .iter()
            .map(|n| (*n, crate::exec::lazyfree::get(n).to_string())),
    );
    params.extend(tier_params(eng));
    params
}

/// `[tier]`'s settings as the engine runs them (`tier-*`, read-only; none without tiers). The
/// backend shows its resolved delay (`emulated:<ns>` when measured at start-up) and the fast
/// tier both as a share and in bytes.
fn tier_params(eng: &locus_engine::Engine) -> Vec<(&'static str, String)> {
    let cfg = eng.config();
    let Some(t) = cfg.tier.as_ref() else {
        return Vec::new();
    };
    let fast_pages = eng.tier_stats().map_or(0, |s| s.budget_pages[0]);
    let values = [
        t.slow_backend.to_string(),
        t.fast_share.to_string(),
        (fast_pages * cfg.page_size).to_string(),
        t.low_watermark.to_string(),
        t.high_watermark.to_string(),
        t.demotion_batch.to_string(),
        t.eviction_batch.to_string(),
        t.promotion_batch.to_string(),
        t.promotion_scan.to_string(),
        t.fast_insertion.to_string(),
        t.slow_insertion.to_string(),
        format!("{:?}", t.promotion).to_ascii_lowercase(),
        t.reuse_window.to_string(),
        t.worker_interval.to_string(),
    ];
    TIER_PARAMS.into_iter().zip(values).collect()
}

/// The `tier-*` parameters of a tiered server, in `CONFIG GET`'s order (fixed at start-up).
const TIER_PARAMS: [&str; 14] = [
    "tier-slow-backend",
    "tier-fast-share",
    "tier-fast-memory",
    "tier-low-watermark",
    "tier-high-watermark",
    "tier-demotion-batch",
    "tier-eviction-batch",
    "tier-promotion-batch",
    "tier-promotion-scan",
    "tier-fast-insertion",
    "tier-slow-insertion",
    "tier-promotion",
    "tier-reuse-window",
    "tier-worker-interval",
];

/// Parses a memory value as Redis does for CONFIG SET (plain bytes or units).
pub(super) fn memory_value(name: &str, v: &[u8]) -> Result<u64, CmdError> {
    std::str::from_utf8(v)
        .ok()
        .and_then(|s| s.parse::<ByteSize>().ok())
        .map(|b| b.0)
        .ok_or_else(|| {
            CmdError::msg(format!(
                "ERR CONFIG SET failed (possibly related to argument '{name}') - argument must be a memory value"
            ))
        })
}

/// Parses one `CONFIG SET` pair into the candidate configuration (no side effects yet).
pub(super) fn config_set_one(cand: &mut ServerConfig, name: &str, v: &[u8]) -> CmdResult {
    let fail = |why: &str| {
        CmdError::msg(format!(
            "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
        ))
    };
    let text = String::from_utf8_lossy(v).into_owned();
    let int_in = |lo: i64, hi: i64| {
        crate::exec::parse_i64(v)
            .filter(|n| (lo..=hi).contains(n))
            .ok_or_else(|| fail(&format!("argument must be between {lo} and {hi} inclusive")))
    };
    match name {
        "maxmemory" => {
            let bytes = memory_value(name, v)?;
            // Redis: 0 means "no limit"; Locus always has a budget, so 0 is refused.
            if bytes == 0 {
                return Err(fail("Locus needs a finite maxmemory (no 0 = unlimited)"));
            }
            cand.memory.maxmemory = ByteSize(bytes);
        }
        "maxmemory-policy" => {
            let p = parse_policy(&text).map_err(|_| fail(POLICY_CHOICES))?;
            cand.eviction.policy = p.name().to_string();
            // The global setting applies to every tenant.
            for t in &mut cand.tenants {
                t.policy = None;
            }
        }
        "maxmemory-samples" => {
            cand.eviction.samples = int_in(1, 64)? as u32;
            for t in &mut cand.tenants {
                t.samples = None;
            }
        }
        "maxclients" => cand.server.maxclients = int_in(1, u32::MAX as i64)? as u64,
        "timeout" => {
            cand.server.timeout.0 =
                std::time::Duration::from_secs(int_in(0, i64::from(i32::MAX))? as u64)
        }
        "hz" => cand.server.hz = int_in(1, 500)? as u32,
        "proto-max-bulk-len" => cand.limits.proto_max_bulk_len = ByteSize(memory_value(name, v)?),
        "client-query-buffer-limit" => {
            let bytes = memory_value(name, v)?;
            // Redis's range (the configuration file's check says the same in its words).
            if !(1 << 20..=i64::MAX as u64).contains(&bytes) {
                return Err(fail(
                    "argument must be between 1048576 and 9223372036854775807 inclusive",
                ));
            }
            cand.limits.client_query_buffer_limit = ByteSize(bytes)
        }
        "client-output-buffer-limit" => cand
            .limits
            .client_output_buffer_limit
            .apply(&text)
            .map_err(|e| fail(&e))?,
        "requirepass" => cand.server.requirepass = text,
        "notify-keyspace-events" => {
            let f = crate::exec::notify::parse_flags(v)
                .ok_or_else(|| fail("Invalid event class character. Use 'Ag$lshzxeKEtmdn'."))?;
            cand.server.notify_keyspace_events = crate::exec::notify::format_flags(f);
        }
        "tracking-table-max-keys" => {
            cand.server.tracking_table_max_keys = int_in(0, i64::MAX)? as u64;
        }
        // Process-wide, outside the configuration file: checked here, applied by `config_set`.
        "hll-sparse-max-bytes" => {
            hll_sparse_max_bytes(v).map_err(fail)?;
        }
        // Process-wide (exec/lazyfree.rs), applied by `config_set`.
        _ if crate::exec::lazyfree::SETTINGS.contains(&name) => {
            crate::exec::lazyfree::parse(name, v).map_err(|e| fail(&e))?;
        }
        // The engine's LFU counters (Redis's ranges within the engine's), applied by
        // `config_set`.
        "lfu-log-factor" => {
            int_in(0, 1_000_000)?;
        }
        "lfu-decay-time" => {
            int_in(0, 65_535)?;
        }
        // Process-wide (exec/slowlog.rs), applied by `config_set`.
        "slowlog-log-slower-than" => {
            int_in(-1, i64::MAX)?;
        }
        "slowlog-max-len" | "latency-monitor-threshold" => {
            int_in(0, i64::MAX)?;
        }
        _ if crate::exec::types::limits::by_name(name).is_some() => {
            let l = crate::exec::types::limits::by_name(name).expect("matched");
            crate::exec::types::limits::parse(l, v).map_err(|e| fail(&e))?;
        }
        // Shown by CONFIG GET on a tiered server; set in `[tier]` only (Redis's word for a
        // setting CONFIG SET cannot change).
        _ if cand.tier.is_some() && TIER_PARAMS.contains(&name) => {
            return Err(fail("can't set immutable config"));
        }
        _ if super::compat::is_kept(name) => {
            super::compat::check(name, &text).map_err(|e| fail(&e))?;
        }
        _ if super::compat::IMMUTABLE.contains(&name) => {
            return Err(fail("can't set immutable config"));
        }
        "port" => super::compat::check_port(cand.server.port, &cand.server.bind, &text)
            .map_err(|e| fail(&e))?,
        "bind" => {
            if text
                .split_whitespace()
                .ne(cand.server.bind.split_whitespace())
            {
                return Err(fail(
                    "Locus does not rebind its listener at runtime: set [server] bind in the configuration file and restart",
                ));
            }
        }
        "tcp-keepalive" => {
            cand.server.tcp_keepalive.0 =
                std::time::Duration::from_secs(int_in(0, i64::from(i32::MAX))? as u64)
        }
        "replicaof" | "slaveof" => {
            return Err(fail("Locus has no replication: it is never a replica"));
        }
        "maxmemory-eviction-tenacity" => {
            // Accepted for client compatibility (test suites set it): Locus's eviction has no
            // tenacity to tune.
        }
        _ => {
            return Err(CmdError::msg(format!(
                "ERR Unknown option or number of arguments for CONFIG SET - '{name}'"
            )));
        }
    }
    Ok(())
}

/// `CONFIG SET name value [name value ...]`: all pairs are parsed into a candidate configuration,
/// the candidate goes through the same `validate()` as the file, and only then is anything applied
/// (atomically, like Redis).
pub(super) fn config_set(ctx: &mut Ctx<'_>, pairs: Args<'_, '_>) -> CmdResult {
    let old = ctx.shared().config().clone();
    let mut cand = old.clone();
    let mut first = String::new();
    let names: Vec<String> = pairs.chunks(2).map(|kv| lower(&kv[0])).collect();
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            return Err(CmdError::msg(format!(
                "ERR CONFIG SET failed (possibly related to argument '{n}') - duplicate parameter"
            )));
        }
    }
    for kv in pairs.chunks(2) {
        let name = lower(&kv[0]);
        config_set_one(&mut cand, &name, &kv[1])?;
        if first.is_empty() {
            first = name;
        }
    }
    if let Err(crate::config::ConfigError::Invalid { problems }) = cand.validate() {
        return Err(CmdError::msg(format!(
            "ERR CONFIG SET failed (possibly related to argument '{first}') - {}",
            problems.join("; ")
        )));
    }
    if cand.memory.maxmemory != old.memory.maxmemory {
        ctx.eng
            .set_maxmemory(cand.memory.maxmemory.0)
            .map_err(|e| {
                CmdError::msg(format!(
                    "ERR CONFIG SET failed (possibly related to argument 'maxmemory') - {e}"
                ))
            })?;
    }
    let named = |n: &str| pairs.chunks(2).any(|kv| is(&kv[0], n));
    if named("maxmemory-policy")
        && let Ok(p) = parse_policy(&cand.eviction.policy)
    {
        for t in ctx.eng.tenant_ids() {
            ctx.eng.set_policy(t, p);
        }
    }
    if named("maxmemory-samples") {
        for t in ctx.eng.tenant_ids() {
            ctx.eng.set_samples(t, cand.eviction.samples).map_err(|e| {
                CmdError::msg(format!(
                    "ERR CONFIG SET failed (possibly related to argument 'maxmemory-samples') - {e}"
                ))
            })?;
        }
    }
    if named("lfu-log-factor") || named("lfu-decay-time") {
        let pick = |n: &str, old: u32| {
            pairs
                .chunks(2)
                .rev()
                .find(|kv| is(&kv[0], n))
                .and_then(|kv| crate::exec::parse_i64(&kv[1]))
                .map_or(old, |v| v as u32)
        };
        let c = ctx.eng.config();
        let (f, d) = (
            pick("lfu-log-factor", c.lfu_log_factor),
            pick("lfu-decay-time", c.lfu_decay_time),
        );
        ctx.eng.set_lfu_params(f, d).map_err(|e| {
            CmdError::msg(format!(
                "ERR CONFIG SET failed (possibly related to argument 'lfu-log-factor') - {e}"
            ))
        })?;
    }
    if named("notify-keyspace-events") {
        ctx.shared()
            .set_notify_flags(ctx.eng, &cand.server.notify_keyspace_events);
    }
    if named("tracking-table-max-keys") {
        ctx.shared()
            .tracking()
            .set_max_keys(cand.server.tracking_table_max_keys);
    }
    *ctx.shared().config_mut() = cand;
    for kv in pairs.chunks(2) {
        if let Some(l) = crate::exec::types::limits::by_name(&lower(&kv[0]))
            && let Ok(n) = crate::exec::types::limits::parse(l, &kv[1])
        {
            crate::exec::types::limits::set(l, n);
        }
        let name = lower(&kv[0]);
        if super::compat::is_kept(&name)
            && let Ok(v) = super::compat::check(&name, &String::from_utf8_lossy(&kv[1]))
        {
            super::compat::keep(&name, v);
        }
        if let Ok(on) = crate::exec::lazyfree::parse(&lower(&kv[0]), &kv[1]) {
            crate::exec::lazyfree::set(&lower(&kv[0]), on);
        }
        if is(&kv[0], "hll-sparse-max-bytes")
            && let Ok(bytes) = hll_sparse_max_bytes(&kv[1])
        {
            crate::exec::hll::set_sparse_max_bytes(bytes);
        }
        if let Some(n) = crate::exec::parse_i64(&kv[1]) {
            if is(&kv[0], "slowlog-log-slower-than") {
                crate::exec::slowlog::LOG_SLOWER_THAN.store(n, Ordering::Relaxed);
            } else if is(&kv[0], "slowlog-max-len") {
                crate::exec::slowlog::MAX_LEN.store(n as u64, Ordering::Relaxed);
            } else if is(&kv[0], "latency-monitor-threshold") {
                crate::exec::latency::THRESHOLD_MS.store(n as u64, Ordering::Relaxed);
            }
        }
    }
    Ok(())
}

/// Parses `hll-sparse-max-bytes` as Redis does a memory setting: digits (none is 0) and an
/// optional unit (b, k, kb, m, mb, g, gb), the product wrapping at 64 bits as in C, then
/// 0..=LONG_MAX.
fn hll_sparse_max_bytes(v: &[u8]) -> Result<u64, &'static str> {
    let digits = v.iter().take_while(|c| c.is_ascii_digit()).count();
    let mul: u64 = match &v[digits..].to_ascii_lowercase()[..] {
        b"" | b"b" => 1,
        b"k" => 1000,
        b"kb" => 1024,
        b"m" => 1000 * 1000,
        b"mb" => 1024 * 1024,
        b"g" => 1000 * 1000 * 1000,
        b"gb" => 1024 * 1024 * 1024,
        _ => return Err("argument must be a memory value"),
    };
    // strtoull saturates.
    let n = v[..digits].iter().fold(0u64, |n, &c| {
        n.checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(c - b'0')))
            .unwrap_or(u64::MAX)
    });
    let bytes = n.wrapping_mul(mul);
    if bytes > i64::MAX as u64 {
        return Err("argument must be between 0 and 9223372036854775807 inclusive");
    }
    Ok(bytes)
}

/// `CONFIG GET pattern [pattern ...] | SET name value [name value ...] | RESETSTAT | REWRITE | HELP`
pub fn config(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let sub = lower(&a[1]);
    match sub.as_str() {
        "get" => {
            if a.len() < 3 {
                return Err(CmdError::WrongArity("config|get".into()));
            }
            let mut params = config_params(&ctx.shared().config(), ctx.eng);
            if let Some(scope) = ctx.conn.scope() {
                // A tenant sees its own memory settings and no secrets.
                for (n, v) in &mut params {
                    match (*n, scope) {
                        ("requirepass", _) => v.clear(),
                        ("maxmemory" | "maxmemory-policy" | "maxmemory-samples", Some(t)) => {
                            *v = super::tenant::tenant_option(ctx, t, n).unwrap_or_default();
                        }
                        _ => {}
                    }
                }
            }
            let hits: Vec<&(&str, String)> = params
                .iter()
                .filter(|(n, _)| a[2..].iter().any(|p| glob_match(p, n.as_bytes(), true)))
                .collect();
            ctx.w.map(hits.len());
            for (n, v) in hits {
                ctx.w.bulk(n.as_bytes());
                ctx.w.bulk(v.as_bytes());
            }
        }
        "set" => {
            if a.len() < 4 || !a.len().is_multiple_of(2) {
                return Err(CmdError::WrongArity("config|set".into()));
            }
            match ctx.conn.scope() {
                None => config_set(ctx, &a[2..])?,
                // A tenant: its own eviction settings; an unknown name gets Redis's error, any
                // other known one NOPERM. Checked for every pair before anything changes.
                Some(Some(t)) => {
                    let mut scratch = ctx.shared().config().clone();
                    for kv in a[2..].chunks(2) {
                        let name = lower(&kv[0]);
                        // Redis's errors for an unknown name or a bad value, then the permission.
                        config_set_one(&mut scratch, &name, &kv[1])?;
                        if !TENANT_SETTABLE.contains(&name.as_str()) {
                            return Err(noperm("config|set"));
                        }
                    }
                    for kv in a[2..].chunks(2) {
                        super::tenant::set_option(ctx, t, &lower(&kv[0]), &kv[1], "CONFIG SET")?;
                    }
                }
                Some(None) => return Err(noperm("config|set")),
            }
            ctx.w.ok();
        }
        "resetstat" if a.len() == 2 => {
            ctx.eng.reset_stats();
            crate::exec::latency::reset_command_stats(ctx.shared());
            crate::exec::lazyfree::reset_stats();
            let s = &ctx.shared().stats();
            s.commands.reset();
            for c in [
                &s.total_commands,
                &s.total_connections,
                &s.rejected_connections,
                &s.net_input_bytes,
                &s.net_output_bytes,
            ] {
                c.store(0, Ordering::Relaxed);
            }
            ctx.w.ok();
        }
        "rewrite" => {
            return Err(CmdError::msg(
                "ERR CONFIG REWRITE is not supported by Locus: edit the TOML configuration file",
            ));
        }
        "help" => help(
            ctx,
            &[
                "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "GET <pattern>",
                "    Return parameters matching the glob-like <pattern> and their values.",
                "SET <directive> <value>",
                "    Set the configuration <directive> to <value>.",
                "RESETSTAT",
                "    Reset statistics reported by the INFO command.",
                "HELP",
                "    Print this help.",
            ],
        ),
        _ => return Err(unknown_sub("config", &a[1])),
    }
    Ok(())
}
