//! Test drivers shared by the controllers' unit tests (test builds only).
//!
//! * [`demand`]: seeded Zipf key streams and a small engine on a virtual clock with demand fill
//!   (a GET miss waits the pool's penalty on the clock, then SETs the key, so the engine measures
//!   the penalty as pRedis does); used by the tests of `mpart`, `predis` and `oracle`.
//! * [`streams`]: a real engine on a virtual clock, tenants with seeded synthetic key streams,
//!   cache-aside (GET, then SET on a miss); used by the tests of `memsweeper` and `memshare`.

/// Demand-filled engines and Zipf streams (module documentation).
pub(crate) mod demand {
    use std::sync::Arc;

    use locus_common::{Rng, VirtualClock};

    use locus_engine::Engine;
    use locus_engine::EngineError;
    use locus_engine::config::{EngineConfig, LruClockMode, TenantConfig};
    use locus_engine::ids::TenantId;

    /// Zipf(alpha) over `0..n`: [`locus_common::Zipf`]'s ranks, from 0.
    pub(crate) struct Zipf(locus_common::Zipf);

    impl Zipf {
        pub(crate) fn new(n: usize, alpha: f64) -> Self {
            Zipf(locus_common::Zipf::new(n as u64, alpha))
        }

        pub(crate) fn sample(&self, rng: &mut Rng) -> u64 {
            self.0.sample(rng) - 1
        }
    }

    /// An engine of `pages` pages of 4 KiB, logical LRU clock, one tenant per name.
    pub(crate) fn engine(pages: u64, names: &[&str]) -> (Engine, Vec<TenantId>, VirtualClock) {
        let clock = VirtualClock::new(0);
        let mut e = Engine::new(
            EngineConfig {
                maxmemory: pages * 4096,
                page_size: 4096,
                lru_clock: LruClockMode::Logical,
                seed: 3,
                ..EngineConfig::default()
            },
            Arc::new(clock.clone()),
        )
        .unwrap();
        let ts = names
            .iter()
            .map(|n| e.add_tenant(TenantConfig::new(*n)).unwrap())
            .collect();
        (e, ts, clock)
    }

    /// GET `key` in `t`; on a miss wait `penalty_us` and SET it with a `vlen`-byte value.
    /// Returns whether the GET hit.
    pub(crate) fn get_or_fill(
        e: &mut Engine,
        clock: &VirtualClock,
        t: TenantId,
        key: &[u8],
        vlen: usize,
        penalty_us: u64,
    ) -> bool {
        clock.advance_us(1);
        if e.get(t, key).is_some() {
            return true;
        }
        clock.advance_us(penalty_us);
        let v = vec![b'v'; vlen];
        // A pool held at 0 pages cannot store the fill (pRedis's optimum may starve a class).
        match e.set(t, key, &v, Default::default()) {
            Ok(_) | Err(EngineError::OutOfMemory) => false,
            Err(err) => panic!("SET failed: {err}"),
        }
    }
}

/// Engines driven by synthetic per-tenant streams (module documentation).
pub(crate) mod streams {
    use std::sync::Arc;

    use locus_common::{Rng, VirtualClock};

    use crate as control;
    use locus_engine::control::{ControlConfig, Interval, Settings};
    use locus_engine::{Engine, EngineConfig, Policy, SetOptions, TenantConfig, TenantId};

    /// A tenant's key stream.
    #[derive(Clone, Copy, Debug)]
    pub(crate) enum Stream {
        /// Keys 0, 1, ..., len-1, 0, 1, ... (a loop: LRU hits nothing unless all of it fits).
        Loop(u64),
        /// Keys drawn uniformly from 0..n.
        Uniform(u64),
        /// Three of four requests from a loop of the first length, one uniform over the second
        /// (MemSweeper §5.3's random-sequential combination).
        LoopMix(u64, u64),
    }

    /// What a run measured.
    #[derive(Clone, Debug)]
    pub(crate) struct Outcome {
        /// Hit ratio per tenant over the last quarter of the run.
        pub tail_hit_ratio: Vec<f64>,
        /// Targets at the end.
        pub targets: Vec<Option<u64>>,
        /// Pages owned at the end.
        pub pages: Vec<u64>,
    }

