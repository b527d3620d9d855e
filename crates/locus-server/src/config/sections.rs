//! The sections of the configuration file other than `[controller]`: `[server]`, `[limits]`,
//! `[memory]`, `[eviction]`, `[tenancy]` and `[[tenant]]`, and the value types they use
//! (durations, text-or-number).

use locus_common::ByteSize;
pub use locus_common::HumanDuration;
use locus_engine::{EngineConfig, TenantConfig};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

use super::*;

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
    /// Listen backlog of every listener (Redis's `tcp-backlog`; the kernel caps it at
    /// `net.core.somaxconn`).
    pub tcp_backlog: u32,
    /// TCP keepalive probes on client connections after this much idle time; 0 = off (Redis's
    /// `tcp-keepalive`).
    pub tcp_keepalive: HumanDuration,
    /// Keyspace notifications, Redis's `notify-keyspace-events` flags (`K`, `E`, `g$xe...`,
    /// `A`); "" = off. Published on each tenant's own channels.
    pub notify_keyspace_events: String,
    /// Most keys each tenant's client-side caching table holds (Redis's
    /// `tracking-table-max-keys`; past it keys are dropped with an invalidation); 0 = no bound
    /// but the tenant's memory.
    pub tracking_table_max_keys: u64,
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
            tcp_backlog: DEFAULT_TCP_BACKLOG,
            tcp_keepalive: HumanDuration(std::time::Duration::from_secs(DEFAULT_TCP_KEEPALIVE_S)),
            notify_keyspace_events: String::new(),
            tracking_table_max_keys: crate::server::TRACKING_DEFAULT_MAX_KEYS,
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
    /// Redis's `client-output-buffer-limit`, in its own syntax: `<class> <hard> <soft>
    /// <soft-seconds>` per class (`normal`, `pubsub`; `replica`/`slave` are accepted and kept).
    pub client_output_buffer_limit: OutputLimits,
}

/// One class's output buffer limit (Redis's `client-output-buffer-limit` triple).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OutputLimit {
    /// Pending output above this closes the client at once; 0 = no limit.
    pub hard: u64,
    /// Pending output above this for `soft_seconds` closes the client; 0 = no limit.
    pub soft: u64,
    /// How long the soft limit may be exceeded.
    pub soft_seconds: u64,
}

/// `client-output-buffer-limit` for every client class (Redis's defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputLimits {
    /// Ordinary clients (Redis: no limit).
    pub normal: OutputLimit,
    /// Replicas (Locus has none; kept so Redis's full setting round-trips).
    pub replica: OutputLimit,
    /// Pub/sub subscribers.
    pub pubsub: OutputLimit,
}

impl Default for OutputLimits {
    fn default() -> Self {
        OutputLimits {
            normal: OutputLimit::default(),
            replica: OutputLimit {
                hard: 256 << 20,
                soft: 64 << 20,
                soft_seconds: 60,
            },
            pubsub: OutputLimit {
                hard: 32 << 20,
                soft: 8 << 20,
                soft_seconds: 60,
            },
        }
    }
}

impl OutputLimits {
    /// Applies `text` (`normal 10mb 5mb 60 [pubsub ...]`) on top of `self`, as `CONFIG SET
    /// client-output-buffer-limit` does: named classes change, the others keep their values.
    ///
    /// # Errors
    /// A word count that is not a multiple of four, an unknown class, a bad size or number.
    pub fn apply(&mut self, text: &str) -> Result<(), String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        if words.is_empty() || !words.len().is_multiple_of(4) {
            return Err(format!(
                "{text:?}: expected <class> <hard limit> <soft limit> <soft seconds>, repeated"
            ));
        }
        for w in words.chunks(4) {
            let size = |s: &str| {
                s.parse::<ByteSize>()
                    .map(|b| b.0)
                    .map_err(|e| format!("{s:?}: {e}"))
            };
            let limit = OutputLimit {
                hard: size(w[1])?,
                soft: size(w[2])?,
                soft_seconds: w[3]
                    .parse()
                    .map_err(|_| format!("{:?}: soft seconds must be a whole number", w[3]))?,
            };
            match w[0].to_ascii_lowercase().as_str() {
                "normal" => self.normal = limit,
                "replica" | "slave" => self.replica = limit,
                "pubsub" => self.pubsub = limit,
                other => {
                    return Err(format!(
                        "unknown client class {other:?} (normal, replica, pubsub)"
                    ));
                }
            }
        }
        Ok(())
    }
}

