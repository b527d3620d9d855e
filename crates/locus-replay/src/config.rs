//! The settings of a run and their text syntax (the same strings `locus replay` takes).

use std::path::PathBuf;
use std::time::Duration;

use locus_common::{parse_count, parse_duration};

use crate::error::{ReplayError, Result};

/// Where the requests go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A RESP server (`redis://host:port`): GET / SET / DEL, RESP2, one request in flight per
    /// connection.
    Redis {
        /// `host:port`.
        addr: String,
    },
    /// A memcached text-protocol server (`memcached://host:port`): get / set / delete.
    Memcached {
        /// `host:port`.
        addr: String,
    },
    /// The in-process null server: every GET hits a 1-byte value, every write succeeds, at
    /// once (the harness's own ceiling).
    Null,
    /// The in-process fake server: a hash map that answers at once and counts hits and misses.
    Fake,
}

impl std::str::FromStr for Target {
    type Err = ReplayError;

    fn from_str(s: &str) -> Result<Target> {
        let bad = |why: &str| {
            ReplayError::Config(format!(
                "--target {s:?}: {why} (expected redis://HOST:PORT, memcached://HOST:PORT, null or fake)"
            ))
        };
        match s {
            "null" => return Ok(Target::Null),
            "fake" => return Ok(Target::Fake),
            _ => {}
        }
        let (scheme, rest) = s.split_once("://").ok_or_else(|| bad("no scheme"))?;
        if scheme != "redis" && scheme != "memcached" {
            return Err(bad("unknown scheme"));
        }
        let rest = rest.trim_end_matches('/');
        let (host, port) = rest.rsplit_once(':').ok_or_else(|| bad("no port"))?;
        if host.is_empty() || port.parse::<u16>().map_or(true, |p| p == 0) {
            return Err(bad("host or port invalid"));
        }
        let addr = rest.to_string();
        match scheme {
            "redis" => Ok(Target::Redis { addr }),
            "memcached" => Ok(Target::Memcached { addr }),
            _ => Err(bad("unknown scheme")),
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Redis { addr } => write!(f, "redis://{addr}"),
            Target::Memcached { addr } => write!(f, "memcached://{addr}"),
            Target::Null => f.write_str("null"),
            Target::Fake => f.write_str("fake"),
        }
    }
}

/// How the workload's tenants reach their own keyspace on the target.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum TenantMap {
    /// One keyspace: tenant `i`'s keys are prefixed `t{i}:` so tenants never share a key.
    #[default]
    None,
    /// Tenant `i` connects to `ports[i]` on the target's host (Locus's port mode, one
    /// redis-server per tenant).
    Port(Vec<u16>),
    /// Tenant `i` sends `SELECT dbs[i]` (tenant index when the list is empty).
    Db(Vec<u32>),
    /// Tenant `i` sends `AUTH users[i].0 users[i].1`.
    User(Vec<(String, String)>),
    /// Tenant `i`'s keys start with `prefixes[i]`.
    Prefix(Vec<String>),
}

impl std::str::FromStr for TenantMap {
    type Err = ReplayError;

    fn from_str(s: &str) -> Result<TenantMap> {
        let bad = |why: String| {
            ReplayError::Config(format!(
                "--tenants {s:?}: {why} (expected none, port:P0,P1.., db[:D0,D1..], user:NAME=PASS,.., prefix:P0,P1..)"
            ))
        };
        let (kind, list) = s.split_once(':').unwrap_or((s, ""));
        let items: Vec<&str> = list.split(',').filter(|x| !x.is_empty()).collect();
        Ok(match kind {
            "none" if items.is_empty() => TenantMap::None,
            "port" | "db" => {
                let mut nums = Vec::new();
                for it in &items {
                    let v: u32 = it
                        .parse()
                        .map_err(|_| bad(format!("{it:?} is not a number")))?;
                    nums.push(v);
                }
                if kind == "db" {
                    TenantMap::Db(nums)
                } else {
                    if nums.is_empty() {
                        return Err(bad("no ports".into()));
                    }
                    let ports = nums
                        .iter()
                        .map(|&p| u16::try_from(p).ok().filter(|&p| p > 0))
                        .collect::<Option<Vec<u16>>>()
                        .ok_or_else(|| bad("a port is out of range".into()))?;
                    TenantMap::Port(ports)
                }
            }
            "user" => {
                let mut users = Vec::new();
                for it in &items {
                    let (u, p) = it
                        .split_once('=')
                        .ok_or_else(|| bad(format!("{it:?} is not NAME=PASSWORD")))?;
                    users.push((u.to_string(), p.to_string()));
                }
                if users.is_empty() {
                    return Err(bad("no users".into()));
                }
                TenantMap::User(users)
            }
            "prefix" => {
                if items.is_empty() {
                    return Err(bad("no prefixes".into()));
                }
                TenantMap::Prefix(items.iter().map(|p| p.to_string()).collect())
            }
            _ => return Err(bad("unknown kind".into())),
        })
    }
}

