//! pRedis's automatic dump/load in the simulator: the doing half of
//! [`locus_control::dumpload`].
//!
//! ```text
//!  request of tenant T ─► PeriodDetector(T).request/get/tick ─► Dump ─► engine.for_each_item(T)
//!                                                                  │      → stash (in memory,
//!                                                                  │        counted), engine.delete
//!                                                                  └► Load ─► engine.restore(stash)
//!  SET / DELETE of a dumped key ─► the stash copy is superseded (the engine's copy is newer)
//! ```
//!
//! A dump takes the string items the tenant has in memory (its hot set as its eviction policy
//! kept it; pRedis dumps the class in LRU order) but for the most recent share its valley still
//! uses (the decision's `keep`), and deletes them, so the memory goes to the other tenants at
//! once instead of through eviction. A load puts the stashed items back, least recent
//! first, with fresh recency (they were loaded for the coming peak), skipping keys written or
//! deleted since the dump (pRedis keeps the dumped keys and tags their changes; the simulator keeps
//! the set of changed keys). The stash lives in memory and is not charged to the engine: it stands
//! for pRedis's SSD file; the load's own time is not charged to requests either (pRedis loads in
//! the background, interruptibly).

use std::collections::HashSet;

use locus_control::{DumpLoadAction, DumpLoadMode, PeriodDetector};
use locus_engine::{Engine, ItemMeta, RecencyKind, RestoreValue, TenantId, ValueRef};
use serde::Serialize;

use crate::experiment::{ControllerRun, Experiment};

/// One dump or load carried out.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct DumpLoadEvent {
    /// Trace requests replayed before it.
    pub at_request: u64,
    /// Engine clock (µs).
    pub at_us: u64,
    /// Tenant name.
    pub tenant: String,
    /// `dump` or `load`.
    pub action: &'static str,
    /// Items moved (a load: put back; stash copies superseded since the dump are not counted).
    pub items: u64,
    /// Key + value bytes moved.
    pub bytes: u64,
}

#[derive(Default)]
struct Stash {
    /// (key, value, metadata), least recent first.
    items: Vec<(Vec<u8>, Vec<u8>, ItemMeta)>,
    /// Keys written or deleted since the dump.
    superseded: HashSet<Vec<u8>>,
}

/// Per-run dump/load state: a detector and a stash per tenant.
pub struct DumpLoad {
    detectors: Vec<PeriodDetector>,
    stash: Vec<Stash>,
    names: Vec<String>,
    events: Vec<DumpLoadEvent>,
}

impl DumpLoad {
    /// The state for a run of `entry`, or `None` when no tenant dumps (every one `never`).
    pub fn new(exp: &Experiment, entry: &ControllerRun) -> Option<Self> {
        let modes: Vec<DumpLoadMode> = exp
            .tenants
            .iter()
            .map(|t| {
                entry
                    .dump_load
                    .clone()
                    .unwrap_or_else(|| t.dump_load.clone())
            })
            .collect();
        if modes.iter().all(|m| *m == DumpLoadMode::Never) {
            return None;
        }
        Some(Self {
            detectors: modes
                .into_iter()
                .map(|m| PeriodDetector::new(m, exp.dump_load.clone()))
                .collect(),
            stash: exp.tenants.iter().map(|_| Stash::default()).collect(),
            names: exp.tenants.iter().map(|t| t.name.clone()).collect(),
            events: Vec::new(),
        })
    }

    /// The dumps and loads carried out, oldest first.
    pub fn into_events(self) -> Vec<DumpLoadEvent> {
        self.events
    }

    /// Whether tenant `t` is dumped now.
    pub fn dumped(&self, t: usize) -> bool {
        self.detectors[t].dumped()
    }

    /// Accounts a request of tenant `t` (`hit`: a GET's outcome, `None` for other ops;
    /// `writes`: the request (or its miss fill) wrote or deleted `key`) and carries out the
    /// decision due, if any.
    #[expect(
        clippy::too_many_arguments,
        reason = "one call per request from the replay loop"
    )]
    pub fn on_request(
        &mut self,
        engine: &mut Engine,
        t: usize,
        key: &[u8],
        hit: Option<bool>,
        writes: bool,
        now_us: u64,
        at_request: u64,
    ) {
        let d = &mut self.detectors[t];
        d.request(now_us);
        if let Some(h) = hit {
            d.get(h);
        }
        if writes && d.dumped() {
            self.stash[t].superseded.insert(key.to_vec());
        }
        // Every tenant's clock moves on every request: a tenant gone quiet still gets its
        // valley detected (its empty buckets close) and its predicted load made.
        for (i, d) in self.detectors.iter_mut().enumerate() {
            if let Some(a) = d.tick(now_us) {
                let ev = match a {
                    DumpLoadAction::Dump { keep } => {
                        dump(engine, TenantId(i as u32), &mut self.stash[i], keep)
                    }
                    DumpLoadAction::Load => load(engine, TenantId(i as u32), &mut self.stash[i]),
                };
                self.events.push(DumpLoadEvent {
                    at_request,
                    at_us: now_us,
                    tenant: self.names[i].clone(),
                    action: match a {
                        DumpLoadAction::Dump { .. } => "dump",
                        DumpLoadAction::Load => "load",
                    },
                    items: ev.0,
                    bytes: ev.1,
                });
            }
        }
    }
}

