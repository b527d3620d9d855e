//! Helpers shared by the integration tests.
#![expect(dead_code, reason = "each test binary uses a different subset")]

use std::sync::Arc;

use locus_common::VirtualClock;
use locus_engine::{
    Engine, EngineConfig, LruClockMode, PartitionMode, Policy, TenantConfig, TenantId,
};

/// An engine with small pages, a virtual clock at t = 1_000_000 ms.
pub fn engine_with(cfg: EngineConfig) -> (Engine, VirtualClock) {
    let clock = VirtualClock::new(1_000_000);
    let e = Engine::new(cfg, Arc::new(clock.clone())).expect("valid config");
    (e, clock)
}

/// 4 KiB pages, `pages` of them.
pub fn small(pages: u64) -> EngineConfig {
    EngineConfig {
        page_size: 4096,
        maxmemory: pages * 4096,
        ..EngineConfig::default()
    }
}

pub fn small_logical(pages: u64, seed: u64) -> EngineConfig {
    EngineConfig {
        lru_clock: LruClockMode::Logical,
        seed,
        ..small(pages)
    }
}

pub fn static_cfg(pages: u64) -> EngineConfig {
    EngineConfig {
        partition: PartitionMode::Static,
        ..small(pages)
    }
}

pub fn tenant(e: &mut Engine, name: &str, policy: Policy) -> TenantId {
    e.add_tenant(TenantConfig {
        policy,
        ..TenantConfig::new(name)
    })
    .expect("valid tenant")
}

pub fn key(i: u64) -> Vec<u8> {
    format!("key:{i:08}").into_bytes()
}

pub fn val(i: u64, len: usize) -> Vec<u8> {
    let mut v = format!("v{i}:").into_bytes();
    v.resize(len.max(v.len()), b'x');
    v.truncate(len.max(1));
    v
}