impl TenantMap {
    /// How many tenants the map names (`None` when it takes any number).
    pub fn limit(&self) -> Option<usize> {
        match self {
            TenantMap::None => None,
            TenantMap::Db(d) if d.is_empty() => None,
            TenantMap::Db(d) => Some(d.len()),
            TenantMap::Port(p) => Some(p.len()),
            TenantMap::User(u) => Some(u.len()),
            TenantMap::Prefix(p) => Some(p.len()),
        }
    }

    /// The key prefix of tenant `i`.
    pub fn prefix(&self, i: usize) -> String {
        match self {
            TenantMap::None => format!("t{i}:"),
            TenantMap::Prefix(p) => p[i].clone(),
            _ => String::new(),
        }
    }
}

/// A PostgreSQL query kind (see [`crate::postgres`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PgQuery {
    /// A primary-key lookup of the key's row.
    Pk,
    /// The key's row joined with an aggregate over `n` rows of the tenant's fact table.
    Agg(u32),
    /// Keys split by hash: a fraction `slow` of them runs `Agg(n)`, the others `Pk`.
    Two {
        /// Fraction of keys on the slow query.
        slow: f64,
        /// Rows the slow query aggregates.
        n: u32,
    },
}

/// What a miss costs: the backend a tenant fetches from.
#[derive(Clone, Debug, PartialEq)]
pub enum BackendSpec {
    /// No backend: a miss is followed by the SET at once.
    None,
    /// A constant delay.
    Constant(Duration),
    /// An exponential delay with this mean.
    Exponential(Duration),
    /// A delay uniform in `[min, max]`.
    Uniform(Duration, Duration),
    /// The trace's penalty column (µs), this when a request has none.
    TraceColumn(Duration),
    /// The experiment tenant's own penalty model (experiments only).
    Model,
    /// A query to the harness's PostgreSQL.
    Postgres(PgQuery),
}

impl std::str::FromStr for BackendSpec {
    type Err = ReplayError;

    fn from_str(s: &str) -> Result<BackendSpec> {
        let bad = |why: String| {
            ReplayError::Config(format!(
                "--backend {s:?}: {why} (expected none, delay:DUR, delay:exp:MEAN, delay:uniform:MIN:MAX, \
                 delay:trace[:DEFAULT], delay:model, pg:pk, pg:agg:ROWS, pg:two:FRACTION:ROWS)"
            ))
        };
        let dur = |t: &str| parse_duration(t).map_err(|e| bad(e.to_string()));
        let rows = |t: &str| {
            parse_count(t)
                .and_then(|n| u32::try_from(n).ok())
                .filter(|&n| (1..=10_000_000).contains(&n))
                .ok_or_else(|| bad(format!("{t:?} is not a row count (1..=1e7)")))
        };
        let parts: Vec<&str> = s.split(':').collect();
        Ok(match parts.as_slice() {
            ["none"] => BackendSpec::None,
            ["delay", "exp", m] => BackendSpec::Exponential(dur(m)?),
            ["delay", "uniform", a, b] => {
                let (a, b) = (dur(a)?, dur(b)?);
                if a > b {
                    return Err(bad("min above max".into()));
                }
                BackendSpec::Uniform(a, b)
            }
            ["delay", "trace"] => BackendSpec::TraceColumn(Duration::ZERO),
            ["delay", "trace", d] => BackendSpec::TraceColumn(dur(d)?),
            ["delay", "model"] => BackendSpec::Model,
            ["delay", d] => BackendSpec::Constant(dur(d)?),
            ["pg", "pk"] => BackendSpec::Postgres(PgQuery::Pk),
            ["pg", "agg", n] => BackendSpec::Postgres(PgQuery::Agg(rows(n)?)),
            ["pg", "two", f, n] => {
                let slow: f64 = f
                    .parse()
                    .ok()
                    .filter(|v: &f64| (0.0..=1.0).contains(v))
                    .ok_or_else(|| bad(format!("{f:?} is not a fraction in [0, 1]")))?;
                BackendSpec::Postgres(PgQuery::Two { slow, n: rows(n)? })
            }
            _ => return Err(bad("not understood".into())),
        })
    }
}

/// How fast requests are issued.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum Pacing {
    /// Each connection sends its next request when the previous one is done.
    #[default]
    Closed,
    /// Requests are due at a fixed total rate (req/s); latency counts from the due time, so a
    /// server that falls behind is charged for the queueing (no coordinated omission).
    Open(f64),
}

