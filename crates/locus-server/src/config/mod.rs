//! Server configuration: one TOML shape (`config/locus.toml`), CLI overrides, one `validate()`.
//!
//! Every section is `#[serde(default, deny_unknown_fields)]`, so an empty file (or no file) is the
//! default configuration and a misspelt key is an error. [`ServerConfig::validate`] reports every
//! problem at once, each with its key path (`tenant[1].policy: ...`). `CONFIG SET` and
//! `LOCUS.TENANT ... SET` re-validate through the same functions.
//!
//! The `[controller]` section names a memory controller of [`locus_engine::control`] and its
//! `[controller.settings]`; validation builds the controller once, so an unknown name or setting
//! is reported like any other problem, and [`ServerConfig::install_controller`] builds it again
//! for the engine at start.

use std::net::IpAddr;

use locus_common::ByteSize;
use locus_engine::{Engine, EngineConfig, LruClockMode, PartitionMode, Policy, TenantConfig};
use serde::{Deserialize, Serialize};

mod controller;
mod dumpload;
mod memcached;
mod metrics;
mod sections;
mod snapshot;
mod tier;

pub use controller::*;
pub use dumpload::*;
pub use memcached::*;
pub use metrics::*;
pub use sections::*;
pub use snapshot::*;
pub use tier::*;

/// Default listen address: loopback only.
pub const DEFAULT_BIND: &str = "127.0.0.1";
/// Default port (Redis's).
pub const DEFAULT_PORT: u16 = 6379;
/// Default tokio worker threads.
pub const DEFAULT_THREADS: usize = 2;
/// Default client limit (Redis's).
pub const DEFAULT_MAXCLIENTS: u64 = 10_000;
/// Default background ticks per second (Redis's `hz`).
pub const DEFAULT_HZ: u32 = 10;
/// Default listen backlog (Redis's `tcp-backlog`).
pub const DEFAULT_TCP_BACKLOG: u32 = 511;
/// Default TCP keepalive interval in seconds (Redis's `tcp-keepalive`).
pub const DEFAULT_TCP_KEEPALIVE_S: u64 = 300;
/// Default number of databases `SELECT` accepts.
pub const DEFAULT_DATABASES: u32 = 16;
/// Default client query buffer limit (Redis's 1 GB).
pub const DEFAULT_QUERY_BUFFER_LIMIT: u64 = 1 << 30;
/// The tenant created when none is configured.
pub const DEFAULT_TENANT_NAME: &str = "default";
/// `[controller].name` meaning "no controller": the `memory.partition` arbiter alone.
pub const NO_CONTROLLER: &str = "none";
/// Default decision interval of a controller.
pub const DEFAULT_CONTROL_INTERVAL: &str = "1s";

/// The whole configuration file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// `[server]`: listener, threads, clients.
    pub server: ServerSection,
    /// `[limits]`: protocol limits.
    pub limits: LimitsSection,
    /// `[memory]`: the engine's memory.
    pub memory: MemorySection,
    /// `[eviction]`: defaults for tenants.
    pub eviction: EvictionSection,
    /// `[tenancy]`: how connections and keys map to tenants.
    pub tenancy: TenancySection,
    /// `[controller]`: the memory controller that partitions memory between tenants.
    pub controller: ControllerSection,
    /// `[admin]`: the administrator, the one user allowed server-wide commands.
    pub admin: AdminSection,
    /// `[metrics]`: the operator's HTTP listener (Prometheus, live page); off by default.
    pub metrics: MetricsSection,
    /// `[memcached]`: memcached protocol listeners and their slab model.
    pub memcached: MemcachedSection,
    /// `[snapshot]`: snapshot files, save points, saving at shutdown and loading at start.
    pub snapshot: SnapshotSection,
    /// `[dump_load]`: the periodicity detector of tenants with `dump_load = "auto"`.
    pub dump_load: DumpLoadSection,
    /// `[tier]`: fast and slow memory tiers (sdTMM); absent = one tier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier: Option<TierSection>,
    /// `[[tenant]]` tables; none = one tenant named `default`.
    #[serde(rename = "tenant", skip_serializing_if = "Vec::is_empty")]
    pub tenants: Vec<TenantSection>,
}

