//! Prints how long `solve_dp` takes on synthetic curves (not a criterion bench; nothing is
//! asserted). Run: `cargo run --release -p locus-alloc --example dp_timing`.

use std::time::{Duration, Instant};

use locus_alloc::{DpProblem, Objective, miss_cost, solve_dp};

/// A miss-ratio curve over `0..=len` units: a power-law decay plus a cliff at a pool-specific
/// point, so the optimum is not a greedy one.
fn curve(pool: usize, len: u64) -> Vec<f64> {
    let alpha = 0.3 + 0.1 * (pool % 7) as f64;
    let cliff = len / (2 + pool as u64 % 5);
    (0..=len)
        .map(|u| {
            let base = 1.0 / (1.0 + u as f64).powf(alpha);
            if u >= cliff { base * 0.5 } else { base }
        })
        .collect()
}

fn problem(pools: usize, total: u64, radius: Option<u64>) -> DpProblem {
    let costs = (0..pools)
        .map(|i| {
            let rate = 1000.0 * (1 + i % 3) as f64;
            let penalty = 100.0 * (1 + i % 4) as f64;
            miss_cost(&curve(i, total), rate, penalty, Objective::MissLatency)
        })
        .collect();
    let even = total / pools as u64;
    DpProblem {
        costs,
        total,
        floors: vec![],
        caps: vec![],
        current: radius.map(|_| vec![even; pools]),
        max_move: radius,
    }
}

/// CPU seconds (user + system) this thread has used, from Linux's `/proc/thread-self/stat`
/// (clock ticks, 100 per second: the mean over the runs is good to about 2 ms); `None`
/// elsewhere. On a shared machine wall time also counts waiting for a core.
fn thread_cpu() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the ")" that closes the command name; utime and stime are fields 14 and 15.
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn main() {
    println!("pools  total  radius   wall (median of 5)   CPU (mean of 5)");
    for &(pools, total, radius) in &[
        (2, 4096, None),
        (4, 1024, None),
        (4, 2048, None),
        (4, 4096, None),
        (8, 2048, None),
        (8, 4096, None),
        (16, 4096, None),
        (8, 4096, Some(64)),
        (16, 4096, Some(64)),
    ] {
        let p = problem(pools, total, radius);
        let runs = 5;
        let cpu0 = thread_cpu();
        let mut wall: Vec<Duration> = (0..runs)
            .map(|_| {
                let t = Instant::now();
                let a = solve_dp(&p).expect("synthetic problem is feasible");
                std::hint::black_box(a);
                t.elapsed()
            })
            .collect();
        wall.sort();
        let cpu = match (cpu0, thread_cpu()) {
            (Some(a), Some(b)) => format!("{:.1} ms", (b - a) * 1e3 / f64::from(runs)),
            _ => "n/a".to_string(),
        };
        let r = radius.map_or("-".to_string(), |r| r.to_string());
        println!(
            "{pools:>5}  {total:>5}  {r:>6}   {:>8.2} ms   {cpu:>9}",
            wall[2].as_secs_f64() * 1e3
        );
    }
}
