//! Seeded synthetic workloads: Zipf, uniform, loop, phase changes, YCSB A–F, value-size
//! distributions and multi-tenant mixes.
//!
//! A [`Generator`] is a [`RequestReader`], so everything that reads a trace (stats, `locus mrc`,
//! the simulator, the writers) takes a generated one unchanged. The output is a pure function of
//! the [`GeneratorConfig`] (seed included).
//!
//! ```text
//!  tenants: [T0 rate r0 | T1 rate r1 | ...]       merged Poisson arrivals (rate Σr req/s):
//!  each request: pick tenant i w.p. r_i/Σr  ──>  its key pattern draws an item
//!                                           ──>  key = mix(tenant, item); sizes = f(key, seed)
//! ```
//!
//! * Keys: item `i` of tenant `t` becomes the key `mix64(i + t·2^40)`, a bijection, so tenants
//!   never share keys and keys look random (like hashed strings).
//! * Sizes are a function of the key (drawn from an RNG seeded by the key), so an object keeps its
//!   size across requests, as in a real cache.
//! * YCSB workloads follow the YCSB core package: A 50 % read / 50 % update, B 95/5, C read-only,
//!   D 95 % read / 5 % insert with the *latest* distribution, E 95 % scans (uniform length 1–100)
//!   / 5 % insert, F 50 % read / 50 % read-modify-write; Zipf constant 0.99 with YCSB's scrambling
//!   (`item = fnv64(rank) mod records`). A scan becomes one GET per item; a read-modify-write a GET
//!   then a SET of the same key; an insert a SET of a new item.

use std::str::FromStr;

use locus_common::rng::mix64;
use locus_common::{Rng, parse_count};

pub use locus_common::Zipf;

use crate::{
    error::{Result, TraceError},
    read::{ReadWarning, RequestReader, TraceInfo},
    record::{Op, Request},
};

/// A YCSB core workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum YcsbWorkload {
    /// Update heavy: 50 % read, 50 % update, Zipfian.
    A,
    /// Read mostly: 95 % read, 5 % update, Zipfian.
    B,
    /// Read only, Zipfian.
    C,
    /// Read latest: 95 % read, 5 % insert, latest distribution.
    D,
    /// Short ranges: 95 % scan, 5 % insert, Zipfian start, length uniform in 1..=100.
    E,
    /// Read-modify-write: 50 % read, 50 % read-modify-write, Zipfian.
    F,
}

/// Which items a tenant requests.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyPattern {
    /// Item rank `k` in `1..=n` with probability ∝ `k^-alpha` (hot items spread over the keys).
    Zipf {
        /// Skew (0 = uniform; 0.99 is YCSB's constant).
        alpha: f64,
        /// Number of items.
        n: u64,
    },
    /// Uniform over `n` items.
    Uniform {
        /// Number of items.
        n: u64,
    },
    /// Cyclic scan `0, 1, …, n−1, 0, 1, …` (LRU's worst case when the cache is below `n`).
    Loop {
        /// Loop length.
        n: u64,
    },
    /// `base`, with the hot set moving every `phase_len` requests of this tenant: in phase `p`
    /// rank `r` maps to item `(r + p·⌊0.618·n⌋) mod n`.
    Phased {
        /// The pattern whose hot set moves (Zipf, Uniform or Loop).
        base: Box<KeyPattern>,
        /// Requests per phase.
        phase_len: u64,
    },
    /// A YCSB core workload over `records` initial items.
    Ycsb {
        /// Which workload.
        workload: YcsbWorkload,
        /// Initial record count.
        records: u64,
    },
}

impl KeyPattern {
    fn items(&self) -> u64 {
        match self {
            KeyPattern::Zipf { n, .. } | KeyPattern::Uniform { n } | KeyPattern::Loop { n } => *n,
            KeyPattern::Phased { base, .. } => base.items(),
            KeyPattern::Ycsb { records, .. } => *records,
        }
    }

    fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(TraceError::Options(m));
        match self {
            KeyPattern::Zipf { alpha, n } => {
                if !(alpha.is_finite() && *alpha >= 0.0) {
                    return bad(format!("zipf alpha must be finite and >= 0, got {alpha}"));
                }
                if *n == 0 {
                    return bad("zipf needs keys >= 1".into());
                }
            }
            KeyPattern::Uniform { n } | KeyPattern::Loop { n } if *n == 0 => {
                return bad("the key space needs keys >= 1".into());
            }
            KeyPattern::Phased { base, phase_len } => {
                if *phase_len == 0 {
                    return bad("phase length must be >= 1".into());
                }
                if matches!(**base, KeyPattern::Phased { .. } | KeyPattern::Ycsb { .. }) {
                    return bad("phases apply to zipf, uniform or loop patterns".into());
                }
                base.validate()?;
            }
            KeyPattern::Ycsb { records, .. } if *records == 0 => {
                return bad("YCSB needs records >= 1".into());
            }
            _ => {}
        }
        if self.items() >= 1 << 40 {
            return bad("at most 2^40 items per tenant".into());
        }
        Ok(())
    }
}

/// A distribution of sizes in bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SizeDist {
    /// Always this size.
    Fixed(u64),
    /// Uniform in `min..=max`.
    Uniform {
        /// Smallest.
        min: u64,
        /// Largest.
        max: u64,
    },
    /// Log-normal with the given median and log-space standard deviation (rounded, at least 1).
    LogNormal {
        /// Median size.
        median: f64,
        /// σ of `ln(size)`.
        sigma: f64,
    },
    /// Pareto with scale `min` and tail index `alpha` (heavy tail for small `alpha`).
    Pareto {
        /// Smallest size.
        min: u64,
        /// Tail index.
        alpha: f64,
    },
}

impl SizeDist {
    fn validate(&self) -> Result<()> {
        let ok = match *self {
            SizeDist::Fixed(_) => true,
            SizeDist::Uniform { min, max } => min <= max,
            SizeDist::LogNormal { median, sigma } => {
                median.is_finite() && median > 0.0 && sigma.is_finite() && sigma >= 0.0
            }
            SizeDist::Pareto { min, alpha } => min > 0 && alpha.is_finite() && alpha > 0.0,
        };
        if ok {
            Ok(())
        } else {
            Err(TraceError::Options(format!(
                "invalid size distribution {self:?}"
            )))
        }
    }

    /// Draws a size.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        const CAP: f64 = (1u64 << 40) as f64;
        match *self {
            SizeDist::Fixed(s) => s,
            SizeDist::Uniform { min, max } => min + rng.below(max - min + 1),
            SizeDist::LogNormal { median, sigma } => {
                // Box–Muller.
                let (u1, u2) = (rng.next_f64_nonzero(), rng.next_f64());
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                (median * (sigma * z).exp()).round().clamp(1.0, CAP) as u64
            }
            SizeDist::Pareto { min, alpha } => {
                let u = rng.next_f64_nonzero();
                (min as f64 / u.powf(1.0 / alpha)).round().clamp(1.0, CAP) as u64
            }
        }
    }
}

impl FromStr for SizeDist {
    type Err = TraceError;

    /// `100`, `fixed:100`, `uniform:MIN:MAX`, `lognormal:MEDIAN:SIGMA`, `pareto:MIN:ALPHA`.
    fn from_str(s: &str) -> Result<Self> {
        let parts: Vec<&str> = s.split(':').map(str::trim).collect();
        let bad = || {
            TraceError::Options(format!(
                "size distribution {s:?}: expected N, fixed:N, uniform:MIN:MAX, lognormal:MEDIAN:SIGMA or pareto:MIN:ALPHA"
            ))
        };
        let num = |i: usize| parse_count(parts.get(i).copied().unwrap_or("")).ok_or_else(bad);
        let real = |i: usize| {
            parts
                .get(i)
                .and_then(|p| p.parse::<f64>().ok())
                .ok_or_else(bad)
        };
        let d = match (parts[0], parts.len()) {
            (_, 1) => SizeDist::Fixed(num(0)?),
            ("fixed", 2) => SizeDist::Fixed(num(1)?),
            ("uniform", 3) => SizeDist::Uniform {
                min: num(1)?,
                max: num(2)?,
            },
            ("lognormal", 3) => SizeDist::LogNormal {
                median: real(1)?,
                sigma: real(2)?,
            },
            ("pareto", 3) => SizeDist::Pareto {
                min: num(1)?,
                alpha: real(2)?,
            },
            _ => return Err(bad()),
        };
        d.validate()?;
        Ok(d)
    }
}

