//! Controllers (`crate::control`): installation, data-path observation, decisions carried out.

use super::*;

impl Engine {
    /// Installs a memory controller: from now on its decisions drive the pools (the configured
    /// arbiter is replaced by the target-driven one, which is free competition until the first
    /// targets arrive). The first decision is due after one interval.
    pub fn set_controller(&mut self, ctl: Box<dyn Controller>, cfg: ControlConfig) {
        let next_at = match cfg.interval {
            Interval::Requests(n) => n.max(1),
            Interval::Millis(ms) => self.clock.now_us() + ms.max(1) * 1000,
        };
        self.arbiter = Box::new(TargetArbiter::default());
        if let Some(mode) = ctl.class_mode() {
            self.class_mode = mode;
        }
        let mut host = Host::new(ctl, cfg.offload);
        // Decisions off the data path (the server): an offloaded profiler that falls behind
        // loses batches rather than making a request wait for it.
        host.set_lossy(!self.decide_on_data_path);
        self.control = Some(Box::new(ControlState {
            ctl: host,
            cfg,
            requests: 0,
            next_at,
            decisions: 0,
            targets: vec![None; self.tenants.len()],
            records: VecDeque::new(),
            moves_total: (0, 0),
        }));
        self.control_due = false;
    }

    /// Removes the controller; the arbiter of the configured partition mode takes over again.
    pub fn clear_controller(&mut self) {
        self.control = None;
        self.control_due = false;
        self.arbiter = match self.cfg.partition {
            PartitionMode::Shared => Box::new(SharedArbiter),
            PartitionMode::Static => Box::new(StaticArbiter),
        };
    }

    /// Waits until an offloaded controller has seen every event so far (at once when it runs
    /// inline, or without a controller).
    pub fn sync_controller(&mut self) {
        if let Some(cs) = self.control.as_mut() {
            cs.ctl.sync();
        }
    }

    /// Why the installed controller runs inline although offload was asked for (its profiling
    /// thread could not be started); `None` when offload is in effect or was not asked for.
    pub fn controller_offload_error(&self) -> Option<&str> {
        self.control.as_ref().and_then(|c| c.ctl.offload_error())
    }

    /// Whether the controller runs on a profiling thread (`ControlConfig::offload` and it
    /// observes events).
    pub fn controller_offloaded(&self) -> bool {
        self.control.as_ref().is_some_and(|c| c.ctl.offloaded())
    }

