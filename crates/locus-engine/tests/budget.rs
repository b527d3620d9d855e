//! The page budget is never exceeded, whatever the operations: random sizes, many tenants,
//! shared and static partitioning, `maxmemory` changes at runtime, controller page moves.

mod common;

use common::*;
use locus_common::Rng;
use locus_engine::{
    ClassId, EngineConfig, EngineError, Expire, PartitionMode, Policy, PoolId, SetOptions,
    TenantConfig,
};

fn churn(partition: PartitionMode, seed: u64, with_moves: bool) {
    churn_with(partition, seed, with_moves, None);
}

/// `large`: `EngineConfig::large_items` (items above it get their own allocation, and items
/// larger than a page are written too).
fn churn_with(partition: PartitionMode, seed: u64, with_moves: bool, large: Option<u64>) {
    let pages = 40;
    let cfg = EngineConfig {
        partition,
        seed,
        large_items: large,
        ..small(pages)
    };
    let (mut e, clock) = engine_with(cfg);
    let policies = [
        Policy::AllkeysLru,
        Policy::AllkeysLfu,
        Policy::AllkeysRandom,
        Policy::VolatileLru,
        Policy::AllkeysExactLru,
        Policy::NoEviction,
    ];
    let mut rng = Rng::new(seed);
    let tenants: Vec<_> = policies
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            let max = if partition == PartitionMode::Static {
                Some((2 + i as u64 * 2) * 4096)
            } else {
                None
            };
            e.add_tenant(TenantConfig {
                policy: p,
                min_bytes: if i == 0 { 2 * 4096 } else { 0 },
                max_bytes: max,
                samples: 1 + (i as u32 % 7),
                evpool_size: if i == 2 { 0 } else { 16 },
                ..TenantConfig::new(format!("t{i}"))
            })
            .unwrap()
        })
        .collect();
    let classes = e.size_classes();
    let mut total_pages = pages;
    for step in 0..8_000u64 {
        let t = tenants[rng.below(tenants.len() as u64) as usize];
        let r = rng.below(1000);
        if r < 700 {
            // Sizes from tiny to nearly a page.
            let len = match rng.below(10) {
                0 if large.is_some() && rng.below(3) == 0 => 4000 + rng.below(12_000) as usize,
                0 => rng.below(4000) as usize,
                1..=3 => rng.below(600) as usize,
                _ => rng.below(120) as usize,
            };
            let exp = if rng.below(2) == 0 {
                Expire::AtMs(e.now_ms() + 1 + rng.below(100_000))
            } else {
                Expire::Persist
            };
            match e.set(
                t,
                &key(rng.below(2000)),
                &val(step, len),
                SetOptions {
                    expire: exp,
                    ..SetOptions::default()
                },
            ) {
                Ok(_) | Err(EngineError::OutOfMemory) => {}
                Err(x) => panic!("{x}"),
            }
        } else if r < 850 {
            let _ = e.get(t, &key(rng.below(2000)));
        } else if r < 900 {
            e.delete(t, &key(rng.below(2000)));
        } else if r < 910 {
            total_pages = 8 + rng.below(60);
            e.set_maxmemory(total_pages * 4096).unwrap();
        } else if r < 930 && with_moves {
            let from = tenants[rng.below(tenants.len() as u64) as usize];
            let to = tenants[rng.below(tenants.len() as u64) as usize];
            let fc = classes[rng.below(classes.len() as u64 / 3) as usize].0;
            let tc = classes[rng.below(classes.len() as u64 / 3) as usize].0;
            match e.move_page((e.pool_of(from), fc), (e.pool_of(to), tc)) {
                Ok(_) | Err(EngineError::NoPageToMove { .. }) => {}
                Err(x) => panic!("{x}"),
            }
        } else if r < 940 {
            clock.advance_ms(rng.below(20_000));
            e.run_active_expire(50);
        } else if r < 945 && partition == PartitionMode::Static {
            let i = rng.below(tenants.len() as u64);
            let max = (1 + rng.below(10)) * 4096;
            e.set_budget(tenants[i as usize], 0, Some(max)).unwrap();
        } else if r < 950 {
            e.tick();
        }
        let s = e.stats();
        if large.is_some() {
            // Pages, large items (and metadata) within maxmemory, but for what pools that may
            // not evict hold after maxmemory was lowered under them.
            let stuck: u64 = tenants
                .iter()
                .map(|&t| e.tenant_stats(t))
                .filter(|ts| matches!(ts.policy, Policy::NoEviction | Policy::VolatileLru))
                .map(|ts| ts.large_bytes + ts.pages * 4096)
                .sum();
            assert!(
                s.used_bytes <= s.maxmemory + stuck,
                "step {step}: {} bytes used of {}",
                s.used_bytes,
                s.maxmemory
            );
        }
        assert!(
            s.pages_used <= s.pages_total && s.pages_total == total_pages,
            "step {step}: {} pages used of {}",
            s.pages_used,
            s.pages_total
        );
        assert!(
            s.pages_allocated <= s.pages_total,
            "buffers beyond maxmemory"
        );
        if partition == PartitionMode::Static && !with_moves {
            for &t in &tenants {
                let ts = e.tenant_stats(t);
                if let Some(max) = ts.max_bytes {
                    assert!(
                        ts.pages * 4096 <= max,
                        "step {step}: {} over its cap",
                        ts.name
                    );
                }
            }
        }
        if step % 997 == 0 {
            e.check_invariants();
        }
    }
    e.check_invariants();
    let s = e.stats();
    assert!(s.evictions > 0);
    assert!(s.charged_bytes + s.large_bytes <= s.used_bytes);
    assert!(s.item_bytes <= s.charged_bytes + s.large_bytes);
    if large.is_some() {
        assert!(s.large_bytes > 0, "no item took the large path");
    }
}

