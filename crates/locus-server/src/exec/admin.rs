//! Server commands: COMMAND, CONFIG, INFO, MEMORY, OBJECT, SHUTDOWN, `LOCUS.TENANT` and
//! `LOCUS.CONTROLLER` (the memory controller: its state, targets, decision log, decide now).

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use locus_common::ByteSize;
use locus_engine::control::IntervalRecord;
use locus_engine::{Engine, Policy, TenantId};

use super::table::{COMMANDS, CommandSpec};
use super::{Args, CmdError, CmdResult, Ctx, int_arg, is, key_positions, lookup, lower};
use crate::config::{ServerConfig, parse_policy};
use crate::glob::glob_match;

fn unknown_sub(cmd: &str, sub: &[u8]) -> CmdError {
    CmdError::msg(format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        String::from_utf8_lossy(sub),
        cmd.to_ascii_uppercase()
    ))
}

fn help(ctx: &mut Ctx<'_>, lines: &[&str]) {
    ctx.w.array(lines.len());
    for l in lines {
        ctx.w.simple(l);
    }
}

// ---------------------------------------------------------------- COMMAND

fn command_info(ctx: &mut Ctx<'_>, c: &CommandSpec) {
    ctx.w.array(10);
    ctx.w.bulk(c.name.as_bytes());
    ctx.w.integer(i64::from(c.arity));
    ctx.w.set(c.flags.len());
    for f in c.flags {
        ctx.w.simple(f);
    }
    ctx.w.integer(i64::from(c.first_key));
    ctx.w.integer(i64::from(c.last_key));
    ctx.w.integer(i64::from(c.step));
    ctx.w.set(c.acl.len());
    for a in c.acl {
        ctx.w.simple(a);
    }
    ctx.w.array(0); // tips
    ctx.w.array(0); // key specs
    ctx.w.array(c.subcommands.len());
    for s in c.subcommands {
        ctx.w.array(10);
        ctx.w.bulk(s.as_bytes());
        ctx.w.integer(-2);
        ctx.w.set(c.flags.len());
        for f in c.flags {
            ctx.w.simple(f);
        }
        ctx.w.integer(0);
        ctx.w.integer(0);
        ctx.w.integer(0);
        ctx.w.set(c.acl.len());
        for a in c.acl {
            ctx.w.simple(a);
        }
        ctx.w.array(0);
        ctx.w.array(0);
        ctx.w.array(0);
    }
}

fn command_docs(ctx: &mut Ctx<'_>, c: &CommandSpec) {
    ctx.w.bulk(c.name.as_bytes());
    ctx.w.map(3);
    ctx.w.bulk(b"summary");
    ctx.w.bulk(c.summary.as_bytes());
    ctx.w.bulk(b"since");
    ctx.w.bulk(c.since.as_bytes());
    ctx.w.bulk(b"group");
    ctx.w.bulk(c.group.as_bytes());
}

/// `COMMAND [COUNT | INFO [name ...] | DOCS [name ...] | LIST | GETKEYS cmd args... | HELP]`
pub fn command(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    if a.len() == 1 {
        ctx.w.array(COMMANDS.len());
        for c in COMMANDS {
            command_info(ctx, c);
        }
        return Ok(());
    }
    let sub = lower(&a[1]);
    match sub.as_str() {
        "count" if a.len() == 2 => ctx.w.integer(COMMANDS.len() as i64),
        "list" => {
            ctx.w.array(COMMANDS.len());
            for c in COMMANDS {
                ctx.w.bulk(c.name.as_bytes());
            }
        }
        "info" => {
            if a.len() == 2 {
                ctx.w.array(COMMANDS.len());
                for c in COMMANDS {
                    command_info(ctx, c);
                }
            } else {
                ctx.w.array(a.len() - 2);
                for n in &a[2..] {
                    match lookup(n) {
                        Some(c) => command_info(ctx, c),
                        None => ctx.w.null_array(),
                    }
                }
            }
        }
        "docs" => {
            let found: Vec<&CommandSpec> = if a.len() == 2 {
                COMMANDS.iter().collect()
            } else {
                a[2..].iter().filter_map(|n| lookup(n)).collect()
            };
            ctx.w.map(found.len());
            for c in found {
                command_docs(ctx, c);
            }
        }
        "getkeys" if a.len() >= 3 => {
            let rest = &a[2..];
            let c =
                lookup(&rest[0]).ok_or_else(|| CmdError::msg("ERR Invalid command specified"))?;
            let argc = rest.len() as i32;
            if (c.arity > 0 && argc != c.arity) || (c.arity < 0 && argc < -c.arity) {
                return Err(CmdError::msg(
                    "ERR Invalid number of arguments specified for command",
                ));
            }
            let keys: Vec<usize> = key_positions(c, rest.len()).collect();
            if keys.is_empty() {
                return Err(CmdError::msg("ERR The command has no key arguments"));
            }
            ctx.w.array(keys.len());
            for k in keys {
                ctx.w.bulk(&rest[k]);
            }
        }
        "help" => help(
            ctx,
            &[
                "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "(no subcommand)",
                "    Return details about all commands.",
                "COUNT",
                "    Return the total number of commands in this server.",
                "LIST",
                "    Return a list of all commands in this server.",
                "INFO [<command-name> ...]",
                "    Return details about multiple commands.",
                "DOCS [<command-name> ...]",
                "    Return documentation details about multiple commands.",
                "GETKEYS <full-command>",
                "    Return the keys from a full command.",
                "HELP",
                "    Print this help.",
            ],
        ),
        "count" => return Err(CmdError::WrongArity("command|count".into())),
        "getkeys" => return Err(CmdError::WrongArity("command|getkeys".into())),
        _ => return Err(unknown_sub("command", &a[1])),
    }
    Ok(())
}

