//! LAMA's performance prediction of the default memcached (paper 002, section 3.5, equation 6;
//! Table 2): from one pass over an experiment's requests, per (tenant, size class) footprints
//! give the allocation memcached's cold start ends with at a memory size, and the classes'
//! footprint miss-ratio curves give the miss ratio it then has
//! (`locus_control::predict_default`). `examples/lama_predict.rs` sets it against the
//! simulator's `memcached` runs (`ClassMode::Manual`, no moves) at the sizes of a `[sweep]`.

use std::collections::BTreeMap;

use locus_control::{DefaultClass, predict_default};
use locus_mrc::{Footprint, Op, Profiler};
use locus_trace::Op as TraceOp;
use serde::Serialize;

use crate::SimError;
use crate::experiment::Experiment;
use crate::run::MAX_KEY_BYTES;
use crate::workload::{Item, Workload};

/// The footprints of an experiment's (tenant, size class) request streams, whole run.
pub struct ClassFootprints {
    /// (tenant, class, items per page, requests, footprint profiler), in (tenant, class) order.
    classes: Vec<(usize, u16, u64, u64, Footprint)>,
    requests: u64,
}

/// One memory size's prediction.
#[derive(Clone, Debug, Serialize)]
pub struct Predicted {
    /// `maxmemory` (bytes of pages).
    pub maxmemory: u64,
    /// Requests until memory is full (equation 6's `M`), `None` if it never fills.
    pub cold_start: Option<f64>,
    /// The predicted miss ratio of the whole run (equation 3 on whole-run curves).
    pub miss_ratio: f64,
    /// Pages per (tenant, class) with pages.
    pub pages: Vec<(usize, u16, u64)>,
}

impl ClassFootprints {
    /// One pass over `exp`'s requests (its seed), every key followed (sampling rate 1).
    ///
    /// # Errors
    /// Trace and engine configuration errors.
    pub fn measure(exp: &Experiment) -> Result<Self, SimError> {
        let (probe, per_page) = crate::sweep::probe_classes(exp)?;
        let mut prof: BTreeMap<(usize, u16), (u64, Footprint)> = BTreeMap::new();
        let mut wl = Workload::open(exp)?;
        let mut it = Item::default();
        let mut requests = 0;
        while wl.next(&mut it)? {
            let r = &it.req;
            let klen = (r.key_size as usize).clamp(8, MAX_KEY_BYTES);
            let Some(class) = probe.class_for(klen, r.value_size.min(u32::MAX as u64) as usize)
            else {
                continue;
            };
            let op = match r.op {
                TraceOp::Get => Op::Get,
                TraceOp::Set => Op::Set,
                TraceOp::Delete => Op::Del,
            };
            let e = prof
                .entry((it.tenant, class.0))
                .or_insert_with(|| (0, Footprint::new(1.0, 0).expect("rate 1 is valid")));
            e.0 += 1;
            e.1.access(r.key, 1, op);
            requests += 1;
        }
        Ok(ClassFootprints {
            classes: prof
                .into_iter()
                .map(|((t, c), (n, f))| (t, c, per_page[c as usize], n, f))
                .collect(),
            requests,
        })
    }

    /// The prediction at `maxmemory` bytes of `page_size` pages.
    ///
    /// # Errors
    /// The footprint model's error for a curve it cannot give.
    pub fn predict(&self, maxmemory: u64, page_size: u64) -> Result<Predicted, SimError> {
        let pages_total = maxmemory / page_size.max(1);
        let mut input = Vec::with_capacity(self.classes.len());
        for (_, _, slots, n, f) in &self.classes {
            let caps: Vec<f64> = (0..=pages_total).map(|j| (j * slots) as f64).collect();
            let mrc = f.mrc(&caps)?;
            input.push(DefaultClass {
                footprint: f.footprint_curve(),
                share: *n as f64 / self.requests.max(1) as f64,
                slots: *slots,
                miss_ratio: mrc.points().iter().map(|p| p.1).collect(),
            });
        }
        let p = predict_default(&input, pages_total);
        Ok(Predicted {
            maxmemory,
            cold_start: p.cold_start,
            miss_ratio: p.miss_ratio,
            pages: self
                .classes
                .iter()
                .zip(&p.pages)
                .filter(|(_, p)| **p > 0)
                .map(|((t, c, ..), p)| (*t, *c, *p))
                .collect(),
        })
    }
}