/// Moves tenant `t`'s string items, but for the most recent `keep` fraction, into `stash` and
/// deletes them from the engine.
fn dump(engine: &mut Engine, t: TenantId, stash: &mut Stash, keep: f64) -> (u64, u64) {
    stash.items.clear();
    stash.superseded.clear();
    // Least recent first (under LRU; a policy without a recency list walks in index order).
    engine.for_each_item(t, |k, v, meta| {
        if let ValueRef::Str(v) = v {
            stash.items.push((k.to_vec(), v.to_vec(), meta));
        }
    });
    stash
        .items
        .truncate(DumpLoadAction::dumped_count(stash.items.len(), keep));
    let mut bytes = 0u64;
    for (k, v, _) in &stash.items {
        engine.delete(t, k);
        bytes += (k.len() + v.len()) as u64;
    }
    (stash.items.len() as u64, bytes)
}

/// Puts `stash` back into tenant `t`, least recent first, with fresh recency.
fn load(engine: &mut Engine, t: TenantId, stash: &mut Stash) -> (u64, u64) {
    let (mut n, mut bytes) = (0u64, 0u64);
    for (k, v, meta) in stash.items.drain(..) {
        if stash.superseded.contains(&k) {
            continue;
        }
        // `Logical` never matches a stamp taken on the wall clock, and is never applied: the
        // item gets the recency of a fresh SET.
        if let Ok(true) = engine.restore(t, &k, RestoreValue::Str(&v), meta, RecencyKind::Logical) {
            n += 1;
            bytes += (k.len() + v.len()) as u64;
        }
    }
    stash.superseded.clear();
    (n, bytes)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use locus_common::VirtualClock;
    use locus_engine::{EngineConfig, SetOptions, TenantConfig};

    use super::*;

    fn engine() -> (Engine, TenantId, TenantId) {
        let cfg = EngineConfig {
            maxmemory: 4 << 20,
            ..EngineConfig::default()
        };
        let mut e = Engine::new(cfg, Arc::new(VirtualClock::new(0))).unwrap();
        let a = e.add_tenant(TenantConfig::new("a")).unwrap();
        let b = e.add_tenant(TenantConfig::new("b")).unwrap();
        (e, a, b)
    }

    /// A dump frees the tenant's memory and keeps its most recent share; a load puts the rest
    /// back, but never over a key written or deleted meanwhile; the other tenant is untouched.
    #[test]
    fn dump_then_load_restores_all_but_superseded_keys() {
        let (mut e, a, b) = engine();
        for i in 0..100u32 {
            let k = format!("k{i}");
            e.set(a, k.as_bytes(), b"old", SetOptions::default())
                .unwrap();
            e.set(b, k.as_bytes(), b"other", SetOptions::default())
                .unwrap();
        }
        let mut stash = Stash::default();
        let (n, bytes) = dump(&mut e, a, &mut stash, 0.1);
        assert_eq!(n, 90, "the 10 most recent stay");
        assert_eq!(
            bytes,
            stash
                .items
                .iter()
                .map(|i| (i.0.len() + i.1.len()) as u64)
                .sum::<u64>()
        );
        assert_eq!(e.tenant_stats(a).items, 10);
        assert!(e.peek(a, b"k99").is_some(), "the most recent is kept");
        assert!(e.peek(a, b"k0").is_none(), "the least recent is dumped");
        assert_eq!(e.tenant_stats(b).items, 100);
        // While dumped: k1 rewritten, k2 deleted (after a re-fill).
        e.set(a, b"k1", b"new", SetOptions::default()).unwrap();
        stash.superseded.insert(b"k1".to_vec());
        stash.superseded.insert(b"k2".to_vec());
        let (n, _) = load(&mut e, a, &mut stash);
        assert_eq!(n, 88);
        assert_eq!(e.peek(a, b"k1"), Some(&b"new"[..]));
        assert!(e.peek(a, b"k2").is_none());
        assert_eq!(e.peek(a, b"k0"), Some(&b"old"[..]));
        assert_eq!(e.tenant_stats(a).items, 99);
        assert!(stash.items.is_empty() && stash.superseded.is_empty());
    }
}
