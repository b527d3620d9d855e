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

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;
use std::time::Duration;

use locus_common::{ByteSize, parse_duration};
use locus_control as control;
use locus_engine::control::{ControlConfig, ControlError, Controller, Interval, Settings};
use locus_engine::{Engine, EngineConfig, LruClockMode, PartitionMode, Policy, TenantConfig};
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
/// `[controller].name` meaning "no controller": the `memory.partition` arbiter alone.
pub const NO_CONTROLLER: &str = "none";
/// Default decision interval of a controller.
pub const DEFAULT_CONTROL_INTERVAL: &str = "1s";

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
    /// `[controller]`: the memory controller that partitions memory between tenants.
    pub controller: ControllerSection,
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

/// A text value that may also be written as a bare number in the file (`interval = 100000` or
/// `interval = "1s"`); kept as text so `validate()` reports a bad value with its key path.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TextOrNumber(pub String);

impl Serialize for TextOrNumber {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for TextOrNumber {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Num(i64),
            Text(String),
        }
        Ok(TextOrNumber(match Raw::deserialize(d)? {
            Raw::Num(n) => n.to_string(),
            Raw::Text(t) => t,
        }))
    }
}

/// `[controller]`: which memory controller runs, how often, and its settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ControllerSection {
    /// A name of [`locus_control::NAMES`], or `none` (the `memory.partition` arbiter).
    pub name: String,
    /// Decisions every this many data-path requests (`100000`, `"100000req"`) or this long
    /// (`"1s"`, `"500ms"`).
    pub interval: TextOrNumber,
    /// Pages released (by pools above target) plus explicit page moves, per decision.
    pub max_moves: u32,
    /// Run the controller's profiling on a thread of its own, fed in batches, instead of on the
    /// request path (same decisions; the profilers' CPU time moves to another core).
    pub offload: bool,
    /// `[controller.settings]`: the controller's own settings; values of any TOML type
    /// (arrays become comma-separated lists).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, toml::Value>,
}

impl Default for ControllerSection {
    fn default() -> Self {
        Self {
            name: NO_CONTROLLER.to_string(),
            interval: TextOrNumber(DEFAULT_CONTROL_INTERVAL.to_string()),
            max_moves: ControlConfig::default().max_moves,
            offload: false,
            settings: BTreeMap::new(),
        }
    }
}