/// Shares of GET, SET and DELETE for non-YCSB patterns (normalised when used).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpMix {
    /// Weight of GETs.
    pub get: f64,
    /// Weight of SETs.
    pub set: f64,
    /// Weight of DELETEs.
    pub delete: f64,
}

impl Default for OpMix {
    fn default() -> Self {
        Self {
            get: 1.0,
            set: 0.0,
            delete: 0.0,
        }
    }
}

/// One tenant of a generated workload.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantConfig {
    /// The tenant id written into [`Request::tenant`].
    pub tenant: u32,
    /// Requests per second (also the tenant's share of the mix).
    pub rate: f64,
    /// Which items it requests.
    pub keys: KeyPattern,
    /// Key sizes.
    pub key_size: SizeDist,
    /// Value sizes.
    pub value_size: SizeDist,
    /// Op shares (YCSB patterns define their own).
    pub ops: OpMix,
    /// Miss penalty written into every request of this tenant.
    pub penalty_us: Option<u32>,
    /// Added to every item number before it becomes a key: two configurations with disjoint
    /// `[key_offset, key_offset + items)` ranges request disjoint key sets.
    pub key_offset: u64,
}

impl Default for TenantConfig {
    fn default() -> Self {
        Self {
            tenant: 0,
            rate: 1000.0,
            keys: KeyPattern::Zipf {
                alpha: 0.99,
                n: 100_000,
            },
            key_size: SizeDist::Fixed(16),
            value_size: SizeDist::Fixed(100),
            ops: OpMix::default(),
            penalty_us: None,
            key_offset: 0,
        }
    }
}

impl FromStr for TenantConfig {
    type Err = TraceError;

