//! `[memcached]`: memcached's text and meta protocols on their own listeners, served by the same
//! engine as RESP, with memcached's slab model (size-class ladder, class-local eviction, a slab
//! controller).
//!
//! A tenant is a *memcached tenant* when a memcached listener reaches it: its own
//! `[[tenant]] memcached_port`, or the shared `[memcached] port` (which serves the tenants by key
//! prefix in prefix mode, else the default tenant, as the RESP port does). Memcached tenants
//! store memcached items (flags, CAS unique and the stale/fetched bits in a 13-byte header before
//! the data) and run in [`locus_engine::ClassMode::Manual`]: a class that runs out of chunks
//! evicts its own items, and pages move between classes only by the slab controller.

use std::collections::BTreeMap;

use locus_common::ByteSize;
use locus_engine::control::{ControlConfig, Controller, Settings};
use serde::{Deserialize, Serialize};

use super::*;

/// memcached's default item size limit (`-I 1m`), also its slab page size.
pub const DEFAULT_MC_ITEM_SIZE: u64 = 1 << 20;
/// memcached's default growth factor (`-f`).
pub const DEFAULT_MC_GROWTH_FACTOR: f64 = 1.25;
/// memcached's default minimum space for key, value and flags (`-n`).
pub const DEFAULT_MC_CHUNK_SIZE: u32 = 48;
/// memcached's item header (with CAS), which its smallest chunk adds to `-n`: the first chunk
/// is 96 bytes, as in memcached.
pub const MC_ITEM_HEADER: u32 = 48;
/// memcached's default connection limit (`-c`).
pub const DEFAULT_MC_MAXCONNS: u64 = 1024;
/// The slab controller memcached tenants run when none is named.
pub const DEFAULT_MC_CONTROLLER: &str = "lama";

/// A slab controller and how the engine runs it.
pub type SlabController = (Box<dyn Controller>, ControlConfig);

/// `[memcached]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemcachedSection {
    /// The shared memcached listener (memcached's `-p`); unset = none (tenants may still have
    /// a `memcached_port` of their own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Largest value a storage command may carry (memcached's `-I`, 1 KiB ..= 1 GiB).
    pub max_item_size: ByteSize,
    /// Ratio between consecutive size classes (memcached's `-f`); sets the engine's ladder.
    pub growth_factor: f64,
    /// Smallest chunk's room for key, value and flags (memcached's `-n`); the first class is
    /// this plus memcached's 48-byte item header.
    pub chunk_size: u32,
    /// ASCII authentication (memcached's `-Y`): a connection must first send a `set` whose data
    /// is `<user> <password>` of a `[[tenant]]` its listener serves, and is then bound to that
    /// tenant. Off: no authentication, as memcached without `-Y`.
    pub auth: bool,
    /// The slab controller of the memcached tenants (a name of `locus_control::NAMES`, or
    /// `none`: memcached without `slab_automove`). Default `lama` when `[controller]` names
    /// none; the engine runs one controller, so naming both is an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub controller: Option<String>,
    /// The slab controller's decision interval (`"1s"`, `100000`).
    pub interval: TextOrNumber,
    /// Page moves per decision.
    pub max_moves: u32,
    /// Run the slab controller's per-access profiling on a thread of its own, fed in batches
    /// (as `[controller] offload`): the request path then only appends each access to a buffer,
    /// under the engine lock, instead of updating LAMA's footprint tables there. Decisions are
    /// the same as inline; the CPU is spent on another core. Default on (BENCHMARKS.md,
    /// memcached section: inline LAMA cost 0.65x memcached's 16-key gets, offloaded 1.06x).
    pub offload: bool,
    /// Most simultaneous memcached connections of one tenant (memcached's `-c`, default
    /// 1024): one more is told `ERROR Too many open connections` and closed, and counted in
    /// that tenant's `rejected_connections`. Per tenant, so that one tenant cannot use up
    /// another's; `server.maxclients` still bounds every connection of the process.
    pub maxconns: u64,
    /// `[memcached.settings]`: the slab controller's own settings.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, toml::Value>,
}

