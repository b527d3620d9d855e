//! The memcached tenants' slab controller: any controller of `locus-control`, confined to their
//! pools, installed as the engine's controller when `[controller]` names none.
//!
//! The engine runs one controller over every pool. [`SlabScope`] wraps the slab controller so
//! that it sees only the memcached tenants' accesses and pools (the RESP tenants' pools look
//! empty to it) and only moves pages inside them, and only while the pool's `slabs automove` is
//! on. The RESP tenants keep the engine's automatic class mode; the memcached tenants get
//! [`ClassMode::Manual`] (or the controller's own mode, e.g. Twemcache's random slab eviction).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use locus_engine::control::{
    Access, AccessKind, ClassState, ControlView, Controller, Decision, Evicted, PoolState,
};
use locus_engine::{ClassId, ClassMode, Engine, TenantId};

use super::McState;

/// A controller restricted to some pools (by `PoolId.0`), each with its automove switch.
///
/// The engine shows a controller only the classes that own pages or items; a memcached class
/// that has never had a page (its SETs fail for memory) would never get one. The scope adds the
/// classes its pools asked for (SETs seen) as empty classes, so the controller can give them
/// pages, as memcached's automove does for a class that is out of memory.
#[derive(Debug)]
pub struct SlabScope {
    inner: Box<dyn Controller>,
    /// `Some(switch)` for the pools the controller may see and act on.
    pools: Vec<Option<Arc<AtomicBool>>>,
    /// Chunk size of every class.
    chunks: Vec<u32>,
    /// (pool, class) pairs that saw a SET.
    asked: HashSet<(u32, u16)>,
}

impl SlabScope {
    fn in_scope(&self, pool: u32) -> bool {
        self.pools.get(pool as usize).is_some_and(Option::is_some)
    }

    fn moves_allowed(&self, pool: u32) -> bool {
        self.pools
            .get(pool as usize)
            .and_then(Option::as_ref)
            .is_some_and(|s| s.load(Ordering::Relaxed))
    }
}

impl Controller for SlabScope {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn on_access(&mut self, a: &Access) {
        if self.in_scope(a.pool.0) {
            if a.kind == AccessKind::Set
                && let Some(c) = a.class
            {
                self.asked.insert((a.pool.0, c.0));
            }
            self.inner.on_access(a);
        }
    }

    fn on_evict(&mut self, e: &Evicted) {
        if self.in_scope(e.pool.0) {
            self.inner.on_evict(e);
        }
    }

    fn observes(&self) -> bool {
        self.inner.observes()
    }

    fn model_bytes(&self) -> u64 {
        self.inner.model_bytes()
    }

    fn decide(&mut self, view: &ControlView<'_>) -> Decision {
        let pools: Vec<PoolState> = view
            .pools
            .iter()
            .map(|p| {
                if self.in_scope(p.pool.0) {
                    let mut p = p.clone();
                    for &(pool, class) in &self.asked {
                        if pool == p.pool.0 && !p.classes.iter().any(|c| c.class.0 == class) {
                            p.classes.push(ClassState {
                                class: ClassId(class),
                                chunk_bytes: self.chunks.get(class as usize).copied().unwrap_or(0),
                                ..ClassState::default()
                            });
                        }
                    }
                    p.classes.sort_by_key(|c| c.class);
                    p
                } else {
                    PoolState {
                        pool: p.pool,
                        tenant: p.tenant,
                        name: p.name.clone(),
                        ..PoolState::default()
                    }
                }
            })
            .collect();
        let scoped = ControlView {
            pools: &pools,
            ..*view
        };
        let mut d = self.inner.decide(&scoped);
        // Slab controllers move pages between classes of a pool; pool targets and K are the
        // business of `[controller]`, which is not this one.
        d.pool_pages = None;
        d.fast_pages = None;
        d.samples.clear();
        d.moves
            .retain(|m| m.from.0 == m.to.0 && self.moves_allowed(m.from.0.0));
        // As memcached's mover (and `slabs reassign`), a class holding items keeps its last
        // page: taking it would evict every item of a size still in use, and that class would
        // take a page back (its first page) on its next store.
        let mut left: HashMap<(u32, u16), u64> = HashMap::new();
        for p in &pools {
            for c in &p.classes {
                if c.items > 0 {
                    left.insert((p.pool.0, c.class.0), c.pages);
                }
            }
        }
        d.moves
            .retain(|m| match left.get_mut(&(m.from.0.0, m.from.1.0)) {
                Some(n) if *n <= 1 => false,
                Some(n) => {
                    *n -= 1;
                    true
                }
                None => true,
            });
        d
    }

    fn class_mode(&self) -> Option<ClassMode> {
        None
    }
}

/// Gives the memcached tenants their class mode and, when `ctl` is given (`[controller]` names
/// none), installs it as the engine's controller confined to their pools.
pub fn install(eng: &mut Engine, mc: &mut McState, ctl: Option<crate::config::SlabController>) {
    let ids = mc.tenant_ids();
    let mode = ctl
        .as_ref()
        .and_then(|(c, _)| c.class_mode())
        .unwrap_or(ClassMode::Manual);
    for &t in &ids {
        eng.set_tenant_class_mode(t, Some(mode));
        // As memcached: a size first seen once memory is full still gets a page.
        eng.set_tenant_first_page(t, true);
    }
    let Some((inner, cfg)) = ctl else {
        return;
    };
    // As memcached's automover: a class's surplus free memory (holes left by deletes and
    // expiries) goes back to the free pages, while `slabs automove` is on.
    mc.gives_back_free = true;
    for &t in &ids {
        let on = mc
            .tenant(t)
            .is_some_and(|m| m.automove.load(Ordering::Relaxed));
        eng.set_tenant_gives_back_free_pages(t, on);
    }
    // The RESP tenants keep the engine's automatic mode whatever the slab controller asks.
    for t in eng.tenant_ids() {
        if !ids.contains(&t) {
            eng.set_tenant_class_mode(t, Some(eng.class_mode()));
        }
    }
    let mut pools = Vec::new();
    for t in eng.tenant_ids() {
        let i = eng.pool_of(t).0 as usize;
        if pools.len() <= i {
            pools.resize(i + 1, None);
        }
        pools[i] = mc.tenant(t).map(|m| m.automove.clone());
    }
    mc.controller = Some(inner.name().to_string());
    let chunks = eng.size_classes().into_iter().map(|(_, c)| c).collect();
    eng.set_controller(
        Box::new(SlabScope {
            inner,
            pools,
            chunks,
            asked: HashSet::new(),
        }),
        cfg,
    );
}

/// Whether `t`'s pages may be moved by the slab controller (`slabs automove 1|2`), and its
/// classes' surplus free memory given back (with a slab controller installed only).
pub fn set_automove(eng: &mut Engine, mc: &McState, t: TenantId, on: bool) {
    if let Some(m) = mc.tenant(t) {
        m.automove.store(on, Ordering::Relaxed);
        if mc.gives_back_free {
            eng.set_tenant_gives_back_free_pages(t, on);
        }
    }
}
