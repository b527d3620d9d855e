//! Server configuration: one TOML shape (`config/locus.toml`), CLI overrides, one `validate()`.
//!
//! Every section is `#[serde(default, deny_unknown_fields)]`, so an empty file (or no file) is the
//! default configuration and a misspelt key is an error. [`ServerConfig::validate`] reports every
//! problem at once, each with its key path (`tenant[1].policy: ...`). `CONFIG SET` and
//! `LOCUS.TENANT ... SET` re-validate through the same functions.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;
use std::time::Duration;

use locus_common::{ByteSize, parse_duration};
use locus_engine::{EngineConfig, LruClockMode, PartitionMode, Policy, TenantConfig};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

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
/// Default number of databases `SELECT` accepts.
pub const DEFAULT_DATABASES: u32 = 16;
/// Default client query buffer limit (Redis's 1 GB).
pub const DEFAULT_QUERY_BUFFER_LIMIT: u64 = 1 << 30;
/// The tenant created when none is configured.
pub const DEFAULT_TENANT_NAME: &str = "default";

/// A duration written as text ("0s", "5m", "100ms") in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HumanDuration(pub Duration);

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.as_millis();
        if ms.is_multiple_of(1000) {
            write!(f, "{}s", ms / 1000)
        } else {
            write!(f, "{ms}ms")
        }
    }
}

impl Serialize for HumanDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Num(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Num(n) => Ok(HumanDuration(Duration::from_secs(n))),
            Raw::Text(t) => parse_duration(&t)
                .map(HumanDuration)
                .map_err(serde::de::Error::custom),
        }
    }
}

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
    /// `[[tenant]]` tables; none = one tenant named `default`.
    #[serde(rename = "tenant", skip_serializing_if = "Vec::is_empty")]
    pub tenants: Vec<TenantSection>,
}

/// `[server]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerSection {
    /// Listen address.
    pub bind: String,
    /// Listen port (0 = ephemeral).
    pub port: u16,
    /// Tokio worker threads.
    pub threads: usize,
    /// Most simultaneous clients.
    pub maxclients: u64,
    /// Idle client timeout; 0 = never.
    pub timeout: HumanDuration,
    /// Background ticks per second.
    pub hz: u32,
    /// Password of the `default` user; empty = none.
    pub requirepass: String,
    /// Databases `SELECT` accepts (db mode: only the mapped ones).
    pub databases: u32,
}

impl Default for ServerSection {
    fn default() -> Self {
        Self {
            bind: DEFAULT_BIND.to_string(),
            port: DEFAULT_PORT,
            threads: DEFAULT_THREADS,
            maxclients: DEFAULT_MAXCLIENTS,
            timeout: HumanDuration::default(),
            hz: DEFAULT_HZ,
            requirepass: String::new(),
            databases: DEFAULT_DATABASES,
        }
    }
}

/// `[limits]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsSection {
    /// Largest bulk string.
    pub proto_max_bulk_len: ByteSize,
    /// Most arguments in one command.
    pub max_array_len: u64,
    /// Longest inline command.
    pub max_inline_len: ByteSize,
    /// Most unparsed input per connection.
    pub client_query_buffer_limit: ByteSize,
}

impl Default for LimitsSection {
    fn default() -> Self {
        Self {
            proto_max_bulk_len: ByteSize(locus_protocol::request::DEFAULT_MAX_BULK_LEN as u64),
            max_array_len: locus_protocol::request::DEFAULT_MAX_ARRAY_LEN as u64,
            max_inline_len: ByteSize(locus_protocol::request::DEFAULT_MAX_INLINE_LEN as u64),
            client_query_buffer_limit: ByteSize(DEFAULT_QUERY_BUFFER_LIMIT),
        }
    }
}

impl LimitsSection {
    /// The parser's limits.
    pub fn protocol_limits(&self) -> locus_protocol::Limits {
        locus_protocol::Limits {
            max_bulk_len: usize::try_from(self.proto_max_bulk_len.0).unwrap_or(usize::MAX),
            max_array_len: usize::try_from(self.max_array_len).unwrap_or(usize::MAX),
            max_inline_len: usize::try_from(self.max_inline_len.0).unwrap_or(usize::MAX),
        }
    }
}

/// `[memory]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemorySection {
    /// Bytes of pages of all tenants together.
    pub maxmemory: ByteSize,
    /// Page size.
    pub page_size: ByteSize,
    /// `shared` or `static`.
    pub partition: String,
    /// `redis` or `logical`.
    pub lru_clock: String,
    /// Seed of the engine's RNG.
    pub seed: u64,
}

impl Default for MemorySection {
    fn default() -> Self {
        let e = EngineConfig::default();
        Self {
            maxmemory: ByteSize(e.maxmemory),
            page_size: ByteSize(e.page_size),
            partition: "shared".to_string(),
            lru_clock: "redis".to_string(),
            seed: e.seed,
        }
    }
}

/// `[eviction]`: defaults for tenants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EvictionSection {
    /// A Redis `maxmemory-policy` name.
    pub policy: String,
    /// `maxmemory-samples`.
    pub samples: u32,
    /// Eviction pool size (0 = textbook K-LRU).
    pub evpool_size: u32,
}

