//! The experiment file as written (serde: unknown keys rejected) and its validation into an
//! [`Experiment`](super::Experiment): every problem is reported with its key path.

use super::*;

// ------------------------------------------------------------------------------------------------
// The file as written (serde).

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExperiment {
    name: String,
    #[serde(default)]
    description: String,
    memory: toml::Value,
    page_size: Option<toml::Value>,
    #[serde(default)]
    seed: u64,
    seeds: Option<u32>,
    requests: Option<toml::Value>,
    interval: Option<toml::Value>,
    max_moves: Option<u32>,
    lru_clock: Option<String>,
    class_mode: Option<String>,
    interleave: Option<String>,
    baseline: Option<String>,
    steady: Option<f64>,
    #[serde(default, rename = "controller")]
    controllers: Vec<RawController>,
    #[serde(default, rename = "tenant")]
    tenants: Vec<RawTenant>,
    #[serde(default, rename = "phase")]
    phases: Vec<RawPhase>,
    golden: Option<RawGolden>,
    dump_load: Option<RawDumpLoad>,
    sweep: Option<RawSweep>,
    tier: Option<toml::Table>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSweep {
    memory: Vec<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDumpLoad {
    bucket: Option<toml::Value>,
    window: Option<usize>,
    valley_tolerance: Option<f64>,
    valley_buckets: Option<usize>,
    swing: Option<f64>,
    load_misses: Option<u64>,
    lead: Option<toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawController {
    name: String,
    label: Option<String>,
    policy: Option<String>,
    samples: Option<u32>,
    evpool_size: Option<u32>,
    dump_load: Option<String>,
    tier: Option<String>,
    fast_partition: Option<String>,
    #[serde(default)]
    settings: toml::Table,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTenant {
    name: String,
    rate: Option<f64>,
    generator: Option<toml::Value>,
    trace: Option<RawTrace>,
    penalty: Option<toml::Value>,
    hit_time: Option<toml::Value>,
    #[serde(default)]
    penalty_hint: bool,
    policy: Option<String>,
    samples: Option<u32>,
    evpool_size: Option<u32>,
    dump_load: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTrace {
    path: String,
    format: Option<String>,
    csv: Option<String>,
    #[serde(default)]
    volume_as_tenant: bool,
    default_size: Option<toml::Value>,
    limit: Option<toml::Value>,
    tenant: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPhase {
    requests: toml::Value,
    #[serde(default)]
    name: Option<String>,
    #[serde(default, rename = "tenant")]
    tenants: BTreeMap<String, toml::Table>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGolden {
    scale: Option<f64>,
    requests: Option<toml::Value>,
    memory: Option<toml::Value>,
    interval: Option<toml::Value>,
}

// ------------------------------------------------------------------------------------------------
// Parsing helpers.

/// Problems collected while validating, each with its key path.
#[derive(Default)]
struct Problems(Vec<String>);

impl Problems {
    fn add(&mut self, path: &str, msg: impl std::fmt::Display) {
        self.0.push(format!("{path}: {msg}"));
    }
}

fn count_value(v: &toml::Value) -> Result<u64, String> {
    match v {
        toml::Value::Integer(i) if *i >= 0 => Ok(*i as u64),
        toml::Value::Float(f) if f.is_finite() && *f >= 0.0 && f.fract() == 0.0 => Ok(*f as u64),
        toml::Value::String(s) => {
            parse_count(s).ok_or_else(|| format!("'{s}' is not a count (100000, 1e6, 200k, 2M)"))
        }
        other => Err(format!(
            "expected a count (100000, \"1e6\", \"2M\"), got {other}"
        )),
    }
}

fn bytes_value(v: &toml::Value) -> Result<u64, String> {
    match v {
        toml::Value::Integer(i) if *i >= 0 => Ok(*i as u64),
        toml::Value::String(s) => s
            .parse::<ByteSize>()
            .map(|b| b.0)
            .map_err(|e| e.to_string()),
        other => Err(format!("expected a size (65536, \"64MiB\"), got {other}")),
    }
}

fn micros_value(v: &toml::Value) -> Result<f64, String> {
    let us = match v {
        toml::Value::Integer(i) => *i as f64,
        toml::Value::Float(f) => *f,
        toml::Value::String(s) => {
            let t = s.trim();
            // A bare number is µs here (penalties are small); a unit makes it explicit.
            match t.parse::<f64>() {
                Ok(x) => x,
                Err(_) => locus_common::parse_duration(t)
                    .map(|d| d.as_secs_f64() * 1e6)
                    .map_err(|e| e.to_string())?,
            }
        }
        other => return Err(format!("expected µs (200, \"1.5ms\"), got {other}")),
    };
    if us.is_finite() && us >= 0.0 {
        Ok(us)
    } else {
        Err(format!("{us} µs: must be finite and >= 0"))
    }
}

fn interval_value(v: &toml::Value) -> Result<Interval, String> {
    match v {
        toml::Value::Integer(i) if *i > 0 => Ok(Interval::Requests(*i as u64)),
        toml::Value::String(s) => match parse_count(s) {
            Some(n) if n > 0 => Ok(Interval::Requests(n)),
            _ => s.parse::<Interval>(),
        },
        other => Err(format!(
            "expected a request count (100000, \"100k\") or a duration (\"1s\"), got {other}"
        )),
    }
}

fn memory_value(v: &toml::Value) -> Result<Memory, String> {
    match v {
        toml::Value::Table(t) => {
            let mut objects = None;
            let mut item_size = None;
            for (k, x) in t {
                match k.as_str() {
                    "objects" => {
                        objects = Some(count_value(x).map_err(|e| format!("objects: {e}"))?)
                    }
                    "item_size" => {
                        item_size = Some(bytes_value(x).map_err(|e| format!("item_size: {e}"))?)
                    }
                    other => {
                        return Err(format!(
                            "unknown key '{other}' (a memory table has objects, item_size)"
                        ));
                    }
                }
            }
            match objects {
                Some(0) => Err("objects: must be at least 1".into()),
                Some(objects) => Ok(Memory::Objects { objects, item_size }),
                None => Err("a memory table needs objects = N".into()),
            }
        }
        other => bytes_value(other).map(Memory::Bytes),
    }
}

/// Generator options from a string (`"pattern=zipf,alpha=0.9"`) or a table; keys normalised to
/// the dashed form the generator parses.
fn generator_options(v: &toml::Value) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    match v {
        toml::Value::String(s) => {
            for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let (k, val) = part
                    .split_once('=')
                    .ok_or_else(|| format!("option '{part}' is not key=value"))?;
                out.insert(k.trim().replace('_', "-"), val.trim().to_string());
            }
        }
        toml::Value::Table(t) => {
            for (k, val) in t {
                let text = setting_text(val).map_err(|e| format!("{k}: {e}"))?;
                out.insert(k.replace('_', "-"), text);
            }
        }
        other => return Err(format!("expected a table or an option string, got {other}")),
    }
    for reserved in ["tenant", "id", "rate"] {
        if out.contains_key(reserved) {
            return Err(format!(
                "'{reserved}' is set by the tenant entry, not in its generator options"
            ));
        }
    }
    Ok(out)
}

/// Builds the generator's tenant config from options (checks them too).
pub fn generator_config(
    opts: &BTreeMap<String, String>,
    tenant: u32,
    rate: f64,
) -> Result<locus_trace::generate::TenantConfig, String> {
    let s: Vec<String> = opts.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut cfg: locus_trace::generate::TenantConfig = s
        .join(",")
        .parse()
        .map_err(|e: locus_trace::TraceError| format!("{e:#}"))?;
    cfg.tenant = tenant;
    cfg.rate = rate;
    Ok(cfg)
}

fn penalty_value(v: &toml::Value) -> Result<Penalty, String> {
    match v {
        toml::Value::String(s) if s.trim() == "trace" => Ok(Penalty::Trace { default: None }),
        toml::Value::Table(t) => {
            let dist = t
                .get("dist")
                .and_then(toml::Value::as_str)
                .unwrap_or("constant");
            let get = |k: &str| -> Result<Option<f64>, String> {
                t.get(k)
                    .map(|x| micros_value(x).map_err(|e| format!("{k}: {e}")))
                    .transpose()
            };
            let allowed: &[&str] = match dist {
                "constant" => &["dist", "mean"],
                "exponential" => &["dist", "mean"],
                "uniform" => &["dist", "mean", "min", "max"],
                "trace" => &["dist", "default"],
                other => {
                    return Err(format!(
                        "dist: unknown distribution '{other}' (constant, exponential, uniform, trace)"
                    ));
                }
            };
            if let Some(k) = t.keys().find(|k| !allowed.contains(&k.as_str())) {
                return Err(format!(
                    "unknown key '{k}' for dist = \"{dist}\" (keys: {})",
                    allowed.join(", ")
                ));
            }
            match dist {
                "constant" => Ok(Penalty::Constant(get("mean")?.ok_or("needs mean")?)),
                "exponential" => Ok(Penalty::Exponential {
                    mean: get("mean")?.ok_or("needs mean")?,
                }),
                "uniform" => match (get("min")?, get("max")?, get("mean")?) {
                    (Some(min), Some(max), None) if min <= max => Ok(Penalty::Uniform { min, max }),
                    (Some(min), Some(max), None) => Err(format!("min {min} > max {max}")),
                    (None, None, Some(mean)) => Ok(Penalty::Uniform {
                        min: 0.0,
                        max: 2.0 * mean,
                    }),
                    _ => Err(
                        "uniform needs either min and max, or mean (uniform on [0, 2·mean])".into(),
                    ),
                },
                _ => Ok(Penalty::Trace {
                    default: get("default")?,
                }),
            }
        }
        other => micros_value(other).map(Penalty::Constant),
    }
}

pub(super) fn validate(raw: RawExperiment, dir: &Path) -> Result<Experiment, Vec<String>> {
    let mut p = Problems::default();
    if raw.name.trim().is_empty()
        || !raw
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
    {
        p.add(
            "name",
            "must be non-empty and use only letters, digits, '-', '_', '.'",
        );
    }
    let memory_ok = memory_value(&raw.memory).map_err(|e| p.add("memory", e));
    let memory = memory_ok.clone().unwrap_or(Memory::Bytes(0));
    let page_size = match &raw.page_size {
        None => DEFAULT_PAGE_SIZE,
        Some(v) => bytes_value(v).unwrap_or_else(|e| {
            p.add("page_size", e);
            DEFAULT_PAGE_SIZE
        }),
    };
    if !(locus_engine::config::MIN_PAGE_SIZE..=locus_engine::config::MAX_PAGE_SIZE)
        .contains(&page_size)
    {
        p.add("page_size", format!("{page_size} is outside 4KiB..=1GiB"));
    }
    if let Ok(Memory::Bytes(b)) = memory_ok
        && b < page_size
    {
        p.add(
            "memory",
            format!("{b} bytes is less than one page ({page_size})"),
        );
    }
    let requests = raw
        .requests
        .as_ref()
        .and_then(|v| count_value(v).map_err(|e| p.add("requests", e)).ok());
    let interval = match &raw.interval {
        None => Interval::default(),
        Some(v) => interval_value(v).unwrap_or_else(|e| {
            p.add("interval", e);
            Interval::default()
        }),
    };
    let lru_clock = match raw.lru_clock.as_deref() {
        None | Some("logical") => LruClockMode::Logical,
        Some("redis") => LruClockMode::Redis,
        Some(o) => {
            p.add("lru_clock", format!("'{o}': expected logical or redis"));
            LruClockMode::Logical
        }
    };
    let class_mode = match raw.class_mode.as_deref() {
        None | Some("auto") => ClassMode::Auto,
        Some("manual") => ClassMode::Manual,
        Some("random-slab") => ClassMode::RandomSlab,
        Some(o) => {
            p.add(
                "class_mode",
                format!("'{o}': expected auto, manual or random-slab"),
            );
            ClassMode::Auto
        }
    };
    let interleave = match raw.interleave.as_deref() {
        None | Some("rate") => Interleave::Rate,
        Some("time") => Interleave::Time,
        Some(o) => {
            p.add("interleave", format!("'{o}': expected rate or time"));
            Interleave::Rate
        }
    };

    // Controllers.
    let mut controllers = Vec::new();
    if raw.controllers.is_empty() {
        p.add("controller", "at least one [[controller]] is needed");
    }
    for (i, c) in raw.controllers.iter().enumerate() {
        let path = format!("controller[{i}]");
        let label = c.label.clone().unwrap_or_else(|| c.name.clone());
        if controllers.iter().any(|x: &ControllerRun| x.label == label) {
            p.add(
                &format!("{path}.label"),
                format!("'{label}' is used twice (give each run a distinct label)"),
            );
        }
        let (settings, settings_ok) = match settings_from_toml(&c.settings) {
            Ok(settings) => (settings, true),
            Err(bad) => {
                for e in bad {
                    p.add(&format!("{path}.settings.{}", e.key), e.reason);
                }
                (Vec::new(), false)
            }
        };
        // Build once to report unknown names and bad settings now, not in a worker thread
        // (the oracles' plans are not made here: `SettingsOnly` plans nothing).
        let s = locus_control::Settings::new(&c.name, settings.clone());
        match locus_control::build_with(&c.name, s, &SettingsOnly) {
            Ok(_) => {}
            Err(locus_control::ControlError::NotAvailable { .. }) => {
                // Registered but not in this build: reported when the run starts.
            }
            Err(e @ locus_control::ControlError::UnknownController { .. }) => {
                p.add(&format!("{path}.name"), e)
            }
            Err(e) if settings_ok => p.add(&format!("{path}.settings"), e),
            Err(_) => {
                // The settings that have no text form are reported above; the controller saw none.
            }
        }
        let policy = c.policy.as_ref().and_then(|s| {
            s.parse::<Policy>()
                .map_err(|e| p.add(&format!("{path}.policy"), e))
                .ok()
        });
        if let Some(k) = c.samples
            && !(1..=locus_engine::config::MAX_SAMPLES).contains(&k)
        {
            p.add(
                &format!("{path}.samples"),
                format!("{k} is outside 1..={}", locus_engine::config::MAX_SAMPLES),
            );
        }
        if let Some(e) = c.evpool_size
            && e > locus_engine::config::MAX_EVPOOL_SIZE
        {
            p.add(
                &format!("{path}.evpool_size"),
                format!(
                    "{e} is outside 0..={}",
                    locus_engine::config::MAX_EVPOOL_SIZE
                ),
            );
        }
        let dump_load = c.dump_load.as_ref().and_then(|s| {
            s.parse()
                .map_err(|e| p.add(&format!("{path}.dump_load"), e))
                .ok()
        });
        let tier = c.tier.as_ref().and_then(|s| {
            if raw.tier.is_none() {
                p.add(
                    &format!("{path}.tier"),
                    "needs the experiment's [tier] table",
                );
            }
            s.parse()
                .map_err(|e| p.add(&format!("{path}.tier"), e))
                .ok()
        });
        let fast_partition = c.fast_partition.as_ref().and_then(|s| {
            if raw.tier.is_none() {
                p.add(
                    &format!("{path}.fast_partition"),
                    "needs the experiment's [tier] table",
                );
            }
            s.parse()
                .map_err(|e| p.add(&format!("{path}.fast_partition"), e))
                .ok()
        });
        controllers.push(ControllerRun {
            label,
            name: c.name.clone(),
            settings,
            policy,
            samples: c.samples,
            evpool_size: c.evpool_size,
            dump_load,
            tier,
            fast_partition,
        });
    }
    if let Some(n) = raw.seeds
        && !(1..=MAX_SEEDS).contains(&n)
    {
        p.add(
            "seeds",
            format!("{n} is not a seed count in 1..={MAX_SEEDS}"),
        );
    }
    if let Some(sw) = &raw.sweep {
        if sw.memory.is_empty() || sw.memory.len() > crate::sweep::MAX_POINTS {
            p.add(
                "sweep.memory",
                format!(
                    "{} fractions: expected 1..={}",
                    sw.memory.len(),
                    crate::sweep::MAX_POINTS
                ),
            );
        }
        for (i, f) in sw.memory.iter().enumerate() {
            if !(*f > 0.0 && *f <= 4.0) {
                p.add(
                    &format!("sweep.memory[{i}]"),
                    format!("{f} is not a fraction of the working set in (0, 4]"),
                );
            }
        }
    }
    if let Some(f) = raw.steady
        && !(f > 0.0 && f <= 1.0)
    {
        p.add("steady", format!("{f} is not a fraction in (0, 1]"));
    }
    if let Some(b) = &raw.baseline
        && !controllers.iter().any(|c| &c.label == b)
    {
        p.add(
            "baseline",
            format!("'{b}' is not the label of a controller"),
        );
    }

    // Tenants.
    let mut tenants: Vec<Tenant> = Vec::new();
    if raw.tenants.is_empty() {
        p.add("tenant", "at least one [[tenant]] is needed");
    }
    for (i, t) in raw.tenants.iter().enumerate() {
        let path = format!("tenant[{i}]");
        if t.name.is_empty() {
            p.add(&format!("{path}.name"), "must not be empty");
        }
        if tenants.iter().any(|x| x.name == t.name) {
            p.add(
                &format!("{path}.name"),
                format!("'{}' is used twice", t.name),
            );
        }
        let rate = t.rate.unwrap_or(DEFAULT_RATE);
        if !(rate.is_finite() && rate > 0.0) {
            p.add(&format!("{path}.rate"), format!("{rate}: must be > 0"));
        }
        let source = match (&t.generator, &t.trace) {
            (Some(g), None) => match generator_options(g) {
                Ok(o) => {
                    if let Err(e) = generator_config(&o, i as u32, rate.max(1e-9)) {
                        p.add(&format!("{path}.generator"), e);
                    }
                    Source::Generator(o)
                }
                Err(e) => {
                    p.add(&format!("{path}.generator"), e);
                    Source::Generator(BTreeMap::new())
                }
            },
            (None, Some(tr)) => {
                let format = tr.format.as_ref().and_then(|f| {
                    f.parse::<Format>()
                        .map_err(|e| p.add(&format!("{path}.trace.format"), format!("{e:#}")))
                        .ok()
                });
                if let Some(c) = &tr.csv
                    && let Err(e) = c.parse::<CsvOptions>()
                {
                    p.add(&format!("{path}.trace.csv"), format!("{e:#}"));
                }
                let default_size = tr.default_size.as_ref().map_or(1, |v| {
                    bytes_value(v).unwrap_or_else(|e| {
                        p.add(&format!("{path}.trace.default_size"), e);
                        1
                    })
                });
                let limit = tr.limit.as_ref().and_then(|v| {
                    count_value(v)
                        .map_err(|e| p.add(&format!("{path}.trace.limit"), e))
                        .ok()
                });
                let file = PathBuf::from(&tr.path);
                let file = if file.is_absolute() || tr.path == "-" {
                    file
                } else {
                    dir.join(file)
                };
                if tr.path != "-" && !file.exists() {
                    p.add(
                        &format!("{path}.trace.path"),
                        format!("{} does not exist", file.display()),
                    );
                }
                Source::Trace(TraceSpec {
                    path: file,
                    format,
                    csv: tr.csv.clone(),
                    volume_as_tenant: tr.volume_as_tenant,
                    default_size,
                    limit,
                    select: tr.tenant,
                })
            }
            (Some(_), Some(_)) => {
                p.add(&path, "give either generator or trace, not both");
                Source::Generator(BTreeMap::new())
            }
            (None, None) => {
                p.add(&path, "needs a generator or a trace");
                Source::Generator(BTreeMap::new())
            }
        };
        let penalty = match &t.penalty {
            None => Penalty::Constant(0.0),
            Some(v) => penalty_value(v).unwrap_or_else(|e| {
                p.add(&format!("{path}.penalty"), e);
                Penalty::Constant(0.0)
            }),
        };
        let hit_us = t.hit_time.as_ref().map_or(0.0, |v| {
            micros_value(v).unwrap_or_else(|e| {
                p.add(&format!("{path}.hit_time"), e);
                0.0
            })
        });
        if t.penalty_hint && penalty.mean().is_none() {
            p.add(
                &format!("{path}.penalty_hint"),
                "a trace-column penalty has no mean known up front to hint",
            );
        }
        let policy = match &t.policy {
            None => Policy::AllkeysLru,
            Some(s) => s.parse().unwrap_or_else(|e| {
                p.add(&format!("{path}.policy"), e);
                Policy::AllkeysLru
            }),
        };
        let mut cfg = locus_engine::TenantConfig::new(&t.name);
        cfg.policy = policy;
        cfg.samples = t.samples.unwrap_or(cfg.samples);
        cfg.evpool_size = t.evpool_size.unwrap_or(cfg.evpool_size);
        if let Err(errs) = cfg.validate() {
            for e in errs {
                p.add(&path, e);
            }
        }
        let dump_load = t.dump_load.as_ref().map_or(Default::default(), |s| {
            s.parse().unwrap_or_else(|e| {
                p.add(&format!("{path}.dump_load"), e);
                Default::default()
            })
        });
        tenants.push(Tenant {
            name: t.name.clone(),
            rate,
            source,
            penalty,
            hit_us,
            penalty_hint: t.penalty_hint,
            policy,
            samples: cfg.samples,
            evpool_size: cfg.evpool_size,
            dump_load,
        });
    }
    // Several tenants reading one file must each select a tenant-column value.
    for (i, a) in tenants.iter().enumerate() {
        if let Source::Trace(ta) = &a.source {
            for b in tenants.iter().skip(i + 1) {
                if let Source::Trace(tb) = &b.source
                    && ta.same_stream(tb)
                    && (ta.select.is_none() || tb.select.is_none() || ta.select == tb.select)
                {
                    p.add(
                        &format!("tenant[{i}].trace.tenant"),
                        format!(
                            "tenants '{}' and '{}' read the same trace: give each a distinct trace.tenant value",
                            a.name, b.name
                        ),
                    );
                }
            }
        }
    }

    // Phases.
    let mut phases = Vec::new();
    let has_generators = tenants
        .iter()
        .any(|t| matches!(t.source, Source::Generator(_)));
    for (i, ph) in raw.phases.iter().enumerate() {
        let path = format!("phase[{i}]");
        let req = count_value(&ph.requests).unwrap_or_else(|e| {
            p.add(&format!("{path}.requests"), e);
            1
        });
        if req == 0 {
            p.add(&format!("{path}.requests"), "must be at least 1");
        }
        let mut overrides = BTreeMap::new();
        let mut rates = BTreeMap::new();
        for (tname, table) in &ph.tenants {
            let mut table = table.clone();
            let Some(ti) = tenants.iter().position(|t| &t.name == tname) else {
                p.add(&format!("{path}.tenant.{tname}"), "no tenant of that name");
                continue;
            };
            let Source::Generator(base) = &tenants[ti].source else {
                p.add(
                    &format!("{path}.tenant.{tname}"),
                    "phases change generated tenants only (this one reads a trace)",
                );
                continue;
            };
            // A phase may change a tenant's rate (a daily cycle); the generator options may not.
            if let Some(v) = table.remove("rate") {
                match v.as_float().or_else(|| v.as_integer().map(|i| i as f64)) {
                    Some(r) if r.is_finite() && r >= 0.0 => {
                        rates.insert(ti, r);
                    }
                    _ => p.add(
                        &format!("{path}.tenant.{tname}.rate"),
                        format!("{v} is not a rate >= 0"),
                    ),
                }
            }
            match generator_options(&toml::Value::Table(table.clone())) {
                Ok(o) => {
                    let mut merged = base.clone();
                    merged.extend(o.clone());
                    if let Err(e) = generator_config(&merged, ti as u32, tenants[ti].rate) {
                        p.add(&format!("{path}.tenant.{tname}"), e);
                    }
                    overrides.insert(ti, o);
                }
                Err(e) => p.add(&format!("{path}.tenant.{tname}"), e),
            }
        }
        phases.push(Phase {
            name: ph.name.clone().unwrap_or_else(|| format!("phase{i}")),
            requests: req,
            overrides,
            rates,
        });
    }
    if !phases.is_empty() && !has_generators {
        p.add("phase", "phases need at least one generated tenant");
    }
    if has_generators && phases.is_empty() && requests.is_none() {
        p.add(
            "requests",
            "generated tenants need a request count (requests = \"1M\") or [[phase]] entries",
        );
    }
    if !phases.is_empty() && requests.is_some() {
        p.add(
            "requests",
            "with [[phase]] entries the total is the sum of their requests; remove requests",
        );
    }

    // Golden.
    let golden = raw.golden.as_ref().map(|g| {
        let scale = g.scale.unwrap_or(1.0);
        if !(scale.is_finite() && scale > 0.0 && scale <= 1.0) {
            p.add("golden.scale", format!("{scale}: must be in (0, 1]"));
        }
        Golden {
            scale,
            requests: g
                .requests
                .as_ref()
                .and_then(|v| count_value(v).map_err(|e| p.add("golden.requests", e)).ok()),
            memory: g
                .memory
                .as_ref()
                .and_then(|v| memory_value(v).map_err(|e| p.add("golden.memory", e)).ok()),
            interval: g.interval.as_ref().and_then(|v| {
                interval_value(v)
                    .map_err(|e| p.add("golden.interval", e))
                    .ok()
            }),
        }
    });

    let mut dump_load = locus_control::DumpLoadConfig::default();
    if let Some(d) = &raw.dump_load {
        let mut us = |v: &Option<toml::Value>, key: &str, into: &mut u64| {
            if let Some(v) = v {
                match micros_value(v) {
                    Ok(x) if x >= 1.0 => *into = x as u64,
                    Ok(x) => p.add(&format!("dump_load.{key}"), format!("{x} µs is too short")),
                    Err(e) => p.add(&format!("dump_load.{key}"), e),
                }
            }
        };
        us(&d.bucket, "bucket", &mut dump_load.bucket_us);
        us(&d.lead, "lead", &mut dump_load.lead_us);
        if let Some(w) = d.window {
            if w == 0 {
                p.add("dump_load.window", "must be at least 1");
            }
            dump_load.window = w;
        }
        if let Some(v) = d.valley_buckets {
            dump_load.valley_buckets = v;
        }
        for (key, v, into) in [
            (
                "valley_tolerance",
                d.valley_tolerance,
                &mut dump_load.valley_tolerance,
            ),
            ("swing", d.swing, &mut dump_load.swing),
        ] {
            if let Some(x) = v {
                if !(x.is_finite() && x >= 0.0) {
                    p.add(&format!("dump_load.{key}"), format!("{x} must be >= 0"));
                }
                *into = x;
            }
        }
        if let Some(m) = d.load_misses {
            dump_load.load_misses = m;
        }
    }

    let tier = raw.tier.clone().and_then(|t| {
        // Object-count memories are sized from the workload later: the engine checks the
        // page split when it is built.
        let pages = match memory {
            Memory::Bytes(b) => b / page_size.max(1),
            Memory::Objects { .. } => u64::MAX >> 1,
        };
        tier_settings(t, pages, &mut p)
    });

    if !p.0.is_empty() {
        return Err(p.0);
    }
    Ok(Experiment {
        tier,
        dump_load,
        name: raw.name,
        description: raw.description,
        memory,
        page_size,
        seed: raw.seed,
        seeds: raw.seeds.unwrap_or(1),
        requests,
        interval,
        max_moves: raw.max_moves.unwrap_or(64),
        lru_clock,
        class_mode,
        interleave,
        baseline: raw.baseline,
        steady: raw.steady,
        controllers,
        tenants,
        phases,
        golden,
        sweep: raw.sweep.map(|s| Sweep { memory: s.memory }),
        dir: dir.to_path_buf(),
    })
}

/// `[tier]`: the simulator's own keys (`slow_hit_time`, `move_time`) and the engine's
/// [`locus_engine::TierConfig`], checked for `pages` pages.
fn tier_settings(mut t: toml::Table, pages: u64, p: &mut Problems) -> Option<TierSettings> {
    let mut time = |key: &str| {
        t.remove(key).and_then(|v| {
            micros_value(&v)
                .map_err(|e| p.add(&format!("tier.{key}"), e))
                .ok()
        })
    };
    let slow_hit_us = time("slow_hit_time");
    let move_us = time("move_time");
    let engine: locus_engine::TierConfig = match toml::Value::Table(t).try_into() {
        Ok(c) => c,
        Err(e) => {
            p.add("tier", e.to_string());
            return None;
        }
    };
    for problem in engine.problems(pages) {
        match problem.split_once(": ") {
            Some((key, why)) => p.add(key, why),
            None => p.add("tier", problem),
        }
    }
    Some(TierSettings {
        engine,
        slow_hit_us,
        move_us,
    })
}
