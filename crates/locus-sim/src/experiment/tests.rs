use super::*;

fn parse(s: &str) -> Result<Experiment, SimError> {
    Experiment::parse(s, "test.toml", Path::new("."))
}

const OK: &str = r#"
name = "t"
memory = "4MiB"
requests = "10k"
interval = "1k"
[[controller]]
name = "shared"
[[controller]]
name = "static"
settings = { shares = [1, 3] }
[[tenant]]
name = "a"
generator = { pattern = "zipf", alpha = 0.9, keys = "10k", value_size = 100 }
penalty = { dist = "exponential", mean = "1ms" }
hit_time = 5
[[tenant]]
name = "b"
rate = 500
generator = "pattern=loop,keys=2000"
penalty = 200
"#;

#[test]
fn parses_a_full_experiment() {
    let e = parse(OK).unwrap();
    assert_eq!(e.memory, Memory::Bytes(4 << 20));
    assert_eq!(e.requests, Some(10_000));
    assert_eq!(e.interval, Interval::Requests(1000));
    assert_eq!(
        e.controllers[1].settings,
        vec![("shares".into(), "1,3".into())]
    );
    assert_eq!(e.tenants[0].penalty, Penalty::Exponential { mean: 1000.0 });
    assert_eq!(e.tenants[0].hit_us, 5.0);
    assert_eq!(e.tenants[1].rate, 500.0);
    assert_eq!(e.lru_clock, LruClockMode::Logical);
    let Source::Generator(o) = &e.tenants[0].source else {
        panic!()
    };
    assert_eq!(o.get("value-size").map(String::as_str), Some("100"));
}

#[test]
fn every_problem_is_reported_with_its_path() {
    let bad = r#"
name = "t"
memory = "4XB"
interval = "soon"
[[controller]]
name = "nope"
[[controller]]
name = "static"
settings = { sharez = "1" }
[[tenant]]
name = "a"
generator = { pattern = "zipf", alpha = -1 }
penalty = { dist = "gamma", mean = 1 }
[[tenant]]
name = "a"
trace = { path = "/does/not/exist" }
"#;
    let Err(SimError::Invalid { problems, .. }) = parse(bad) else {
        panic!("expected Invalid");
    };
    let joined = problems.join("\n");
    for key in [
        "memory:",
        "interval:",
        "controller[0].name:",
        "controller[1].settings:",
        "tenant[0].generator:",
        "tenant[0].penalty:",
        "tenant[1].name:",
        "tenant[1].trace.path:",
        "requests:",
    ] {
        assert!(joined.contains(key), "missing {key} in\n{joined}");
    }
}

#[test]
fn nested_settings_are_rejected_with_their_key() {
    let text = OK
        .replace(
            "settings = { shares = [1, 3] }",
            "settings = { shares = [[1], [3]] }",
        )
        .replace("keys = \"10k\"", "keys = { n = 1 }");
    let Err(SimError::Invalid { problems, .. }) = parse(&text) else {
        panic!("expected Invalid");
    };
    let joined = problems.join("\n");
    for needle in [
        "controller[1].settings.shares: nested arrays and tables are not allowed in a list",
        "tenant[0].generator: keys: a table is not a setting value",
    ] {
        assert!(joined.contains(needle), "missing {needle} in\n{joined}");
    }
    assert_eq!(problems.len(), 2, "{joined}");
}

#[test]
fn unknown_keys_are_rejected_by_serde() {
    let e = parse(&OK.replace("hit_time = 5", "hit_tme = 5")).unwrap_err();
    assert!(e.to_string().contains("hit_tme"), "{e}");
}

#[test]
fn golden_scaling() {
    let text = format!("{OK}\n[golden]\nscale = 0.1\n");
    let e = parse(&text).unwrap().golden_scaled();
    assert_eq!(e.requests, Some(1000));
    assert_eq!(e.memory, Memory::Bytes((4u64 << 20) / 10));
    let Source::Generator(o) = &e.tenants[0].source else {
        panic!()
    };
    assert_eq!(o["keys"], "1000");
}

#[test]
fn counts_and_penalties() {
    assert_eq!(parse_count("2M"), Some(2_000_000));
    assert_eq!(parse_count("1e6"), Some(1_000_000));
    assert_eq!(parse_count("1_000"), Some(1000));
    assert_eq!(parse_count("x"), None);
    let u = Penalty::Uniform {
        min: 100.0,
        max: 300.0,
    };
    assert_eq!(u.draw(0.5, None), Some(200.0));
    assert_eq!(
        Penalty::Trace { default: Some(7.0) }.draw(0.1, None),
        Some(7.0)
    );
    assert_eq!(
        Penalty::Trace { default: None }.draw(0.1, Some(9)),
        Some(9.0)
    );
}