impl Default for MemcachedSection {
    fn default() -> Self {
        Self {
            port: None,
            max_item_size: ByteSize(DEFAULT_MC_ITEM_SIZE),
            growth_factor: DEFAULT_MC_GROWTH_FACTOR,
            chunk_size: DEFAULT_MC_CHUNK_SIZE,
            auth: false,
            controller: None,
            interval: TextOrNumber(DEFAULT_CONTROL_INTERVAL.to_string()),
            max_moves: ControlConfig::default().max_moves,
            offload: true,
            maxconns: DEFAULT_MC_MAXCONNS,
            settings: BTreeMap::new(),
        }
    }
}

impl MemcachedSection {
    /// The slab controller's name for memcached tenants when `[controller]` is `global_controller`
    /// (`None`: no controller of its own: the global one, or none at all).
    pub fn controller_name(&self, global: &ControllerSection) -> Option<String> {
        if global.enabled() {
            return None;
        }
        let name = self
            .controller
            .clone()
            .unwrap_or_else(|| DEFAULT_MC_CONTROLLER.to_string());
        (!name.eq_ignore_ascii_case(NO_CONTROLLER)).then(|| name.to_ascii_lowercase())
    }

    /// Builds the slab controller (`None` when the memcached tenants run none of their own).
    ///
    /// # Errors
    /// Every problem with its key path (`memcached.controller`, `memcached.settings.k`).
    pub fn build_controller(
        &self,
        global: &ControllerSection,
    ) -> Result<Option<SlabController>, Vec<String>> {
        let Some(name) = self.controller_name(global) else {
            return Ok(None);
        };
        let pairs = locus_common::settings_from_toml(&self.settings).map_err(|bad| {
            bad.iter()
                .map(|e| format!("memcached.settings.{e}"))
                .collect::<Vec<_>>()
        })?;
        let interval = self
            .interval
            .0
            .parse()
            .map_err(|e| vec![format!("memcached.interval: {e}")])?;
        let ctl = locus_control::build(&name, Settings::new(&name, pairs))
            .map_err(|e| vec![control_problem(&e).replacen("controller.", "memcached.", 1)])?;
        Ok(Some((
            ctl,
            ControlConfig {
                interval,
                max_moves: self.max_moves,
                offload: self.offload,
            },
        )))
    }

    pub(super) fn validate(&self, cfg: &ServerConfig, p: &mut Vec<String>) {
        let size = self.max_item_size.0;
        if !(1024..=1 << 30).contains(&size) {
            p.push(format!(
                "memcached.max_item_size: {} is not in 1KiB..=1GiB",
                self.max_item_size
            ));
        }
        if !(self.growth_factor.is_finite()
            && self.growth_factor > 1.0
            && self.growth_factor <= 2.0)
        {
            p.push(format!(
                "memcached.growth_factor: {} must be > 1.0 and <= 2.0",
                self.growth_factor
            ));
        }
        if self.chunk_size == 0 || self.chunk_size > 1 << 20 {
            p.push(format!(
                "memcached.chunk_size: {} is not in 1..=1048576",
                self.chunk_size
            ));
        }
        if self.max_moves == 0 {
            p.push("memcached.max_moves: must be at least 1".to_string());
        }
        if self.maxconns == 0 {
            p.push("memcached.maxconns: must be at least 1".to_string());
        }
        if cfg.controller.enabled()
            && self
                .controller
                .as_deref()
                .is_some_and(|n| !n.eq_ignore_ascii_case(NO_CONTROLLER))
        {
            p.push(format!(
                "memcached.controller: the engine runs one controller and [controller] already names {:?}; leave memcached.controller unset (its tenants then follow [controller])",
                cfg.controller.name
            ));
        } else if cfg.memcached_enabled()
            && let Err(errs) = self.build_controller(&cfg.controller)
        {
            p.extend(errs);
        }
        if self.auth
            && cfg.memcached_enabled()
            && !cfg
                .tenants
                .iter()
                .any(|t| t.user.is_some() && t.password.is_some())
        {
            p.push(
                "memcached.auth: no [[tenant]] has a user and password to authenticate with"
                    .to_string(),
            );
        }
        if !self.auth && cfg.memcached_enabled() {
            self.refuse_open_doors(cfg, p);
        }
        let mut ports = std::collections::HashMap::new();
        if let Some(port) = self.port.filter(|&p| p != 0) {
            ports.insert(port, "memcached.port".to_string());
        }
        for (i, t) in cfg.tenants.iter().enumerate() {
            if let Some(port) = t.memcached_port.filter(|&p| p != 0)
                && let Some(other) = ports.insert(port, format!("tenant[{i}].memcached_port"))
            {
                p.push(format!(
                    "tenant[{i}].memcached_port: {port} already used by {other}"
                ));
            }
        }
        for (port, at) in &ports {
            if *port == cfg.server.port {
                p.push(format!("{at}: {port} is also server.port"));
            }
            if let Some(j) = cfg.tenants.iter().position(|t| t.port == Some(*port)) {
                p.push(format!("{at}: {port} is also tenant[{j}].port"));
            }
        }
    }
}