/// A setting's TOML value as the text [`Settings`] parses: strings as they are, numbers and
/// booleans in their usual form, arrays of those joined with `,`.
fn setting_text(v: &toml::Value) -> Result<String, String> {
    match v {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(n) => Ok(n.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        toml::Value::Boolean(b) => Ok(b.to_string()),
        toml::Value::Datetime(d) => Ok(d.to_string()),
        toml::Value::Array(items) => {
            let parts: Result<Vec<String>, String> = items
                .iter()
                .map(|x| match x {
                    toml::Value::Array(_) | toml::Value::Table(_) => {
                        Err("nested arrays and tables are not allowed in a list".to_string())
                    }
                    other => setting_text(other),
                })
                .collect();
            parts.map(|p| p.join(","))
        }
        toml::Value::Table(_) => {
            Err("a table is not a setting value (use key = value pairs)".to_string())
        }
    }
}

impl ControllerSection {
    /// Whether a controller is configured (`name` other than `none`).
    pub fn enabled(&self) -> bool {
        !self.name.eq_ignore_ascii_case(NO_CONTROLLER)
    }

    /// The settings as text pairs, or every value that cannot be one (with its key path).
    fn settings_pairs(&self) -> Result<Vec<(String, String)>, Vec<String>> {
        let mut pairs = Vec::new();
        let mut bad = Vec::new();
        for (k, v) in &self.settings {
            match setting_text(v) {
                Ok(t) => pairs.push((k.clone(), t)),
                Err(e) => bad.push(format!("controller.settings.{k}: {e}")),
            }
        }
        if bad.is_empty() { Ok(pairs) } else { Err(bad) }
    }

    /// The decision interval.
    ///
    /// # Errors
    /// The problem, prefixed `controller.interval`.
    pub fn parsed_interval(&self) -> Result<Interval, String> {
        self.interval
            .0
            .parse::<Interval>()
            .map_err(|e| format!("controller.interval: {e}"))
    }

    /// How the engine runs the controller.
    ///
    /// # Errors
    /// The problem, prefixed `controller.interval`.
    pub fn control_config(&self) -> Result<ControlConfig, String> {
        Ok(ControlConfig {
            interval: self.parsed_interval()?,
            max_moves: self.max_moves,
            offload: self.offload,
        })
    }

    /// Builds the configured controller (`None` for `none`).
    ///
    /// # Errors
    /// Every problem with its key path (`controller.name: ...`, `controller.settings.k: ...`).
    pub fn build(&self) -> Result<Option<Box<dyn Controller>>, Vec<String>> {
        if !self.enabled() {
            return if self.settings.is_empty() {
                Ok(None)
            } else {
                Err(vec![format!(
                    "controller.settings: settings given but controller.name is \"{NO_CONTROLLER}\" (choose one of {})",
                    control::NAMES.join(", ")
                )])
            };
        }
        let pairs = self.settings_pairs()?;
        let name = self.name.to_ascii_lowercase();
        control::build(&name, Settings::new(&name, pairs))
            .map(Some)
            .map_err(|e| vec![control_problem(&e)])
    }
}

/// A controller construction error as a configuration problem with its key path.
fn control_problem(e: &ControlError) -> String {
    match e {
        ControlError::UnknownController { name, known } => format!(
            "controller.name: unknown controller {name:?} (one of {NO_CONTROLLER}, {})",
            known.join(", ")
        ),
        ControlError::NotAvailable { .. } => format!("controller.name: {e}"),
        ControlError::BadSetting {
            controller,
            key,
            value,
            expected,
        } => format!(
            "controller.settings.{key}: {value:?} is not valid for controller '{controller}': expected {expected}"
        ),
        ControlError::UnknownSetting {
            controller,
            key,
            known,
        } => format!(
            "controller.settings.{key}: controller '{controller}' has no such setting (its settings: {})",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        ),
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
    /// Mean miss penalty in µs, a hint for cost-aware controllers (absent = measured: the gap
    /// from a GET miss to the SET of the same key).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub penalty_us: Option<f64>,
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
        self.validate_controller(&mut p);
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
            if let Some(us) = t.penalty_us
                && !(us.is_finite() && us >= 0.0)
            {
                p.push(format!(
                    "{at}.penalty_us: {us} is not a non-negative number of microseconds"
                ));
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

    #[test]
    fn controller_defaults_to_none_and_installs_nothing() {
        let c = ServerConfig::default();
        assert!(!c.controller.enabled());
        assert_eq!(c.controller.interval.0, "1s");
        assert_eq!(c.controller.max_moves, 64);
        let mut eng = Engine::new(
            c.engine_config(),
            std::sync::Arc::new(locus_common::SystemClock),
        )
        .unwrap();
        eng.add_tenant(c.tenant_config(&c.tenant_sections()[0]))
            .unwrap();
        c.install_controller(&mut eng).unwrap();
        assert_eq!(eng.controller_name(), None);
    }

    #[test]
    fn controller_settings_of_every_toml_type_become_text() {
        let text = r#"
            [controller]
            name = "static"
            interval = 5000
            max_moves = 8
            [controller.settings]
            shares = [1, 3.5]
        "#;
        let c = ServerConfig::from_toml(text, "f").unwrap();
        c.validate().unwrap();
        assert_eq!(
            c.controller.parsed_interval().unwrap(),
            Interval::Requests(5000)
        );
        assert_eq!(
            c.controller.settings_pairs().unwrap(),
            vec![("shares".to_string(), "1,3.5".to_string())]
        );
        for (v, want) in [
            (toml::Value::String("1,2".into()), "1,2"),
            (toml::Value::Integer(-3), "-3"),
            (toml::Value::Float(0.01), "0.01"),
            (toml::Value::Boolean(true), "true"),
            (
                toml::Value::Array(vec![toml::Value::Integer(1), toml::Value::Integer(5)]),
                "1,5",
            ),
        ] {
            assert_eq!(setting_text(&v).unwrap(), want);
        }
        assert!(setting_text(&toml::Value::Table(Default::default())).is_err());
        assert!(setting_text(&toml::Value::Array(vec![toml::Value::Array(vec![])])).is_err());
    }

    #[test]
    fn controller_round_trips_through_print_config() {
        let text = r#"
            [controller]
            name = "static"
            interval = "250ms"
            [controller.settings]
            shares = [1, 2]
            [[tenant]]
            name = "a"
            penalty_us = 1500.0
        "#;
        let c = ServerConfig::from_toml(text, "f").unwrap();
        let printed = c.to_toml();
        assert!(printed.contains("[controller]"), "{printed}");
        assert!(printed.contains("[controller.settings]"), "{printed}");
        let back = ServerConfig::from_toml(&printed, "x").unwrap();
        assert_eq!(back, c);
        back.validate().unwrap();
    }

    #[test]
    fn every_controller_problem_is_reported_with_its_path() {
        let problems = |text: &str| -> String {
            let c = ServerConfig::from_toml(text, "f").unwrap();
            match c.validate() {
                Err(ConfigError::Invalid { problems }) => problems.join("\n"),
                other => panic!("expected problems for {text}, got {other:?}"),
            }
        };
        let all = problems(
            r#"
            [controller]
            name = "kredsi"
            interval = "soon"
            max_moves = 0
            [[tenant]]
            name = "a"
            penalty_us = -1.0
            "#,
        );
        for needle in [
            "controller.name: unknown controller \"kredsi\" (one of none, shared, static,",
            "controller.interval: interval 'soon'",
            "controller.max_moves: must be at least 1",
            "tenant[0].penalty_us: -1 is not a non-negative",
        ] {
            assert!(all.contains(needle), "missing {needle} in:\n{all}");
        }
        let all =
            problems("[controller]\nname = \"static\"\n[controller.settings]\nshares = \"1,x\"\n");
        assert!(
            all.contains(
                "controller.settings.shares: \"1,x\" is not valid for controller 'static'"
            ),
            "{all}"
        );
        let all = problems("[controller]\nname = \"static\"\n[controller.settings]\nsharez = 1\n");
        assert!(
            all.contains(
                "controller.settings.sharez: controller 'static' has no such setting (its settings: shares)"
            ),
            "{all}"
        );
        let all = problems("[controller]\nname = \"shared\"\n[controller.settings]\nx = 1\n");
        assert!(
            all.contains("controller.settings.x: controller 'shared' has no such setting (its settings: none)"),
            "{all}"
        );
        let all = problems("[controller.settings]\nshares = 1\n");
        assert!(
            all.contains("controller.settings: settings given but controller.name is \"none\""),
            "{all}"
        );
        let all =
            problems("[controller]\nname = \"static\"\n[controller.settings.shares]\na = 1\n");
        assert!(all.contains("controller.settings.shares: a table"), "{all}");
    }

    #[test]
    fn install_controller_sets_controller_interval_and_hints() {
        let text = r#"
            [memory]
            maxmemory = "8MiB"
            page_size = "64KiB"
            [tenancy]
            mode = "port"
            [controller]
            name = "static"
            interval = "100"
            max_moves = 4
            [controller.settings]
            shares = [1, 3]
            [[tenant]]
            name = "a"
            port = 0
            [[tenant]]
            name = "b"
            port = 0
            penalty_us = 250
        "#;
        let c = ServerConfig::from_toml(text, "f").unwrap();
        c.validate().unwrap();
        let mut eng = Engine::new(
            c.engine_config(),
            std::sync::Arc::new(locus_common::SystemClock),
        )
        .unwrap();
        for t in c.tenant_sections() {
            eng.add_tenant(c.tenant_config(&t)).unwrap();
        }
        c.install_controller(&mut eng).unwrap();
        assert_eq!(eng.controller_name(), Some("static"));
        assert_eq!(
            eng.control_config(),
            Some(ControlConfig {
                interval: Interval::Requests(100),
                max_moves: 4,
                offload: false,
            })
        );
        let b = eng.tenant_by_name("b").unwrap();
        assert_eq!(eng.penalty(b), (250.0, 0));
        eng.run_controller();
        assert_eq!(eng.targets(), vec![Some(32), Some(96)]);
    }
}
