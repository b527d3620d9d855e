//! Human-readable sizes and durations for configuration ("64MiB", "1gb", "5s", "100ms").

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why a size or duration string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} {input:?}: {reason}")]
pub struct ParseSizeError {
    /// "size" or "duration".
    pub what: &'static str,
    /// The rejected text.
    pub input: String,
    /// What was expected.
    pub reason: &'static str,
}

/// A number of bytes. Parses Redis-style units: `b`, `k`/`kb`, `m`/`mb`, `g`/`gb` (case-insensitive;
/// as in redis.conf, `k` is 1000 and `kb` is 1024), and the IEC forms `KiB`, `MiB`, `GiB`, `TiB`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ByteSize(pub u64);

impl ByteSize {
    /// The number of bytes.
    pub const fn bytes(self) -> u64 {
        self.0
    }

    /// `n` KiB.
    pub const fn kib(n: u64) -> Self {
        Self(n * 1024)
    }

    /// `n` MiB.
    pub const fn mib(n: u64) -> Self {
        Self(n * 1024 * 1024)
    }

    /// `n` GiB.
    pub const fn gib(n: u64) -> Self {
        Self(n * 1024 * 1024 * 1024)
    }
}

impl FromStr for ByteSize {
    type Err = ParseSizeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason| ParseSizeError {
            what: "size",
            input: s.to_string(),
            reason,
        };
        let t = s.trim();
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        if num.is_empty() {
            return Err(err(
                "expected a number followed by an optional unit (b, kb, mb, gb, KiB, MiB, GiB)",
            ));
        }
        let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" => 1000,
            "kb" | "kib" => 1 << 10,
            "m" => 1000 * 1000,
            "mb" | "mib" => 1 << 20,
            "g" => 1000 * 1000 * 1000,
            "gb" | "gib" => 1 << 30,
            "tb" | "tib" => 1 << 40,
            _ => {
                return Err(err(
                    "unknown unit (use b, k, kb, m, mb, g, gb, KiB, MiB, GiB, TiB)",
                ));
            }
        };
        if num.contains('.') {
            let v: f64 = num.parse().map_err(|_| err("not a number"))?;
            let b = v * mult as f64;
            if !b.is_finite() || b < 0.0 || b > u64::MAX as f64 {
                return Err(err("out of range"));
            }
            Ok(ByteSize(b.round() as u64))
        } else {
            let v: u64 = num.parse().map_err(|_| err("not a number"))?;
            v.checked_mul(mult)
                .map(ByteSize)
                .ok_or_else(|| err("out of range"))
        }
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(&str, u64); 4] = [
            ("TiB", 1 << 40),
            ("GiB", 1 << 30),
            ("MiB", 1 << 20),
            ("KiB", 1 << 10),
        ];
        for (name, n) in UNITS {
            if self.0 >= n && self.0.is_multiple_of(n) {
                return write!(f, "{}{}", self.0 / n, name);
            }
        }
        write!(f, "{}B", self.0)
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Num(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Num(n) => Ok(ByteSize(n)),
            Raw::Text(t) => t.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// Parses a duration: a number with `us`, `ms`, `s`, `m`, `h` or `d`; a bare number is seconds.
///
/// # Errors
/// A [`ParseSizeError`] naming the input when the number or the unit is not understood.
pub fn parse_duration(s: &str) -> Result<Duration, ParseSizeError> {
    let err = |reason| ParseSizeError {
        what: "duration",
        input: s.to_string(),
        reason,
    };
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| err("expected a number followed by us, ms, s, m, h or d"))?;
    let secs = match unit.trim() {
        "us" => v / 1e6,
        "ms" => v / 1e3,
        "" | "s" => v,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        "d" => v * 86400.0,
        _ => return Err(err("unknown unit (use us, ms, s, m, h, d)")),
    };
    if !(0.0..=1e12).contains(&secs) {
        return Err(err("out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_redis_and_iec_units() {
        assert_eq!("100".parse::<ByteSize>().unwrap().0, 100);
        assert_eq!("1k".parse::<ByteSize>().unwrap().0, 1000);
        assert_eq!("1kb".parse::<ByteSize>().unwrap().0, 1024);
        assert_eq!("64MiB".parse::<ByteSize>().unwrap().0, 64 << 20);
        assert_eq!("2gb".parse::<ByteSize>().unwrap().0, 2 << 30);
        assert_eq!("1.5MiB".parse::<ByteSize>().unwrap().0, 3 << 19);
        assert!("12zb".parse::<ByteSize>().is_err());
        assert!("".parse::<ByteSize>().is_err());
        assert!("99999999999999999999".parse::<ByteSize>().is_err());
    }

    #[test]
    fn display_round_trips() {
        for s in ["64MiB", "1GiB", "100B", "4KiB"] {
            assert_eq!(s.parse::<ByteSize>().unwrap().to_string(), s);
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("100ms").unwrap(), Duration::from_millis(100));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("-1s").is_err());
    }
}
