//! Tenants too small to sample (issue 29): pRedis's three-class shape at three scales.
//!
//! A cheap loop (20 ms a miss), a costly loop (300 ms) and a class of distinct keys (300 ms,
//! never reused), requests at rates 4:4:2, 1 ms a hit, one object per page; the loops have
//! 3·s and 4·s keys and memory holds 6·s objects (most, not all, of the two loops), for
//! s = 1, 10 and 1000. The best partition keeps the whole costly loop and gives the cheap one
//! what is left. `predis` and `kredis` at their default settings (penalties measured by the
//! engine, not hinted) must come within 10% of the oracle's mean latency at every scale and
//! seed. On the main branch before issue 29 this failed at every scale: predis sampled 1% of
//! the references (a 3-key class yields a handful of reuse times), the engine measured
//! penalties on 1/16 of the keys only (a 3-key tenant usually has none there, and its penalty
//! was taken as the others' 300 ms), and kredis waited ten decisions for the distinct class to
//! show a reuse it never shows. Means over seeds 1–3 there: predis 2.11, 1.31 and 1.27× the
//! oracle at s = 1, 10 and 1000; kredis 1.13, 1.10 and 1.05×.
//!
//! Run in release: `cargo test --release -p locus-sim --test small_tenants`.

use std::path::Path;

use locus_sim::experiment::Experiment;
use locus_sim::{Options, simulate};

fn setting(scale: u64, seed: u64) -> String {
    format!(
        r#"
name = "small_tenants_{scale}"
seed = {seed}
memory = "{mem}KiB"
page_size = "4KiB"
requests = "300k"
interval = "5k"

[[controller]]
name = "predis"

[[controller]]
name = "kredis"

[[controller]]
name = "oracle"

[[tenant]]
name = "cheap-loop"
rate = 4
generator = {{ pattern = "loop", keys = {a}, key_size = 8, value_size = 3900 }}
penalty = 20000
hit_time = 1000

[[tenant]]
name = "costly-loop"
rate = 4
generator = {{ pattern = "loop", keys = {b}, key_size = 8, value_size = 3900 }}
penalty = 300000
hit_time = 1000

[[tenant]]
name = "distinct"
rate = 2
generator = {{ pattern = "loop", keys = 100000000, key_size = 8, value_size = 3900 }}
penalty = 300000
hit_time = 1000
"#,
        mem = 6 * scale * 4,
        a = 3 * scale,
        b = 4 * scale,
    )
}

/// Mean latency (µs) of `predis`, `kredis` and `oracle` at this scale and seed.
fn run(scale: u64, seed: u64) -> [f64; 3] {
    let e = Experiment::parse(&setting(scale, seed), "small", Path::new(".")).unwrap();
    let r = simulate(&e, &Options::default(), &|_, _| {}).unwrap();
    assert!(r.failed.is_empty(), "{:?}", r.failed);
    let get = |label: &str| {
        r.runs
            .iter()
            .find(|x| x.label == label)
            .unwrap()
            .overall
            .mean_latency_us
    };
    [get("predis"), get("kredis"), get("oracle")]
}

#[test]
fn predis_and_kredis_come_within_ten_percent_of_the_oracle_at_every_scale() {
    let mut worst = Vec::new();
    for scale in [1, 10, 1000] {
        for seed in 1..=3 {
            let [p, k, o] = run(scale, seed);
            eprintln!(
                "scale {scale} seed {seed}: predis {:.3} kredis {:.3} × the oracle's {:.0} µs",
                p / o,
                k / o,
                o
            );
            worst.push((scale, seed, p / o, k / o));
        }
    }
    for (scale, seed, p, k) in worst {
        assert!(
            p <= 1.10,
            "predis at scale {scale}, seed {seed}: {p:.3}× the oracle"
        );
        assert!(
            k <= 1.10,
            "kredis at scale {scale}, seed {seed}: {k:.3}× the oracle"
        );
    }
}
