//! The request stream of an experiment: generated tenants (one seeded generator per phase) and
//! trace files, merged by rate or by time, each request tagged with its experiment tenant.
//!
//! ```text
//!  generated tenants ─ Generator(phase 0) ─ Generator(phase 1) ─ ...  ─┐
//!  trace file A (tenant column → tenants) ─────────────────────────────├─ merge (rate | time) ─► Item
//!  trace file B ───────────────────────────────────────────────────────┘
//! ```
//!
//! Every run opens its own [`Workload`]; the stream is a pure function of the experiment (seed
//! included), so every controller sees exactly the same requests.

use std::collections::BTreeMap;

use locus_common::Rng;
use locus_trace::generate::{Generator, GeneratorConfig};
use locus_trace::{Request, RequestReader};

use crate::SimError;
use crate::experiment::{Experiment, Interleave, Source, TraceSpec, generator_config};

/// One request of the merged stream.
#[derive(Clone, Copy, Debug, Default)]
pub struct Item {
    /// Experiment tenant index.
    pub tenant: usize,
    /// The request (its `tenant` field is the source's, not the experiment's).
    pub req: Request,
    /// Time since the start of the run (µs).
    pub time_us: u64,
    /// Phase index of the generated workload (0 without phases).
    pub phase: usize,
}

/// Generator option overrides per experiment tenant index.
type Overrides = BTreeMap<usize, BTreeMap<String, String>>;

/// The generated tenants, one generator per phase.
struct GenStream {
    exp_seed: u64,
    /// (experiment tenant index, base options, rate).
    tenants: Vec<(usize, BTreeMap<String, String>, f64)>,
    /// (requests, overrides per tenant index, rate overrides per tenant index) per phase.
    phases: Vec<(u64, Overrides, BTreeMap<usize, f64>)>,
    phase: usize,
    current: Option<Generator>,
    /// Time at which the current phase started (µs) and the last time seen.
    offset_us: u64,
    last_us: u64,
}

impl GenStream {
    fn open_phase(&mut self) -> Result<(), SimError> {
        let (requests, overrides, rates) = &self.phases[self.phase];
        let mut cfgs = Vec::new();
        for (ti, base, rate) in &self.tenants {
            let mut o = base.clone();
            if let Some(ov) = overrides.get(ti) {
                o.extend(ov.clone());
            }
            let rate = rates.get(ti).copied().unwrap_or(*rate);
            let cfg = generator_config(&o, *ti as u32, rate).map_err(|e| SimError::Workload {
                what: format!("tenant {ti} generator, phase {}", self.phase),
                message: e,
            })?;
            cfgs.push(cfg);
        }
        let seed = self
            .exp_seed
            .wrapping_add((self.phase as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let g = Generator::new(GeneratorConfig {
            requests: *requests,
            seed,
            tenants: cfgs,
        })
        .map_err(|e| SimError::Trace {
            what: "generator".into(),
            source: e,
        })?;
        self.current = Some(g);
        Ok(())
    }

    fn next(&mut self, out: &mut Item) -> Result<bool, SimError> {
        loop {
            if self.current.is_none() {
                if self.phase >= self.phases.len() {
                    return Ok(false);
                }
                self.open_phase()?;
            }
            let g = self.current.as_mut().expect("opened above");
            if g.read_into(&mut out.req).map_err(|e| SimError::Trace {
                what: "generator".into(),
                source: e,
            })? {
                out.tenant = out.req.tenant as usize;
                out.time_us = self.offset_us + out.req.time_us;
                self.last_us = out.time_us;
                out.phase = self.phase;
                return Ok(true);
            }
            self.current = None;
            self.phase += 1;
            self.offset_us = self.last_us;
        }
    }
}

/// One trace file feeding one or several tenants.
struct TraceStream {
    name: String,
    reader: Box<dyn RequestReader>,
    /// Tenant column value → experiment tenant; `None`: every request goes to `all`.
    by_column: Option<BTreeMap<u32, usize>>,
    all: usize,
    limit: Option<u64>,
    read: u64,
    first_us: Option<u64>,
    has_time: bool,
    skipped: u64,
}

impl TraceStream {
    fn next(&mut self, out: &mut Item) -> Result<bool, SimError> {
        loop {
            if self.limit.is_some_and(|l| self.read >= l) {
                return Ok(false);
            }
            let more = self
                .reader
                .read_into(&mut out.req)
                .map_err(|e| SimError::Trace {
                    what: self.name.clone(),
                    source: e,
                })?;
            if !more {
                return Ok(false);
            }
            self.read += 1;
            let tenant = match &self.by_column {
                None => self.all,
                Some(m) => match m.get(&out.req.tenant) {
                    Some(&t) => t,
                    None => {
                        self.skipped += 1;
                        continue;
                    }
                },
            };
            out.tenant = tenant;
            let first = *self.first_us.get_or_insert(out.req.time_us);
            out.time_us = out.req.time_us.saturating_sub(first);
            out.phase = 0;
            return Ok(true);
        }
    }
}

enum Stream {
    Gen(GenStream),
    Trace(TraceStream),
}

impl Stream {
    fn next(&mut self, out: &mut Item) -> Result<bool, SimError> {
        match self {
            Stream::Gen(g) => g.next(out),
            Stream::Trace(t) => t.next(out),
        }
    }

    fn has_time(&self) -> bool {
        match self {
            Stream::Gen(_) => true,
            Stream::Trace(t) => t.has_time,
        }
    }
}

/// The merged request stream of one run.
pub struct Workload {
    streams: Vec<Stream>,
    weights: Vec<f64>,
    /// Next item per stream (time interleaving), `None` once exhausted.
    peeked: Vec<Option<Item>>,
    live: Vec<bool>,
    mode: Interleave,
    rng: Rng,
    total_rate: f64,
    emitted: u64,
    limit: Option<u64>,
    phase: usize,
    /// Use each stream's own time (one stream with timestamps, or time interleaving).
    own_time: bool,
    started: bool,
}

impl std::fmt::Debug for Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workload")
            .field("streams", &self.streams.len())
            .field("emitted", &self.emitted)
            .finish()
    }
}

