use super::*;
use crate::read::requests;

fn gen_all(spec: &[&str], n: u64, seed: u64) -> Vec<Request> {
    let tenants = spec.iter().map(|s| s.parse().unwrap()).collect();
    let mut g = Generator::new(GeneratorConfig {
        requests: n,
        seed,
        tenants,
    })
    .unwrap();
    requests(&mut g).map(Result::unwrap).collect()
}

#[test]
fn same_seed_same_trace_and_sizes_stick_to_keys() {
    let spec = ["pattern=zipf,alpha=0.8,keys=1000,value-size=lognormal:500:1"];
    let a = gen_all(&spec, 5000, 1);
    assert_eq!(a, gen_all(&spec, 5000, 1));
    assert_ne!(a, gen_all(&spec, 5000, 2));
    let mut size = std::collections::HashMap::new();
    for r in &a {
        assert_eq!(*size.entry(r.key).or_insert(r.value_size), r.value_size);
    }
    assert!(a.windows(2).all(|w| w[0].time_us <= w[1].time_us));
}

#[test]
fn key_offsets_move_the_key_set() {
    use std::collections::HashSet;
    let keys =
        |spec: &str| -> HashSet<u64> { gen_all(&[spec], 2000, 3).iter().map(|r| r.key).collect() };
    let a = keys("pattern=loop,keys=100");
    assert_eq!(a, keys("pattern=loop,keys=100,key-offset=0"));
    let b = keys("pattern=loop,keys=100,key-offset=100");
    assert!(a.is_disjoint(&b));
    // Half overlapping ranges share half their keys.
    let c = keys("pattern=loop,keys=100,key-offset=50");
    assert_eq!(a.intersection(&c).count(), 50);
    assert!(
        "keys=10,key-offset=1099511627770"
            .parse::<TenantConfig>()
            .is_err()
    );
}

#[test]
fn loop_and_uniform_cover_their_key_space() {
    let l = gen_all(&["pattern=loop,keys=10"], 30, 0);
    assert_eq!(l[0].key, l[10].key);
    assert_eq!(
        l.iter()
            .map(|r| r.key)
            .collect::<std::collections::HashSet<_>>()
            .len(),
        10
    );
    let u = gen_all(&["pattern=uniform,keys=50"], 5000, 0);
    assert_eq!(
        u.iter()
            .map(|r| r.key)
            .collect::<std::collections::HashSet<_>>()
            .len(),
        50
    );
}

#[test]
fn tenants_mix_by_rate_with_their_penalties() {
    let r = gen_all(
        &[
            "tenant=1,rate=300,keys=100,penalty-us=50",
            "tenant=2,rate=100,pattern=uniform,keys=100",
        ],
        20_000,
        5,
    );
    let t1 = r.iter().filter(|q| q.tenant == 1).count() as f64 / r.len() as f64;
    assert!((t1 - 0.75).abs() < 0.02, "{t1}");
    assert!(
        r.iter()
            .all(|q| (q.tenant == 1) == (q.penalty_us == Some(50)))
    );
    let k1: std::collections::HashSet<_> =
        r.iter().filter(|q| q.tenant == 1).map(|q| q.key).collect();
    assert!(
        r.iter()
            .filter(|q| q.tenant == 2)
            .all(|q| !k1.contains(&q.key))
    );
    // 20k requests at 400 req/s take about 50 s.
    let secs = r.last().unwrap().time_us as f64 / 1e6;
    assert!((secs - 50.0).abs() < 3.0, "{secs}");
}

#[test]
fn ycsb_op_shares() {
    let share = |w: &str, op: Op| {
        let r = gen_all(&[&format!("pattern={w},keys=1000")], 20_000, 3);
        r.iter().filter(|q| q.op == op).count() as f64 / r.len() as f64
    };
    assert!((share("ycsb-a", Op::Set) - 0.5).abs() < 0.02);
    assert!((share("ycsb-b", Op::Set) - 0.05).abs() < 0.01);
    assert_eq!(share("ycsb-c", Op::Set), 0.0);
    // F: half the operations are read-modify-write, i.e. 1/3 of the requests are SETs.
    assert!((share("ycsb-f", Op::Set) - 1.0 / 3.0).abs() < 0.02);
    // E: scans of mean length 50.5 dominate; inserts are about 0.05 / (0.95·50.5) of requests.
    let e = share("ycsb-e", Op::Set);
    assert!(e > 0.0005 && e < 0.003, "{e}");
    // D reads the latest records most.
    let d = gen_all(&["pattern=ycsb-d,keys=1000"], 20_000, 3);
    assert!(d.iter().filter(|q| q.op == Op::Set).count() > 800);
}

#[test]
fn phases_move_the_hot_set() {
    let r = gen_all(&["pattern=zipf,alpha=1.2,keys=10000,phase=5000"], 10_000, 9);
    let top = |s: &[Request]| {
        let mut c = std::collections::HashMap::new();
        for q in s {
            *c.entry(q.key).or_insert(0) += 1;
        }
        c.into_iter().max_by_key(|&(_, n)| n).unwrap().0
    };
    assert_ne!(top(&r[..5000]), top(&r[5000..]));
}

#[test]
fn bad_specs_are_rejected() {
    for bad in [
        "pattern=nope",
        "keys=0",
        "alpha=-1",
        "value-size=uniform:10:1",
        "rate=x",
        "frobnicate=1",
        "keys",
    ] {
        assert!(bad.parse::<TenantConfig>().is_err(), "{bad}");
    }
    let none = Generator::new(GeneratorConfig {
        requests: 1,
        seed: 0,
        tenants: vec![],
    });
    assert!(none.is_err());
}