    pub(crate) const PAGE: u64 = 16 << 10;
    pub(crate) const VALUE: usize = 200;

    /// Items of a `VALUE`-byte value with key `t{i}:{k}` per page (for sizing workloads).
    pub(crate) fn items_per_page() -> u64 {
        let e = Engine::new(EngineConfig::default(), Arc::new(VirtualClock::new(0))).unwrap();
        let class = e.class_for(10, VALUE).unwrap();
        let chunk = e
            .size_classes()
            .into_iter()
            .find(|(c, _)| *c == class)
            .unwrap()
            .1;
        PAGE / u64::from(chunk)
    }

    /// Runs `requests` GETs (plus SETs on misses) over `tenants` (stream, relative rate) in an
    /// engine of `pages` pages with controller `name` (`None`: free competition). Tenants use
    /// exact LRU, as memcached (MemSweeper's and Memshare's platform) does.
    pub(crate) fn run(
        name: Option<&str>,
        settings: &[(&str, &str)],
        tenants: &[(Stream, u64)],
        pages: u64,
        requests: u64,
        interval: u64,
        seed: u64,
    ) -> (Outcome, Engine) {
        let cfg = EngineConfig {
            maxmemory: pages * PAGE,
            page_size: PAGE,
            seed,
            ..EngineConfig::default()
        };
        let clock = Arc::new(VirtualClock::new(0));
        let mut e = Engine::new(cfg, clock.clone()).unwrap();
        let ids: Vec<TenantId> = (0..tenants.len())
            .map(|i| {
                let mut tc = TenantConfig::new(format!("t{i}"));
                tc.policy = Policy::AllkeysExactLru;
                e.add_tenant(tc).unwrap()
            })
            .collect();
        if let Some(name) = name {
            let s = Settings::new(
                name,
                settings.iter().map(|(k, v)| (k.to_string(), v.to_string())),
            );
            e.set_controller(
                control::build(name, s).unwrap(),
                ControlConfig {
                    interval: Interval::Requests(interval),
                    max_moves: 64,
                    offload: false,
                },
            );
        }
        let mut rng = Rng::new(seed);
        let mut pos = vec![0u64; tenants.len()];
        let total_rate: u64 = tenants.iter().map(|t| t.1).sum();
        let value = [b'v'; VALUE];
        let mut at_tail = Vec::new();
        for r in 0..requests {
            if r == requests * 3 / 4 {
                at_tail = ids.iter().map(|&t| e.tenant_stats(t)).collect();
            }
            let mut pick = rng.below(total_rate);
            let ti = tenants
                .iter()
                .position(|t| {
                    if pick < t.1 {
                        true
                    } else {
                        pick -= t.1;
                        false
                    }
                })
                .unwrap();
            let key = match tenants[ti].0 {
                Stream::Loop(len) => {
                    pos[ti] = (pos[ti] + 1) % len;
                    pos[ti]
                }
                Stream::Uniform(n) => rng.below(n),
                Stream::LoopMix(len, n) => {
                    if rng.below(4) < 3 {
                        pos[ti] = (pos[ti] + 1) % len;
                        pos[ti]
                    } else {
                        len + rng.below(n)
                    }
                }
            };
            let k = format!("t{ti}:{key:06}");
            clock.advance_us(10);
            if e.get(ids[ti], k.as_bytes()).is_none() {
                e.set(ids[ti], k.as_bytes(), &value, SetOptions::default())
                    .unwrap();
            }
        }
        let tail_hit_ratio = ids
            .iter()
            .zip(&at_tail)
            .map(|(&t, before)| {
                let now = e.tenant_stats(t);
                let h = now.hits - before.hits;
                let m = now.misses - before.misses;
                h as f64 / (h + m).max(1) as f64
            })
            .collect();
        let out = Outcome {
            tail_hit_ratio,
            targets: e.targets(),
            pages: ids.iter().map(|&t| e.tenant_stats(t).pages).collect(),
        };
        (out, e)
    }
}