#[test]
fn shared_never_exceeds_maxmemory() {
    for seed in 0..3 {
        churn(PartitionMode::Shared, seed, false);
    }
}

#[test]
fn static_never_exceeds_maxmemory_or_caps() {
    for seed in 10..13 {
        churn(PartitionMode::Static, seed, false);
    }
}

#[test]
fn large_items_keep_the_bound() {
    for seed in 30..33 {
        churn_with(PartitionMode::Shared, seed, false, Some(512));
    }
    churn_with(PartitionMode::Static, 33, false, Some(512));
    churn_with(PartitionMode::Shared, 34, true, Some(1024));
}

#[test]
fn page_moves_keep_the_bound() {
    churn(PartitionMode::Shared, 20, true);
    churn(PartitionMode::Static, 21, true);
}

#[test]
fn classes_take_pages_back_from_other_classes() {
    // 8 pages, all filled with small items; then only large items: the large class must get
    // pages back (no slab calcification) and the store keeps working.
    let (mut e, _c) = engine_with(small(8));
    let t = tenant(&mut e, "a", Policy::AllkeysLru);
    for i in 0..2000 {
        e.set(t, &key(i), &val(i, 20), SetOptions::default())
            .unwrap();
    }
    assert_eq!(e.stats().pages_used, 8);
    for i in 0..200 {
        e.set(t, &key(10_000 + i), &val(i, 1500), SetOptions::default())
            .unwrap();
    }
    let big = e.class_for(12, 1500).unwrap();
    let pages_big = e.pages_of(e.pool_of(t), big);
    assert!(pages_big >= 6, "large class has {pages_big} pages");
    // The last large item is present; most of the memory now holds large items.
    assert!(e.exists(t, &key(10_000 + 199)));
    let big_items = (0..200).filter(|&i| e.exists(t, &key(10_000 + i))).count();
    assert!(big_items >= 12, "{big_items} large items kept");
    e.check_invariants();
}

