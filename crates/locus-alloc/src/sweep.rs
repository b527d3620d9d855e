//! MemSweeper's victim/victor selection for one page move (paper 003, section 3.2).
//!
//! Every round each pool reports two marginal utilities, in hits per unit per interval:
//! `gain_up`, the hits one more unit would bring (the best page of its shadow queue, the
//! paper's shadow-queue `S_0 = max(MarginalUtility)`, formula 1.1), and `loss_down`, the hits
//! its least useful unit brings (the paper's main-queue `S_0 = min(MarginalUtility)`, formula
//! 1.2).
//!
//! * **Max** (`Max_MemSweeper`): the victor is the pool with the highest `gain_up`, the victim
//!   the pool with the lowest `loss_down`; one unit moves when that raises total hits
//!   (`gain_up(victor) > loss_down(victim)`).
//! * **Fair** (`Fair_MemSweeper`, formula 2 and Algorithm 2): both sides are ranked by the score
//!
//!   ```text
//!   S_1 = S_0 * (N_r / N_g) * MR_inst * T / M
//!   ```
//!
//!   with `S_0` the side's marginal utility, `N_r`/`N_g` the units the pool has released /
//!   gained since the start, `MR_inst` its misses in the last interval (`(1 - hit_ratio) *
//!   rate`), `T` the time since it last gained a unit and `M` its size in units. The victor has
//!   the highest shadow-queue score, the victim the lowest main-queue score; a unit moves when
//!   the victor's score is higher than the victim's.
//!
//! Our reading of details the paper leaves open, checked against its Table 1 (3 tenants, 60
//! pages, 14 rounds; every score except one is reproduced by the unit test below):
//! * `N_r / N_g` is smoothed as `(N_r + 1) / (N_g + 1)`: Table 1 scores tenant A `x 1/2` after
//!   its first gain and `x 1` before any move. (The table cannot tell `N_r + 1` from
//!   `max(N_r, 1)` in the numerator: only the zero-score tenant ever released.)
//! * `T` counts rounds since the last gain, and a pool that never gained counts from round 0
//!   (Table 1: `T = 1` for everyone in round 1, `T = 2` for B in round 2).
//! * Table 1 row 5 lists A's score as 100; formula 2 gives 10 x 1/3 x 80 x 2/12 = 44.4 with the
//!   table's own allocations, and A is the victor either way. We follow the formula.
//! * `M = 0` (a pool that holds nothing) makes a positive score infinite: it is served first.
//! * Scores within a relative `1e-9` tie. Victor ties go to the higher `gain_up`, then the lower
//!   pool id; victim ties to the lower `loss_down`, then the most units above the floor, then
//!   the lower pool id (Table 1 round 14: B and C both score 0 and C, which loses nothing,
//!   gives the page).
//!
//! Only pools above their floor can be victims, and the victim is never the victor.

use std::cmp::Ordering;

use crate::AllocError;

/// One pool's state for a MemSweeper round.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PoolScore {
    /// Units the pool holds now (`M`).
    pub units: u64,
    /// Hits per interval one more unit would bring (shadow-queue marginal utility, >= 0).
    pub gain_up: f64,
    /// Hits per interval the pool's least useful unit brings (main-queue marginal utility, >= 0).
    pub loss_down: f64,
    /// Hit ratio over the last interval, in `[0, 1]`.
    pub hit_ratio: f64,
    /// Accesses in the last interval (>= 0); `(1 - hit_ratio) * rate` is `MR_inst`.
    pub rate: f64,
    /// The pool never goes below this many units.
    pub floor: u64,
}

/// Which MemSweeper variant picks the move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SweepMode {
    /// Maximise total hits (`Max_MemSweeper`).
    Max,
    /// Rank by the fairness score `S_1` (`Fair_MemSweeper`).
    Fair,
}

/// The history `Fair_MemSweeper` weighs a pool by.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FairHistory {
    /// Units released since the start (`N_r`).
    pub released: u64,
    /// Units gained since the start (`N_g`).
    pub gained: u64,
    /// Time since the pool last gained a unit (`T`), in rounds or any unit shared by all pools.
    pub since_gain: f64,
}

impl Default for FairHistory {
    /// No moves yet, one round since the start: the history factor of the first round.
    fn default() -> Self {
        FairHistory {
            released: 0,
            gained: 0,
            since_gain: 1.0,
        }
    }
}

/// `Fair_MemSweeper`'s score `S_1 = mu * (N_r + 1)/(N_g + 1) * MR_inst * T / M` for a pool whose
/// side's marginal utility is `mu` (`gain_up` for the victor side, `loss_down` for the victim
/// side). Any zero factor gives 0; `M = 0` with every other factor positive gives `+inf`.
pub fn fair_score(mu: f64, pool: &PoolScore, history: &FairHistory) -> f64 {
    let ratio = (history.released as f64 + 1.0) / (history.gained as f64 + 1.0);
    let misses = (1.0 - pool.hit_ratio) * pool.rate;
    let numerator = mu * ratio * misses * history.since_gain;
    if numerator <= 0.0 {
        0.0
    } else if pool.units == 0 {
        f64::INFINITY
    } else {
        numerator / pool.units as f64
    }
}

