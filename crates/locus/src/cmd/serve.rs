//! `locus serve`: parses flags, layers them over the configuration file, hands over to
//! `locus_server`. Order: defaults < `--config` file < flags; then `validate()` reports every
//! problem at once.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use locus_common::{ByteSize, SystemClock, parse_duration};
use locus_server::config::HumanDuration;
use locus_server::{Server, ServerConfig, TenancyMode};

/// Arguments of `locus serve`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// TOML configuration file (see config/locus.toml; every key optional).
    #[arg(long, short = 'c', value_name = "FILE")]
    config: Option<PathBuf>,
    /// Listen port (server.port).
    #[arg(long)]
    port: Option<u16>,
    /// memcached protocol port, served by the same engine (memcached.port).
    #[arg(long, value_name = "PORT")]
    memcached_port: Option<u16>,
    /// Listen address (server.bind).
    #[arg(long, value_name = "ADDR")]
    bind: Option<String>,
    /// Memory budget for all tenants, e.g. 64mb, 1GiB (memory.maxmemory).
    #[arg(long, value_name = "SIZE")]
    maxmemory: Option<ByteSize>,
    /// Default eviction policy, e.g. allkeys-lru (eviction.policy).
    #[arg(long, value_name = "POLICY")]
    maxmemory_policy: Option<String>,
    /// Default maxmemory-samples K (eviction.samples).
    #[arg(long, value_name = "K")]
    maxmemory_samples: Option<u32>,
    /// Turn on memory tiers with this slow-tier backend: emulated, emulated:<ns>, file:<path>,
    /// numa:<node> (tier.slow_backend; the other [tier] keys keep their defaults or the file's).
    #[arg(long, value_name = "BACKEND")]
    tier_backend: Option<String>,
    /// Fast memory tier's size, below --maxmemory, e.g. 64mb (tier.fast_memory; turns tiers on).
    #[arg(long, value_name = "SIZE")]
    fast_memory: Option<ByteSize>,
    /// Page size (memory.page_size).
    #[arg(long, value_name = "SIZE")]
    page_size: Option<ByteSize>,
    /// Worker threads (server.threads).
    #[arg(long)]
    threads: Option<usize>,
    /// Most simultaneous clients (server.maxclients).
    #[arg(long)]
    maxclients: Option<u64>,
    /// Idle client timeout, e.g. 300s; 0 = never (server.timeout).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    timeout: Option<std::time::Duration>,
    /// Tenancy mode: single, port, user, db, prefix (tenancy.mode).
    #[arg(long, value_name = "MODE")]
    tenancy: Option<TenancyMode>,
    /// Password of the default user (server.requirepass).
    #[arg(long, value_name = "PASS")]
    requirepass: Option<String>,
    /// Memory controller, e.g. static, kredis; none = memory.partition alone (controller.name).
    #[arg(long, value_name = "NAME")]
    controller: Option<String>,
    /// Serve Prometheus /metrics and the live page / on this ip:port, e.g. 127.0.0.1:9121
    /// (metrics.bind; loopback only unless metrics.allow_remote).
    #[arg(long, value_name = "ADDR")]
    metrics_bind: Option<String>,
    /// Print the effective configuration as TOML and exit.
    #[arg(long)]
    print_config: bool,
}

/// Runs `locus serve`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let mut cfg = match &args.config {
        Some(p) => ServerConfig::from_file(p)?,
        None => ServerConfig::default(),
    };
    if let Some(v) = args.port {
        cfg.server.port = v;
    }
    if let Some(v) = args.memcached_port {
        cfg.memcached.port = Some(v);
    }
    if let Some(v) = args.bind {
        cfg.server.bind = v;
    }
    if let Some(v) = args.maxmemory {
        cfg.memory.maxmemory = v;
    }
    if let Some(v) = args.maxmemory_policy {
        cfg.eviction.policy = v;
    }
    if let Some(v) = args.maxmemory_samples {
        cfg.eviction.samples = v;
    }
    if let Some(v) = args.tier_backend {
        cfg.tier
            .get_or_insert_with(Default::default)
            .set("slow_backend", v);
    }
    if let Some(v) = args.fast_memory {
        let t = cfg.tier.get_or_insert_with(Default::default);
        t.set("fast_memory", v.to_string());
        t.unset("fast_share");
    }
    if let Some(v) = args.page_size {
        cfg.memory.page_size = Some(v);
    }
    if let Some(v) = args.threads {
        cfg.server.threads = v;
    }
    if let Some(v) = args.maxclients {
        cfg.server.maxclients = v;
    }
    if let Some(v) = args.timeout {
        cfg.server.timeout = HumanDuration(v);
    }
    if let Some(v) = args.tenancy {
        cfg.tenancy.mode = v;
    }
    if let Some(v) = args.requirepass {
        cfg.server.requirepass = v;
    }
    if let Some(v) = args.controller {
        cfg.controller.name = v;
    }
    if let Some(v) = args.metrics_bind {
        cfg.metrics.bind = v;
    }
    cfg.validate()?;
    if args.print_config {
        print!("{}", cfg.to_toml());
        return Ok(());
    }
    locus_server::malloc::tune_allocator();
    let file = args.config.as_ref().map(|p| p.display().to_string());
    let server = Server::bind(cfg, Arc::new(SystemClock), file)
        .context("cannot start the server")?
        .with_signals(true);
    if let Some(rep) = server.load_report() {
        for line in &rep.lines {
            eprintln!("locus: snapshot: {line}");
        }
    }
    let n = server.tenant_count();
    for l in server.local_addrs() {
        let what = if l.memcached {
            "serving memcached"
        } else {
            "serving"
        };
        match &l.tenant {
            Some(t) => eprintln!("locus: {what} on {} (tenant {t})", l.addr),
            None => eprintln!("locus: {what} on {} ({n} tenants)", l.addr),
        }
    }
    if let Some(a) = server.metrics_addr() {
        eprintln!(
            "locus: metrics and live page on http://{a}/ (operators only: every tenant's figures)"
        );
    }
    server.run()?;
    eprintln!("locus: shut down");
    Ok(())
}