#[test]
fn static_floor_takes_pages_from_richer_pools() {
    let (mut e, _c) = engine_with(static_cfg(10));
    let a = tenant(&mut e, "a", Policy::AllkeysLru);
    let b = e
        .add_tenant(TenantConfig {
            min_bytes: 4 * 4096,
            ..TenantConfig::new("b")
        })
        .unwrap();
    // a may take only the 6 pages not reserved for b's floor.
    for i in 0..3000 {
        e.set(a, &key(i), &val(i, 100), SetOptions::default())
            .unwrap();
    }
    assert_eq!(e.tenant_stats(a).pages, 6);
    for i in 0..3000 {
        e.set(b, &key(i), &val(i, 100), SetOptions::default())
            .unwrap();
    }
    assert_eq!(e.tenant_stats(b).pages, 4);
    assert_eq!(e.stats().pages_used, 10);
    // Lowering a's cap gives pages back at once.
    e.set_budget(a, 0, Some(2 * 4096)).unwrap();
    assert_eq!(e.tenant_stats(a).pages, 2);
    assert!(
        e.tenant_stats(a)
            .evictions_by_reason
            .get(locus_engine::EvictionReason::Shrink)
            > 0
    );
    e.check_invariants();
}

#[test]
fn move_page_evicts_and_transfers() {
    let (mut e, _c) = engine_with(small(4));
    let a = tenant(&mut e, "a", Policy::AllkeysLru);
    let b = tenant(&mut e, "b", Policy::AllkeysLru);
    for i in 0..10 {
        e.set(a, &key(i), &val(i, 100), SetOptions::default())
            .unwrap();
    }
    let c = e.class_for(12, 100).unwrap();
    assert_eq!(e.pages_of(e.pool_of(a), c), 1);
    let evicted = e
        .move_page((e.pool_of(a), c), (e.pool_of(b), ClassId(0)))
        .unwrap();
    assert_eq!(evicted, 10);
    assert_eq!(e.len(a), 0);
    assert_eq!(e.pages_of(e.pool_of(b), ClassId(0)), 1);
    let ev = e.page_events();
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].from, (e.pool_of(a), c));
    assert_eq!(ev[0].to, Some((e.pool_of(b), ClassId(0))));
    assert_eq!(ev[0].reason, locus_engine::EvictionReason::PageMove);
    assert_eq!(ev[0].evicted, 10);
    assert_eq!(
        e.move_page((e.pool_of(a), c), (e.pool_of(b), c)),
        Err(EngineError::NoPageToMove {
            pool: 0,
            class: c.0
        })
    );
    e.check_invariants();
}

#[test]
fn shared_mode_is_free_competition_and_static_mode_isolates() {
    // Shared: an idle tenant's old keys are evicted by an active tenant's inserts.
    let (mut e, clock) = engine_with(small(16));
    let idle = tenant(&mut e, "idle", Policy::AllkeysLru);
    let busy = tenant(&mut e, "busy", Policy::AllkeysLru);
    for i in 0..200 {
        e.set(idle, &key(i), &val(i, 100), SetOptions::default())
            .unwrap();
    }
    clock.advance_ms(60_000);
    for i in 0..3000 {
        e.set(busy, &key(i), &val(i, 100), SetOptions::default())
            .unwrap();
        clock.advance_ms(10);
    }
    assert!(
        e.len(idle) < 20,
        "idle tenant kept {} old keys",
        e.len(idle)
    );
    assert!(e.tenant_stats(idle).evictions > 180);
    // Static: with budgets, the busy tenant only evicts its own keys.
    let (mut e, clock) = engine_with(static_cfg(16));
    let idle = e
        .add_tenant(TenantConfig {
            max_bytes: Some(8 * 4096),
            ..TenantConfig::new("idle")
        })
        .unwrap();
    let busy = e
        .add_tenant(TenantConfig {
            max_bytes: Some(8 * 4096),
            ..TenantConfig::new("busy")
        })
        .unwrap();
    for i in 0..200 {
        e.set(idle, &key(i), &val(i, 100), SetOptions::default())
            .unwrap();
    }
    clock.advance_ms(60_000);
    for i in 0..3000 {
        e.set(busy, &key(i), &val(i, 100), SetOptions::default())
            .unwrap();
    }
    assert_eq!(e.len(idle), 200);
    assert_eq!(e.tenant_stats(idle).evictions, 0);
    assert!(e.tenant_stats(busy).pages <= 8);
    e.check_invariants();
}