/// One move for `pools`, or `None` when no move helps or the input is invalid (see
/// [`sweep_move_with_history`] for the reasons). `Fair` uses the first-round history for every
/// pool (`N_r = N_g = 0`, `T = 1`); use [`sweep_move_with_history`] or [`Sweeper`] to carry
/// the history across rounds as the paper does.
pub fn sweep_move(pools: &[PoolScore], mode: SweepMode) -> Option<(usize, usize)> {
    let history = vec![FairHistory::default(); pools.len()];
    sweep_move_with_history(pools, &history, mode)
        .ok()
        .flatten()
}

/// One move `(victim, victor)` for `pools` with each pool's history (read only by `Fair`), or
/// `Ok(None)` when no move helps.
///
/// # Errors
/// `BadInput` when `history` is not one per pool, a utility or rate is negative, NaN or
/// infinite, a hit ratio is outside `[0, 1]`, or a `since_gain` is negative or not finite.
pub fn sweep_move_with_history(
    pools: &[PoolScore],
    history: &[FairHistory],
    mode: SweepMode,
) -> Result<Option<(usize, usize)>, AllocError> {
    if history.len() != pools.len() {
        return Err(AllocError::bad(format!(
            "{} histories for {} pools",
            history.len(),
            pools.len()
        )));
    }
    for (i, (p, h)) in pools.iter().zip(history).enumerate() {
        let nonneg = |x: f64| x.is_finite() && x >= 0.0;
        if !nonneg(p.gain_up) || !nonneg(p.loss_down) || !nonneg(p.rate) {
            return Err(AllocError::bad(format!(
                "pool {i}: gain_up {}, loss_down {} and rate {} must be finite and >= 0",
                p.gain_up, p.loss_down, p.rate
            )));
        }
        if !(0.0..=1.0).contains(&p.hit_ratio) {
            return Err(AllocError::bad(format!(
                "pool {i}: hit ratio {} is outside [0, 1]",
                p.hit_ratio
            )));
        }
        if !nonneg(h.since_gain) {
            return Err(AllocError::bad(format!(
                "pool {i}: since_gain {} must be finite and >= 0",
                h.since_gain
            )));
        }
    }
    let (up, down): (Vec<f64>, Vec<f64>) = match mode {
        SweepMode::Max => pools.iter().map(|p| (p.gain_up, p.loss_down)).unzip(),
        SweepMode::Fair => pools
            .iter()
            .zip(history)
            .map(|(p, h)| (fair_score(p.gain_up, p, h), fair_score(p.loss_down, p, h)))
            .unzip(),
    };
    // Victor: highest score, then highest gain_up, then lowest id.
    let Some(victor) = (0..pools.len()).min_by(|&a, &b| {
        cmp_score(up[b], up[a])
            .then(cmp_score(pools[b].gain_up, pools[a].gain_up))
            .then(a.cmp(&b))
    }) else {
        return Ok(None);
    };
    // Victim: lowest score, then lowest loss_down, then most spare units, then lowest id.
    let spare = |i: usize| pools[i].units.saturating_sub(pools[i].floor);
    let victim = (0..pools.len())
        .filter(|&i| i != victor && spare(i) > 0)
        .min_by(|&a, &b| {
            cmp_score(down[a], down[b])
                .then(cmp_score(pools[a].loss_down, pools[b].loss_down))
                .then(spare(b).cmp(&spare(a)))
                .then(a.cmp(&b))
        });
    Ok(victim
        .filter(|&v| cmp_score(up[victor], down[v]) == Ordering::Greater)
        .map(|v| (v, victor)))
}

/// Compares two non-negative scores, treating a relative difference up to `1e-9` as a tie.
fn cmp_score(a: f64, b: f64) -> Ordering {
    let finite = a.is_finite() && b.is_finite();
    if a == b || (finite && (a - b).abs() <= 1e-9 * a.abs().max(b.abs())) {
        Ordering::Equal
    } else if a < b {
        Ordering::Less
    } else {
        Ordering::Greater
    }
}

/// `Fair_MemSweeper` with its history kept across rounds: call [`Sweeper::round`] once per
/// interval; it picks the move and books it (`N_r` of the victim, `N_g` and the last-gain
/// round of the victor). The caller carries the move out.
#[derive(Clone, Debug)]
pub struct Sweeper {
    round: u64,
    released: Vec<u64>,
    gained: Vec<u64>,
    last_gain: Vec<u64>,
}

