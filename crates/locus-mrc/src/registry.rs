//! Models by name, so the CLI, the configuration file and the server build profilers through the
//! same constructor.

use crate::{
    Aet, Eaet, ExactLru, Footprint, Krr, KrrConfig, Metric, MrcError, Profiler, Shards,
    ShardsConfig, ShardsMode, Unit,
};
use std::fmt;
use std::str::FromStr;

/// The models `locus-mrc` knows by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModelKind {
    /// Exact LRU stack distances.
    Exact,
    /// SHARDS (fixed rate or fixed size) with `_adj`.
    Shards,
    /// AET with reference sampling.
    Aet,
    /// EAET (Eq. 5) with reference sampling.
    Eaet,
    /// Footprint with LAMA's conversion.
    Footprint,
    /// KRR (K-LRU).
    Krr,
    /// Miniature simulation of an engine policy (implemented in `locus-engine`).
    Mini,
}

impl ModelKind {
    /// Every model, in documentation order.
    pub const ALL: [ModelKind; 7] = [
        ModelKind::Exact,
        ModelKind::Shards,
        ModelKind::Aet,
        ModelKind::Eaet,
        ModelKind::Footprint,
        ModelKind::Krr,
        ModelKind::Mini,
    ];

    /// The model's name as the CLI spells it.
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Exact => "exact",
            ModelKind::Shards => "shards",
            ModelKind::Aet => "aet",
            ModelKind::Eaet => "eaet",
            ModelKind::Footprint => "footprint",
            ModelKind::Krr => "krr",
            ModelKind::Mini => "mini",
        }
    }

    /// Whether the model's curve depends on K (one profiler per K).
    pub fn uses_k(self) -> bool {
        matches!(self, ModelKind::Krr | ModelKind::Mini)
    }
}

impl fmt::Display for ModelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ModelKind {
    type Err = MrcError;
    fn from_str(s: &str) -> Result<Self, MrcError> {
        let t = s.trim().to_ascii_lowercase();
        ModelKind::ALL
            .into_iter()
            .find(|m| m.name() == t)
            .ok_or(MrcError::UnknownModel { name: s.into() })
    }
}

/// Settings shared by the models (each uses the ones that apply to it).
#[derive(Debug, Clone, Copy)]
pub struct ModelSettings {
    /// Capacity unit.
    pub unit: Unit,
    /// Miss-ratio metric.
    pub metric: Metric,
    /// Sampling rate: spatial for SHARDS/KRR/footprint, reference sampling for AET/EAET.
    /// `None` = no sampling (SHARDS then equals exact LRU).
    pub rate: Option<f64>,
    /// Fixed-size SHARDS bound (SHARDS only).
    pub fixed_size: Option<usize>,
    /// K for KRR.
    pub k: u32,
    /// KRR exponent (`k_eff = K^exponent`).
    pub exponent: f64,
    /// Seed for hashing and random draws.
    pub seed: u64,
}

impl Default for ModelSettings {
    fn default() -> Self {
        Self {
            unit: Unit::Objects,
            metric: Metric::Requests,
            rate: None,
            fixed_size: None,
            k: 5,
            exponent: crate::krr::EXPONENT_TEXTBOOK,
            seed: 0,
        }
    }
}

/// Builds a profiler for `kind` with `s`.
///
/// # Errors
/// Invalid parameters, a unit the model does not support, an option that does not apply, or
/// [`MrcError::NotAvailable`] for [`ModelKind::Mini`] (built by `locus-engine`, not here).
pub fn build(kind: ModelKind, s: &ModelSettings) -> Result<Box<dyn Profiler>, MrcError> {
    let rate = s.rate.unwrap_or(1.0);
    let no_fixed = || -> Result<(), MrcError> {
        match s.fixed_size {
            Some(_) => Err(MrcError::UnsupportedOption {
                model: kind.name().into(),
                option: "fixed-size".into(),
            }),
            None => Ok(()),
        }
    };
    let objects_only = |hint: &str| -> Result<(), MrcError> {
        if s.unit == Unit::Bytes {
            return Err(MrcError::UnsupportedUnit {
                model: kind.name().into(),
                unit: s.unit,
                hint: hint.into(),
            });
        }
        Ok(())
    };
    Ok(match kind {
        ModelKind::Exact => {
            no_fixed()?;
            if s.rate.is_some_and(|r| r != 1.0) {
                return Err(MrcError::UnsupportedOption {
                    model: "exact".into(),
                    option: "sample (use shards)".into(),
                });
            }
            Box::new(ExactLru::new(s.unit, s.metric))
        }
        ModelKind::Shards => {
            let mode = match (s.fixed_size, s.rate) {
                (Some(_), Some(_)) => {
                    return Err(MrcError::UnsupportedOption {
                        model: "shards".into(),
                        option: "sample together with fixed-size".into(),
                    });
                }
                (Some(n), None) => ShardsMode::FixedSize(n),
                (None, r) => ShardsMode::FixedRate(r.unwrap_or(1.0)),
            };
            Box::new(Shards::new(ShardsConfig {
                mode,
                unit: s.unit,
                metric: s.metric,
                seed: s.seed,
                adjust: true,
            })?)
        }
        ModelKind::Aet => {
            no_fixed()?;
            objects_only("; use eaet for byte capacities")?;
            Box::new(Aet::new(rate, s.metric, s.seed)?)
        }
        ModelKind::Eaet => {
            no_fixed()?;
            Box::new(Eaet::new(rate, s.unit, s.metric, s.seed)?)
        }
        ModelKind::Footprint => {
            no_fixed()?;
            objects_only("; use exact, shards or eaet for byte capacities")?;
            if s.metric != Metric::Requests {
                return Err(MrcError::UnsupportedOption {
                    model: "footprint".into(),
                    option: "byte miss ratio".into(),
                });
            }
            Box::new(Footprint::new(rate, s.seed)?)
        }
        ModelKind::Krr => {
            no_fixed()?;
            Box::new(Krr::new(KrrConfig {
                k: s.k,
                exponent: s.exponent,
                rate,
                unit: s.unit,
                metric: s.metric,
                seed: s.seed,
                adjust: true,
            })?)
        }
        ModelKind::Mini => {
            return Err(MrcError::NotAvailable {
                name: "mini".into(),
                reason: "miniature simulation runs the engine's policies and is provided by \
                         locus-engine, which does not implement it yet"
                    .into(),
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_options_are_checked() {
        for m in ModelKind::ALL {
            assert_eq!(m.name().parse::<ModelKind>().unwrap(), m);
        }
        assert!("lru".parse::<ModelKind>().is_err());
        let s = ModelSettings::default();
        for m in ModelKind::ALL {
            assert_eq!(build(m, &s).is_ok(), m != ModelKind::Mini, "{m}");
        }
        let bytes = ModelSettings {
            unit: Unit::Bytes,
            ..s
        };
        assert!(build(ModelKind::Aet, &bytes).is_err());
        assert!(build(ModelKind::Eaet, &bytes).is_ok());
        let fixed = ModelSettings {
            fixed_size: Some(100),
            ..s
        };
        assert!(build(ModelKind::Shards, &fixed).is_ok());
        assert!(build(ModelKind::Krr, &fixed).is_err());
        assert!(matches!(
            build(ModelKind::Mini, &s).err(),
            Some(MrcError::NotAvailable { .. })
        ));
    }
}