// ---------------------------------------------------------------- CONFIG

/// Redis's wording for a bad `maxmemory-policy` (its order), plus Locus's extra policy.
const POLICY_CHOICES: &str = "argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction, allkeys-exact-lru, allkeys-hyperbolic";

/// The parameters CONFIG GET knows, with their current value.
fn config_params(cfg: &ServerConfig, eng: &locus_engine::Engine) -> Vec<(&'static str, String)> {
    let first = eng.tenant_ids().first().copied();
    let policy = first.map_or(cfg.eviction.policy.clone(), |t| {
        eng.tenant_config(t).policy.name().to_string()
    });
    let samples = first.map_or(cfg.eviction.samples, |t| eng.tenant_config(t).samples);
    vec![
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
        (
            "proto-max-bulk-len",
            cfg.limits.proto_max_bulk_len.0.to_string(),
        ),
        (
            "client-query-buffer-limit",
            cfg.limits.client_query_buffer_limit.0.to_string(),
        ),
        ("requirepass", cfg.server.requirepass.clone()),
        ("lfu-log-factor", eng.config().lfu_log_factor.to_string()),
        ("lfu-decay-time", eng.config().lfu_decay_time.to_string()),
        ("save", String::new()),
        ("appendonly", "no".into()),
        ("io-threads", cfg.server.threads.to_string()),
    ]
}