/// With `metadata_in_budget` (the server's setting), the key index, the sampling arrays and the
/// TTL table count toward `maxmemory`: a flood of tiny keys keeps pages plus metadata within the
/// budget (checked before every write, where the engine enforces it), holds fewer keys than the
/// pages alone would, and gets the metadata back when the keys go.
#[test]
fn metadata_counts_toward_maxmemory_when_asked() {
    let run = |metadata_in_budget: bool| {
        let cfg = EngineConfig {
            metadata_in_budget,
            ..small(64)
        };
        let maxmemory = cfg.maxmemory;
        let (mut e, _clock) = engine_with(cfg);
        let t = e.add_tenant(TenantConfig::new("t")).unwrap();
        let mut worst = 0u64;
        for i in 0..60_000u64 {
            let key = i.to_le_bytes();
            let opts = SetOptions {
                expire: if i % 3 == 0 {
                    Expire::AtMs(10_000_000_000)
                } else {
                    Expire::Persist
                },
                ..SetOptions::default()
            };
            e.set(t, &key, b"v", opts).unwrap();
            if i % 997 == 0 {
                let s = e.stats();
                worst = worst.max(if metadata_in_budget {
                    s.used_bytes
                } else {
                    s.used_bytes + s.metadata_bytes
                });
            }
        }
        let s = e.stats();
        (worst, maxmemory, s.items, s.metadata_bytes, e, t)
    };
    let (worst, maxmemory, items, _, mut e, t) = run(true);
    // used_bytes = pages + metadata rounded up to pages; one allocation may run ahead of the
    // reclaim by the index's last doubling, checked here at most a page or so past the budget.
    let page = 4096;
    assert!(
        worst <= maxmemory + page,
        "pages + metadata reached {worst} of {maxmemory}"
    );
    let (worst_off, _, items_off, meta_off, _, _) = run(false);
    assert!(
        worst_off > maxmemory,
        "without it, metadata sits outside the budget ({worst_off})"
    );
    assert!(
        items < items_off,
        "counting the index leaves room for fewer keys ({items} vs {items_off})"
    );
    assert!(meta_off > 0);
    // Emptied, the tenant's containers shrink and the budget gets their pages back.
    e.flush(t);
    e.tick();
    let s = e.stats();
    assert!(
        s.used_bytes <= 2 * page,
        "after FLUSH the metadata still holds {} bytes",
        s.used_bytes
    );
}

/// The metadata budget never costs a tenant whose policy forbids eviction its items: another
/// tenant's flood of tiny keys grows the index, and the pages that pay for it come from the
/// flooding tenant (or other evicting pools), never from a noeviction or volatile-* pool.
#[test]
fn metadata_growth_never_evicts_a_noeviction_or_volatile_tenant() {
    for policy in [Policy::NoEviction, Policy::VolatileLru] {
        let (mut e, _clock) = engine_with(EngineConfig {
            metadata_in_budget: true,
            ..small(64)
        });
        let keep = e
            .add_tenant(TenantConfig {
                policy,
                ..TenantConfig::new("keep")
            })
            .unwrap();
        let flood = e.add_tenant(TenantConfig::new("flood")).unwrap();
        for i in 0..400u64 {
            let key = format!("keep:{i}");
            e.set(keep, key.as_bytes(), &[7u8; 200], SetOptions::default())
                .unwrap();
        }
        let mut kept = e.len(keep);
        assert_eq!(kept, 400);
        for i in 0..60_000u64 {
            let _ = e.set(flood, &i.to_le_bytes(), b"v", SetOptions::default());
            // keep writes too now and then: its writes also meet the grown index.
            if i % 100 == 0 {
                let key = format!("keep:new:{i}");
                match e.set(keep, key.as_bytes(), &[7u8; 200], SetOptions::default()) {
                    Ok(_) => kept += 1,
                    Err(EngineError::OutOfMemory) => {}
                    Err(x) => panic!("{x}"),
                }
            }
        }
        assert!(e.stats().metadata_bytes > 0);
        assert_eq!(
            e.len(keep),
            kept,
            "{policy:?}: the flood evicted keep's keys"
        );
        assert_eq!(e.tenant_stats(keep).evictions, 0, "{policy:?}");
        assert!(
            e.tenant_stats(flood).evictions > 0,
            "the flood pays for its own index"
        );
        e.check_invariants();
    }
}

