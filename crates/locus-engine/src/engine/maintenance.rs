//! Background work in bounded steps: active expiry (Redis's cycle) and the controller tick.

use super::*;

impl Engine {
    // Background work.

    /// The active expiry sweep: samples keys with a TTL, pool by pool (round robin), removing
    /// those whose time has passed; a pool is sampled again while more than 10% of its sample
    /// was stale (Redis's `activeExpireCycle` acceptance rule). Examines at most `max_keys` keys;
    /// returns how many expired.
    pub fn run_active_expire(&mut self, max_keys: usize) -> usize {
        let n = self.tenants.len();
        let per_loop = self.cfg.active_expire_keys_per_cycle as usize;
        let mut examined = 0usize;
        let mut expired = 0usize;
        for _ in 0..n {
            if examined >= max_keys {
                break;
            }
            let t = self.expire_cursor % n;
            self.expire_cursor = self.expire_cursor.wrapping_add(1);
            if self.tenants[t].expiry_held {
                continue;
            }
            loop {
                let batch = per_loop.min(max_keys - examined);
                if batch == 0 || self.tenants[t].vol.is_empty() {
                    break;
                }
                let mut stale = 0;
                for _ in 0..batch {
                    let len = self.tenants[t].vol.len();
                    if len == 0 {
                        break;
                    }
                    let h = self.tenants[t].vol[self.rng.below(len as u64) as usize];
                    examined += 1;
                    if self
                        .expiry(t, h)
                        .is_some_and(|at| at <= self.clock.now_ms())
                    {
                        self.expire_item(t, h);
                        stale += 1;
                    }
                }
                expired += stale;
                if stale * 100 <= batch * ACCEPTABLE_STALE_PCT || examined >= max_keys {
                    break;
                }
            }
        }
        expired
    }

    /// Holds (or releases) the expiry of tenant `t`'s keys: while held, a key past its TTL reads
    /// as a miss but stays, and neither the active sweep nor a read removes it (Redis keeps
    /// expired keys while a CLIENT PAUSE holds writes, so that nothing changes under the pause);
    /// a write to such a key replaces it. Released, they go as usual.
    pub fn set_expiry_held(&mut self, t: TenantId, held: bool) {
        if let Some(tn) = self.tenants.get_mut(t.0 as usize) {
            tn.expiry_held = held;
        }
    }

    /// Periodic housekeeping (call ~10 times a second, or whenever a simulation likes): runs a
    /// decision that is due, gives back free pages where a pool asked for it
    /// ([`Engine::set_tenant_gives_back_free_pages`]), returns spare capacity of the sampling
    /// arrays. Times are read from the clock on every access, so nothing else needs refreshing.
    pub fn tick(&mut self) {
        if self.decision_due() {
            self.run_controller();
        }
        self.give_back_free_pages();
        self.shrink_metadata();
    }

    /// Gives back the metadata of containers that emptied (a quarter full or less: the index,
    /// the sampling arrays, the TTL table), as Redis resizes its dictionaries, and recomputes
    /// what the budget carries for them.
    pub(super) fn shrink_metadata(&mut self) {
        let store = &self.store;
        let mut shrank = false;
        for tn in &mut self.tenants {
            if tn.all.capacity() > 64 && tn.all.capacity() > 4 * tn.all.len() {
                tn.all.shrink_to(2 * tn.all.len());
                shrank = true;
            }
            if tn.vol.capacity() > 64 && tn.vol.capacity() > 4 * tn.vol.len() {
                tn.vol.shrink_to(2 * tn.vol.len());
                shrank = true;
            }
            if tn.index.capacity() > 64 && tn.index.capacity() > 4 * tn.index.len() {
                tn.index
                    .shrink_to(2 * tn.index.len(), |&x| hash_key(store.key(x)));
                shrank = true;
            }
            if tn.expires.capacity() > 64 && tn.expires.capacity() > 4 * tn.expires.len() {
                tn.expires.shrink_to(2 * tn.expires.len());
                shrank = true;
            }
        }
        if shrank {
            self.note_metadata();
        }
    }
}