    /// Comma-separated `key=value`: `pattern=zipf|uniform|loop|ycsb-a…ycsb-f`, `alpha=0.99`,
    /// `keys=1e6` (items, or YCSB records), `phase=N` (hot set moves every N requests),
    /// `rate=1000` (req/s), `key-size=DIST`, `value-size=DIST` (see [`SizeDist`]),
    /// `key-offset=N` (item numbers start at N: disjoint offsets give disjoint key sets),
    /// `get=0.9,set=0.1,delete=0`, `penalty-us=500`, `tenant=ID`. Counts (`keys`, `phase`,
    /// `key-offset`) are read by [`locus_common::parse_count`]: `100000`, `100_000`, `1e5`, `100k`.
    fn from_str(s: &str) -> Result<Self> {
        let mut t = TenantConfig::default();
        let (mut pattern, mut alpha, mut keys, mut phase) = ("zipf".to_string(), 0.99, 100_000, 0);
        let mut ops: Option<OpMix> = None;
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').ok_or_else(|| {
                TraceError::Options(format!("tenant option {part:?} is not key=value"))
            })?;
            let (k, v) = (k.trim(), v.trim());
            let real = || {
                v.parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x >= 0.0)
                    .ok_or_else(|| {
                        TraceError::Options(format!("{k}: expected a number >= 0, got {v:?}"))
                    })
            };
            let count = || {
                parse_count(v)
                    .ok_or_else(|| TraceError::Options(format!("{k}: expected a count, got {v:?}")))
            };
            match k {
                "pattern" | "workload" => pattern = v.to_ascii_lowercase(),
                "alpha" | "skew" => alpha = real()?,
                "keys" | "n" | "records" => keys = count()?,
                "phase" | "phase-len" => phase = count()?,
                "rate" => t.rate = real()?,
                "key-size" => t.key_size = v.parse()?,
                "value-size" | "size" => t.value_size = v.parse()?,
                "get" => {
                    ops.get_or_insert(OpMix {
                        get: 0.0,
                        ..OpMix::default()
                    })
                    .get = real()?
                }
                "set" => {
                    ops.get_or_insert(OpMix {
                        get: 0.0,
                        ..OpMix::default()
                    })
                    .set = real()?
                }
                "delete" => {
                    ops.get_or_insert(OpMix {
                        get: 0.0,
                        ..OpMix::default()
                    })
                    .delete = real()?
                }
                "penalty-us" | "penalty" => {
                    t.penalty_us = Some(u32::try_from(count()?).map_err(|_| {
                        TraceError::Options(format!("{k}: at most {} µs", u32::MAX))
                    })?)
                }
                "key-offset" => t.key_offset = count()?,
                "tenant" | "id" => {
                    t.tenant = u32::try_from(count()?)
                        .map_err(|_| TraceError::Options(format!("{k}: tenant id below 2^32")))?
                }
                _ => return Err(TraceError::Options(format!("unknown tenant option {k:?}"))),
            }
        }
        if let Some(o) = ops {
            t.ops = o;
        }
        let ycsb = |w| KeyPattern::Ycsb {
            workload: w,
            records: keys,
        };
        t.keys = match pattern.as_str() {
            "zipf" => KeyPattern::Zipf { alpha, n: keys },
            "uniform" => KeyPattern::Uniform { n: keys },
            "loop" | "scan" => KeyPattern::Loop { n: keys },
            "ycsb-a" => ycsb(YcsbWorkload::A),
            "ycsb-b" => ycsb(YcsbWorkload::B),
            "ycsb-c" => ycsb(YcsbWorkload::C),
            "ycsb-d" => ycsb(YcsbWorkload::D),
            "ycsb-e" => ycsb(YcsbWorkload::E),
            "ycsb-f" => ycsb(YcsbWorkload::F),
            other => {
                return Err(TraceError::Options(format!(
                    "unknown pattern {other:?} (zipf, uniform, loop, ycsb-a … ycsb-f)"
                )));
            }
        };
        if pattern.starts_with("ycsb") && !s.contains("value-size") && !s.contains("size=") {
            // YCSB's default record: 10 fields of 100 bytes, keys "user" + 19 digits.
            t.value_size = SizeDist::Fixed(1000);
            t.key_size = SizeDist::Fixed(23);
        }
        if phase > 0 {
            t.keys = KeyPattern::Phased {
                base: Box::new(t.keys),
                phase_len: phase,
            };
        }
        t.keys.validate()?;
        if t.key_offset.saturating_add(t.keys.items()) >= 1 << 40 {
            return Err(TraceError::Options(
                "key-offset + keys must stay below 2^40".into(),
            ));
        }
        Ok(t)
    }
}

/// A whole generated workload.
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratorConfig {
    /// Requests to generate.
    pub requests: u64,
    /// Seed of every random choice.
    pub seed: u64,
    /// The tenants (at least one).
    pub tenants: Vec<TenantConfig>,
}

/// FNV-1a over the 8 bytes of `v` (YCSB's scrambling hash).
fn fnv64(v: u64) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for b in v.to_le_bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

/// Per-tenant generator state.
#[derive(Debug)]
struct TenantState {
    cfg: TenantConfig,
    zipf: Option<Zipf>,
    /// Requests of this tenant so far.
    seq: u64,
    /// YCSB: current record count.
    records: u64,
    /// YCSB E: pending scan (next item, remaining).
    scan: (u64, u64),
    /// YCSB F: pending SET after the read of a read-modify-write.
    pending_set: Option<u64>,
    op_cdf: [f64; 2],
}

/// A seeded generator; a [`RequestReader`].
#[derive(Debug)]
pub struct Generator {
    tenants: Vec<TenantState>,
    rate_cdf: Vec<f64>,
    total_rate: f64,
    rng: Rng,
    seed: u64,
    left: u64,
    emitted: u64,
    clock_s: f64,
    info: TraceInfo,
}