/// Why a configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not valid TOML for this shape.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// The parser's message (with line and key).
        message: String,
    },
    /// The values are inconsistent; every problem, one per line.
    #[error("invalid configuration:\n  {}", .problems.join("\n  "))]
    Invalid {
        /// Every problem, each prefixed with its key path.
        problems: Vec<String>,
    },
}

/// Parses a policy name (case-insensitive), with the list of valid names in the error.
pub fn parse_policy(s: &str) -> Result<Policy, String> {
    Policy::ALL
        .iter()
        .copied()
        .find(|p| p.name().eq_ignore_ascii_case(s))
        .ok_or_else(|| {
            let names: Vec<&str> = Policy::ALL.iter().map(|p| p.name()).collect();
            format!("unknown policy {s:?} (one of {})", names.join(", "))
        })
}

impl ServerConfig {
    /// Parses a TOML document (no validation beyond the shape).
    ///
    /// # Errors
    /// [`ConfigError::Parse`] with the TOML parser's message.
    pub fn from_toml(text: &str, path: &str) -> Result<Self, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_string(),
            message: e.to_string(),
        })
    }

    /// Reads and parses a file (no validation beyond the shape).
    ///
    /// # Errors
    /// [`ConfigError::Read`] or [`ConfigError::Parse`].
    pub fn from_file(path: &std::path::Path) -> Result<Self, ConfigError> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: p.clone(),
            source,
        })?;
        Self::from_toml(&text, &p)
    }

    /// The effective configuration as TOML (`--print-config`).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_else(|e| format!("# cannot render configuration: {e}\n"))
    }

    /// The engine's configuration.
    pub fn engine_config(&self) -> EngineConfig {
        let page_size = self.memory.page_size.map_or_else(
            || sections::auto_page_size(self.memory.maxmemory.0),
            |p| p.0,
        );
        let mut e = EngineConfig {
            maxmemory: self.memory.maxmemory.0,
            page_size,
            seed: self.memory.seed,
            // A server's memory is all of it: the key index counts toward maxmemory.
            metadata_in_budget: true,
            // Redis mode: values above an eighth of a page get their own allocation, so a
            // mix of sizes fills the budget with data (issue #11).
            large_items: Some(page_size / 8),
            ..EngineConfig::default()
        };
        if self.memory.partition.eq_ignore_ascii_case("static") {
            e.partition = PartitionMode::Static;
        }
        if self.memory.lru_clock.eq_ignore_ascii_case("logical") {
            e.lru_clock = LruClockMode::Logical;
        }
        self.apply_memcached_ladder(&mut e);
        if let Some(t) = &self.tier {
            e.tier = Some(t.tier_config(e.maxmemory));
            // The engine's tiers hold small items in pages only, and budget pages per tier:
            // values above a page are refused and the key index is outside maxmemory.
            e.large_items = None;
            e.metadata_in_budget = false;
        }
        e
    }

    /// The tenants to create: the `[[tenant]]` tables, or one named `default`.
    pub fn tenant_sections(&self) -> Vec<TenantSection> {
        if self.tenants.is_empty() {
            vec![TenantSection {
                name: DEFAULT_TENANT_NAME.to_string(),
                ..TenantSection::default()
            }]
        } else {
            self.tenants.clone()
        }
    }

    /// The engine configuration of one tenant (defaults from `[eviction]`).
    pub fn tenant_config(&self, t: &TenantSection) -> TenantConfig {
        let mut c = TenantConfig::new(t.name.clone());
        c.policy =
            parse_policy(t.policy.as_deref().unwrap_or(&self.eviction.policy)).unwrap_or(c.policy);
        c.samples = t.samples.unwrap_or(self.eviction.samples);
        c.evpool_size = self.eviction.evpool_size;
        c.min_bytes = t.min.0;
        c.max_bytes = t.max.map(|b| b.0);
        c
    }

    /// Checks every value; returns every problem with its key path.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] listing all problems.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let mut p = Vec::new();
        let s = &self.server;
        if s.bind.parse::<IpAddr>().is_err() {
            p.push(format!("server.bind: {:?} is not an IP address", s.bind));
        }
        if !(1..=256).contains(&s.threads) {
            p.push(format!("server.threads: {} is not in 1..=256", s.threads));
        }
        if s.maxclients == 0 {
            p.push("server.maxclients: must be at least 1".to_string());
        }
        if crate::exec::notify::parse_flags(s.notify_keyspace_events.as_bytes()).is_none() {
            p.push(format!(
                "server.notify_keyspace_events: {:?} has a character that is not one of K E g $ l s h z x e t m d n A",
                s.notify_keyspace_events
            ));
        }
        if !(1..=500).contains(&s.hz) {
            p.push(format!("server.hz: {} is not in 1..=500", s.hz));
        }
        if !(1..=65_535).contains(&s.tcp_backlog) {
            p.push(format!(
                "server.tcp_backlog: {} is not in 1..=65535",
                s.tcp_backlog
            ));
        }
        if s.databases == 0 || s.databases > 1_000_000 {
            p.push(format!(
                "server.databases: {} is not in 1..=1000000",
                s.databases
            ));
        }
        self.validate_admin(&mut p);
        let l = &self.limits;
        if l.proto_max_bulk_len.0 < 1 << 20 {
            p.push("limits.proto_max_bulk_len: must be at least 1MiB (as in Redis)".to_string());
        }
        if l.max_array_len == 0 {
            p.push("limits.max_array_len: must be at least 1".to_string());
        }
        if l.max_inline_len.0 < 1024 {
            p.push("limits.max_inline_len: must be at least 1KiB".to_string());
        }
        if l.client_query_buffer_limit.0 < 1 << 20 {
            p.push("limits.client_query_buffer_limit: must be at least 1MiB".to_string());
        }
        let m = &self.memory;
        if !["shared", "static"].contains(&m.partition.to_ascii_lowercase().as_str()) {
            p.push(format!(
                "memory.partition: {:?} is not shared or static",
                m.partition
            ));
        }
        if !["redis", "logical"].contains(&m.lru_clock.to_ascii_lowercase().as_str()) {
            p.push(format!(
                "memory.lru_clock: {:?} is not redis or logical",
                m.lru_clock
            ));
        }
        if let Err(errs) = self.engine_config().validate() {
            // A tier setting's message names its own key (`tier.fast_share: ...`).
            p.extend(errs.into_iter().map(|e| {
                if e.starts_with("tier") {
                    e
                } else {
                    format!("memory: {e}")
                }
            }));
        }
        if let Some(t) = &self.tier {
            p.extend(t.problems(self.memory.maxmemory.0));
        }
        if let Err(e) = parse_policy(&self.eviction.policy) {
            p.push(format!("eviction.policy: {e}"));
        }
        if !(1..=64).contains(&self.eviction.samples) {
            p.push(format!(
                "eviction.samples: {} is not in 1..=64",
                self.eviction.samples
            ));
        }
        self.validate_tenants(&mut p);
        self.validate_controller(&mut p);
        p.extend(self.metrics.problems());
        p.extend(self.snapshot.problems());
        self.dump_load_problems(&mut p);
        self.memcached.validate(self, &mut p);
        if p.is_empty() {
            Ok(())
        } else {
            Err(ConfigError::Invalid { problems: p })
        }
    }

    fn validate_controller(&self, p: &mut Vec<String>) {
        let c = &self.controller;
        if let Err(e) = c.parsed_interval() {
            p.push(e);
        }
        if c.max_moves == 0 {
            p.push(
                "controller.max_moves: must be at least 1 (pools above their target release pages through it)"
                    .to_string(),
            );
        }
        if let Err(errs) = c.build() {
            p.extend(errs);
        }
    }

    /// Installs the configured controller and the tenants' miss-penalty hints in `eng`, whose
    /// tenants were created from [`ServerConfig::tenant_sections`]. With `name = "none"` the
    /// engine keeps the `memory.partition` arbiter.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] if the section does not validate.
    pub fn install_controller(&self, eng: &mut Engine) -> Result<(), ConfigError> {
        let invalid = |problems: Vec<String>| ConfigError::Invalid { problems };
        for t in self.tenant_sections() {
            if let Some(us) = t.penalty_us
                && let Some(id) = eng.tenant_by_name(&t.name)
            {
                eng.set_penalty_hint(id, Some(us));
            }
            if let Some(n) = t.penalty_classes
                && let Some(id) = eng.tenant_by_name(&t.name)
            {
                eng.set_penalty_classes(id, n).map_err(|e| match e {
                    locus_engine::EngineError::InvalidConfig { problems } => invalid(problems),
                    other => invalid(vec![other.to_string()]),
                })?;
            }
        }
        let cfg = self
            .controller
            .control_config()
            .map_err(|e| invalid(vec![e]))?;
        if let Some(ctl) = self.controller.build().map_err(invalid)? {
            eng.set_controller(ctl, cfg);
        }
        Ok(())
    }

    fn validate_admin(&self, p: &mut Vec<String>) {
        let a = &self.admin;
        match (a.user.is_empty(), a.password.is_empty()) {
            (true, true) => return,
            (false, true) => p.push("admin.password: required with admin.user".into()),
            (true, false) => p.push("admin.user: required with admin.password".into()),
            (false, false) => {}
        }
        if a.user == "default" {
            p.push(
                "admin.user: \"default\" is the user of requirepass; name the admin otherwise"
                    .into(),
            );
        }
        if let Some(i) = self
            .tenants
            .iter()
            .position(|t| t.user.as_deref() == Some(a.user.as_str()))
        {
            p.push(format!(
                "admin.user: {:?} is also tenant[{i}]'s user; the admin is a user of its own",
                a.user
            ));
        }
    }

    fn validate_tenants(&self, p: &mut Vec<String>) {
        let mode = self.tenancy.mode;
        let tenants = self.tenant_sections();
        if mode == TenancyMode::Single && tenants.len() > 1 {
            p.push(format!(
                "tenancy.mode: single mode serves one tenant but {} are configured (choose port, user, db or prefix)",
                tenants.len()
            ));
        }
        if mode != TenancyMode::Single && self.tenants.is_empty() {
            p.push(format!("tenancy.mode: {mode} mode needs [[tenant]] tables"));
        }
        let dt = &self.tenancy.default_tenant;
        if !dt.is_empty() && !tenants.iter().any(|t| &t.name == dt) {
            p.push(format!("tenancy.default_tenant: no tenant named {dt:?}"));
        }
        let mut names = std::collections::HashSet::new();
        let mut ports = std::collections::HashMap::new();
        let mut users = std::collections::HashMap::new();
        let mut dbs = std::collections::HashMap::new();
        let mut prefixes = std::collections::HashMap::new();
        let mut min_sum: u64 = 0;
        for (i, t) in self.tenants.iter().enumerate() {
            let at = format!("tenant[{i}]");
            if t.name.is_empty() {
                p.push(format!("{at}.name: required"));
            } else if t
                .name
                .bytes()
                .any(|b| !(b.is_ascii_graphic()) || b == b',' || b == b'=' || b == b':')
            {
                p.push(format!(
                    "{at}.name: {:?} must be printable ASCII without spaces, ',', '=' or ':'",
                    t.name
                ));
            } else if !names.insert(t.name.clone()) {
                p.push(format!("{at}.name: duplicate tenant {:?}", t.name));
            }
            match mode {
                TenancyMode::Port if t.port.is_none() && t.memcached_port.is_none() => p.push(
                    format!("{at}.port: required in port mode (or a memcached_port)"),
                ),
                TenancyMode::User if t.user.is_none() || t.password.is_none() => p.push(format!(
                    "{at}.user: user and password are required in user mode"
                )),
                TenancyMode::Db if t.db.is_none() => {
                    p.push(format!("{at}.db: required in db mode"))
                }
                TenancyMode::Prefix if t.prefix.as_deref().is_none_or(str::is_empty) => p.push(
                    format!("{at}.prefix: a non-empty prefix is required in prefix mode"),
                ),
                _ => {}
            }
            if let Some(port) = t.port
                && port != 0
            {
                if port == self.server.port {
                    p.push(format!("{at}.port: {port} is also server.port"));
                }
                if let Some(j) = ports.insert(port, i) {
                    p.push(format!("{at}.port: {port} already used by tenant[{j}]"));
                }
            }
            if let Some(u) = &t.user
                && let Some(j) = users.insert(u.clone(), i)
            {
                p.push(format!("{at}.user: {u:?} already used by tenant[{j}]"));
            }
            if let Some(db) = t.db {
                if db >= self.server.databases {
                    p.push(format!(
                        "{at}.db: {db} is not below server.databases ({})",
                        self.server.databases
                    ));
                }
                if let Some(j) = dbs.insert(db, i) {
                    p.push(format!("{at}.db: {db} already used by tenant[{j}]"));
                }
            }
            if let Some(pre) = &t.prefix
                && let Some(j) = prefixes.insert(pre.clone(), i)
            {
                p.push(format!("{at}.prefix: {pre:?} already used by tenant[{j}]"));
            }
            if let Some(pol) = &t.policy
                && let Err(e) = parse_policy(pol)
            {
                p.push(format!("{at}.policy: {e}"));
            }
            if let Some(k) = t.samples
                && !(1..=64).contains(&k)
            {
                p.push(format!("{at}.samples: {k} is not in 1..=64"));
            }
            if let Some(us) = t.penalty_us
                && !(us.is_finite() && us >= 0.0)
            {
                p.push(format!(
                    "{at}.penalty_us: {us} is not a non-negative number of microseconds"
                ));
            }
            if let Some(n) = t.penalty_classes {
                if !(1..=locus_engine::MAX_CLASS_POOLS).contains(&n) {
                    p.push(format!(
                        "{at}.penalty_classes: {n} is not in 1..={}",
                        locus_engine::MAX_CLASS_POOLS
                    ));
                }
                if t.min.0 > 0 || t.max.is_some() {
                    p.push(format!(
                        "{at}.penalty_classes: min and max would bound only the default class pool; set neither"
                    ));
                }
            }
            if let Some(max) = t.max
                && max.0 < t.min.0
            {
                p.push(format!("{at}.max: {max} is below min {}", t.min));
            }
            // A cap the server can never give is a mistake the operator should hear about, not
            // a promise the tenant silently does not get.
            if let Some(max) = t.max
                && max.0 > self.memory.maxmemory.0
            {
                p.push(format!(
                    "{at}.max: {max} exceeds memory.maxmemory {}",
                    self.memory.maxmemory
                ));
            }
            min_sum = min_sum.saturating_add(t.min.0);
        }
        if min_sum > self.memory.maxmemory.0 {
            p.push(format!(
                "tenant[*].min: the floors add up to {} which exceeds memory.maxmemory {}",
                ByteSize(min_sum),
                self.memory.maxmemory
            ));
        }
    }
}

#[cfg(test)]
mod book;
#[cfg(test)]
mod tests;
