//! Axis scales: data range → [0, 1], "nice" tick values and their labels.
//!
//! Linear axes step by 1, 2 or 5 × 10^k (about 5–10 ticks); an automatic range is widened to
//! whole steps. Log axes (x only) put labelled ticks at powers of ten (plus 2 and 5 × 10^k when
//! the range spans under 2.5 decades) and unlabelled minor ticks at 2..9 × 10^k.

/// One tick on an axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    /// Data value.
    pub value: f64,
    /// Label drawn next to it; empty for minor ticks.
    pub label: String,
}

/// A finished axis: range, mapping and ticks.
#[derive(Debug, Clone, PartialEq)]
pub struct Scale {
    /// Lower end of the drawn range.
    pub lo: f64,
    /// Upper end of the drawn range.
    pub hi: f64,
    /// Base-10 logarithmic.
    pub log: bool,
    /// Ticks inside [lo, hi], increasing.
    pub ticks: Vec<Tick>,
}

impl Scale {
    /// Position of `v` on the axis: 0 at `lo`, 1 at `hi` (outside for values out of range).
    pub fn frac(&self, v: f64) -> f64 {
        if self.log {
            (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    /// A linear scale over the data extent `[lo, hi]`; `fixed` keeps the range as given,
    /// otherwise it is widened to whole tick steps. A zero-width extent is widened first.
    pub fn linear(lo: f64, hi: f64, fixed: bool) -> Scale {
        let (mut lo, mut hi) = (lo, hi);
        if hi <= lo {
            let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.5 };
            lo -= pad;
            hi += pad;
        }
        let step = nice_step((hi - lo) / 6.0);
        if !fixed {
            lo = (lo / step).floor() * step;
            hi = (hi / step).ceil() * step;
        }
        let first = (lo / step - 1e-9).ceil() as i64;
        let last = (hi / step + 1e-9).floor() as i64;
        let values: Vec<f64> = (first..=last)
            .map(|i| {
                // Multiply, do not accumulate: 0.1 + 0.1 + 0.1 drifts.
                let v = i as f64 * step;
                if v.abs() < step * 1e-9 { 0.0 } else { v }
            })
            .collect();
        // One SI unit for the whole axis, chosen by its largest label.
        let top = values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let ticks = values
            .iter()
            .map(|&v| Tick {
                value: v,
                label: format_with(v, step, si_unit(top.max(step))),
            })
            .collect();
        Scale {
            lo,
            hi,
            log: false,
            ticks,
        }
    }

    /// A log-10 scale over the data extent `[lo, hi]` (both > 0); `fixed` keeps the range,
    /// otherwise it is widened to powers of ten.
    pub fn log10(lo: f64, hi: f64, fixed: bool) -> Scale {
        let (mut lo, mut hi) = (lo, hi);
        if hi <= lo {
            lo /= 10.0;
            hi *= 10.0;
        }
        if !fixed {
            lo = 10f64.powf(lo.log10().floor());
            hi = 10f64.powf(hi.log10().ceil());
            if hi <= lo {
                hi = lo * 10.0;
            }
        }
        let e0 = lo.log10().floor() as i32 - 1;
        let e1 = hi.log10().ceil() as i32 + 1;
        let few = hi.log10() - lo.log10() < 2.5;
        let inside = |v: f64| v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9);
        let mut ticks = Vec::new();
        for e in e0..=e1 {
            let p = 10f64.powi(e);
            for m in 1..=9 {
                let v = p * f64::from(m);
                if !inside(v) {
                    continue;
                }
                let labelled = m == 1 || (few && (m == 2 || m == 5));
                ticks.push(Tick {
                    value: v,
                    label: if labelled {
                        format_value(v, p)
                    } else {
                        String::new()
                    },
                });
            }
        }
        Scale {
            lo,
            hi,
            log: true,
            ticks,
        }
    }
}

/// The smallest 1, 2 or 5 × 10^k that is ≥ `raw`.
fn nice_step(raw: f64) -> f64 {
    let raw = if raw > 0.0 && raw.is_finite() {
        raw
    } else {
        1.0
    };
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let m = if norm <= 1.0 + 1e-9 {
        1.0
    } else if norm <= 2.0 + 1e-9 {
        2.0
    } else if norm <= 5.0 + 1e-9 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// The SI divisor and suffix for numbers of magnitude `a`.
fn si_unit(a: f64) -> (f64, &'static str) {
    if a >= 1e12 {
        (1e12, "T")
    } else if a >= 1e9 {
        (1e9, "G")
    } else if a >= 1e6 {
        (1e6, "M")
    } else if a >= 1e3 {
        (1e3, "k")
    } else {
        (1.0, "")
    }
}

/// Formats a tick value: SI suffix (k, M, G, T) for large values, otherwise as many decimals as
/// the step needs; `step` is the distance between neighbouring ticks.
pub fn format_value(v: f64, step: f64) -> String {
    format_with(v, step, si_unit(v.abs().max(step.abs())))
}

fn format_with(v: f64, step: f64, (div, suffix): (f64, &str)) -> String {
    if v == 0.0 {
        return "0".to_string();
    }
    let s = step.abs() / div;
    if s < 1e-4 && suffix.is_empty() {
        return format!("{v:.0e}");
    }
    let decimals = if s >= 1.0 {
        0
    } else {
        (-s.log10() - 1e-9).ceil().max(0.0) as usize
    };
    format!("{:.*}{suffix}", decimals, v / div)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(s: &Scale) -> Vec<&str> {
        s.ticks
            .iter()
            .filter(|t| !t.label.is_empty())
            .map(|t| t.label.as_str())
            .collect()
    }

    #[test]
    fn linear_ticks_are_nice_and_cover_the_range() {
        let s = Scale::linear(0.0, 1.0, true);
        assert_eq!(labels(&s), ["0", "0.2", "0.4", "0.6", "0.8", "1.0"]);
        let s = Scale::linear(0.0, 913_347.0, false);
        assert_eq!((s.lo, s.hi), (0.0, 1_000_000.0));
        assert_eq!(labels(&s), ["0", "0.2M", "0.4M", "0.6M", "0.8M", "1.0M"]);
        let s = Scale::linear(0.0, 91_334.0, false);
        assert_eq!(labels(&s), ["0", "20k", "40k", "60k", "80k", "100k"]);
        let s = Scale::linear(0.0, 2.5e6, false);
        assert_eq!(labels(&s), ["0", "0.5M", "1.0M", "1.5M", "2.0M", "2.5M"]);
        let s = Scale::linear(-3.0, 7.0, false);
        assert_eq!(labels(&s), ["-4", "-2", "0", "2", "4", "6", "8"]);
        // Fixed range: ticks stay inside it.
        let s = Scale::linear(0.05, 0.95, true);
        assert!(s.ticks.iter().all(|t| (0.05..=0.95).contains(&t.value)));
        assert_eq!(s.frac(0.05), 0.0);
        assert_eq!(s.frac(0.95), 1.0);
    }

    #[test]
    fn degenerate_linear_range_is_widened() {
        let s = Scale::linear(5.0, 5.0, false);
        assert!(s.lo < 5.0 && s.hi > 5.0);
        let s = Scale::linear(0.0, 0.0, false);
        assert!(s.lo < 0.0 && s.hi > 0.0);
    }

    #[test]
    fn log_ticks_at_powers_of_ten() {
        let s = Scale::log10(3.0, 45_000.0, false);
        assert_eq!((s.lo, s.hi), (1.0, 100_000.0));
        assert_eq!(labels(&s), ["1", "10", "100", "1k", "10k", "100k"]);
        assert_eq!(s.ticks.len(), 5 * 9 + 1, "minor ticks 2..9 in each decade");
        assert!((s.frac(1000.0) - 0.6).abs() < 1e-12);
        // Under 2.5 decades: 2 and 5 are labelled too.
        let s = Scale::log10(0.1, 10.0, true);
        assert_eq!(labels(&s), ["0.1", "0.2", "0.5", "1", "2", "5", "10"]);
    }

    #[test]
    fn value_formatting() {
        assert_eq!(format_value(0.0, 0.1), "0");
        assert_eq!(format_value(0.25, 0.05), "0.25");
        assert_eq!(format_value(1500.0, 500.0), "1.5k");
        assert_eq!(format_value(3e9, 1e9), "3G");
        assert_eq!(format_value(0.00002, 0.00001), "2e-5");
    }
}