impl fmt::Display for OutputLimits {
    /// Redis's `CONFIG GET` form, in bytes: `normal 0 0 0 slave 268435456 67108864 60 pubsub ...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let one = |l: &OutputLimit| format!("{} {} {}", l.hard, l.soft, l.soft_seconds);
        write!(
            f,
            "normal {} slave {} pubsub {}",
            one(&self.normal),
            one(&self.replica),
            one(&self.pubsub)
        )
    }
}

impl Serialize for OutputLimits {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for OutputLimits {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let mut l = OutputLimits::default();
        l.apply(&text).map_err(serde::de::Error::custom)?;
        Ok(l)
    }
}

impl Default for LimitsSection {
    fn default() -> Self {
        Self {
            proto_max_bulk_len: ByteSize(locus_protocol::request::DEFAULT_MAX_BULK_LEN as u64),
            max_array_len: locus_protocol::request::DEFAULT_MAX_ARRAY_LEN as u64,
            max_inline_len: ByteSize(locus_protocol::request::DEFAULT_MAX_INLINE_LEN as u64),
            client_query_buffer_limit: ByteSize(DEFAULT_QUERY_BUFFER_LIMIT),
            client_output_buffer_limit: OutputLimits::default(),
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
            unauthenticated: false,
        }
    }
}

/// `[memory]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemorySection {
    /// Bytes of pages of all tenants together.
    pub maxmemory: ByteSize,
    /// Page size; unset (the default), chosen from `maxmemory` by [`auto_page_size`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_size: Option<ByteSize>,
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
            page_size: None,
            partition: "shared".to_string(),
            lru_clock: "redis".to_string(),
            seed: e.seed,
        }
    }
}

/// The page size when `[memory] page_size` is not set: a 4,096th of `maxmemory` rounded down to
/// a power of two, between 16 KiB and 1 MiB. Every size class in use holds at least a page, so
/// a small budget wants small pages (64 MiB: 4,096 pages of 16 KiB, the ~60 classes up to the
/// large-item threshold cost 1.5% of it); a large one keeps the page table short.
pub fn auto_page_size(maxmemory: u64) -> u64 {
    let target = (maxmemory / 4096).max(1);
    let pow2 = 1u64 << (63 - target.leading_zeros());
    pow2.clamp(16 << 10, 1 << 20)
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

/// `[admin]`: the administrator. Tenants' users (and the `default` user of `requirepass`) act
/// on their own tenant only; server-wide commands (SHUTDOWN, global CONFIG SET, other tenants'
/// settings, LOCUS.CONTROLLER, every client in CLIENT LIST/KILL, the whole INFO) need this user.
/// Without it, a single-tenant server lets every client administer it (as Redis does); a
/// multi-tenant one lets nobody.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct AdminSection {
    /// The admin's user name (`AUTH <user> <password>`); empty = no admin user.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub user: String,
    /// Its password.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub password: String,
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
    /// The tenant's user (`AUTH user password`): required in user mode; in db and prefix mode it
    /// binds a connection to this tenant (its database, its prefix), in port mode it must be
    /// used on this tenant's port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The user's password.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// This tenant's memcached listener (see `[memcached]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memcached_port: Option<u16>,
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
    /// pRedis's automatic dump/load: `"never"` (absent), `"auto"` or a schedule such as
    /// `"every 24h idle 1h-7h lead 10m"` (see [`crate::dumpload`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dump_load: Option<String>,
    /// pRedis(auto)'s per-key penalty classes: the most class pools (1..=16) the tenant's keys
    /// are split over by measured miss penalty, besides its default pool (absent: one pool).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub penalty_classes: Option<u8>,
}