impl Workload {
    /// Opens every source of `exp`.
    ///
    /// # Errors
    /// A trace that cannot be opened, or generator options that do not build.
    pub fn open(exp: &Experiment) -> Result<Workload, SimError> {
        let mut streams = Vec::new();
        let mut weights = Vec::new();
        let gens: Vec<(usize, BTreeMap<String, String>, f64)> = exp
            .tenants
            .iter()
            .enumerate()
            .filter_map(|(i, t)| match &t.source {
                Source::Generator(o) => Some((i, o.clone(), t.rate)),
                Source::Trace(_) => None,
            })
            .collect();
        if !gens.is_empty() {
            let phases = if exp.phases.is_empty() {
                vec![(exp.requests.unwrap_or(0), BTreeMap::new(), BTreeMap::new())]
            } else {
                exp.phases
                    .iter()
                    .map(|p| (p.requests, p.overrides.clone(), p.rates.clone()))
                    .collect()
            };
            weights.push(gens.iter().map(|g| g.2).sum());
            streams.push(Stream::Gen(GenStream {
                exp_seed: exp.seed,
                tenants: gens,
                phases,
                phase: 0,
                current: None,
                offset_us: 0,
                last_us: 0,
            }));
        }
        // Trace tenants: one stream per distinct file spec.
        let mut groups: Vec<(TraceSpec, Vec<usize>)> = Vec::new();
        for (i, t) in exp.tenants.iter().enumerate() {
            if let Source::Trace(spec) = &t.source {
                match groups.iter_mut().find(|(s, _)| s.same_stream(spec)) {
                    Some((_, members)) => members.push(i),
                    None => groups.push((spec.clone(), vec![i])),
                }
            }
        }
        for (spec, members) in groups {
            let opts = spec.read_options()?;
            let name = spec.path.display().to_string();
            let reader = locus_trace::open(&spec.path, &opts).map_err(|e| SimError::Trace {
                what: name.clone(),
                source: e,
            })?;
            let by_column =
                if members.len() > 1 || members.iter().any(|&m| trace_select(exp, m).is_some()) {
                    Some(
                        members
                            .iter()
                            .filter_map(|&m| trace_select(exp, m).map(|v| (v, m)))
                            .collect(),
                    )
                } else {
                    None
                };
            weights.push(members.iter().map(|&m| exp.tenants[m].rate).sum());
            let has_time = reader.info().has_time;
            streams.push(Stream::Trace(TraceStream {
                name,
                reader,
                by_column,
                all: members[0],
                limit: spec.limit,
                read: 0,
                first_us: None,
                has_time,
                skipped: 0,
            }));
        }
        let n = streams.len();
        let own_time = match exp.interleave {
            Interleave::Time => true,
            Interleave::Rate => n == 1 && streams[0].has_time(),
        };
        let total_rate = weights.iter().sum::<f64>().max(1e-9);
        Ok(Workload {
            streams,
            weights,
            peeked: vec![None; n],
            live: vec![true; n],
            mode: exp.interleave,
            rng: Rng::new(exp.seed ^ 0x5157_1A7E_0000_0001),
            total_rate,
            emitted: 0,
            limit: exp.total_requests(),
            phase: 0,
            own_time,
            started: false,
        })
    }