impl MemcachedSection {
    /// Without `auth`, a memcached listener serves whoever connects: it must reach no tenant
    /// that has a password, or a client with no login could read, write and delete what the
    /// RESP port guards with `NOAUTH`. The shared port reaches the default tenant (in single
    /// mode the only one) and, in prefix mode, every tenant with a prefix; a tenant's own
    /// `memcached_port` reaches that tenant.
    fn refuse_open_doors(&self, cfg: &ServerConfig, p: &mut Vec<String>) {
        let mode = cfg.tenancy.mode;
        for (i, s) in cfg.tenant_sections().iter().enumerate() {
            if s.password.is_none() {
                continue;
            }
            let default = if mode == TenancyMode::Single {
                i == 0
            } else {
                s.name == cfg.tenancy.default_tenant
            };
            let shared = self.port.is_some()
                && (default || (mode == TenancyMode::Prefix && s.prefix.is_some()));
            if shared {
                p.push(format!(
                    "memcached.auth: memcached.port serves tenant {:?}, which has a password, to clients that never log in; set memcached.auth = true (clients then send the tenant's user and password) or remove memcached.port",
                    s.name
                ));
            }
            if s.memcached_port.is_some() {
                p.push(format!(
                    "memcached.auth: tenant {:?} has a password but its memcached_port serves it to clients that never log in; set memcached.auth = true or remove its memcached_port",
                    s.name
                ));
            }
        }
    }
}

impl ServerConfig {
    /// Whether some memcached listener is configured.
    pub fn memcached_enabled(&self) -> bool {
        self.memcached.port.is_some() || self.tenants.iter().any(|t| t.memcached_port.is_some())
    }

    /// The engine's slab ladder and page size when memcached listeners are configured:
    /// memcached's (`-f`, `-n` plus its item header, 1 MiB pages unless `memory.page_size` says
    /// otherwise). The ladder is the engine's, so RESP tenants of the same process use it too.
    pub(super) fn apply_memcached_ladder(&self, e: &mut EngineConfig) {
        if !self.memcached_enabled() {
            return;
        }
        e.slab_growth_factor = self.memcached.growth_factor;
        e.min_chunk = self.memcached.chunk_size.saturating_add(MC_ITEM_HEADER);
        if self.memory.page_size.is_none() {
            e.page_size = DEFAULT_MC_ITEM_SIZE.min(e.maxmemory.max(MIN_MC_PAGE));
            e.large_items = Some(e.page_size / 8);
        }
    }
}

/// Smallest page the memcached default picks (a budget below 1 MiB gets pages of this size).
const MIN_MC_PAGE: u64 = 64 << 10;