/// A controller's page moves and releases take nothing from a pool whose policy forbids
/// eviction: only its pages that hold nothing can go.
#[test]
fn page_moves_never_evict_a_noeviction_or_volatile_tenant() {
    for policy in [Policy::NoEviction, Policy::VolatileTtl] {
        let (mut e, _clock) = engine_with(small(64));
        let keep = e
            .add_tenant(TenantConfig {
                policy,
                ..TenantConfig::new("keep")
            })
            .unwrap();
        let other = e.add_tenant(TenantConfig::new("other")).unwrap();
        for i in 0..50u64 {
            let key = format!("keep:{i}");
            e.set(keep, key.as_bytes(), &[7u8; 200], SetOptions::default())
                .unwrap();
        }
        let class = e.class_for(7, 200).unwrap();
        let (from, to) = ((e.pool_of(keep), class), (e.pool_of(other), class));
        assert!(e.pages_of(from.0, from.1) > 0);
        assert!(
            matches!(e.move_page(from, to), Err(EngineError::NoPageToMove { .. })),
            "{policy:?}: a page holding items was moved"
        );
        assert_eq!(e.len(keep), 50);
        // Emptied, its pages may go.
        for i in 0..50u64 {
            e.delete(keep, format!("keep:{i}").as_bytes());
        }
        if e.pages_of(from.0, from.1) > 0 {
            assert_eq!(e.move_page(from, to).unwrap(), 0);
        }
        e.check_invariants();
    }
}

/// Values log-uniform from 1 B to 900 KiB, written once each in order, under 64 MiB of 16 KiB
/// pages, items above 2 KiB out of them (the server's settings for this budget; issue #11's
/// test, in the engine), three seeds. An LRU cache that spent its bytes on data would hold
/// the most recent keys whose sizes fill the budget; with large items out of the pages (and free
/// chunks compacted into pages) the engine holds at least 90% of that count (measured: 939 of
/// 1,003, 1,055 of 1,070, 977 of 988), while with every item in a page it holds far fewer (about
/// 120: big values waste their chunks and crowd small keys out; the gap is checked so that this
/// test can tell the two apart).
#[test]
fn large_items_let_a_log_uniform_mix_fill_the_budget() {
    let run = |page_size: u64, large: Option<u64>, seed: u64| {
        let (mut e, _clock) = engine_with(EngineConfig {
            maxmemory: 64 << 20,
            page_size,
            large_items: large,
            ..EngineConfig::default()
        });
        let t = tenant(&mut e, "t", Policy::AllkeysLru);
        let mut rng = Rng::new(seed);
        let max = 900.0 * 1024.0f64;
        let mut sizes = Vec::new();
        for i in 0..3000u64 {
            let len = (rng.next_f64() * max.ln()).exp() as usize;
            sizes.push(len);
            e.set(t, &key(i), &vec![b'v'; len], SetOptions::default())
                .unwrap();
        }
        e.check_invariants();
        // The ideal: the newest keys whose key + value bytes fit in maxmemory.
        let mut bytes = 0u64;
        let ideal = sizes
            .iter()
            .rev()
            .take_while(|&&l| {
                bytes += l as u64 + 24;
                bytes <= 64 << 20
            })
            .count() as u64;
        (e.len(t), ideal, e.stats())
    };
    for seed in 1..=3 {
        let (with, ideal, s) = run(16 << 10, Some(2 << 10), seed);
        // Without: every item in a page, so pages of 1 MiB (the server's former default).
        let (without, _, _) = run(1 << 20, None, seed);
        assert!(s.large_bytes > 0 && s.used_bytes <= 64 << 20, "{s:?}");
        assert!(
            with as f64 >= 0.9 * ideal as f64,
            "seed {seed}: large items on: {with} keys, an ideal LRU {ideal}"
        );
        assert!(
            (without as f64) < 0.5 * with as f64,
            "seed {seed}: large items off kept {without}, on {with}: the test no longer tells them apart"
        );
    }
}