impl Generator {
    /// Validates `cfg` and builds the generator.
    ///
    /// # Errors
    /// No tenants, a zero total rate, or an invalid pattern or size distribution.
    pub fn new(cfg: GeneratorConfig) -> Result<Self> {
        if cfg.tenants.is_empty() {
            return Err(TraceError::Options(
                "a workload needs at least one tenant".into(),
            ));
        }
        let mut tenants = Vec::new();
        let mut rate_cdf = Vec::new();
        let mut total = 0.0;
        for t in &cfg.tenants {
            t.keys.validate()?;
            t.key_size.validate()?;
            t.value_size.validate()?;
            if !(t.rate.is_finite() && t.rate >= 0.0) {
                return Err(TraceError::Options(format!(
                    "rate must be >= 0, got {}",
                    t.rate
                )));
            }
            if let SizeDist::Fixed(k) | SizeDist::Uniform { max: k, .. } = t.key_size
                && k > u32::MAX as u64
            {
                return Err(TraceError::Options("key sizes must be below 2^32".into()));
            }
            let o = t.ops;
            let sum = o.get + o.set + o.delete;
            if !(sum.is_finite() && sum > 0.0) || o.get < 0.0 || o.set < 0.0 || o.delete < 0.0 {
                return Err(TraceError::Options(format!("invalid op shares {o:?}")));
            }
            total += t.rate;
            rate_cdf.push(total);
            let base = match &t.keys {
                KeyPattern::Phased { base, .. } => base.as_ref(),
                k => k,
            };
            let zipf = match base {
                KeyPattern::Zipf { alpha, n } => Some(Zipf::new(*n, *alpha)),
                KeyPattern::Ycsb { records, .. } => Some(Zipf::new(*records, 0.99)),
                _ => None,
            };
            let records = match base {
                KeyPattern::Ycsb { records, .. } => *records,
                _ => 0,
            };
            tenants.push(TenantState {
                cfg: t.clone(),
                zipf,
                seq: 0,
                records,
                scan: (0, 0),
                pending_set: None,
                op_cdf: [o.get / sum, (o.get + o.set) / sum],
            });
        }
        if total <= 0.0 {
            return Err(TraceError::Options(
                "the total request rate must be > 0".into(),
            ));
        }
        let mut desc = format!(
            "generated: {} requests, seed {}, {} tenant(s)",
            cfg.requests,
            cfg.seed,
            cfg.tenants.len()
        );
        if cfg.tenants.len() == 1 {
            desc.push_str(&format!(", {:?}", cfg.tenants[0].keys));
        }
        let info = TraceInfo {
            source: desc,
            format: None,
            has_time: true,
            has_sizes: true,
            has_key_sizes: true,
            has_ops: true,
            has_tenants: cfg.tenants.len() > 1,
            has_penalty: cfg.tenants.iter().any(|t| t.penalty_us.is_some()),
        };
        Ok(Self {
            tenants,
            rate_cdf,
            total_rate: total,
            rng: Rng::new(cfg.seed),
            seed: cfg.seed,
            left: cfg.requests,
            emitted: 0,
            clock_s: 0.0,
            info,
        })
    }

