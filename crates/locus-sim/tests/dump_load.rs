//! pRedis's automatic dump/load (section 4) in the simulator: two tenants on opposite daily
//! cycles. These fail when dump/load stops doing its job: the idle tenant's items are not put back
//! before its active phase, or the active tenant does not gain the memory.

use std::path::Path;

use locus_sim::experiment::Experiment;
use locus_sim::run::RunResult;
use locus_sim::{Options, simulate};

const DAYS: usize = 4;
/// Requests per half day (20 s of virtual time at 2000 req/s).
const HALF: u64 = 40_000;

fn experiment() -> Experiment {
    let mut text = String::from(
        r#"
name = "dump_load"
seed = 7
memory = { objects = "14k" }
interval = "20k"
[dump_load]
bucket = "1s"
window = 6
lead = "2s"
[[controller]]
name = "shared"
label = "none"
dump_load = "never"
[[controller]]
name = "shared"
label = "auto"
dump_load = "auto"
[[controller]]
name = "shared"
label = "schedule"
[[tenant]]
name = "shop"
rate = 1900
generator = { pattern = "zipf", keys = "20k", alpha = 0.9, value_size = 200 }
penalty = "1ms"
hit_time = "100us"
dump_load = "every 40s idle 20s-40s lead 2s"
[[tenant]]
name = "night"
rate = 100
generator = { pattern = "zipf", keys = "20k", alpha = 0.9, value_size = 200 }
penalty = "1ms"
hit_time = "100us"
dump_load = "every 40s idle 0s-20s lead 2s"
"#,
    );
    for d in 1..=DAYS {
        for (half, shop, night) in [("day", 1900, 100), ("night", 100, 1900)] {
            text.push_str(&format!(
                "[[phase]]\nname = \"d{d}-{half}\"\nrequests = {HALF}\n\
                 [phase.tenant.shop]\nrate = {shop}\n[phase.tenant.night]\nrate = {night}\n"
            ));
        }
    }
    Experiment::parse(&text, "test", Path::new(".")).unwrap()
}

fn runs() -> Vec<RunResult> {
    let r = simulate(&experiment(), &Options::default(), &|_, _| {}).unwrap();
    assert!(r.failed.is_empty(), "{:?}", r.failed);
    r.runs
}

fn by_label<'a>(runs: &'a [RunResult], label: &str) -> &'a RunResult {
    runs.iter().find(|r| r.label == label).unwrap()
}

/// Tenant index of the active tenant in phase `p` (even: shop, odd: night).
fn active(p: usize) -> usize {
    p % 2
}

/// Each tenant's stash is put back (with items) before its active phases begin, once the
/// detector knows the period (auto) or from the start (schedule); the tenant is dumped during
/// its quiet phases.
#[test]
fn loads_come_before_the_active_phase_and_dumps_in_the_quiet_one() {
    let runs = runs();
    assert!(by_label(&runs, "none").dump_load.is_empty());
    // Auto: the first two rises of a tenant are met reactively (shop: phases 2 and 4, night: 3
    // and 5); their distance is the period, so from phase 6 on every load is ahead of the rise.
    for (label, from_phase) in [("schedule", 2), ("auto", 6)] {
        let run = by_label(&runs, label);
        for p in from_phase..2 * DAYS {
            let start = p as u64 * HALF;
            let name = &run.tenants[active(p)].name;
            // The last load of this tenant before the phase's first request...
            let load = run
                .dump_load
                .iter()
                .rfind(|e| &e.tenant == name && e.action == "load" && e.at_request < start);
            // ...and no dump of it in between.
            let load = load.unwrap_or_else(|| {
                panic!(
                    "{label}: no load of {name} before phase {p}: {:?}",
                    run.dump_load
                )
            });
            assert!(
                !run.dump_load.iter().any(|e| &e.tenant == name
                    && e.action == "dump"
                    && e.at_request > load.at_request
                    && e.at_request < start),
                "{label}: {name} dumped again before phase {p}: {:?}",
                run.dump_load
            );
            assert!(load.items > 1000, "{label}: {load:?} put back too little");
            assert!(
                start - load.at_request < HALF / 2,
                "{label}: {load:?} too early for phase {p}"
            );
            // A dump of the tenant that went quiet, around this phase's start (phases end by
            // request count, schedules by time: they differ by a few requests).
            let quiet = &run.tenants[1 - active(p)].name;
            assert!(
                run.dump_load.iter().any(|e| &e.tenant == quiet
                    && e.action == "dump"
                    && (start - HALF / 20..start + HALF / 4).contains(&e.at_request)
                    && e.items > 1000),
                "{label}: {quiet} not dumped early in phase {p}: {:?}",
                run.dump_load
            );
        }
    }
}

/// The active tenant of each phase after the first day hits more with dump/load than without,
/// and the modelled latency over the whole run is lower.
#[test]
fn the_active_tenant_gains_and_the_mean_latency_falls() {
    let runs = runs();
    let none = by_label(&runs, "none");
    for label in ["auto", "schedule"] {
        let run = by_label(&runs, label);
        let mut gains = Vec::new();
        for p in 2..2 * DAYS {
            let a = active(p);
            let (with, without) = (
                run.phases[p].tenants[a].hit_ratio,
                none.phases[p].tenants[a].hit_ratio,
            );
            eprintln!("{label} phase {p}: active tenant hit ratio {with:.4} vs {without:.4}");
            assert!(
                with > without + 0.01,
                "{label} phase {p}: active tenant hit ratio {with} vs {without} without dump/load"
            );
            gains.push(with - without);
        }
        let mean = gains.iter().sum::<f64>() / gains.len() as f64;
        assert!(
            mean > 0.03,
            "{label}: mean gain {mean} of the active tenant"
        );
        assert!(
            run.overall.mean_latency_us < none.overall.mean_latency_us * 0.97,
            "{label}: {} µs vs {} µs",
            run.overall.mean_latency_us,
            none.overall.mean_latency_us
        );
    }
}

/// Bad settings are reported with their key paths.
#[test]
fn bad_dump_load_settings_are_reported() {
    let err = Experiment::parse(
        r#"
name = "bad"
memory = "1MiB"
requests = 10
[dump_load]
window = 0
[[controller]]
name = "shared"
dump_load = "sometimes"
[[tenant]]
name = "a"
generator = { pattern = "uniform", keys = 10 }
dump_load = "every 10s idle 5s-20s"
[[phase]]
requests = 5
[phase.tenant.a]
rate = -1
"#,
        "bad",
        Path::new("."),
    )
    .unwrap_err()
    .to_string();
    for want in [
        "dump_load.window",
        "controller[0].dump_load",
        "tenant[0].dump_load",
        "phase[0].tenant.a.rate",
    ] {
        assert!(err.contains(want), "{want} missing from: {err}");
    }
}