/// Compaction moves items without changing them: after deletes leave every other chunk free,
/// large items that need the budget get pages by compaction, and every small key left reads its
/// own value with its own TTL.
#[test]
fn compaction_moves_items_intact() {
    let (mut e, _clock) = engine_with(EngineConfig {
        maxmemory: 64 * 4096,
        page_size: 4096,
        large_items: Some(1024),
        ..EngineConfig::default()
    });
    let t = tenant(&mut e, "t", Policy::AllkeysLru);
    let far = e.now_ms() + 10_000_000;
    for i in 0..1500u64 {
        let opts = SetOptions {
            expire: Expire::AtMs(far + i),
            ..SetOptions::default()
        };
        e.set(t, &key(i), &val(i, 100), opts).unwrap();
    }
    for i in (0..1500u64).step_by(2) {
        assert!(e.delete(t, &key(i)));
    }
    let before = e.stats().pages_used;
    for i in 0..20u64 {
        e.set(t, &key(100_000 + i), &val(i, 3000), SetOptions::default())
            .unwrap();
    }
    e.check_invariants();
    assert!(e.stats().pages_used < before, "no page was freed");
    let mut kept = 0;
    for i in (1..1500u64).step_by(2) {
        if let Some(v) = e.get(t, &key(i)) {
            assert_eq!(v, &val(i, 100)[..], "key {i}");
            assert_eq!(e.expire_at(t, &key(i)), Some(Some(far + i)));
            kept += 1;
        }
    }
    // Compaction evicts nothing: the 20 large items fit in the pages it freed.
    assert_eq!(kept, 750, "small keys lost");
    assert_eq!(e.stats().evictions, 0);
}

/// An arbiter that always names pool 0 as the victim and lets no pool take another's pages: what
/// the controllers' target arbiter does when a volatile-* pool is the one furthest above its
/// target.
#[derive(Debug)]
struct BlamesPoolZero;

impl locus_engine::arbiter::Arbiter for BlamesPoolZero {
    fn name(&self) -> &'static str {
        "blames-pool-zero"
    }
    fn may_grow(&self, view: &locus_engine::arbiter::ArbiterView<'_>, _p: PoolId) -> bool {
        view.free_pages() > 0
    }
    fn may_reclaim_from(
        &self,
        _view: &locus_engine::arbiter::ArbiterView<'_>,
        p: PoolId,
        from: PoolId,
    ) -> bool {
        p == from
    }
    fn victim(
        &mut self,
        _view: &locus_engine::arbiter::ArbiterView<'_>,
        _p: PoolId,
    ) -> locus_engine::arbiter::Victim {
        locus_engine::arbiter::Victim::Pool(PoolId(0))
    }
}

/// A write to an allkeys-* tenant is never refused while it has items of its own to evict, even
/// when the pool the arbiter names has nothing its policy lets go (volatile-lru without TTL keys):
/// the issue #11 soak found large writes answered OOM this way under the kredis controller.
#[test]
fn a_victim_with_nothing_to_give_does_not_refuse_the_write() {
    for large in [Some(2048), None] {
        let (mut e, _clock) = engine_with(EngineConfig {
            large_items: large,
            ..small(64)
        });
        let vol = tenant(&mut e, "vol", Policy::VolatileLru);
        let w = tenant(&mut e, "w", Policy::AllkeysLru);
        e.set_arbiter(Box::new(BlamesPoolZero));
        // The volatile tenant fills half the budget with keys that have no TTL.
        for i in 0..100u64 {
            e.set(vol, &key(i), &val(i, 1000), SetOptions::default())
                .unwrap();
        }
        let size = if large.is_some() { 3000 } else { 1000 };
        for i in 0..500u64 {
            e.set(w, &key(i), &val(i, size), SetOptions::default())
                .unwrap_or_else(|err| panic!("large_items {large:?}: write {i}: {err}"));
        }
        assert_eq!(
            e.len(vol),
            100,
            "large_items {large:?}: the volatile tenant lost keys"
        );
        assert!(e.len(w) > 0 && e.stats().used_bytes <= 64 * 4096);
        e.check_invariants();
    }
}