    /// The next (item, op) of tenant `i`.
    fn draw(&mut self, i: usize) -> (u64, Op) {
        let rng = &mut self.rng;
        let t = &mut self.tenants[i];
        let seq = t.seq;
        t.seq += 1;
        let plain_op = |rng: &mut Rng, cdf: [f64; 2]| {
            let u = rng.next_f64();
            if u < cdf[0] {
                Op::Get
            } else if u < cdf[1] {
                Op::Set
            } else {
                Op::Delete
            }
        };
        match &t.cfg.keys {
            KeyPattern::Zipf { .. } => {
                let r = t.zipf.as_ref().expect("zipf sampler").sample(rng) - 1;
                (fnv64(r) % t.cfg.keys.items(), plain_op(rng, t.op_cdf))
            }
            KeyPattern::Uniform { n } => (rng.below(*n), plain_op(rng, t.op_cdf)),
            KeyPattern::Loop { n } => (seq % n, plain_op(rng, t.op_cdf)),
            KeyPattern::Phased { base, phase_len } => {
                let n = base.items();
                let rank = match **base {
                    KeyPattern::Zipf { .. } => {
                        t.zipf.as_ref().expect("zipf sampler").sample(rng) - 1
                    }
                    KeyPattern::Uniform { n } => rng.below(n),
                    _ => seq % n,
                };
                let phase = seq / phase_len;
                let shift = ((n as f64 * 0.618) as u64).max(1);
                let offset = ((phase as u128 * shift as u128) % n as u128) as u64;
                let item = ((rank % n) as u128 + offset as u128) as u64 % n;
                // Spread ranks over the key space like the plain Zipf pattern does.
                let item = if matches!(**base, KeyPattern::Zipf { .. }) {
                    (fnv64(item)) % n
                } else {
                    item
                };
                (item, plain_op(rng, t.op_cdf))
            }
            KeyPattern::Ycsb { workload, .. } => {
                let w = *workload;
                if let Some(item) = t.pending_set.take() {
                    return (item, Op::Set);
                }
                if t.scan.1 > 0 {
                    let item = t.scan.0;
                    t.scan = ((t.scan.0 + 1) % t.records, t.scan.1 - 1);
                    return (item, Op::Get);
                }
                let u = rng.next_f64();
                let zipf_item = |t: &mut TenantState, rng: &mut Rng| {
                    if t.zipf.as_ref().is_none_or(|z| z.n() != t.records) {
                        t.zipf = Some(Zipf::new(t.records, 0.99));
                    }
                    let r = t.zipf.as_ref().expect("zipf sampler").sample(rng) - 1;
                    (r, fnv64(r) % t.records)
                };
                let insert = |t: &mut TenantState| {
                    let item = t.records;
                    t.records += 1;
                    (item, Op::Set)
                };
                match w {
                    YcsbWorkload::A | YcsbWorkload::B | YcsbWorkload::C => {
                        let read = match w {
                            YcsbWorkload::A => 0.5,
                            YcsbWorkload::B => 0.95,
                            _ => 1.0,
                        };
                        let item = zipf_item(t, rng).1;
                        (item, if u < read { Op::Get } else { Op::Set })
                    }
                    YcsbWorkload::D => {
                        if u < 0.95 {
                            // Latest: rank 0 is the newest record.
                            let r = zipf_item(t, rng).0;
                            (t.records - 1 - r, Op::Get)
                        } else {
                            insert(t)
                        }
                    }
                    YcsbWorkload::E => {
                        if u < 0.95 {
                            let start = zipf_item(t, rng).1;
                            let len = 1 + rng.below(100);
                            t.scan = ((start + 1) % t.records, len - 1);
                            (start, Op::Get)
                        } else {
                            insert(t)
                        }
                    }
                    YcsbWorkload::F => {
                        let item = zipf_item(t, rng).1;
                        if u >= 0.5 {
                            t.pending_set = Some(item);
                        }
                        (item, Op::Get)
                    }
                }
            }
        }
    }
}

impl RequestReader for Generator {
    fn read_into(&mut self, req: &mut Request) -> Result<bool> {
        if self.left == 0 {
            return Ok(false);
        }
        self.left -= 1;
        self.emitted += 1;
        // Merged Poisson arrivals: exponential gaps at the total rate, tenant by its share.
        self.clock_s += -self.rng.next_f64_nonzero().ln() / self.total_rate;
        let pick = self.rng.next_f64() * self.total_rate;
        let i = self
            .rate_cdf
            .iter()
            .position(|&c| pick < c)
            .unwrap_or(self.tenants.len() - 1);
        let (item, op) = self.draw(i);
        let t = &self.tenants[i].cfg;
        let key = mix64(item + t.key_offset + ((t.tenant as u64) << 40));
        let mut size_rng = Rng::new(key ^ self.seed.rotate_left(17));
        *req = Request {
            time_us: (self.clock_s * 1e6) as u64,
            tenant: t.tenant,
            key,
            key_size: t.key_size.sample(&mut size_rng).min(u32::MAX as u64) as u32,
            value_size: t.value_size.sample(&mut size_rng),
            op,
            penalty_us: t.penalty_us,
        };
        Ok(true)
    }

    fn info(&self) -> &TraceInfo {
        &self.info
    }

    fn warnings(&self) -> &[ReadWarning] {
        &[]
    }

    fn records_read(&self) -> u64 {
        self.emitted
    }
}

#[cfg(test)]
mod tests;