impl Default for EvictionSection {
    fn default() -> Self {
        let t = TenantConfig::new(DEFAULT_TENANT_NAME);
        Self {
            policy: t.policy.name().to_string(),
            samples: t.samples,
            evpool_size: t.evpool_size,
        }
    }
}

/// How connections and keys map to tenants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TenancyMode {
    /// One tenant.
    #[default]
    Single,
    /// By listener port.
    Port,
    /// By ACL user (`AUTH user pass`).
    User,
    /// By database number (`SELECT n`).
    Db,
    /// By longest key prefix.
    Prefix,
}

impl FromStr for TenancyMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "single" => Ok(Self::Single),
            "port" => Ok(Self::Port),
            "user" => Ok(Self::User),
            "db" => Ok(Self::Db),
            "prefix" => Ok(Self::Prefix),
            _ => Err(format!(
                "unknown tenancy mode {s:?} (single, port, user, db, prefix)"
            )),
        }
    }
}

impl fmt::Display for TenancyMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Single => "single",
            Self::Port => "port",
            Self::User => "user",
            Self::Db => "db",
            Self::Prefix => "prefix",
        })
    }
}

/// `[tenancy]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct TenancySection {
    /// The mode.
    pub mode: TenancyMode,
    /// Tenant for whatever nothing else resolves; empty = reject.
    pub default_tenant: String,
}

/// One `[[tenant]]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct TenantSection {
    /// Unique name.
    pub name: String,
    /// Port mode: this tenant's listener port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// User mode: ACL user name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// User mode: password.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// Db mode: database number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db: Option<u32>,
    /// Prefix mode: key prefix.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Guaranteed bytes.
    pub min: ByteSize,
    /// Cap in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<ByteSize>,
    /// Eviction policy (default: `[eviction].policy`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// `maxmemory-samples` (default: `[eviction].samples`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub samples: Option<u32>,
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
        let mut e = EngineConfig {
            maxmemory: self.memory.maxmemory.0,
            page_size: self.memory.page_size.0,
            seed: self.memory.seed,
            ..EngineConfig::default()
        };
        if self.memory.partition.eq_ignore_ascii_case("static") {
            e.partition = PartitionMode::Static;
        }
        if self.memory.lru_clock.eq_ignore_ascii_case("logical") {
            e.lru_clock = LruClockMode::Logical;
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
        if !(1..=500).contains(&s.hz) {
            p.push(format!("server.hz: {} is not in 1..=500", s.hz));
        }
        if s.databases == 0 || s.databases > 1_000_000 {
            p.push(format!(
                "server.databases: {} is not in 1..=1000000",
                s.databases
            ));
        }
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
            p.extend(errs.into_iter().map(|e| format!("memory: {e}")));
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
        if p.is_empty() {
            Ok(())
        } else {
            Err(ConfigError::Invalid { problems: p })
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
                TenancyMode::Port if t.port.is_none() => {
                    p.push(format!("{at}.port: required in port mode"))
                }
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
            if let Some(max) = t.max
                && max.0 < t.min.0
            {
                p.push(format!("{at}.max: {max} is below min {}", t.min));
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
mod tests {
    use super::*;

    #[test]
    fn empty_file_is_the_default() {
        let c = ServerConfig::from_toml("", "x").unwrap();
        assert_eq!(c, ServerConfig::default());
        c.validate().unwrap();
    }

    #[test]
    fn shipped_file_equals_defaults() {
        let text = include_str!("../../../config/locus.toml");
        let c = ServerConfig::from_toml(text, "config/locus.toml").unwrap();
        assert_eq!(c, ServerConfig::default());
    }

    #[test]
    fn print_config_round_trips() {
        let mut c = ServerConfig::default();
        c.tenancy.mode = TenancyMode::Prefix;
        c.tenants.push(TenantSection {
            name: "a".into(),
            prefix: Some("a:".into()),
            max: Some(ByteSize::mib(4)),
            ..Default::default()
        });
        let back = ServerConfig::from_toml(&c.to_toml(), "x").unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let e = ServerConfig::from_toml("[server]\nprot = 1\n", "f.toml").unwrap_err();
        assert!(e.to_string().contains("prot"), "{e}");
    }

    #[test]
    fn every_problem_is_reported_with_its_path() {
        let text = r#"
            [server]
            bind = "localhost"
            threads = 0
            [eviction]
            policy = "lru"
            [tenancy]
            mode = "db"
            default_tenant = "zz"
            [[tenant]]
            name = "a"
            db = 1
            [[tenant]]
            name = "a"
            samples = 100
            max = "1kb"
            min = "2kb"
        "#;
        let c = ServerConfig::from_toml(text, "f").unwrap();
        let Err(ConfigError::Invalid { problems }) = c.validate() else {
            panic!()
        };
        let all = problems.join("\n");
        for needle in [
            "server.bind",
            "server.threads",
            "eviction.policy",
            "tenancy.default_tenant",
            "tenant[1].name",
            "tenant[1].db",
            "tenant[1].samples",
            "tenant[1].max",
        ] {
            assert!(all.contains(needle), "missing {needle} in:\n{all}");
        }
    }
}