#[test]
fn a_sweep_takes_fractions_of_the_working_set() {
    let e = parse(&format!("{OK}\n[sweep]\nmemory = [0.25, 0.5, 1.5]\n")).unwrap();
    assert_eq!(e.sweep.unwrap().memory, vec![0.25, 0.5, 1.5]);
    let err = parse(&format!("{OK}\n[sweep]\nmemory = [0, 0.5, 5]\n"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("sweep.memory[0]"), "{err}");
    assert!(err.contains("sweep.memory[2]"), "{err}");
    assert!(!err.contains("sweep.memory[1]"), "{err}");
    let err = parse(&format!("{OK}\n[sweep]\nmemory = []\n"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("sweep.memory: 0 fractions"), "{err}");
    let err = parse(&format!("{OK}\n[sweep]\nmemorie = [0.5]\n"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("memorie"), "{err}");
}

const TIERED: &str = r#"
name = "tiers"
memory = { objects = "3k" }
page_size = "4KiB"
requests = "60k"
max_moves = 0
[tier]
fast_share = 0.25
slow_hit_time = 3
[[controller]]
name = "shared"
label = "allDRAM"
tier = "all-fast"
[[controller]]
name = "shared"
label = "sdTMM"
[[controller]]
name = "shared"
label = "naive"
tier = "naive"
fast_partition = "equal"
[[tenant]]
name = "a"
generator = { pattern = "zipf", alpha = 0.99, keys = "3k", value_size = 300, get = 1 }
penalty = 100
hit_time = 1
[[tenant]]
name = "b"
generator = { pattern = "zipf", alpha = 0.8, keys = "2k", value_size = 300, get = 1 }
penalty = 100
hit_time = 1
"#;

#[test]
fn a_tier_table_runs_tiered_and_all_fast_engines_side_by_side() {
    let e = parse(TIERED).unwrap();
    let ts = e.tier.as_ref().unwrap();
    assert_eq!(ts.slow_hit_us, Some(3.0));
    assert_eq!(ts.engine.fast_share, 0.25);
    assert_eq!(e.controllers[0].tier, Some(TierRun::AllFast));
    assert_eq!(e.controllers[2].fast_partition, Some(FastPartition::Equal));
    let opts = crate::Options {
        threads: 1,
        only: Vec::new(),
        offload: crate::Offload::Off,
    };
    let r = crate::simulate(&e, &opts, &|_, _| {}).unwrap();
    for run in &r.runs {
        let t = run.overall.tier.as_ref().unwrap();
        assert_eq!(t.fast_hits + t.slow_hits, run.overall.hits, "{}", run.label);
        assert!(t.gets_per_sec > 0.0);
    }
    let all_fast = r.runs[0].overall.tier.as_ref().unwrap();
    assert_eq!((all_fast.slow_hits, all_fast.demotions), (0, 0));
    let sdtmm = r.runs[1].overall.tier.as_ref().unwrap();
    assert!(sdtmm.slow_hits > 0 && sdtmm.demotions > 0, "{sdtmm:?}");
    assert!(sdtmm.gets_per_sec < all_fast.gets_per_sec);
    // The table shows the tier figures.
    assert!(crate::report::table(&r).contains("fast_hit%"));
}

#[test]
fn bad_tier_settings_name_their_key() {
    let bad = TIERED
        .replace(
            "fast_share = 0.25",
            "fast_share = 2.0\nlow_watermark = 0.5\nhigh_watermark = 0.1",
        )
        .replace("tier = \"naive\"", "tier = \"fastest\"");
    let err = parse(&bad).unwrap_err().to_string();
    for key in [
        "tier.fast_share",
        "tier.low_watermark",
        "controller[2].tier",
    ] {
        assert!(err.contains(key), "{key} missing: {err}");
    }
    let unknown = TIERED.replace("slow_hit_time = 3", "slow_hit_time = 3\nfast_size = 1");
    assert!(
        parse(&unknown)
            .unwrap_err()
            .to_string()
            .contains("fast_size")
    );
    let no_table = TIERED.replace("[tier]\nfast_share = 0.25\nslow_hit_time = 3\n", "");
    assert!(
        parse(&no_table)
            .unwrap_err()
            .to_string()
            .contains("needs the experiment's [tier] table")
    );
}