impl Sweeper {
    /// A sweeper for `pools` pools, in round 0 with no moves.
    pub fn new(pools: usize) -> Self {
        Sweeper {
            round: 0,
            released: vec![0; pools],
            gained: vec![0; pools],
            last_gain: vec![0; pools],
        }
    }

    /// Rounds played so far.
    pub fn rounds(&self) -> u64 {
        self.round
    }

    /// The history each pool would be scored with in the next round.
    pub fn history(&self) -> Vec<FairHistory> {
        self.history_at(self.round + 1)
    }

    fn history_at(&self, round: u64) -> Vec<FairHistory> {
        (0..self.released.len())
            .map(|i| FairHistory {
                released: self.released[i],
                gained: self.gained[i],
                since_gain: (round - self.last_gain[i]) as f64,
            })
            .collect()
    }

    /// Plays one round: picks `(victim, victor)` with `mode` and books it, or `Ok(None)`.
    ///
    /// # Errors
    /// As [`sweep_move_with_history`], plus `BadInput` when `pools` is not one per pool the
    /// sweeper was made for (the round is not counted then).
    pub fn round(
        &mut self,
        pools: &[PoolScore],
        mode: SweepMode,
    ) -> Result<Option<(usize, usize)>, AllocError> {
        if pools.len() != self.released.len() {
            return Err(AllocError::bad(format!(
                "sweeper made for {} pools got {}",
                self.released.len(),
                pools.len()
            )));
        }
        let history = self.history_at(self.round + 1);
        let pick = sweep_move_with_history(pools, &history, mode)?;
        self.round += 1;
        if let Some((victim, victor)) = pick {
            self.released[victim] += 1;
            self.gained[victor] += 1;
            self.last_gain[victor] = self.round;
        }
        Ok(pick)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Paper 003 section 3.2.1: every tenant's working set is 20 pages, each page takes 10
    /// accesses per round, so a tenant with `u` pages hits `10 * min(u, 20)` of 200 accesses;
    /// one more page gains 10 below 20 pages, and the least useful page loses 10 at or below 20
    /// pages and 0 above.
    fn table1_pool(units: u64) -> PoolScore {
        PoolScore {
            units,
            gain_up: if units < 20 { 10.0 } else { 0.0 },
            loss_down: if units <= 20 { 10.0 } else { 0.0 },
            hit_ratio: units.min(20) as f64 / 20.0,
            rate: 200.0,
            floor: 0,
        }
    }

    #[test]
    fn fair_reproduces_paper_table_1() {
        // (A, B, C scores at the start of the round; A, B, C pages after it), rows 1-14 and
        // the final row of Table 1. Row 5's A score is the formula's 44.4, not the printed 100.
        let table: [([f64; 3], [u64; 3]); 15] = [
            ([100.0, 33.3, 0.0], [11, 15, 34]),
            ([40.9, 66.6, 0.0], [11, 16, 33]),
            ([81.81, 12.5, 0.0], [12, 16, 32]),
            ([22.2, 25.0, 0.0], [12, 17, 31]),
            ([44.4, 5.88, 0.0], [13, 17, 30]),
            ([13.46, 11.76, 0.0], [14, 17, 29]),
            ([8.57, 17.64, 0.0], [14, 18, 28]),
            ([17.14, 2.77, 0.0], [15, 18, 27]),
            ([5.5, 5.5, 0.0], [16, 18, 26]),
            ([3.57, 8.33, 0.0], [16, 19, 25]),
            ([7.14, 1.05, 0.0], [17, 19, 24]),
            ([2.20, 2.10, 0.0], [18, 19, 23]),
            ([1.23, 3.15, 0.0], [18, 20, 22]),
            ([2.46, 0.0, 0.0], [19, 20, 21]),
            ([0.52, 0.0, 0.0], [20, 20, 20]),
        ];
        let mut units = [10_u64, 15, 35];
        let mut s = Sweeper::new(3);
        for (row, (scores, after)) in table.iter().enumerate() {
            let pools: Vec<PoolScore> = units.iter().map(|&u| table1_pool(u)).collect();
            let history = s.history();
            for t in 0..3 {
                let victor_side = fair_score(pools[t].gain_up, &pools[t], &history[t]);
                let victim_side = fair_score(pools[t].loss_down, &pools[t], &history[t]);
                // The paper prints 2-3 significant digits, sometimes truncated (5.5 for 5.56).
                assert!(
                    (victor_side - scores[t]).abs() <= 0.07,
                    "round {} tenant {t}: {victor_side} vs {}",
                    row + 1,
                    scores[t]
                );
                if pools[t].units <= 20 {
                    assert_eq!(victor_side, victim_side, "round {} tenant {t}", row + 1);
                }
            }
            let (victim, victor) = s.round(&pools, SweepMode::Fair).unwrap().unwrap();
            units[victim] -= 1;
            units[victor] += 1;
            assert_eq!(units, *after, "after round {}", row + 1);
        }
        // Steady state: every working set fits, nobody misses, nothing moves.
        let pools: Vec<PoolScore> = units.iter().map(|&u| table1_pool(u)).collect();
        assert_eq!(s.round(&pools, SweepMode::Fair), Ok(None));
        assert_eq!(s.rounds(), 16);
    }

    #[test]
    fn max_moves_from_least_to_most_useful() {
        let pool = |units, gain_up, loss_down| PoolScore {
            units,
            gain_up,
            loss_down,
            hit_ratio: 0.5,
            rate: 100.0,
            floor: 0,
        };
        let pools = [pool(10, 5.0, 4.0), pool(10, 9.0, 8.0), pool(10, 1.0, 0.5)];
        assert_eq!(sweep_move(&pools, SweepMode::Max), Some((2, 1)));
        // The victim must be above its floor.
        let mut floored = pools;
        floored[2].floor = 10;
        assert_eq!(sweep_move(&floored, SweepMode::Max), Some((0, 1)));
        // No move when the best gain does not beat the least loss.
        let flat = [pool(10, 3.0, 3.0), pool(10, 2.0, 3.0)];
        assert_eq!(sweep_move(&flat, SweepMode::Max), None);
        // A lone pool has nobody to take from.
        assert_eq!(sweep_move(&pools[..1], SweepMode::Max), None);
        assert_eq!(sweep_move(&[], SweepMode::Max), None);
    }

    #[test]
    fn fair_protects_a_slow_tenant() {
        // Paper 003 section 5.5: A has twice B's request rate and the same curve. Max lets A
        // take B's memory; Fair weighs the per-unit hits by size, history and misses.
        let a = PoolScore {
            units: 60,
            gain_up: 20.0,
            loss_down: 20.0,
            hit_ratio: 0.6,
            rate: 2000.0,
            floor: 0,
        };
        let b = PoolScore {
            units: 40,
            gain_up: 10.0,
            loss_down: 10.0,
            hit_ratio: 0.4,
            rate: 1000.0,
            floor: 0,
        };
        assert_eq!(sweep_move(&[a, b], SweepMode::Max), Some((1, 0)));
        // Fair, first round: A 20*800/60 = 266.7, B 10*600/40 = 150: A still wins...
        assert_eq!(sweep_move(&[a, b], SweepMode::Fair), Some((1, 0)));
        // ...but after A has gained 3 units and B released 3, B's side is weighted 4:1 each way.
        let h = [
            FairHistory {
                released: 0,
                gained: 3,
                since_gain: 1.0,
            },
            FairHistory {
                released: 3,
                gained: 0,
                since_gain: 1.0,
            },
        ];
        assert_eq!(
            sweep_move_with_history(&[a, b], &h, SweepMode::Fair),
            Ok(Some((0, 1)))
        );
    }

    #[test]
    fn bad_scores_are_rejected() {
        let ok = table1_pool(10);
        let h = [FairHistory::default(); 2];
        for bad in [
            PoolScore {
                gain_up: f64::NAN,
                ..ok
            },
            PoolScore {
                loss_down: -1.0,
                ..ok
            },
            PoolScore {
                rate: f64::INFINITY,
                ..ok
            },
            PoolScore {
                hit_ratio: 1.5,
                ..ok
            },
        ] {
            let r = sweep_move_with_history(&[ok, bad], &h, SweepMode::Fair);
            assert!(matches!(r, Err(AllocError::BadInput { .. })), "{bad:?}");
            assert_eq!(sweep_move(&[ok, bad], SweepMode::Max), None);
        }
        assert!(sweep_move_with_history(&[ok], &h, SweepMode::Max).is_err());
        let neg = [FairHistory {
            since_gain: -1.0,
            ..FairHistory::default()
        }; 2];
        assert!(sweep_move_with_history(&[ok, ok], &neg, SweepMode::Fair).is_err());
        assert!(Sweeper::new(3).round(&[ok], SweepMode::Fair).is_err());
    }

    #[test]
    fn empty_pool_is_served_first() {
        let empty = PoolScore {
            units: 0,
            gain_up: 1.0,
            loss_down: 0.0,
            hit_ratio: 0.0,
            rate: 10.0,
            floor: 0,
        };
        let full = PoolScore {
            units: 100,
            gain_up: 50.0,
            loss_down: 1.0,
            hit_ratio: 0.5,
            rate: 1e6,
            floor: 0,
        };
        assert_eq!(
            fair_score(1.0, &empty, &FairHistory::default()),
            f64::INFINITY
        );
        assert_eq!(sweep_move(&[full, empty], SweepMode::Fair), Some((0, 1)));
    }
}
