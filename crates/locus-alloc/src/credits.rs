//! Memshare / Cliffhanger credits (paper 004, section 2; paper 003, section 2.1 and 6).
//!
//! Paper 004 describes Memshare's sharing rule: when a GET misses the cache but would have hit
//! in the pool's shadow queue (the keys of its recent evictions), the pool earns one *credit*, a
//! fixed amount of memory (500 objects in their runs) taken from a victim; the victim is the
//! pool with the lowest *need*, `need = allocated / in use`, and a need below 1 marks a pool
//! that holds more than its allocation (a good one to take from). Paper 003 calls this the
//! Cliffhanger approach: shadow-queue hits approximate the local gradient of the hit-rate curve.
//!
//! Locus runs it in rounds (one per controller interval) instead of on every miss: shadow hits
//! accumulate as credits, and each round moves one batch of at most `step` units to the pool
//! that earned the most. Two victim rules are offered:
//!
//! * [`Credits::round`] (the contract's rule): the victim is the pool that earned the FEWEST
//!   credits this round, among pools above their floor; a move needs the winner to have earned
//!   strictly more than the victim.
//! * [`Credits::round_by_need`] (paper 004's rule): the victim is the pool with the lowest need
//!   `units / in_use`, among pools above their floor. A pool holding nothing (`in_use = 0`) has
//!   infinite need and is never a victim. (In section 4.1 paper 004 calls a pool that has been
//!   given far more memory than it holds data for a need-below-1 pool, which is the reverse of
//!   the ratio; we follow the ratio of section 2, under which a pool holding more than its
//!   allocation is the one below 1.)
//!
//! Both move `min(step, units - floor)` units, break ties toward more spare units then the lower
//! pool id (victim) or the lower pool id (winner), and clear every pool's credits after the
//! round, moved or not: credits count shadow hits since the last round.

use crate::AllocError;

/// Shadow-hit credits per pool, spent once per round.
#[derive(Clone, Debug)]
pub struct Credits {
    credits: Vec<f64>,
    step: u64,
    rejected: u64,
}

impl Credits {
    /// Credits for `pools` pools moving at most `step` units per round.
    pub fn new(pools: usize, step: u64) -> Self {
        Credits {
            credits: vec![0.0; pools],
            step,
            rejected: 0,
        }
    }

    /// Adds `weight` credits to `pool` (1.0 per shadow-queue hit; a sampling controller passes
    /// the inverse of its sampling rate). A pool out of range or a weight that is negative or
    /// not finite is dropped and counted in [`Credits::rejected`]; use
    /// [`Credits::try_record_shadow_hit`] to get the reason.
    pub fn record_shadow_hit(&mut self, pool: usize, weight: f64) {
        if self.try_record_shadow_hit(pool, weight).is_err() {
            self.rejected += 1;
        }
    }

    /// [`Credits::record_shadow_hit`] that reports bad input.
    ///
    /// # Errors
    /// `BadInput` for a pool out of range or a weight that is negative or not finite.
    pub fn try_record_shadow_hit(&mut self, pool: usize, weight: f64) -> Result<(), AllocError> {
        if !weight.is_finite() || weight < 0.0 {
            return Err(AllocError::bad(format!(
                "shadow-hit weight {weight} must be finite and >= 0"
            )));
        }
        let n = self.credits.len();
        let slot = self
            .credits
            .get_mut(pool)
            .ok_or_else(|| AllocError::bad(format!("pool {pool} out of range ({n} pools)")))?;
        *slot += weight;
        Ok(())
    }

    /// Credits earned by each pool since the last round.
    pub fn credits(&self) -> &[f64] {
        &self.credits
    }

    /// Shadow hits dropped as invalid since creation.
    pub fn rejected(&self) -> u64 {
        self.rejected
    }

    /// The most units one round moves.
    pub fn step(&self) -> u64 {
        self.step
    }

    /// Ends a round with the contract's rule (module docs): `(from, to, units)` moves from the
    /// pool with the fewest credits to the one with the most, or `None`. `floors` may be empty
    /// (all 0). Mismatched lengths give `None` and leave the credits untouched; use
    /// [`Credits::try_round`] for the reason.
    pub fn round(&mut self, units: &[u64], floors: &[u64]) -> Option<(usize, usize, u64)> {
        self.try_round(units, floors).ok().flatten()
    }

    /// [`Credits::round`] that reports bad input.
    ///
    /// # Errors
    /// `BadInput` when `units` is not one per pool or `floors` neither empty nor one per pool.
    pub fn try_round(
        &mut self,
        units: &[u64],
        floors: &[u64],
    ) -> Result<Option<(usize, usize, u64)>, AllocError> {
        self.check(units, floors, None)?;
        let credits = std::mem::replace(&mut self.credits, vec![0.0; units.len()]);
        let Some(to) = winner(&credits) else {
            return Ok(None);
        };
        let spare = |i: usize| units[i].saturating_sub(floors.get(i).copied().unwrap_or(0));
        let from = (0..units.len())
            .filter(|&i| i != to && spare(i) > 0 && credits[i] < credits[to])
            .min_by(|&a, &b| {
                credits[a]
                    .total_cmp(&credits[b])
                    .then(spare(b).cmp(&spare(a)))
                    .then(a.cmp(&b))
            });
        Ok(self.batch(from, to, spare))
    }