/// Parses a memory value as Redis does for CONFIG SET (plain bytes or units).
fn memory_value(name: &str, v: &[u8]) -> Result<u64, CmdError> {
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
fn config_set_one(cand: &mut ServerConfig, name: &str, v: &[u8]) -> CmdResult {
    let fail = |why: &str| {
        CmdError::msg(format!(
            "ERR CONFIG SET failed (possibly related to argument '{name}') - {why}"
        ))
    };
    let text = String::from_utf8_lossy(v).into_owned();
    let int_in = |lo: i64, hi: i64| {
        super::parse_i64(v)
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
            cand.limits.client_query_buffer_limit = ByteSize(memory_value(name, v)?)
        }
        "requirepass" => cand.server.requirepass = text,
        "save"
        | "appendonly"
        | "lfu-log-factor"
        | "lfu-decay-time"
        | "maxmemory-eviction-tenacity" => {
            // Accepted for client compatibility (test suites set them); Locus has no persistence
            // and fixed LFU parameters.
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
fn config_set(ctx: &mut Ctx<'_>, pairs: Args<'_, '_>) -> CmdResult {
    let old = ctx.shared.config.read().clone();
    let mut cand = old.clone();
    let mut first = String::new();
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
    *ctx.shared.config.write() = cand;
    Ok(())
}

/// `CONFIG GET pattern [pattern ...] | SET name value [name value ...] | RESETSTAT | REWRITE | HELP`
pub fn config(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let sub = lower(&a[1]);
    match sub.as_str() {
        "get" => {
            if a.len() < 3 {
                return Err(CmdError::WrongArity("config|get".into()));
            }
            let params = config_params(&ctx.shared.config.read(), ctx.eng);
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
            config_set(ctx, &a[2..])?;
            ctx.w.ok();
        }
        "resetstat" if a.len() == 2 => {
            ctx.eng.reset_stats();
            let s = &ctx.shared.stats;
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

// ---------------------------------------------------------------- INFO

fn human(bytes: u64) -> String {
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

/// Builds the INFO text for the given sections (lowercase; empty = default sections).
pub fn info_text(ctx: &mut Ctx<'_>, sections: &[String]) -> String {
    let all = sections.iter().any(|s| s == "all" || s == "everything");
    let want =
        |s: &str| all || sections.is_empty() || sections.iter().any(|x| x == s || x == "default");
    let mut out = String::new();
    let sh = ctx.shared;
    let cfg = sh.config.read().clone();
    let now = sh.clock.now_ms();
    let uptime = now.saturating_sub(sh.start_ms) / 1000;
    let st = ctx.eng.stats();
    let tenants: Vec<TenantId> = ctx.eng.tenant_ids();
    let tstats: Vec<_> = tenants
        .iter()
        .map(|&t| (t, ctx.eng.tenant_stats(t)))
        .collect();
    let sep = |out: &mut String| {
        if !out.is_empty() {
            out.push_str("\r\n");
        }
    };
    if want("server") {
        sep(&mut out);
        let ports: Vec<String> = sh
            .listeners
            .read()
            .iter()
            .map(|(a, _)| a.port().to_string())
            .collect();
        let _ = write!(
            out,
            "# Server\r\nredis_version:{}\r\nlocus_version:{}\r\nredis_mode:standalone\r\nos:{} {}\r\narch_bits:{}\r\nmultiplexing_api:tokio\r\nprocess_id:{}\r\ntcp_port:{}\r\nserver_time_usec:{}\r\nuptime_in_seconds:{}\r\nuptime_in_days:{}\r\nhz:{}\r\nconfigured_hz:{}\r\nio_threads_active:0\r\nconfig_file:{}\r\ntenancy_mode:{}\r\n",
            crate::REDIS_VERSION,
            env!("CARGO_PKG_VERSION"),
            std::env::consts::OS,
            std::env::consts::ARCH,
            usize::BITS,
            std::process::id(),
            ports.first().cloned().unwrap_or_default(),
            sh.clock.now_us(),
            uptime,
            uptime / 86400,
            cfg.server.hz,
            cfg.server.hz,
            sh.config_file.clone().unwrap_or_default(),
            sh.tenancy.mode,
        );
    }
    if want("clients") {
        sep(&mut out);
        let _ = write!(
            out,
            "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\nblocked_clients:0\r\ntracking_clients:0\r\n",
            sh.stats.connected.load(Ordering::Relaxed),
            cfg.server.maxclients
        );
    }
    if want("memory") {
        sep(&mut out);
        let policy = tstats
            .first()
            .map_or(cfg.eviction.policy.clone(), |(_, s)| {
                s.policy.name().to_string()
            });
        let _ = write!(
            out,
            "# Memory\r\nused_memory:{}\r\nused_memory_human:{}\r\nused_memory_dataset:{}\r\nused_memory_items_charged:{}\r\nused_memory_overhead:{}\r\nmaxmemory:{}\r\nmaxmemory_human:{}\r\nmaxmemory_policy:{}\r\npage_size:{}\r\npages_used:{}\r\npages_total:{}\r\nmem_allocator:locus-pages\r\n",
            st.used_bytes,
            human(st.used_bytes),
            st.item_bytes,
            st.charged_bytes,
            st.metadata_bytes,
            st.maxmemory,
            human(st.maxmemory),
            policy,
            st.page_size,
            st.pages_used,
            st.pages_total,
        );
    }
    if want("persistence") {
        sep(&mut out);
        // Locus has no persistence; these are the fields clients poll before using a server.
        out.push_str("# Persistence\r\nloading:0\r\nasync_loading:0\r\nrdb_changes_since_last_save:0\r\nrdb_bgsave_in_progress:0\r\naof_enabled:0\r\naof_rewrite_in_progress:0\r\n");
    }
    if want("stats") {
        sep(&mut out);
        let hits: u64 = tstats.iter().map(|(_, s)| s.hits).sum();
        let misses: u64 = tstats.iter().map(|(_, s)| s.misses).sum();
        let _ = write!(
            out,
            "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\nrejected_connections:{}\r\nexpired_keys:{}\r\nevicted_keys:{}\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\n",
            sh.stats.total_connections.load(Ordering::Relaxed),
            sh.stats.total_commands.load(Ordering::Relaxed),
            sh.stats.net_input_bytes.load(Ordering::Relaxed),
            sh.stats.net_output_bytes.load(Ordering::Relaxed),
            sh.stats.rejected_connections.load(Ordering::Relaxed),
            st.expired,
            st.evictions,
            hits,
            misses,
        );
    }
    if want("replication") {
        sep(&mut out);
        out.push_str("# Replication\r\nrole:master\r\nconnected_slaves:0\r\n");
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
                sh.tenancy.name(*t),
                s.min_bytes,
                s.max_bytes.map_or("none".to_string(), |m| m.to_string()),
                s.pages.saturating_mul(st.page_size),
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
    if want("locus") || want("controller") {
        sep(&mut out);
        locus_section(&mut out, ctx.eng, ctx.shared);
    }
    out
}

/// The `# Locus` INFO section: the memory controller and, per tenant, pages, target, K and miss
/// penalty (`pool_<tenant>:pages=..,target=..|none,samples=..,penalty_us=..,penalty_samples=..`).
fn locus_section(out: &mut String, eng: &Engine, sh: &crate::server::Shared) {
    let st = eng.stats();
    let cc = eng.control_config();
    let last = eng.last_control_record().map(|r| r.at_request);
    let _ = write!(
        out,
        "# Locus\r\ncontroller:{}\r\ncontroller_interval:{}\r\ncontroller_max_moves:{}\r\ncontroller_offload:{}\r\ncontroller_decisions:{}\r\ncontroller_requests:{}\r\ncontroller_last_decision_at_request:{}\r\npages_total:{}\r\npages_used:{}\r\n",
        eng.controller_name()
            .unwrap_or(crate::config::NO_CONTROLLER),
        cc.map_or("none".to_string(), |c| c.interval.to_string()),
        cc.map_or(0, |c| c.max_moves),
        u8::from(eng.controller_offloaded()),
        eng.control_decisions(),
        eng.control_requests(),
        last.map_or("none".to_string(), |r| r.to_string()),
        st.pages_total,
        st.pages_used,
    );
    let targets = eng.targets();
    for t in eng.tenant_ids() {
        let ts = eng.tenant_stats(t);
        let (penalty, samples) = eng.penalty(t);
        let _ = write!(
            out,
            "pool_{}:pages={},target={},samples={},penalty_us={:.1},penalty_samples={}\r\n",
            sh.tenancy.name(t),
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
    }
}

/// `INFO [section ...]`
pub fn info(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let sections: Vec<String> = a[1..].iter().map(|s| lower(s)).collect();
    let text = info_text(ctx, &sections);
    ctx.w.verbatim("txt", text.as_bytes());
    Ok(())
}

// ---------------------------------------------------------------- MEMORY / OBJECT

/// `MEMORY USAGE key [SAMPLES n] | HELP`
pub fn memory(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let sub = lower(&a[1]);
    match sub.as_str() {
        "usage" => {
            if a.len() != 3 && a.len() != 5 {
                return Err(CmdError::WrongArity("memory|usage".into()));
            }
            if a.len() == 5 && (!is(&a[3], "samples") || int_arg(&a[4]).is_err()) {
                return Err(CmdError::Syntax);
            }
            let t = ctx.t()?;
            match ctx.eng.object_info(t, &a[2]) {
                Some(o) => ctx.w.integer(o.charged_bytes as i64),
                None => ctx.w.null(),
            }
        }
        "help" => help(
            ctx,
            &[
                "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "USAGE <key> [SAMPLES <count>]",
                "    Return memory in bytes used by <key> (the size class chunk it occupies).",
                "HELP",
                "    Print this help.",
            ],
        ),
        _ => return Err(unknown_sub("memory", &a[1])),
    }
    Ok(())
}

fn encoding(v_is_int: bool, len: usize) -> &'static str {
    if v_is_int {
        "int"
    } else if len <= 44 {
        "embstr"
    } else {
        "raw"
    }
}

/// OBJECT ENCODING|IDLETIME|FREQ|REFCOUNT key | HELP
pub fn object(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let sub = lower(&a[1]);
    if sub == "help" {
        help(
            ctx,
            &[
                "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "ENCODING <key>",
                "    Return the kind of internal representation used in order to store the value associated with a <key>.",
                "FREQ <key>",
                "    Return the access frequency index of the <key>.",
                "IDLETIME <key>",
                "    Return the idle time of the <key>, that is the approximated number of seconds elapsed since the last access to the key.",
                "REFCOUNT <key>",
                "    Return the number of references of the value associated with the specified <key>.",
                "HELP",
                "    Print this help.",
            ],
        );
        return Ok(());
    }
    if !["encoding", "idletime", "freq", "refcount"].contains(&sub.as_str()) {
        return Err(unknown_sub("object", &a[1]));
    }
    if a.len() != 3 {
        return Err(CmdError::WrongArity(format!("object|{sub}")));
    }
    let t = ctx.t()?;
    let policy: Policy = ctx.eng.tenant_config(t).policy;
    if sub == "freq" && !policy.is_lfu() {
        return Err(CmdError::msg(
            "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ));
    }
    if sub == "idletime" && policy.is_lfu() {
        return Err(CmdError::msg(
            "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ));
    }
    let Some(o) = ctx.eng.object_info(t, &a[2]) else {
        ctx.w.null();
        return Ok(());
    };
    match sub.as_str() {
        "encoding" => {
            let enc = if let Some(e) = ctx.shared.forced_encoding(t, &a[2]) {
                e
            } else {
                let is_int = o.value_len <= 20
                    && ctx
                        .eng
                        .peek(t, &a[2])
                        .is_some_and(|v| super::parse_i64(v).is_some());
                encoding(is_int, o.value_len)
            };
            ctx.w.bulk(enc.as_bytes());
        }
        "idletime" => ctx.w.integer((o.idle_ms / 1000) as i64),
        "freq" => ctx.w.integer(i64::from(o.lfu_freq)),
        _ => ctx.w.integer(1),
    }
    Ok(())
}

// ---------------------------------------------------------------- SHUTDOWN

/// `SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]`: stops the server (no reply, like Redis).
pub fn shutdown(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    for o in &a[1..] {
        if is(o, "abort") {
            return Err(CmdError::msg("ERR No shutdown in progress."));
        }
        if !(is(o, "nosave") || is(o, "save") || is(o, "now") || is(o, "force")) {
            return Err(CmdError::Syntax);
        }
    }
    // Locus has no persistence: SAVE and NOSAVE both just stop.
    ctx.shared.request_shutdown();
    ctx.conn.close = true;
    Ok(())
}

// ---------------------------------------------------------------- LOCUS.TENANT

const TENANT_OPTIONS: [&str; 4] = [
    "maxmemory",
    "minmemory",
    "maxmemory-policy",
    "maxmemory-samples",
];

fn tenant_option(ctx: &Ctx<'_>, t: TenantId, opt: &str) -> Option<String> {
    let c = ctx.eng.tenant_config(t);
    Some(match opt {
        "maxmemory" => c.max_bytes.unwrap_or(0).to_string(),
        "minmemory" => c.min_bytes.to_string(),
        "maxmemory-policy" => c.policy.name().to_string(),
        "maxmemory-samples" => c.samples.to_string(),
        _ => return None,
    })
}

/// `LOCUS.TENANT LIST | <name> GET <option|*> | <name> SET <option> <value>`
pub fn tenant(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    if a.len() == 2 && is(&a[1], "list") {
        let names: Vec<String> = ctx
            .shared
            .tenancy
            .names
            .iter()
            .map(|(n, _)| n.clone())
            .collect();
        ctx.w.array(names.len());
        for n in names {
            ctx.w.bulk(n.as_bytes());
        }
        return Ok(());
    }
    if a.len() < 4 {
        return Err(CmdError::WrongArity("locus.tenant".into()));
    }
    let name = String::from_utf8_lossy(&a[1]).into_owned();
    let t = ctx
        .shared
        .tenancy
        .by_name(&name)
        .ok_or_else(|| CmdError::msg(format!("ERR no such tenant '{name}'")))?;
    let opt = lower(&a[3]);
    let bad_opt = || {
        CmdError::msg(format!(
            "ERR unknown tenant option '{opt}' (one of {})",
            TENANT_OPTIONS.join(", ")
        ))
    };
    if is(&a[2], "get") && a.len() == 4 {
        let opts: Vec<&str> = TENANT_OPTIONS
            .iter()
            .copied()
            .filter(|o| glob_match(opt.as_bytes(), o.as_bytes(), true))
            .collect();
        if opts.is_empty() {
            return Err(bad_opt());
        }
        ctx.w.map(opts.len());
        for o in opts {
            let v = tenant_option(ctx, t, o).unwrap_or_default();
            ctx.w.bulk(o.as_bytes());
            ctx.w.bulk(v.as_bytes());
        }
        return Ok(());
    }
    if !(is(&a[2], "set") && a.len() == 5) {
        return Err(CmdError::Syntax);
    }
    let v = &a[4];
    let fail = |why: String| CmdError::msg(format!("ERR LOCUS.TENANT SET {opt} failed - {why}"));
    let cur = ctx.eng.tenant_config(t).clone();
    match opt.as_str() {
        "maxmemory" => {
            let b = memory_value("maxmemory", v)?;
            let max = if b == 0 { None } else { Some(b) };
            ctx.eng
                .set_budget(t, cur.min_bytes, max)
                .map_err(|e| fail(e.to_string()))?;
        }
        "minmemory" => {
            let b = memory_value("minmemory", v)?;
            ctx.eng
                .set_budget(t, b, cur.max_bytes)
                .map_err(|e| fail(e.to_string()))?;
        }
        "maxmemory-policy" => {
            let p = parse_policy(&String::from_utf8_lossy(v))
                .map_err(|_| fail(POLICY_CHOICES.to_string()))?;
            ctx.eng.set_policy(t, p);
        }
        "maxmemory-samples" => {
            let k = super::parse_i64(v)
                .filter(|k| (1..=64).contains(k))
                .ok_or_else(|| fail("argument must be between 1 and 64 inclusive".into()))?;
            ctx.eng
                .set_samples(t, k as u32)
                .map_err(|e| fail(e.to_string()))?;
        }
        _ => return Err(bad_opt()),
    }
    ctx.w.ok();
    Ok(())
}

// ---------------------------------------------------------------- LOCUS.CONTROLLER

/// Decisions `LOCUS.CONTROLLER RECORDS` returns without a count.
const DEFAULT_RECORDS: usize = 10;

/// The error for subcommands that need a running controller.
fn no_controller() -> CmdError {
    CmdError::msg(
        "ERR no memory controller is running (set [controller] name in the configuration)",
    )
}

/// Tenant names in pool order (pool `i` is tenant `i`).
fn pool_names(ctx: &Ctx<'_>) -> Vec<String> {
    ctx.eng
        .tenant_ids()
        .into_iter()
        .map(|t| ctx.shared.tenancy.name(t).to_string())
        .collect()
}

/// A map from tenant name to one value per pool, written by `each`.
fn per_pool<T>(ctx: &mut Ctx<'_>, names: &[String], vals: &[T], each: fn(&mut Ctx<'_>, &T)) {
    let n = names.len().min(vals.len());
    ctx.w.map(n);
    for (name, v) in names.iter().zip(vals).take(n) {
        ctx.w.bulk(name.as_bytes());
        each(ctx, v);
    }
}

fn write_u64(ctx: &mut Ctx<'_>, v: &u64) {
    ctx.w.integer(i64::try_from(*v).unwrap_or(i64::MAX));
}

fn write_u32(ctx: &mut Ctx<'_>, v: &u32) {
    ctx.w.integer(i64::from(*v));
}

fn write_f64(ctx: &mut Ctx<'_>, v: &f64) {
    ctx.w.double(*v);
}

fn write_target(ctx: &mut Ctx<'_>, v: &Option<u64>) {
    match v {
        Some(x) => write_u64(ctx, x),
        None => ctx.w.null(),
    }
}

/// One decision as a map (RESP3) / flat key-value array (RESP2).
fn write_record(ctx: &mut Ctx<'_>, names: &[String], r: &IntervalRecord) {
    ctx.w.map(13);
    for (k, v) in [
        ("interval", r.interval),
        ("at_us", r.at_us),
        ("at_request", r.at_request),
        ("moves", r.moves_done),
        ("evicted_by_moves", r.items_evicted_by_moves),
    ] {
        ctx.w.bulk(k.as_bytes());
        write_u64(ctx, &v);
    }
    ctx.w.bulk(b"pages");
    per_pool(ctx, names, &r.pages, write_u64);
    ctx.w.bulk(b"targets");
    per_pool(ctx, names, &r.targets, write_target);
    ctx.w.bulk(b"samples");
    per_pool(ctx, names, &r.samples, write_u32);
    ctx.w.bulk(b"penalty_us");
    per_pool(ctx, names, &r.penalty_us, write_f64);
    ctx.w.bulk(b"hits");
    per_pool(ctx, names, &r.hits, write_u64);
    ctx.w.bulk(b"misses");
    per_pool(ctx, names, &r.misses, write_u64);
    ctx.w.bulk(b"notes");
    ctx.w.map(r.notes.len());
    for (k, v) in &r.notes {
        ctx.w.bulk(k.as_bytes());
        ctx.w.double(*v);
    }
    ctx.w.bulk(b"curves");
    ctx.w.array(r.curves.len());
    for c in &r.curves {
        ctx.w.map(3);
        ctx.w.bulk(b"tenant");
        let name = names.get(c.pool.0 as usize).map_or("?", String::as_str);
        ctx.w.bulk(name.as_bytes());
        ctx.w.bulk(b"label");
        ctx.w.bulk(c.label.as_bytes());
        ctx.w.bulk(b"points");
        ctx.w.integer(c.mrc.points().len() as i64);
    }
}

/// `LOCUS.CONTROLLER INFO`: the controller and every tenant's pages, target, K and penalty.
fn controller_info(ctx: &mut Ctx<'_>) {
    let names = pool_names(ctx);
    let st = ctx.eng.stats();
    let cc = ctx.eng.control_config();
    let targets = ctx.eng.targets();
    ctx.w.map(8);
    ctx.w.bulk(b"controller");
    let name = ctx
        .eng
        .controller_name()
        .unwrap_or(crate::config::NO_CONTROLLER);
    ctx.w.bulk(name.as_bytes());
    ctx.w.bulk(b"interval");
    match cc {
        Some(c) => ctx.w.bulk(c.interval.to_string().as_bytes()),
        None => ctx.w.null(),
    }
    ctx.w.bulk(b"max_moves");
    match cc {
        Some(c) => ctx.w.integer(i64::from(c.max_moves)),
        None => ctx.w.null(),
    }
    let decisions = ctx.eng.control_decisions();
    let requests = ctx.eng.control_requests();
    for (k, v) in [
        ("decisions", decisions),
        ("requests", requests),
        ("pages_total", st.pages_total),
        ("pages_used", st.pages_used),
    ] {
        ctx.w.bulk(k.as_bytes());
        write_u64(ctx, &v);
    }
    ctx.w.bulk(b"tenants");
    let ids = ctx.eng.tenant_ids();
    ctx.w.map(ids.len());
    for (t, name) in ids.into_iter().zip(&names) {
        let ts = ctx.eng.tenant_stats(t);
        let (penalty, samples) = ctx.eng.penalty(t);
        ctx.w.bulk(name.as_bytes());
        ctx.w.map(5);
        ctx.w.bulk(b"pages");
        write_u64(ctx, &ts.pages);
        ctx.w.bulk(b"target");
        write_target(ctx, &targets.get(t.0 as usize).copied().flatten());
        ctx.w.bulk(b"samples");
        write_u32(ctx, &ts.samples);
        ctx.w.bulk(b"penalty_us");
        ctx.w.double(penalty);
        ctx.w.bulk(b"penalty_samples");
        write_u64(ctx, &samples);
    }
}

/// `LOCUS.CONTROLLER SET name [INTERVAL i] [MAX_MOVES n] [setting value ...]`: builds the new
/// controller exactly as the `[controller]` section would (same validation, every problem
/// reported), then replaces the running one; nothing changes on an error. The new controller
/// starts from scratch (no curves, no decisions), targets of the old one are dropped, and the
/// running configuration's `[controller]` section is updated to match.
fn controller_set(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    if a.len() < 3 || a.len().is_multiple_of(2) {
        return Err(CmdError::WrongArity("locus.controller|set".to_string()));
    }
    let text = |b: &[u8]| {
        std::str::from_utf8(b)
            .map(str::to_string)
            .map_err(|_| CmdError::msg("ERR controller names and settings must be UTF-8"))
    };
    let mut sec = ctx.shared.config.read().controller.clone();
    sec.name = text(&a[2])?.to_ascii_lowercase();
    sec.settings.clear();
    for kv in a[3..].chunks(2) {
        let key = lower(&kv[0]);
        let value = text(&kv[1])?;
        match key.as_str() {
            "interval" => sec.interval = crate::config::TextOrNumber(value),
            "offload" => {
                sec.offload = match value.to_ascii_lowercase().as_str() {
                    "yes" | "on" | "true" | "1" => true,
                    "no" | "off" | "false" | "0" => false,
                    _ => return Err(CmdError::msg("ERR offload must be yes or no")),
                };
            }
            "max_moves" | "max-moves" => {
                sec.max_moves = value
                    .parse::<u32>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| {
                        CmdError::msg("ERR max_moves must be an integer of at least 1")
                    })?;
            }
            _ => {
                sec.settings.insert(key, toml::Value::String(value));
            }
        }
    }
    let problems = |p: Vec<String>| CmdError::msg(format!("ERR {}", p.join("; ")));
    let cfg = sec.control_config().map_err(|e| problems(vec![e]))?;
    let built = sec.build().map_err(problems)?;
    // A controller that needs memcached's class mode sets it; the others run in the default.
    ctx.eng.set_class_mode(locus_engine::ClassMode::Auto);
    match built {
        Some(ctl) => ctx.eng.set_controller(ctl, cfg),
        None => ctx.eng.clear_controller(),
    }
    ctx.shared.config.write().controller = sec;
    if let Some(why) = ctx.eng.controller_offload_error() {
        // Installed and deciding, but on the data path: say so rather than a plain OK.
        return Err(CmdError::msg(format!(
            "ERR controller installed, running inline: {why}"
        )));
    }
    ctx.w.ok();
    Ok(())
}

/// `LOCUS.CONTROLLER INFO | TARGETS | RECORDS [count] | RUN | SET name ... | HELP`
pub fn controller(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let sub = lower(&a[1]);
    let arity = |max: usize| {
        if a.len() > max {
            Err(CmdError::WrongArity(format!("locus.controller|{sub}")))
        } else {
            Ok(())
        }
    };
    match sub.as_str() {
        "info" => {
            arity(2)?;
            controller_info(ctx);
        }
        "targets" => {
            arity(2)?;
            let names = pool_names(ctx);
            let targets = ctx.eng.targets();
            per_pool(ctx, &names, &targets, write_target);
        }
        "records" => {
            arity(3)?;
            let count = match a.get(2) {
                None => DEFAULT_RECORDS,
                Some(c) => super::parse_i64(c)
                    .filter(|n| *n > 0)
                    .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
                    .ok_or_else(|| CmdError::msg("ERR value is out of range, must be positive"))?,
            };
            let names = pool_names(ctx);
            let records = ctx.eng.control_records();
            let tail = &records[records.len().saturating_sub(count)..];
            ctx.w.array(tail.len());
            for r in tail {
                write_record(ctx, &names, r);
            }
        }
        "run" => {
            arity(2)?;
            if ctx.eng.controller_name().is_none() {
                return Err(no_controller());
            }
            ctx.eng.run_controller();
            let names = pool_names(ctx);
            let Some(r) = ctx.eng.last_control_record().cloned() else {
                return Err(no_controller());
            };
            write_record(ctx, &names, &r);
        }
        "set" => controller_set(ctx, a)?,
        "help" => {
            arity(2)?;
            help(
                ctx,
                &[
                    "LOCUS.CONTROLLER <subcommand> [<arg> ...]. Subcommands are:",
                    "INFO",
                    "    The memory controller (name, interval, decisions) and per tenant: pages, target, K, miss penalty.",
                    "TARGETS",
                    "    Page target per tenant (nil: none).",
                    "RECORDS [<count>]",
                    "    The last <count> decisions (default 10), oldest first: pages, targets, K, moves, notes.",
                    "RUN",
                    "    Decide now and return the decision.",
                    "SET <name> [INTERVAL <interval>] [MAX_MOVES <n>] [OFFLOAD yes|no] [<setting> <value> ...]",
                    "    Replace the running controller (NONE: the memory.partition arbiter). Interval,",
                    "    max_moves and offload (profile on a thread of its own) default to the configured ones;",
                    "    the other pairs are the controller's settings.",
                    "HELP",
                    "    Print this help.",
                ],
            );
        }
        _ => return Err(unknown_sub("locus.controller", &a[1])),
    }
    Ok(())
}
