//! Behaviour of the simulator on small experiments whose outcome is known exactly.

use std::path::Path;

use locus_sim::experiment::Experiment;
use locus_sim::{Options, Report, simulate};

fn exp(text: &str) -> Experiment {
    Experiment::parse(text, "test", Path::new(".")).unwrap()
}

fn run(e: &Experiment) -> Report {
    let r = simulate(e, &Options::default(), &|_, _| {}).unwrap();
    assert!(r.failed.is_empty(), "{:?}", r.failed);
    r
}

/// Memory holds every key: the only misses are the first access of each key, and each costs
/// exactly the constant penalty; the engine measures that penalty from the GET miss → SET gap.
#[test]
fn cold_misses_only_and_exact_penalty_accounting() {
    let e = exp(r#"
name = "cold"
memory = "4MiB"
page_size = "4KiB"
requests = 20000
interval = 5000
[[controller]]
name = "shared"
[[tenant]]
name = "a"
generator = { pattern = "uniform", keys = 500, value_size = 50 }
penalty = 300
hit_time = 2
"#);
    let r = run(&e);
    let t = &r.runs[0].tenants[0];
    assert_eq!(t.gets, 20_000);
    assert_eq!(t.misses, 500, "one cold miss per key");
    assert_eq!(t.miss_cost_us, 500.0 * 300.0);
    let want = 2.0 + 500.0 * 300.0 / 20_000.0;
    assert!(
        (t.mean_latency_us - want).abs() < 1e-9,
        "{}",
        t.mean_latency_us
    );
    assert!(
        (t.engine_penalty_us - 300.0).abs() < 1.0,
        "engine measured {} µs",
        t.engine_penalty_us
    );
    // Decision 0 at request 0, then 20000 GETs + 500 fills = 20500 accesses: decisions at
    // 5000, 10000, 15000, 20000.
    assert_eq!(r.runs[0].intervals.len(), 5);
    assert_eq!(r.runs[0].intervals[0].at_request, 0);
    assert_eq!(r.metric, "mean_latency_us");
}

const TWO: &str = r#"
name = "two"
memory = "1MiB"
page_size = "16KiB"
requests = 30000
interval = 3000
seed = 7
[[controller]]
name = "shared"
[[controller]]
name = "static"
label = "static-1-3"
settings = { shares = "1,3" }
[[controller]]
name = "shared"
label = "shared-k10-random"
policy = "allkeys-random"
samples = 10
[[tenant]]
name = "small"
generator = { pattern = "zipf", alpha = 0.8, keys = 20000, value_size = 100 }
penalty = { dist = "exponential", mean = 100 }
[[tenant]]
name = "big"
rate = 3000
generator = { pattern = "zipf", alpha = 0.8, keys = 20000, value_size = 100 }
penalty = { dist = "uniform", min = 500, max = 1500 }
"#;

/// Runs are deterministic (same report twice, whatever the thread count), the static controller
/// converges to its 1:3 targets, and every controller sees the same request stream.
#[test]
fn deterministic_parallel_runs_and_static_targets() {
    let e = exp(TWO);
    let a = run(&e);
    let b = simulate(
        &e,
        &Options {
            threads: 1,
            ..Options::default()
        },
        &|_, _| {},
    )
    .unwrap();
    for (x, y) in a.runs.iter().zip(&b.runs) {
        assert_eq!(x.tenants, y.tenants);
        assert_eq!(x.intervals, y.intervals);
    }
    let st = a.runs.iter().find(|r| r.label == "static-1-3").unwrap();
    let total = a.pages_total;
    assert_eq!(st.tenants[0].final_target, Some(total / 4));
    assert_eq!(st.tenants[1].final_target, Some(total * 3 / 4));
    let pages0 = st.tenants[0].final_pages as i64;
    assert!(
        (pages0 - (total / 4) as i64).abs() <= 2,
        "{pages0} of {total}"
    );
    // Same requests for every controller.
    for t in 0..2 {
        assert_eq!(a.runs[0].tenants[t].gets, a.runs[1].tenants[t].gets);
    }
    assert_eq!(a.ordering.len(), 3);
    // A controller entry's eviction overrides apply to every tenant of its run only.
    let k10 = a
        .runs
        .iter()
        .find(|r| r.label == "shared-k10-random")
        .unwrap();
    assert!(k10.tenants.iter().all(|t| t.final_samples == 10));
    assert!(a.runs[0].tenants.iter().all(|t| t.final_samples == 5));
    assert_ne!(k10.tenants[0].hits, a.runs[0].tenants[0].hits);
}

/// Phases switch generator options; an interleaved trace file and a generator feed two tenants;
/// the exact pass gives one curve per tenant whose value at full memory matches the cold misses.
#[test]
fn phases_traces_and_exact_curves() {
    let dir = std::env::temp_dir().join(format!("locus-sim-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("t.csv");
    let mut w = locus_trace::create(&trace, locus_trace::Format::LocusCsv).unwrap();
    for i in 0..4000u64 {
        w.write(&locus_trace::Request {
            time_us: i * 10,
            key: i % 100,
            value_size: 10,
            ..Default::default()
        })
        .unwrap();
    }
    w.finish().unwrap();
    let text = format!(
        r#"
name = "mix"
memory = "2MiB"
page_size = "4KiB"
interval = 2000
[[controller]]
name = "shared"
[[tenant]]
name = "gen"
generator = {{ pattern = "loop", keys = 300, value_size = 20 }}
[[tenant]]
name = "file"
trace = {{ path = "{}" }}
penalty = 50
[[phase]]
requests = 3000
[[phase]]
requests = 3000
tenant.gen = {{ pattern = "uniform", keys = 50 }}
"#,
        trace.display()
    );
    let e = exp(&text);
    assert_eq!(
        e.total_requests(),
        None,
        "the phases count generated requests only"
    );
    let r = run(&e);
    let run0 = &r.runs[0];
    assert_eq!(run0.requests, 6000 + 4000);
    assert_eq!(run0.tenants[0].gets, 6000);
    let file = &run0.tenants[1];
    assert!(
        file.gets > 0 && file.misses == 100.min(file.gets),
        "{file:?}"
    );
    let curves = locus_sim::exact::exact_curves(&e, r.maxmemory).unwrap();
    assert_eq!(curves.phases.len(), 2);
    let whole = &curves.whole.tenants[1];
    let last = whole.mrc.points().last().unwrap().1;
    assert!((last - 100.0 / whole.gets as f64).abs() < 1e-9, "{last}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A trace-column penalty without a default is an error naming the tenant, not a silent zero.
#[test]
fn missing_trace_penalty_is_an_error() {
    let e = exp(r#"
name = "p"
memory = "1MiB"
requests = 100
[[controller]]
name = "shared"
[[tenant]]
name = "a"
generator = "pattern=uniform,keys=10"
penalty = "trace"
"#);
    let r = simulate(&e, &Options::default(), &|_, _| {}).unwrap();
    assert_eq!(r.failed.len(), 1);
    assert!(r.failed[0].1.contains("tenant 'a'"), "{}", r.failed[0].1);
}

/// The oracle plans from exact curves: it beats free competition and equal shares on the
/// modelled latency, and its per-phase variant switches targets at the phase boundary.
#[test]
fn oracle_plans_whole_run_and_per_phase() {
    let e = exp(r#"
name = "orc"
memory = "256KiB"
page_size = "8KiB"
interval = 4000
baseline = "shared"
[[controller]]
name = "shared"
[[controller]]
name = "static"
[[controller]]
name = "oracle"
[[controller]]
name = "oracle"
label = "oracle-phased"
settings = { per_phase = true }
[[tenant]]
name = "a"
generator = { pattern = "zipf", alpha = 0.7, keys = 8000, value_size = 100 }
penalty = 100
[[tenant]]
name = "b"
generator = { pattern = "uniform", keys = 200, value_size = 100 }
penalty = 1000
[[phase]]
requests = 15000
[[phase]]
requests = 15000
tenant.b = { pattern = "uniform", keys = 4000 }
tenant.a = { pattern = "uniform", keys = 100 }
"#);
    let r = run(&e);
    let get = |l: &str| r.runs.iter().find(|x| x.label == l).unwrap();
    let lat = |l: &str| get(l).overall.mean_latency_us;
    assert!(lat("oracle-phased") < lat("shared"), "{r:?}");
    assert!(lat("oracle-phased") < lat("static"));
    let plan = r.oracle.as_ref().and_then(|o| o.plan.as_ref()).unwrap();
    assert_eq!(plan.phase_pages.len(), 2);
    assert_ne!(plan.phase_pages[0], plan.phase_pages[1]);
    // The phased run's targets follow the plan of each phase.
    let rows = &get("oracle-phased").intervals;
    let t0: Vec<u64> = rows[0].targets.iter().map(|t| t.unwrap()).collect();
    let tl: Vec<u64> = rows
        .last()
        .unwrap()
        .targets
        .iter()
        .map(|t| t.unwrap())
        .collect();
    assert_eq!(t0, plan.phase_pages[0]);
    assert_eq!(tl, plan.phase_pages[1]);
    // Per-phase GET outcomes add up to the run's.
    for run in &r.runs {
        assert_eq!(run.phases.len(), 2);
        for t in 0..2 {
            let gets: u64 = run.phases.iter().map(|p| p.tenants[t].gets).sum();
            let hits: u64 = run.phases.iter().map(|p| p.tenants[t].hits).sum();
            assert_eq!((gets, hits), (run.tenants[t].gets, run.tenants[t].hits));
        }
    }
    let gain = r.oracle_gain.iter().find(|(l, _)| l == "shared").unwrap().1;
    assert_eq!(gain, 0.0);
}

/// The oracle packs items as the engine does (issue 16): 3,000-byte items take a whole 4 KiB page
/// each, so a 750-key loop needs 750 of the 1,250 pages. Charging chunk bytes, the plan put the loop below
/// its cliff (0% hits, every partitioning controller far ahead); now it gives the loop its
/// pages and no controller that only partitions (same policy, same K) beats it beyond noise.
#[test]
fn the_oracle_packs_items_per_page_as_the_engine_does() {
    let e = exp(r#"
name = "packing"
memory = "5000KiB"
page_size = "4KiB"
requests = 300000
interval = 20000
max_moves = 64
[[controller]]
name = "shared"
[[controller]]
name = "oracle"
[[controller]]
name = "mpart"
[[controller]]
name = "memsweeper-max"
[[tenant]]
name = "loop"
generator = { pattern = "loop", keys = 750, key_size = 16, value_size = 3000 }
policy = "allkeys-exact-lru"
penalty = 100
[[tenant]]
name = "zipf"
generator = { pattern = "zipf", alpha = 0.9, keys = 25000, key_size = 16, value_size = 100 }
policy = "allkeys-exact-lru"
penalty = 100
"#);
    let r = run(&e);
    let plan = r.oracle.as_ref().and_then(|o| o.plan.as_ref()).unwrap();
    assert!(plan.pages[0] >= 750, "loop planned {:?}", plan.pages);
    let get = |l: &str| r.runs.iter().find(|x| x.label == l).unwrap();
    assert!(get("oracle").tenants[0].hit_ratio > 0.95, "{r:?}");
    let best = get("oracle").overall.hit_ratio;
    for run in &r.runs {
        assert!(
            run.overall.hit_ratio <= best + 0.002,
            "{} {:.4} beats the oracle {best:.4}",
            run.label,
            run.overall.hit_ratio
        );
    }
}

/// Time interleaving merges two files by their own timestamps (each starting at 0); rate
/// interleaving gives each file its share of the requests.
#[test]
fn interleaving_by_time_and_by_rate() {
    let dir = std::env::temp_dir().join(format!("locus-sim-il-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, start) in [("a.csv", 1_000_000u64), ("b.csv", 5)] {
        let mut w = locus_trace::create(dir.join(name), locus_trace::Format::LocusCsv).unwrap();
        for i in 0..100u64 {
            w.write(&locus_trace::Request {
                time_us: start + i * 10 + if name == "b.csv" { 5 } else { 0 },
                key: i,
                value_size: 10,
                ..Default::default()
            })
            .unwrap();
        }
        w.finish().unwrap();
    }
    let text = |mode: &str| {
        format!(
            r#"
name = "il"
memory = "1MiB"
page_size = "4KiB"
interleave = "{mode}"
[[controller]]
name = "shared"
[[tenant]]
name = "a"
trace = {{ path = "{}" }}
[[tenant]]
name = "b"
rate = 3000
trace = {{ path = "{}" }}
"#,
            dir.join("a.csv").display(),
            dir.join("b.csv").display()
        )
    };
    let e = exp(&text("time"));
    let mut wl = locus_sim::workload::Workload::open(&e).unwrap();
    let mut it = locus_sim::workload::Item::default();
    let mut order = Vec::new();
    while wl.next(&mut it).unwrap() {
        order.push(it.tenant);
    }
    assert_eq!(order.len(), 200);
    assert!(order.chunks(2).all(|c| c == [0, 1]), "{order:?}");
    // By rate (1000 vs 3000): b's requests come about 3 times as often while both last.
    let e = exp(&text("rate"));
    let mut wl = locus_sim::workload::Workload::open(&e).unwrap();
    let mut first = Vec::new();
    while first.len() < 100 && wl.next(&mut it).unwrap() {
        first.push(it.tenant);
    }
    let b = first.iter().filter(|&&t| t == 1).count();
    assert!((60..=90).contains(&b), "{b} of 100");
    std::fs::remove_dir_all(&dir).ok();
}

/// The slab oracle plans pages per size class from exact per-class curves; its plan uses at most
/// the memory there is, and it does no worse than memcached's default (no page moves) here.
#[test]
fn slab_oracle_plans_classes() {
    let e = exp(r#"
name = "slab"
memory = "1MiB"
page_size = "16KiB"
requests = "60k"
interval = "5k"
class_mode = "manual"
[[controller]]
name = "memcached"
[[controller]]
name = "slab-oracle"
[[tenant]]
name = "a"
generator = { pattern = "zipf", alpha = 0.9, keys = "20k", value_size = "uniform:50:2000" }
"#);
    let r = run(&e);
    let plan = r.slab_oracle.as_ref().unwrap();
    assert!(plan.len() > 5, "{plan:?}");
    assert!(plan.iter().map(|c| c.pages).sum::<u64>() <= r.pages_total);
    let miss = |l: &str| {
        1.0 - r
            .runs
            .iter()
            .find(|x| x.label == l)
            .unwrap()
            .overall
            .hit_ratio
    };
    assert!(miss("slab-oracle") <= miss("memcached") + 0.005, "{r:?}");
}

/// A time interval follows the virtual clock (generated arrivals at 1000 req/s: ~10 s for 10k
/// requests); an object-count memory is room for that many items of the reference size.
#[test]
fn time_intervals_and_object_memory() {
    let e = exp(r#"
name = "time"
memory = { objects = 1000, item_size = 100 }
page_size = "4KiB"
requests = "10k"
interval = "1s"
[[controller]]
name = "shared"
[[tenant]]
name = "a"
rate = 1000
generator = { pattern = "uniform", keys = 5000, value_size = 92 }
"#);
    let r = run(&e);
    let decisions = r.runs[0].intervals.len();
    assert!((10..=12).contains(&decisions), "{decisions} decisions");
    let at: Vec<u64> = r.runs[0].intervals.iter().map(|i| i.at_us).collect();
    assert!(
        at.windows(2).skip(1).all(|w| w[1] - w[0] >= 1_000_000),
        "{at:?}"
    );
    // 100-byte items (+16 header) fall in a 120-ish byte class: 1000 of them plus one page of
    // slack per tenant, rounded up to pages.
    assert!(
        r.maxmemory >= 1000 * 116 && r.maxmemory <= 1000 * 160 + 2 * 4096,
        "{}",
        r.maxmemory
    );
    assert_eq!(r.maxmemory % 4096, 0);
    // About 1000 of the 5000 keys fit: the hit ratio of a uniform stream is about 1000/5000.
    let hr = r.runs[0].overall.hit_ratio;
    assert!(hr > 0.12 && hr < 0.25, "{hr}");
}

/// `steady = f` reports the last fraction of the run and of each phase on their own; a phase's
/// `key_offset` moves its key set; the per-phase slab oracle plans each phase and is at least
/// as good as the whole-run plan in every phase's steady state.
#[test]
fn steady_windows_key_offsets_and_the_per_phase_slab_oracle() {
    let e = exp(r#"
name = "steady"
memory = "1MiB"
page_size = "16KiB"
interval = "5k"
baseline = "memcached"
steady = 0.5
[[controller]]
name = "memcached"
[[controller]]
name = "slab-oracle"
settings = { per_phase = true }
[[controller]]
name = "slab-oracle"
label = "whole"
[[tenant]]
name = "a"
generator = { pattern = "zipf", alpha = 0.9, keys = "10k", value_size = "uniform:50:300" }
[[phase]]
name = "small"
requests = "40k"
[[phase]]
name = "large"
requests = "40k"
tenant.a = { key_offset = "10k", value_size = "uniform:1000:3000" }
"#);
    let r = run(&e);
    assert_eq!(r.slab_oracle_phases.len(), 2);
    for run in &r.runs {
        let names: Vec<&str> = run.steady.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["run", "small", "large"], "{}", run.label);
        assert_eq!(run.steady[0].overall.gets, 40_000);
        assert_eq!(run.steady[1].overall.gets, 20_000);
        assert_eq!(run.steady[2].overall.gets, 20_000);
        let whole: u64 = run.phases.iter().map(|p| p.overall.gets).sum();
        assert_eq!(whole, 80_000);
    }
    let hit = |l: &str, w: usize| {
        r.runs.iter().find(|x| x.label == l).unwrap().steady[w]
            .overall
            .hit_ratio
    };
    assert!(hit("slab-oracle", 2) + 0.005 >= hit("whole", 2), "{r:?}");
    assert!(hit("slab-oracle", 2) > hit("memcached", 2), "{r:?}");
    let gains = &r.steady_gain;
    assert_eq!(gains.len(), 3);
    let share = gains[2]
        .1
        .iter()
        .find(|(l, _)| l == "slab-oracle")
        .unwrap()
        .1;
    assert!((share - 1.0).abs() < 1e-9);
    // The large phase uses classes the small phase never touched.
    let classes = |p: &[locus_sim::exact::ClassPlan]| -> Vec<u16> {
        p.iter().filter(|c| c.pages > 0).map(|c| c.class).collect()
    };
    let (a, b) = (
        classes(&r.slab_oracle_phases[0]),
        classes(&r.slab_oracle_phases[1]),
    );
    assert!(b.iter().any(|c| !a.contains(c)), "{a:?} {b:?}");
}

/// Profiling on a thread of its own (`offload`) changes where the controllers' work runs, not what
/// they decide: every controller that profiles (KRR, AET, EAET, mini caches, shadow queues) gives
/// the same report, decisions and curves included, bit for bit.
#[test]
fn offloaded_controllers_decide_exactly_as_inline_ones() {
    let e = exp(r#"
name = "offload"
memory = "2MiB"
page_size = "16KiB"
requests = 120000
interval = 7000
[[controller]]
name = "kredis"
settings = { rate = 0.2 }
[[controller]]
name = "predis"
[[controller]]
name = "mpart"
settings = { rate = 0.2 }
[[controller]]
name = "dlru"
settings = { rate = 0.2 }
[[controller]]
name = "memsweeper-max"
[[controller]]
name = "memshare"
[[tenant]]
name = "hot"
generator = { pattern = "zipf", alpha = 0.9, keys = 20000, value_size = 100 }
penalty = 200
[[tenant]]
name = "loop"
generator = { pattern = "loop", keys = 9000, value_size = 100 }
penalty = 2000
"#);
    let report = |offload| {
        let opts = Options {
            threads: 2,
            offload,
            ..Options::default()
        };
        let r = simulate(&e, &opts, &|_, _| {}).unwrap();
        assert!(r.failed.is_empty(), "{:?}", r.failed);
        let mut v = serde_json::to_value(&r).unwrap();
        for run in v["runs"].as_array_mut().unwrap() {
            let run = run.as_object_mut().unwrap();
            assert_eq!(run["offload"], offload == locus_sim::Offload::On);
            for timing in [
                "wall_secs",
                "requests_per_sec",
                "replay_cpu_secs",
                "offload",
            ] {
                run.remove(timing);
            }
        }
        v
    };
    let inline = report(locus_sim::Offload::Off);
    let offloaded = report(locus_sim::Offload::On);
    assert!(
        inline["runs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["intervals"].as_array().unwrap().len() > 10),
        "every controller decided"
    );
    assert_eq!(inline, offloaded);
}

/// `seeds = 3` runs every controller under seeds 5, 6, 7: the first report is the single run of
/// seed 5, each figure's statistics are those of the three reports, and different seeds give
/// different draws (sd > 0). A seed count of 0 is an error with its key.
#[test]
fn seeds_report_mean_sd_min_max_per_figure() {
    let text = r#"
name = "seeds"
seed = 5
seeds = 3
memory = "512KiB"
page_size = "8KiB"
requests = 20000
interval = 5000
baseline = "shared"
[[controller]]
name = "shared"
[[controller]]
name = "oracle"
[[tenant]]
name = "a"
generator = { pattern = "zipf", alpha = 0.8, keys = 8000, value_size = 100 }
penalty = 100
[[tenant]]
name = "b"
generator = { pattern = "uniform", keys = 3000, value_size = 100 }
penalty = 500
"#;
    let e = exp(text);
    assert_eq!(e.seeds, 3);
    let (s, reports) =
        locus_sim::seeds::simulate_seeds(&e, &Options::default(), e.seeds, &|_, _| {}).unwrap();
    assert_eq!(s.seeds, vec![5, 6, 7]);
    assert_eq!(reports.len(), 3);
    let single = run(&e);
    assert_eq!(reports[0].runs[0].tenants, single.runs[0].tenants);
    assert_eq!(s.rows.len(), 2 * 3);
    for row in &s.rows {
        let (ri, run) = reports[0]
            .runs
            .iter()
            .enumerate()
            .find(|(_, r)| r.label == row.label)
            .unwrap();
        let pick = |r: &Report| {
            let run = &r.runs[ri];
            run.tenants
                .iter()
                .find(|t| t.name == row.tenant)
                .unwrap_or(&run.overall)
                .hit_ratio
        };
        let v: Vec<f64> = reports.iter().map(pick).collect();
        let mean = v.iter().sum::<f64>() / 3.0;
        assert!((row.hit_ratio.mean - mean).abs() < 1e-12, "{row:?}");
        assert_eq!(row.hit_ratio.min, v.iter().copied().fold(1.0, f64::min));
        assert_eq!(row.hit_ratio.max, v.iter().copied().fold(0.0, f64::max));
        assert!(row.hit_ratio.sd > 0.0, "{row:?}");
        assert!(row.mean_latency_us.min <= row.mean_latency_us.mean);
        assert!(row.mean_latency_us.mean <= row.mean_latency_us.max);
        assert_eq!(
            row.oracle_gain.is_some(),
            row.tenant == "overall",
            "{} {}",
            run.label,
            row.tenant
        );
    }
    let table = locus_sim::seeds::table(&s);
    assert!(table.contains(" ± "), "{table}");
    let csv = locus_sim::seeds::csv(&s);
    assert_eq!(csv.lines().count(), 1 + 6);
    assert!(csv.starts_with("controller,tenant,seeds,hit_ratio_mean,hit_ratio_sd"));
    let bad = text.replace("seeds = 3", "seeds = 0");
    let err = Experiment::parse(&bad, "test", Path::new("."))
        .unwrap_err()
        .to_string();
    assert!(err.contains("seeds"), "{err}");
}
