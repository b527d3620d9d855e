//! Setting checks shared by the model-driven controllers' builders (mPart, pRedis, kRedis, ...):
//! one wording for one mistake, whichever controller it is made in.

use locus_engine::control::{ControlError, Settings};

/// A setting error for controller `name`.
pub(crate) fn bad_setting(name: &str, key: &str, value: String, expected: &str) -> ControlError {
    ControlError::BadSetting {
        controller: name.into(),
        key: key.into(),
        value,
        expected: expected.into(),
    }
}

/// Checks the settings the model-driven controllers share.
pub(crate) fn check_common(
    name: &str,
    rate: f64,
    decay: f64,
    max_change: f64,
) -> Result<(), ControlError> {
    if !(rate > 0.0 && rate <= 1.0) {
        return Err(bad_setting(
            name,
            "rate",
            rate.to_string(),
            "a rate in (0, 1]",
        ));
    }
    if !(0.0..=1.0).contains(&decay) {
        return Err(bad_setting(
            name,
            "decay",
            decay.to_string(),
            "a factor in [0, 1]",
        ));
    }
    if !(max_change.is_finite() && max_change >= 0.0) {
        return Err(bad_setting(
            name,
            "max_change",
            max_change.to_string(),
            "a share >= 0 (0 = unbounded)",
        ));
    }
    Ok(())
}

/// Reads `rate` (the highest spatial sampling rate) and `sample_keys` (the key budget of an
/// adaptive sample, [`locus_mrc::sampling::AdaptiveFilter`]) and checks both.
pub(crate) fn read_adaptive_sampling(
    name: &str,
    s: &mut Settings,
    rate: f64,
    sample_keys: u64,
) -> Result<(f64, u64), ControlError> {
    let rate = s.f64("rate", rate)?;
    if locus_mrc::sampling::SpatialFilter::new(rate, 0).is_err() {
        return Err(bad_setting(
            name,
            "rate",
            rate.to_string(),
            "a sampling rate in (0, 1]",
        ));
    }
    let sample_keys = s.u64("sample_keys", sample_keys)?;
    if sample_keys == 0 || sample_keys > 1 << 24 {
        return Err(bad_setting(
            name,
            "sample_keys",
            sample_keys.to_string(),
            "1 ..= 2^24 keys",
        ));
    }
    Ok((rate, sample_keys))
}

/// Checks `min_gain`: finite and >= 0.
pub(crate) fn check_min_gain(name: &str, min_gain: f64) -> Result<(), ControlError> {
    if min_gain.is_finite() && min_gain >= 0.0 {
        Ok(())
    } else {
        Err(bad_setting(
            name,
            "min_gain",
            min_gain.to_string(),
            "a share >= 0",
        ))
    }
}

/// Reads `initial = "p0,p1,…"` (pages).
pub(crate) fn read_pages_list(
    s: &mut Settings,
    name: &str,
    key: &str,
) -> Result<Vec<u64>, ControlError> {
    let v = s.f64_list(key, &[])?;
    v.iter()
        .map(|x| {
            if *x >= 0.0 && x.fract() == 0.0 {
                Ok(*x as u64)
            } else {
                Err(bad_setting(name, key, format!("{v:?}"), "whole pages >= 0"))
            }
        })
        .collect()
}

/// Checks `initial` / `initial_shares`: at most one of them, shares finite and >= 0.
pub(crate) fn check_initial(name: &str, pages: &[u64], shares: &[f64]) -> Result<(), ControlError> {
    if !pages.is_empty() && !shares.is_empty() {
        return Err(bad_setting(
            name,
            "initial_shares",
            format!("{shares:?}"),
            "either initial (pages) or initial_shares, not both",
        ));
    }
    if shares.iter().any(|x| !(x.is_finite() && *x >= 0.0)) {
        return Err(bad_setting(
            name,
            "initial_shares",
            format!("{shares:?}"),
            "shares >= 0",
        ));
    }
    Ok(())
}
