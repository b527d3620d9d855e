//! LAMA's prediction of the default memcached's miss ratio (paper 002, section 3.5 and Table 2)
//! against the simulator's `memcached` runs, at every memory size of an experiment's `[sweep]`
//! (fractions of the working set), under several seeds.
//!
//! ```text
//! cargo run --release -p locus-sim --example lama_predict -- experiments/lama_predict.toml [SEEDS]
//! ```
//!
//! For each seed (the file's `seed`, `seed + 1`, ...) and size: the predicted miss ratio
//! (`locus_sim::predict`), the measured one of the `memcached` run (whole run: the curves are
//! those of the whole run, compulsory misses included), and the paper's accuracy
//! `1 - |predicted - measured| / measured`. Prints one Markdown table.

use std::path::Path;

use locus_sim::experiment::{Experiment, Memory};
use locus_sim::predict::ClassFootprints;
use locus_sim::sweep::{memory_for, working_set_bytes};
use locus_sim::{Options, simulate};

fn stats(v: &[f64]) -> (f64, f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    (s[0], s[s.len() / 2], s[s.len() - 1])
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .ok_or("usage: lama_predict EXPERIMENT.toml [SEEDS]")?;
    let seeds: u64 = args.get(2).map_or(Ok(3), |s| s.parse())?;
    let base = Experiment::load(Path::new(path))?;
    let fractions = base
        .sweep
        .as_ref()
        .map(|s| s.memory.clone())
        .ok_or("the experiment needs a [sweep] of memory fractions")?;
    let opts = Options {
        threads: 1,
        only: vec!["memcached".into()],
        ..Options::default()
    };
    // rows[f] = (pages, predicted per seed, measured per seed)
    let mut rows = vec![(0u64, Vec::new(), Vec::new()); fractions.len()];
    for s in 0..seeds {
        let mut exp = base.clone();
        exp.seed = base.seed + s;
        let ws = working_set_bytes(&exp)?;
        let fp = ClassFootprints::measure(&exp)?;
        for (i, &f) in fractions.iter().enumerate() {
            let bytes = memory_for(&exp, ws, f);
            let predicted = fp.predict(bytes, exp.page_size)?;
            let mut e = exp.clone();
            e.memory = Memory::Bytes(bytes);
            e.sweep = None;
            let r = simulate(&e, &opts, &|_, _| {})?;
            let run = &r.runs[0];
            let measured = 1.0 - run.overall.hit_ratio;
            eprintln!(
                "seed {} at {f}: {} pages, predicted {:.4}, measured {measured:.4}",
                exp.seed,
                bytes / exp.page_size,
                predicted.miss_ratio
            );
            rows[i].0 = bytes / exp.page_size;
            rows[i].1.push(predicted.miss_ratio);
            rows[i].2.push(measured);
        }
    }
    println!(
        "| memory (fraction of the working set, pages) | measured miss ratio % | predicted % | accuracy % |"
    );
    println!("|---|---|---|---|");
    let mut all = Vec::new();
    for (f, (pages, pred, meas)) in fractions.iter().zip(&rows) {
        let acc: Vec<f64> = pred
            .iter()
            .zip(meas)
            .map(|(p, m)| 100.0 * (1.0 - (p - m).abs() / m))
            .collect();
        all.extend(&acc);
        let show = |v: &[f64], k: f64| {
            let (a, b, c) = stats(v);
            format!("{:.2} / {:.2} / {:.2}", a * k, b * k, c * k)
        };
        println!(
            "| {f} ({pages}) | {} | {} | {} |",
            show(meas, 100.0),
            show(pred, 100.0),
            show(&acc, 1.0)
        );
    }
    let mean = all.iter().sum::<f64>() / all.len().max(1) as f64;
    println!("\nmean accuracy over {} runs: {mean:.2}%", all.len());
    Ok(())
}