    /// The installed controller's name.
    pub fn controller_name(&self) -> Option<&'static str> {
        self.control.as_ref().map(|c| c.ctl.name())
    }

    /// The installed controller's run settings.
    pub fn control_config(&self) -> Option<ControlConfig> {
        self.control.as_ref().map(|c| c.cfg)
    }

    /// Data-path accesses the controller has seen.
    pub fn control_requests(&self) -> u64 {
        self.control.as_ref().map_or(0, |c| c.requests)
    }

    /// Decisions made so far.
    pub fn control_decisions(&self) -> u64 {
        self.control.as_ref().map_or(0, |c| c.decisions)
    }

    /// The last decisions (at most [`CONTROL_RECORD_LOG`]), oldest first.
    pub fn control_records(&self) -> Vec<IntervalRecord> {
        self.control
            .as_ref()
            .map(|c| c.records.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The last `n` decisions (at most [`CONTROL_RECORD_LOG`]), oldest first, without copying
    /// them (a metrics scrape reads them under the engine lock).
    pub fn recent_control_records(&self, n: usize) -> Vec<&IntervalRecord> {
        self.control.as_ref().map_or_else(Vec::new, |c| {
            c.records
                .iter()
                .skip(c.records.len().saturating_sub(n))
                .collect()
        })
    }

    /// Page moves and releases the controller's decisions carried out, and the items they
    /// evicted, since the controller was installed.
    pub fn control_moves(&self) -> (u64, u64) {
        self.control.as_ref().map_or((0, 0), |c| c.moves_total)
    }

    /// The newest decision, without copying the log.
    pub fn last_control_record(&self) -> Option<&IntervalRecord> {
        self.control.as_ref().and_then(|c| c.records.back())
    }

    /// Page targets per pool (`None`: no target).
    pub fn targets(&self) -> Vec<Option<u64>> {
        match &self.control {
            Some(c) => {
                let mut t = c.targets.clone();
                t.resize(self.tenants.len(), None);
                t
            }
            None => vec![None; self.tenants.len()],
        }
    }

    /// The operator's miss penalty for `t` in µs (`None`: measure it).
    pub fn set_penalty_hint(&mut self, t: TenantId, us: Option<f64>) {
        self.penalty.set_hint(t.0 as usize, us);
    }

    /// (mean miss penalty µs, measured samples) for `t`: the hint, the measured mean, or (0, 0).
    pub fn penalty(&self, t: TenantId) -> (f64, u64) {
        self.penalty.penalty(t.0 as usize)
    }

    /// Carries out a decision's fast-tier page targets (sdTMM's multi-tenant partitioning): a
    /// sum above the fast tier's budget is scaled down (and noted), and the targets go to
    /// [`Engine::set_fast_targets`] in bytes, for the demotion worker to enforce. Untiered:
    /// nothing.
    fn apply_fast_pages(&mut self, mut fast: Vec<u64>, notes: &mut Vec<(String, f64)>) {
        let Some(budget) = self.tier_stats().map(|ts| ts.budget_pages[0]) else {
            return;
        };
        fast.resize(self.tenants.len(), 0);
        let sum: u64 = fast.iter().sum();
        if sum > budget {
            notes.push(("fast_targets_clamped_from_pages".into(), sum as f64));
            for x in &mut fast {
                *x = ((*x as u128 * budget as u128) / sum as u128) as u64;
            }
        }
        let bytes: Vec<Option<u64>> = fast.iter().map(|&p| Some(p * self.cfg.page_size)).collect();
        // One target per tenant on a tiered engine: it cannot fail.
        let _ = self.set_fast_targets(&bytes);
    }

    /// Feeds one data-path access to the controller; marks a decision due.
    #[inline]
    pub(super) fn observe(
        &mut self,
        t: usize,
        kind: AccessKind,
        hash: u64,
        size: u32,
        class: Option<u16>,
    ) {
        if self.control.is_none() {
            return;
        }
        if !self.classes_on || self.tenants[t].group.is_none() {
            // A classed tenant measures every key's gap itself (`classes`).
            let now_us = self.clock.now_us();
            match kind {
                AccessKind::GetMiss => self.penalty.miss(t, hash, now_us),
                AccessKind::Set => self.penalty.set(t, hash, now_us),
                _ => {}
            }
        }
        self.feed(t, kind, hash, size, class);
    }

    /// Hands one access of pool `t` to the controller (no penalty bookkeeping).
    #[inline]
    pub(super) fn feed(
        &mut self,
        t: usize,
        kind: AccessKind,
        hash: u64,
        size: u32,
        class: Option<u16>,
    ) {
        let tenant = TenantId(self.tenants[t].leader.unwrap_or(t as u32));
        let Some(cs) = self.control.as_mut() else {
            return;
        };
        let now_us = self.clock.now_us();
        cs.ctl.on_access(Access {
            tenant,
            pool: PoolId(t as u32),
            kind,
            key_hash: hash,
            size,
            class: class.map(ClassId),
            now_us,
        });
        cs.requests += 1;
        if self.decide_on_data_path && cs.decision_due(now_us) {
            self.control_due = true;
        }
    }

    /// Where due decisions run: inside the next data-path call (`true`, the default: the
    /// simulator's decisions fall at exact request counts), or only in [`Engine::tick`]
    /// (`false`: the server's tick task decides, and no client's request runs a controller).
    ///
    /// Off the data path, an offloaded controller's profiling is lossy too: when its thread is
    /// behind by every batch there is, the data path drops the batch (counted:
    /// [`Engine::controller_dropped_events`]) instead of waiting.
    pub fn set_decisions_on_data_path(&mut self, on: bool) {
        self.decide_on_data_path = on;
        if let Some(cs) = self.control.as_mut() {
            cs.ctl.set_lossy(!on);
        }
    }

    /// Data-path events an offloaded controller's profiling dropped because its thread was
    /// behind (0 inline, or with decisions on the data path).
    pub fn controller_dropped_events(&self) -> u64 {
        self.control.as_ref().map_or(0, |c| c.ctl.dropped_events())
    }

    /// Whether a decision is due now (a data-path call, or a tick, would run it).
    pub fn decision_due(&self) -> bool {
        self.control_due
            || self
                .control
                .as_ref()
                .is_some_and(|cs| cs.decision_due(self.clock.now_us()))
    }

    /// Tells the controller about an eviction of `h` (still linked).
    pub(super) fn observe_eviction(&mut self, t: usize, h: u32) {
        let hash = hash_key(self.store.key(h));
        let (klen, vlen) = self.store.lens(h);
        let class = self.store.pages[self.store.split(h).0].class;
        let idle_ms = if self.tenants[t].cfg.policy.is_lfu() {
            0
        } else {
            let idle = self.idle_of(self.lru_clock(), self.store.lru(h));
            match self.cfg.lru_clock {
                LruClockMode::Redis => idle,
                LruClockMode::Logical => 0,
            }
        };
        let now_us = self.clock.now_us();
        let tenant = TenantId(self.tenants[t].leader.unwrap_or(t as u32));
        if let Some(cs) = self.control.as_mut() {
            cs.ctl.on_evict(Evicted {
                tenant,
                pool: PoolId(t as u32),
                class: ClassId(class),
                key_hash: hash,
                size: (klen + vlen) as u32,
                idle_ms,
                now_us,
            });
        }
    }

    /// Every pool as a controller sees it.
    pub(super) fn pool_states(&self, targets: &[Option<u64>]) -> Vec<PoolState> {
        self.tenants
            .iter()
            .enumerate()
            .map(|(i, tn)| {
                let (penalty_us, penalty_samples) = self.penalty.penalty(i);
                let classes = (0..self.classes.len())
                    .filter_map(|c| {
                        let cp = &tn.classes[c];
                        let cc = &tn.class_counters[c];
                        (cp.pages > 0 || cc.items > 0).then(|| ClassState {
                            class: ClassId(c as u16),
                            chunk_bytes: self.classes.chunk(c as u16),
                            pages: cp.pages,
                            items: cc.items,
                            hits: cc.hits,
                            sets: cc.sets,
                            evictions: cc.evictions.total(),
                        })
                    })
                    .collect();
                PoolState {
                    pool: PoolId(i as u32),
                    tenant: TenantId(tn.leader.unwrap_or(i as u32)),
                    name: tn.cfg.name.clone(),
                    pages: tn.pages.len() as u64,
                    items: tn.all.len() as u64,
                    item_bytes: tn.item_bytes,
                    charged_bytes: tn.charged_bytes,
                    hits: tn.counters.hits,
                    misses: tn.counters.misses,
                    sets: tn.counters.sets,
                    deletes: tn.counters.deletes,
                    evictions: tn.counters.evictions.total(),
                    samples: tn.cfg.samples,
                    evpool_size: tn.cfg.evpool_size,
                    min_pages: self.page_bounds(i).0,
                    max_pages: self.page_bounds(i).1,
                    dormant: tn.dormant.is_some(),
                    target_pages: targets.get(i).copied().flatten(),
                    penalty_us,
                    penalty_samples,
                    classes,
                }
            })
            .collect()
    }

    /// Asks the controller for a decision now and carries it out: targets (clamped so their sum
    /// fits `maxmemory`), explicit page moves and releases of pages above target (together at
    /// most `max_moves`), K per pool. Records the decision. Does nothing without a controller.
    pub fn run_controller(&mut self) {
        self.control_due = false;
        let Some(mut cs) = self.control.take() else {
            return;
        };
        let n = self.tenants.len();
        cs.targets.resize(n, None);
        let pools = self.pool_states(&cs.targets);
        let view = ControlView {
            now_us: self.clock.now_us(),
            requests: cs.requests,
            interval: cs.decisions,
            page_size: self.cfg.page_size,
            pages_total: self.pages_total,
            pages_used: self.pages_used,
            fast_pages: self.tier_stats().map(|ts| ts.budget_pages[0]),
            pools: &pools,
        };
        let decision = cs.ctl.decide(&view);
        let model = cs.ctl.model_bytes();
        if model != self.model_bytes {
            // The profilers are memory too: the next allocation makes room if they outgrew it.
            self.model_bytes = model;
            self.note_metadata();
        }
        let mut notes = decision.notes;

        // Targets: one per pool; a sum above maxmemory is scaled down (and noted).
        if let Some(mut t) = decision.pool_pages {
            t.resize(n, 0);
            let sum: u64 = t.iter().sum();
            if sum > self.pages_total && sum > 0 {
                notes.push(("targets_clamped_from_pages".into(), sum as f64));
                let total = self.pages_total;
                for x in &mut t {
                    *x = ((*x as u128 * total as u128) / sum as u128) as u64;
                }
            }
            cs.targets = t.into_iter().map(Some).collect();
        }
        // Tenant budgets hold under every controller: targets are clamped into [min, max]
        // (a dormant tenant's cap included, `Engine::set_dormant`).
        // What a dormant tenant's cap took off its target goes to the others, whatever the
        // controller planned (one that ignores caps too).
        let mut freed = Vec::new();
        for (ti, target) in cs.targets.iter_mut().enumerate() {
            if let Some(x) = target {
                let (lo, hi) = self.page_bounds(ti);
                let want = *x;
                *x = (*x).max(lo).min(hi.unwrap_or(u64::MAX));
                if self.tenants[ti].dormant.is_some() && want > *x {
                    freed.push((ti, want - *x));
                }
            }
        }
        for (ti, pages) in freed {
            let tenants = &self.tenants;
            snapshot::share_out(&mut cs.targets, ti, pages, self.pages_total, |i| {
                tenants[i].dormant.is_some()
            });
        }
        self.arbiter.set_targets(&cs.targets);
        self.arbiter.set_lending(decision.lend_free_pages);
        if let Some(fast) = decision.fast_pages {
            self.apply_fast_pages(fast, &mut notes);
        }

        // K per pool.
        for (pool, k) in decision.samples {
            let ti = pool.0 as usize;
            if ti < n {
                self.tenants[ti].cfg.samples = k.clamp(1, 64);
            }
        }

        // Explicit moves, then releases of pages above target, within the move budget. The
        // controller is back in place meanwhile, so it hears of the evictions they cause.
        let mut budget = u64::from(cs.cfg.max_moves);
        let targets = cs.targets.clone();
        self.control = Some(cs);
        let (mut moves_done, mut evicted) = (0u64, 0u64);
        for mv in decision.moves {
            if budget == 0 {
                notes.push(("moves_dropped_over_budget".into(), 1.0));
                break;
            }
            if let Ok(e) = self.move_page(mv.from, mv.to) {
                budget -= 1;
                moves_done += 1;
                evicted += e;
            }
        }
        // Lending: release only what the pools below their target cannot find free.
        let mut claim = if decision.lend_free_pages {
            let deficit: u64 = targets
                .iter()
                .enumerate()
                .take(n)
                .filter_map(|(ti, t)| Some(t.as_ref()?.saturating_sub(self.pool_pages(ti))))
                .sum();
            deficit.saturating_sub(self.pages_total.saturating_sub(self.pages_used))
        } else {
            u64::MAX
        };
        for (ti, target) in targets.iter().enumerate().take(n) {
            let Some(target) = *target else {
                continue;
            };
            while budget > 0 && claim > 0 && self.pool_pages(ti) > target {
                claim -= 1;
                let Some(pg) = self.takeable_page(ti, None) else {
                    // No page it may lose: its large items, by its policy, if it evicts.
                    if self.tenants[ti].large_bytes > 0
                        && self.evicts_any(ti)
                        && self.evict_from(ti, EvictionReason::Shrink)
                    {
                        budget -= 1;
                        continue;
                    }
                    break;
                };
                let from = self.page_owner(pg);
                let e = self.empty_page(pg, EvictionReason::Shrink);
                self.release_page(pg);
                self.record_page_event(pg, from, None, EvictionReason::Shrink, e);
                budget -= 1;
                moves_done += 1;
                evicted += e;
            }
        }
        let mut cs = self
            .control
            .take()
            .expect("the controller was put back above");

        let record = IntervalRecord {
            interval: cs.decisions,
            at_us: view.now_us,
            at_request: cs.requests,
            pages: self
                .tenants
                .iter()
                .map(|tn| tn.pages.len() as u64)
                .collect(),
            targets: cs.targets.clone(),
            samples: self.tenants.iter().map(|tn| tn.cfg.samples).collect(),
            moves_done,
            items_evicted_by_moves: evicted,
            hits: pools.iter().map(|p| p.hits).collect(),
            misses: pools.iter().map(|p| p.misses).collect(),
            penalty_us: pools.iter().map(|p| p.penalty_us).collect(),
            curves: decision.curves,
            notes,
        };
        cs.moves_total.0 += moves_done;
        cs.moves_total.1 += evicted;
        if cs.records.len() == CONTROL_RECORD_LOG {
            cs.records.pop_front();
        }
        cs.records.push_back(record);
        cs.decisions += 1;
        cs.next_at = match cs.cfg.interval {
            Interval::Requests(k) => cs.requests + k.max(1),
            Interval::Millis(ms) => self.clock.now_us() + ms.max(1) * 1000,
        };
        self.control = Some(cs);
    }
}
