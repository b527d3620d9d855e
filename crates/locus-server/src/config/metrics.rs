//! `[metrics]`: the operator's HTTP listener (Prometheus `/metrics`, the live page `/`, its JSON
//! API). Off by default; on, it binds loopback unless `allow_remote` says otherwise, because it
//! shows every tenant's figures and tenants are a security boundary.

use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::HumanDuration;

/// Default number of samples the live page's "over time" series keep per tenant.
pub const DEFAULT_METRICS_HISTORY: usize = 300;
/// Default time between two samples of those series.
pub const DEFAULT_METRICS_SAMPLE_INTERVAL_MS: u64 = 1000;
/// Most samples a tenant's series may keep (`metrics.history`).
pub const MAX_METRICS_HISTORY: usize = 100_000;

/// `[metrics]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsSection {
    /// `ip:port` of the HTTP listener (`127.0.0.1:9121`, `[::1]:9121`; port 0 = any free
    /// port); "" = off.
    pub bind: String,
    /// Accept a `bind` address that is not loopback. The listener has no authentication: with
    /// this on, whoever reaches the address sees every tenant's names, sizes and traffic.
    pub allow_remote: bool,
    /// Samples kept per tenant for the live page's "over time" charts.
    pub history: usize,
    /// Time between two of those samples.
    pub sample_interval: HumanDuration,
}

impl Default for MetricsSection {
    fn default() -> Self {
        Self {
            bind: String::new(),
            allow_remote: false,
            history: DEFAULT_METRICS_HISTORY,
            sample_interval: HumanDuration(Duration::from_millis(
                DEFAULT_METRICS_SAMPLE_INTERVAL_MS,
            )),
        }
    }
}

impl MetricsSection {
    /// The address to listen on: `None` when the listener is off.
    ///
    /// # Errors
    /// A message with the key path when `bind` is not `ip:port`, or is not loopback while
    /// `allow_remote` is off.
    pub fn addr(&self) -> Result<Option<SocketAddr>, String> {
        if self.bind.trim().is_empty() {
            return Ok(None);
        }
        let addr: SocketAddr = self.bind.trim().parse().map_err(|_| {
            format!(
                "metrics.bind: {:?} is not ip:port (e.g. \"127.0.0.1:9121\", \"[::1]:9121\")",
                self.bind
            )
        })?;
        if !addr.ip().is_loopback() && !self.allow_remote {
            return Err(format!(
                "metrics.bind: {addr} is not a loopback address; the metrics listener has no \
                 authentication and shows every tenant's figures: set metrics.allow_remote = true \
                 to expose it anyway"
            ));
        }
        Ok(Some(addr))
    }

    /// Every problem of the section, each with its key path.
    pub fn problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        if let Err(e) = self.addr() {
            p.push(e);
        }
        if !(1..=MAX_METRICS_HISTORY).contains(&self.history) {
            p.push(format!(
                "metrics.history: {} is not in 1..={MAX_METRICS_HISTORY}",
                self.history
            ));
        }
        let si = self.sample_interval.0;
        if si < Duration::from_millis(10) || si > Duration::from_secs(3600) {
            p.push(format!(
                "metrics.sample_interval: {} is not between 10ms and 1h",
                self.sample_interval
            ));
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(bind: &str, allow_remote: bool) -> MetricsSection {
        MetricsSection {
            bind: bind.into(),
            allow_remote,
            ..MetricsSection::default()
        }
    }

    #[test]
    fn off_by_default() {
        assert_eq!(MetricsSection::default().addr(), Ok(None));
        assert!(MetricsSection::default().problems().is_empty());
    }

    #[test]
    fn loopback_binds_are_accepted() {
        for b in ["127.0.0.1:9121", "[::1]:9121", "127.0.0.2:0"] {
            assert!(section(b, false).addr().unwrap().is_some(), "{b}");
        }
    }

    #[test]
    fn a_remote_bind_needs_allow_remote() {
        for b in ["0.0.0.0:9121", "[::]:9121", "192.0.2.1:9121"] {
            let e = section(b, false).addr().unwrap_err();
            assert!(e.contains("allow_remote"), "{e}");
            assert!(section(b, true).addr().unwrap().is_some(), "{b}");
        }
    }

    #[test]
    fn malformed_values_are_reported_with_their_path() {
        for b in ["localhost:9121", "127.0.0.1", "9121", "127.0.0.1:99999"] {
            let e = section(b, false).addr().unwrap_err();
            assert!(e.starts_with("metrics.bind:"), "{e}");
        }
        let s = MetricsSection {
            history: 0,
            sample_interval: HumanDuration(Duration::from_millis(1)),
            ..MetricsSection::default()
        };
        let p = s.problems();
        assert!(p.iter().any(|x| x.starts_with("metrics.history:")), "{p:?}");
        assert!(
            p.iter().any(|x| x.starts_with("metrics.sample_interval:")),
            "{p:?}"
        );
    }
}
