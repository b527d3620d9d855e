//! The memcached-style slab controllers on a calcification workload (LAMA paper 002, sections
//! 2 and 5.5): phase 1 fills memory with small items; in phase 2 half the requests go to a hot
//! set of large items. memcached's default allocation keeps every page with the small class;
//! LAMA, PSA, Facebook's age balancing and Twemcache's random slab eviction move pages.

use std::sync::Arc;

use locus_common::{Rng, VirtualClock};
use locus_control as control;
use locus_engine::control::{ControlConfig, Interval, Settings};
use locus_engine::{ClassMode, Engine, EngineConfig, SetOptions, TenantConfig};

const PAGE: u64 = 64 << 10;
const PAGES: u64 = 32;

/// Runs the two phases under `controller`; returns the phase-2 hit ratio of the large items
/// and of everything.
fn run(controller: &str, settings: &[(&str, &str)]) -> (f64, f64, Engine) {
    let clock = Arc::new(VirtualClock::new(0));
    let cfg = EngineConfig {
        maxmemory: PAGES * PAGE,
        page_size: PAGE,
        seed: 7,
        ..EngineConfig::default()
    };
    let mut e = Engine::new(cfg, clock.clone()).unwrap();
    let t = e.add_tenant(TenantConfig::new("app")).unwrap();
    let settings = Settings::new(
        controller,
        settings.iter().map(|(k, v)| (k.to_string(), v.to_string())),
    );
    e.set_controller(
        control::build(controller, settings).unwrap(),
        ControlConfig {
            interval: Interval::Requests(20_000),
            max_moves: 64,
            offload: false,
        },
    );
    let small = [1u8; 100];
    let large = [2u8; 2000];
    let mut rng = Rng::new(11);
    let access = |e: &mut Engine, key: String, v: &[u8]| -> bool {
        clock.advance_us(10);
        if e.get(t, key.as_bytes()).is_some() {
            return true;
        }
        clock.advance_us(100);
        let _ = e.set(t, key.as_bytes(), v, SetOptions::default());
        false
    };
    for _ in 0..100_000 {
        let k = format!("s{:06}", rng.below(30_000));
        access(&mut e, k, &small);
    }
    let (mut big_hits, mut big, mut hits, mut n) = (0u64, 0u64, 0u64, 0u64);
    for i in 0..400_000 {
        let is_big = rng.below(2) == 0;
        let (k, v) = if is_big {
            (format!("L{:06}", rng.below(500)), &large[..])
        } else {
            (format!("s{:06}", rng.below(30_000)), &small[..])
        };
        let hit = access(&mut e, k, v);
        if i >= 200_000 {
            n += 1;
            hits += u64::from(hit);
            if is_big {
                big += 1;
                big_hits += u64::from(hit);
            }
        }
    }
    e.check_invariants();
    (big_hits as f64 / big as f64, hits as f64 / n as f64, e)
}

#[test]
fn lama_and_the_movers_escape_calcification_memcached_does_not() {
    let (mc_big, mc_all, e) = run("memcached", &[]);
    assert_eq!(e.class_mode(), ClassMode::Manual);
    assert!(
        mc_big < 0.05,
        "memcached keeps the large class starved: {mc_big}"
    );
    let (lama_big, lama_all, e) = run("lama", &[]);
    assert!(
        lama_big > 0.9 && lama_all > mc_all + 0.3,
        "lama large {lama_big} all {lama_all} vs memcached {mc_all}"
    );
    assert!(e.control_records().iter().any(|r| r.moves_done > 0));
    let (psa_big, psa_all, _) = run("psa", &[("misses_per_move", "200")]);
    assert!(
        psa_all > mc_all,
        "psa {psa_all} (large {psa_big}) vs {mc_all}"
    );
    let (tw_big, tw_all, e) = run("twemcache", &[]);
    assert_eq!(e.class_mode(), ClassMode::RandomSlab);
    assert!(
        tw_all > mc_all,
        "twemcache {tw_all} (large {tw_big}) vs {mc_all}"
    );
    let (fb_big, fb_all, _) = run("facebook", &[]);
    assert!(
        fb_all > mc_all,
        "facebook {fb_all} (large {fb_big}) vs {mc_all}"
    );
    println!(
        "phase-2 hit ratio (large items): memcached {mc_all:.3} ({mc_big:.3}) lama {lama_all:.3} ({lama_big:.3}) psa {psa_all:.3} ({psa_big:.3}) facebook {fb_all:.3} ({fb_big:.3}) twemcache {tw_all:.3} ({tw_big:.3})"
    );
}

#[test]
fn slab_controllers_reject_bad_settings() {
    for (name, key, value) in [
        ("lama", "objective", "fast"),
        ("lama", "sample_rate", "0"),
        ("lama", "edge_cap", "-1"),
        ("lama", "max_intervals", "0"),
        ("psa", "misses_per_move", "0"),
        ("facebook", "threshold", "1.5"),
    ] {
        let s = Settings::new(name, [(key.to_string(), value.to_string())]);
        let err = control::build(name, s).unwrap_err();
        assert!(err.to_string().contains(key), "{name}: {err}");
    }
    let s = Settings::new("automove", [("window".to_string(), "3".to_string())]);
    assert!(control::build("automove", s).is_err());
}