/// When the warm-up ends (its requests are sent but not measured).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum Warmup {
    /// No warm-up.
    #[default]
    None,
    /// The first this many requests.
    Requests(u64),
    /// Requests completed within this long of the start.
    Time(Duration),
}

impl std::str::FromStr for Warmup {
    type Err = ReplayError;

    fn from_str(s: &str) -> Result<Warmup> {
        if s == "0" || s == "none" {
            return Ok(Warmup::None);
        }
        if (s.ends_with('s') || s.ends_with('m') || s.ends_with('h'))
            && let Ok(d) = parse_duration(s)
        {
            return Ok(Warmup::Time(d));
        }
        parse_count(s).map(Warmup::Requests).ok_or_else(|| {
            ReplayError::Config(format!(
                "--warmup {s:?}: expected a request count (100000, 1e5) or a duration (10s)"
            ))
        })
    }
}

/// Where the requests come from.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    /// A trace file in any format `locus-trace` reads (its tenant column gives the tenants).
    Trace(PathBuf),
    /// An experiment file: its tenants and their generators or traces (its controllers are
    /// ignored; the target's own configuration decides).
    Experiment(PathBuf),
}

/// The PostgreSQL the harness starts.
#[derive(Clone, Debug, PartialEq)]
pub struct PgSettings {
    /// Directory of `initdb` and `postgres` (found on `PATH` or under /usr/lib/postgresql
    /// when absent).
    pub bin_dir: Option<PathBuf>,
    /// Rows per tenant (a key maps to row `key % rows`).
    pub rows: u64,
    /// Parent of the private data directory (the system's temp directory when absent).
    pub tmp_parent: Option<PathBuf>,
    /// An already running server to use instead (`host=… port=… user=…`): nothing is started.
    pub url: Option<String>,
}

impl Default for PgSettings {
    fn default() -> Self {
        PgSettings {
            bin_dir: None,
            rows: 100_000,
            tmp_parent: None,
            url: None,
        }
    }
}

/// Everything a run needs.
#[derive(Clone, Debug)]
pub struct ReplayConfig {
    /// The requests.
    pub input: Input,
    /// The server.
    pub target: Target,
    /// Tenants to keyspaces.
    pub tenants: TenantMap,
    /// Connections per tenant.
    pub connections: usize,
    /// Pacing.
    pub pacing: Pacing,
    /// Stop after this many requests (all of the input when absent; generators need it or the
    /// experiment's own `requests`).
    pub requests: Option<u64>,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Warm-up.
    pub warmup: Warmup,
    /// The backend of every tenant without its own.
    pub backend: Option<BackendSpec>,
    /// Backends per tenant index.
    pub tenant_backends: Vec<(usize, BackendSpec)>,
    /// Value sizes are clamped to `1..=max_value`.
    pub max_value: u64,
    /// `AUTH` for the INFO sampling connection (`user`, `password`).
    pub info_auth: Option<(String, String)>,
    /// Seconds between two samples of the server's INFO (0 = no sampling).
    pub info_interval: Duration,
    /// The PostgreSQL backend.
    pub pg: PgSettings,
    /// Seed of the delay draws.
    pub seed: u64,
    /// Worker threads of the runtime (0 = available cores).
    pub threads: usize,
}

impl ReplayConfig {
    /// A configuration with the defaults: closed loop, one connection per tenant, no warm-up.
    pub fn new(input: Input, target: Target) -> Self {
        ReplayConfig {
            input,
            target,
            tenants: TenantMap::None,
            connections: 1,
            pacing: Pacing::Closed,
            requests: None,
            duration: None,
            warmup: Warmup::None,
            backend: None,
            tenant_backends: Vec::new(),
            max_value: 1 << 20,
            info_auth: None,
            info_interval: Duration::from_secs(1),
            pg: PgSettings::default(),
            seed: 0,
            threads: 0,
        }
    }