    /// Ends a round with paper 004's rule (module docs): the pool with the most credits takes
    /// up to `step` units from the pool of lowest need `units / in_use`, or `None`.
    ///
    /// # Errors
    /// `BadInput` when `units` or `in_use` is not one per pool or `floors` neither empty nor one
    /// per pool (the credits are then kept).
    pub fn round_by_need(
        &mut self,
        units: &[u64],
        in_use: &[u64],
        floors: &[u64],
    ) -> Result<Option<(usize, usize, u64)>, AllocError> {
        self.check(units, floors, Some(in_use))?;
        let credits = std::mem::replace(&mut self.credits, vec![0.0; units.len()]);
        let Some(to) = winner(&credits) else {
            return Ok(None);
        };
        let spare = |i: usize| units[i].saturating_sub(floors.get(i).copied().unwrap_or(0));
        let need = |i: usize| {
            if in_use[i] == 0 {
                f64::INFINITY
            } else {
                units[i] as f64 / in_use[i] as f64
            }
        };
        let from = (0..units.len())
            .filter(|&i| i != to && spare(i) > 0 && need(i).is_finite())
            .min_by(|&a, &b| {
                need(a)
                    .total_cmp(&need(b))
                    .then(spare(b).cmp(&spare(a)))
                    .then(a.cmp(&b))
            });
        Ok(self.batch(from, to, spare))
    }

    fn check(
        &self,
        units: &[u64],
        floors: &[u64],
        in_use: Option<&[u64]>,
    ) -> Result<(), AllocError> {
        let n = self.credits.len();
        if units.len() != n {
            return Err(AllocError::bad(format!(
                "{} unit counts for {n} pools",
                units.len()
            )));
        }
        if !floors.is_empty() && floors.len() != n {
            return Err(AllocError::bad(format!(
                "{} floors for {n} pools",
                floors.len()
            )));
        }
        if let Some(u) = in_use
            && u.len() != n
        {
            return Err(AllocError::bad(format!(
                "{} in-use counts for {n} pools",
                u.len()
            )));
        }
        Ok(())
    }

    fn batch(
        &self,
        from: Option<usize>,
        to: usize,
        spare: impl Fn(usize) -> u64,
    ) -> Option<(usize, usize, u64)> {
        let from = from?;
        let amount = self.step.min(spare(from));
        (amount > 0).then_some((from, to, amount))
    }
}

/// The pool with the most credits (ties to the lower id), if any earned a positive amount.
fn winner(credits: &[f64]) -> Option<usize> {
    let to =
        (0..credits.len()).min_by(|&a, &b| credits[b].total_cmp(&credits[a]).then(a.cmp(&b)))?;
    (credits[to] > 0.0).then_some(to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credits_move_a_batch_to_the_top_earner() {
        let mut c = Credits::new(3, 4);
        for _ in 0..5 {
            c.record_shadow_hit(1, 1.0);
        }
        c.record_shadow_hit(2, 2.0);
        assert_eq!(c.credits(), &[0.0, 5.0, 2.0]);
        // Pool 0 earned nothing: it gives min(4, 10 - 8) = 2 units above its floor.
        assert_eq!(c.round(&[10, 10, 10], &[8, 0, 0]), Some((0, 1, 2)));
        // Credits were spent: nothing earned, nothing moves.
        assert_eq!(c.credits(), &[0.0, 0.0, 0.0]);
        assert_eq!(c.round(&[8, 12, 10], &[]), None);
        // Pools 0 and 1 tie on credits: the lower id wins and the pool with fewer credits gives.
        c.record_shadow_hit(0, 1.0);
        c.record_shadow_hit(1, 1.0);
        assert_eq!(c.round(&[8, 12, 10], &[]), Some((2, 0, 4)));
        // Equal credits never move: pool 1 has no fewer than pool 0, pool 2 is at its floor.
        c.record_shadow_hit(0, 1.0);
        c.record_shadow_hit(1, 1.0);
        assert_eq!(c.round(&[8, 12, 10], &[0, 0, 10]), None);
    }

    #[test]
    fn need_picks_the_most_over_its_allocation() {
        let mut c = Credits::new(3, 500);
        c.record_shadow_hit(0, 3.0);
        // Needs: pool 1 holds 2000 of 1000 units (0.5), pool 2 holds 900 of 1000 (1.11).
        assert_eq!(
            c.round_by_need(&[1000, 1000, 1000], &[1000, 2000, 900], &[]),
            Ok(Some((1, 0, 500)))
        );
        // Pool holding nothing has infinite need.
        c.record_shadow_hit(0, 1.0);
        assert_eq!(c.round_by_need(&[10, 10, 10], &[10, 0, 0], &[]), Ok(None));
        c.record_shadow_hit(0, 1.0);
        assert!(c.round_by_need(&[10, 10], &[1, 1], &[]).is_err());
        assert_eq!(c.credits(), &[1.0, 0.0, 0.0]);
    }

    #[test]
    fn bad_input_never_panics() {
        let mut c = Credits::new(2, 1);
        c.record_shadow_hit(5, 1.0);
        c.record_shadow_hit(0, f64::NAN);
        c.record_shadow_hit(0, -1.0);
        assert_eq!(c.rejected(), 3);
        assert!(c.try_record_shadow_hit(9, 1.0).is_err());
        c.record_shadow_hit(0, 1.0);
        assert_eq!(c.round(&[1], &[]), None);
        assert!(c.try_round(&[1, 1], &[1]).is_err());
        assert_eq!(c.credits(), &[1.0, 0.0]);
        assert_eq!(c.round(&[1, 1], &[]), Some((1, 0, 1)));
        assert_eq!(Credits::new(0, 1).round(&[], &[]), None);
    }
}
