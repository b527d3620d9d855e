//! mPart's working-set-size bonus split (paper 004, section 3.2, Algorithm 1 lines 2-11).
//!
//! When the memory `M` covers every pool's expected allocation `E_i = max(L_i, WSS_i)`, mPart
//! skips the DP: each pool gets `E_i` plus a share of the bonus `M - sum E` in proportion to
//! `E_i / sum E`. Shares are whole units here, rounded by largest remainder (ties to the lower
//! pool id) so they add up to the bonus exactly.

use crate::AllocError;

/// mPart's bonus split without bounds: when `total >= sum(wss)`, every pool gets its working
/// set plus a share of `total - sum(wss)` proportional to its working set, and the shares add
/// up to `total` exactly. Returns `None` when the working sets do not fit (use the DP).
///
/// When every working set is 0 the proportion is undefined; the bonus is then split evenly.
/// Zero pools give `Some(vec![])`.
pub fn wss_bonus(wss: &[u64], total: u64) -> Option<Vec<u64>> {
    // No floors or caps: nothing can be malformed, so the error arm is unreachable.
    wss_bonus_bounded(wss, &[], &[], total).ok().flatten()
}

/// [`wss_bonus`] with mPart's lower and upper bounds `L_i`, `H_i`: `E_i = min(max(L_i, WSS_i),
/// H_i)` (a working set above the cap cannot be granted), `Some` when `sum E <= total`. The bonus
/// is split in proportion to `E_i`; a pool whose share would pass its cap stops there and the
/// excess is split again among the others in the same proportion (water filling), so the result
/// can add up to less than `total` only when every pool is at its cap. If every pool with room
/// has `E_i = 0`, those pools share the bonus evenly.
///
/// # Errors
/// `BadInput` when `floors` or `caps` is neither empty nor one per pool, or a floor is above
/// its cap.
pub fn wss_bonus_bounded(
    wss: &[u64],
    floors: &[u64],
    caps: &[Option<u64>],
    total: u64,
) -> Result<Option<Vec<u64>>, AllocError> {
    let n = wss.len();
    if !floors.is_empty() && floors.len() != n {
        return Err(AllocError::bad(format!(
            "{} floors for {n} pools",
            floors.len()
        )));
    }
    if !caps.is_empty() && caps.len() != n {
        return Err(AllocError::bad(format!(
            "{} caps for {n} pools",
            caps.len()
        )));
    }
    let mut alloc = Vec::with_capacity(n);
    let mut room = Vec::with_capacity(n);
    for (i, &w) in wss.iter().enumerate() {
        let floor = floors.get(i).copied().unwrap_or(0);
        let cap = caps.get(i).copied().flatten().unwrap_or(u64::MAX);
        if floor > cap {
            return Err(AllocError::bad(format!(
                "pool {i}: floor {floor} is above cap {cap}"
            )));
        }
        let e = w.max(floor).min(cap);
        alloc.push(e);
        room.push(cap - e);
    }
    let expected: u128 = alloc.iter().map(|&e| u128::from(e)).sum();
    if expected > u128::from(total) {
        return Ok(None);
    }
    let weights = alloc.clone();
    let mut bonus = total - expected as u64;
    // Each pass either hands out the whole bonus or fills at least one pool to its cap.
    while bonus > 0 {
        let active: Vec<usize> = (0..n).filter(|&i| room[i] > 0).collect();
        if active.is_empty() {
            break;
        }
        let any_weight = active.iter().any(|&i| weights[i] > 0);
        let w: Vec<u64> = active
            .iter()
            .map(|&i| if any_weight { weights[i] } else { 1 })
            .collect();
        let shares = split_largest_remainder(bonus, &w);
        let mut handed = 0;
        for (&i, share) in active.iter().zip(shares) {
            let give = share.min(room[i]);
            alloc[i] += give;
            room[i] -= give;
            handed += give;
        }
        bonus -= handed;
    }
    Ok(Some(alloc))
}

/// Splits `amount` in proportion to `weights` (not all zero) into whole parts adding up to
/// `amount`: floors first, then one more unit each to the largest remainders, ties to the lower
/// index.
fn split_largest_remainder(amount: u64, weights: &[u64]) -> Vec<u64> {
    let sum: u128 = weights.iter().map(|&w| u128::from(w)).sum();
    debug_assert!(sum > 0, "split_largest_remainder needs a positive weight");
    let mut parts = Vec::with_capacity(weights.len());
    let mut rems = Vec::with_capacity(weights.len());
    let mut given: u128 = 0;
    for (i, &w) in weights.iter().enumerate() {
        // amount * w < 2^128: both factors are below 2^64.
        let exact = u128::from(amount) * u128::from(w);
        let part = exact / sum;
        parts.push(part as u64);
        rems.push((exact % sum, i));
        given += part;
    }
    let mut left = u128::from(amount) - given;
    rems.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for &(_, i) in &rems {
        if left == 0 {
            break;
        }
        parts[i] += 1;
        left -= 1;
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bonus_worked_examples() {
        // WSS 100 and 300 in 600 units: bonus 200 split 1:3.
        assert_eq!(wss_bonus(&[100, 300], 600), Some(vec![150, 450]));
        // Exactly enough: no bonus.
        assert_eq!(wss_bonus(&[100, 300], 400), Some(vec![100, 300]));
        // Not enough: the DP decides.
        assert_eq!(wss_bonus(&[100, 300], 399), None);
        // 2 spare units over three equal pools: largest remainders tie, lower ids win.
        assert_eq!(wss_bonus(&[1, 1, 1], 5), Some(vec![2, 2, 1]));
        // All-zero working sets share evenly.
        assert_eq!(wss_bonus(&[0, 0], 5), Some(vec![3, 2]));
        assert_eq!(wss_bonus(&[], 5), Some(vec![]));
        // Huge values do not overflow.
        assert_eq!(
            wss_bonus(&[u64::MAX / 2, u64::MAX / 2], u64::MAX),
            Some(vec![u64::MAX / 2 + 1, u64::MAX / 2])
        );
    }

    #[test]
    fn bounded_bonus_uses_floors_and_caps() {
        // E = max(L, WSS) = [50, 300]; bonus 50 split 1:6 -> 7.14, 42.86 -> [57, 343].
        assert_eq!(
            wss_bonus_bounded(&[10, 300], &[50, 0], &[], 400),
            Ok(Some(vec![57, 343]))
        );
        // Pool 1 capped at 320: it takes 20 and the other 30 go to pool 0.
        assert_eq!(
            wss_bonus_bounded(&[10, 300], &[50, 0], &[None, Some(320)], 400),
            Ok(Some(vec![80, 320]))
        );
        // Everyone capped: the rest stays unallocated.
        assert_eq!(
            wss_bonus_bounded(&[10, 10], &[], &[Some(20), Some(30)], 100),
            Ok(Some(vec![20, 30]))
        );
        // A working set above its cap counts as the cap.
        assert_eq!(
            wss_bonus_bounded(&[500, 100], &[], &[Some(200), None], 300),
            Ok(Some(vec![200, 100]))
        );
        assert!(wss_bonus_bounded(&[1], &[5], &[Some(4)], 10).is_err());
        assert!(wss_bonus_bounded(&[1, 2], &[5], &[], 10).is_err());
        assert!(wss_bonus_bounded(&[1, 2], &[], &[None], 10).is_err());
    }
}