    /// Requests of trace files whose tenant column matched no tenant (skipped).
    pub fn skipped(&self) -> u64 {
        self.streams
            .iter()
            .map(|s| match s {
                Stream::Trace(t) => t.skipped,
                Stream::Gen(_) => 0,
            })
            .sum()
    }

    /// Requests emitted so far.
    pub fn emitted(&self) -> u64 {
        self.emitted
    }

    /// The next request; `Ok(false)` at the end.
    ///
    /// # Errors
    /// A malformed trace record.
    pub fn next(&mut self, out: &mut Item) -> Result<bool, SimError> {
        if self.limit.is_some_and(|l| self.emitted >= l) {
            return Ok(false);
        }
        let got = match self.mode {
            _ if self.streams.len() == 1 => self.streams[0].next(out)?,
            Interleave::Rate => self.next_by_rate(out)?,
            Interleave::Time => self.next_by_time(out)?,
        };
        if !got {
            return Ok(false);
        }
        if !self.own_time {
            out.time_us = (self.emitted as f64 * 1e6 / self.total_rate) as u64;
        }
        // Phases come from the generated stream; trace requests carry the current phase.
        if matches!(self.streams.first(), Some(Stream::Gen(_))) {
            if let Some(Stream::Gen(g)) = self.streams.first() {
                self.phase = g.phase.min(g.phases.len().saturating_sub(1));
            }
            out.phase = self.phase;
        }
        self.emitted += 1;
        Ok(true)
    }

    fn next_by_rate(&mut self, out: &mut Item) -> Result<bool, SimError> {
        loop {
            let total: f64 = self
                .weights
                .iter()
                .zip(&self.live)
                .filter(|(_, l)| **l)
                .map(|(w, _)| *w)
                .sum();
            if total <= 0.0 {
                return Ok(false);
            }
            let mut pick = self.rng.next_f64() * total;
            let mut chosen = None;
            for (i, w) in self.weights.iter().enumerate() {
                if !self.live[i] {
                    continue;
                }
                chosen = Some(i);
                if pick < *w {
                    break;
                }
                pick -= w;
            }
            let i = chosen.expect("a live stream exists when total > 0");
            if self.streams[i].next(out)? {
                return Ok(true);
            }
            self.live[i] = false;
        }
    }

    fn next_by_time(&mut self, out: &mut Item) -> Result<bool, SimError> {
        if !self.started {
            self.started = true;
            for i in 0..self.streams.len() {
                let mut it = Item::default();
                self.peeked[i] = if self.streams[i].next(&mut it)? {
                    Some(it)
                } else {
                    None
                };
            }
        }
        let Some(i) = (0..self.peeked.len())
            .filter(|&i| self.peeked[i].is_some())
            .min_by_key(|&i| self.peeked[i].map(|p| p.time_us))
        else {
            return Ok(false);
        };
        *out = self.peeked[i].take().expect("filtered above");
        let mut it = Item::default();
        if self.streams[i].next(&mut it)? {
            self.peeked[i] = Some(it);
        }
        Ok(true)
    }
}

fn trace_select(exp: &Experiment, tenant: usize) -> Option<u32> {
    match &exp.tenants[tenant].source {
        Source::Trace(s) => s.select,
        Source::Generator(_) => None,
    }
}