    /// Checks the settings together.
    ///
    /// # Errors
    /// [`ReplayError::Config`] naming the first problem.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(ReplayError::Config(m));
        if self.connections == 0 || self.connections > 4096 {
            return bad(format!(
                "--connections {}: expected 1..=4096",
                self.connections
            ));
        }
        if let Pacing::Open(r) = self.pacing
            && !(r.is_finite() && r > 0.0)
        {
            return bad(format!("--rate {r}: expected a positive rate"));
        }
        if self.max_value == 0 {
            return bad("--max-value 0: values need at least one byte".into());
        }
        if self.pg.rows == 0 {
            return bad("--pg-rows 0: tenants need rows".into());
        }
        if matches!(self.target, Target::Null | Target::Fake)
            && !matches!(self.tenants, TenantMap::None | TenantMap::Prefix(_))
        {
            return bad(format!(
                "--target {}: the in-process server has one keyspace (use --tenants none or prefix)",
                self.target
            ));
        }
        if matches!(self.target, Target::Memcached { .. })
            && matches!(self.tenants, TenantMap::Db(_) | TenantMap::User(_))
        {
            return bad("memcached targets map tenants by port or prefix only".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        assert_eq!(
            "redis://127.0.0.1:6379".parse::<Target>().unwrap(),
            Target::Redis {
                addr: "127.0.0.1:6379".into()
            }
        );
        assert_eq!(
            "memcached://h:11211/".parse::<Target>().unwrap(),
            Target::Memcached {
                addr: "h:11211".into()
            }
        );
        assert_eq!("null".parse::<Target>().unwrap(), Target::Null);
        for (bad, why) in [
            ("http://h:1", "unknown scheme"),
            ("redis://h", "no port"),
            ("redis://h:0", "host or port"),
            ("redis://:80", "host or port"),
            ("h:80", "no scheme"),
        ] {
            let e = bad.parse::<Target>().unwrap_err().to_string();
            assert!(e.contains(why) && e.contains(bad), "{bad}: {e}");
        }
    }

    #[test]
    fn tenant_maps() {
        assert_eq!("none".parse::<TenantMap>().unwrap(), TenantMap::None);
        assert_eq!("db".parse::<TenantMap>().unwrap(), TenantMap::Db(vec![]));
        assert_eq!(
            "db:3,5".parse::<TenantMap>().unwrap(),
            TenantMap::Db(vec![3, 5])
        );
        assert_eq!(
            "port:7001,7002".parse::<TenantMap>().unwrap(),
            TenantMap::Port(vec![7001, 7002])
        );
        assert_eq!(
            "user:a=x,b=y".parse::<TenantMap>().unwrap(),
            TenantMap::User(vec![("a".into(), "x".into()), ("b".into(), "y".into())])
        );
        let p = "prefix:s:,c:".parse::<TenantMap>().unwrap();
        assert_eq!(p, TenantMap::Prefix(vec!["s:".into(), "c:".into()]));
        assert_eq!((p.prefix(1), p.limit()), ("c:".to_string(), Some(2)));
        assert_eq!(TenantMap::None.prefix(3), "t3:");
        for bad in [
            "port",
            "port:70000",
            "port:x",
            "user:a",
            "prefix",
            "zone:1",
            "none:1",
        ] {
            assert!(bad.parse::<TenantMap>().is_err(), "{bad}");
        }
    }

    #[test]
    fn backends() {
        let ms = Duration::from_millis;
        assert_eq!(
            "delay:2ms".parse::<BackendSpec>().unwrap(),
            BackendSpec::Constant(ms(2))
        );
        assert_eq!(
            "delay:exp:3ms".parse::<BackendSpec>().unwrap(),
            BackendSpec::Exponential(ms(3))
        );
        assert_eq!(
            "delay:uniform:1ms:2ms".parse::<BackendSpec>().unwrap(),
            BackendSpec::Uniform(ms(1), ms(2))
        );
        assert_eq!(
            "delay:trace:5ms".parse::<BackendSpec>().unwrap(),
            BackendSpec::TraceColumn(ms(5))
        );
        assert_eq!(
            "pg:agg:5000".parse::<BackendSpec>().unwrap(),
            BackendSpec::Postgres(PgQuery::Agg(5000))
        );
        assert_eq!(
            "pg:two:0.25:1k".parse::<BackendSpec>().unwrap(),
            BackendSpec::Postgres(PgQuery::Two {
                slow: 0.25,
                n: 1000
            })
        );
        for bad in [
            "delay",
            "delay:fast",
            "delay:uniform:2ms:1ms",
            "pg:agg:0",
            "pg:two:1.5:10",
            "pg",
            "http:x",
        ] {
            let e = bad.parse::<BackendSpec>().unwrap_err().to_string();
            assert!(e.contains("--backend") && e.contains(bad), "{bad}: {e}");
        }
    }

    #[test]
    fn warmups_and_validation() {
        assert_eq!("0".parse::<Warmup>().unwrap(), Warmup::None);
        assert_eq!("100k".parse::<Warmup>().unwrap(), Warmup::Requests(100_000));
        assert_eq!(
            "10s".parse::<Warmup>().unwrap(),
            Warmup::Time(Duration::from_secs(10))
        );
        assert!("soon".parse::<Warmup>().is_err());
        let mut c = ReplayConfig::new(Input::Trace("t".into()), Target::Fake);
        assert!(c.validate().is_ok());
        c.tenants = TenantMap::Db(vec![]);
        assert!(c.validate().is_err(), "the fake server has one keyspace");
        c.tenants = TenantMap::None;
        c.connections = 0;
        assert!(c.validate().is_err());
        c.connections = 1;
        c.pacing = Pacing::Open(0.0);
        assert!(c.validate().is_err());
    }
}
