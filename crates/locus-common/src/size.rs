//! Human-readable quantities for configuration files and command lines: sizes ("64MiB", "1gb"),
//! durations ("5s", "100ms") and counts ("1e6", "200k", "1_000_000").
//!
//! [`ByteSize`] and [`HumanDuration`] share one serde shape: written as their text form, read
//! from that text or from a bare integer in their base unit (bytes, seconds).

use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;
use std::time::Duration;

use serde::de::{self, Unexpected, Visitor};
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

/// Reads a human quantity `T`: an integer in its base unit (`from_int`) or its text form
/// (`FromStr`). One visitor for every such type, so they accept and reject the same shapes.
struct HumanVisitor<T> {
    from_int: fn(u64) -> T,
    expecting: &'static str,
    _marker: PhantomData<T>,
}

impl<T: FromStr<Err = ParseSizeError>> Visitor<'_> for HumanVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        Ok((self.from_int)(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        match u64::try_from(v) {
            Ok(n) => Ok((self.from_int)(n)),
            Err(_) => Err(E::invalid_value(Unexpected::Signed(v), &self)),
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        v.parse().map_err(E::custom)
    }
}

/// Serialises `$ty` as its `Display` text and deserialises it through [`HumanVisitor`], an
/// integer meaning `$from_int(n)`.
macro_rules! human_serde {
    ($ty:ty, $from_int:expr, $expecting:expr) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any(HumanVisitor {
                    from_int: $from_int,
                    expecting: $expecting,
                    _marker: PhantomData,
                })
            }
        }
    };
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

human_serde!(
    ByteSize,
    ByteSize,
    "a size: a number of bytes or a string like \"64MiB\""
);

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

/// A [`Duration`] written as text in configuration files ("0s", "5m", "100ms"; see
/// [`parse_duration`]); a bare integer is seconds. Displayed in the largest of `s`, `ms`, `us`
/// that is exact (sub-microsecond parts are not shown: the parser's finest unit is `us`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct HumanDuration(pub Duration);

impl FromStr for HumanDuration {
    type Err = ParseSizeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_duration(s).map(HumanDuration)
    }
}

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        if d.subsec_nanos() == 0 {
            write!(f, "{}s", d.as_secs())
        } else if d.subsec_nanos().is_multiple_of(1_000_000) {
            write!(f, "{}ms", d.as_millis())
        } else {
            write!(f, "{}us", d.as_micros())
        }
    }
}

human_serde!(
    HumanDuration,
    |n| HumanDuration(Duration::from_secs(n)),
    "a duration: a number of seconds or a string like \"5s\", \"100ms\""
);

/// Parses a count: `100000`, `1_000_000`, `1e6`, `2.5k`, `200k`, `2M`, `1G`.
///
/// The rule: surrounding whitespace is ignored and `_` separators anywhere are dropped; an
/// optional last letter multiplies by a power of ten (`k`/`K` 10^3, `m`/`M` 10^6, `g`/`G` 10^9:
/// counts, so `m` is a million, never milli); the number before it is either an integer (exact
/// up to `u64::MAX`) or a decimal/exponent form whose value, once multiplied, is a whole number
/// below 1.8e19.
///
/// Returns `None` for anything else (empty text, a fraction such as `1.5`, a negative number, an
/// unknown suffix, overflow).
pub fn parse_count(s: &str) -> Option<u64> {
    let s = s.trim().replace('_', "");
    let (num, mul) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1_000u64),
        'm' | 'M' => (&s[..s.len() - 1], 1_000_000),
        'g' | 'G' => (&s[..s.len() - 1], 1_000_000_000),
        _ => (&s[..], 1),
    };
    if let Ok(v) = num.parse::<u64>() {
        return v.checked_mul(mul);
    }
    let v = num.parse::<f64>().ok()? * mul as f64;
    (v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < 1.8e19).then_some(v as u64)
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

    #[test]
    fn human_durations_display_exactly_and_round_trip() {
        for (d, text) in [
            (Duration::ZERO, "0s"),
            (Duration::from_secs(300), "300s"),
            (Duration::from_millis(1500), "1500ms"),
            (Duration::from_micros(250), "250us"),
        ] {
            assert_eq!(HumanDuration(d).to_string(), text);
            assert_eq!(text.parse::<HumanDuration>().unwrap(), HumanDuration(d));
        }
        assert!("soon".parse::<HumanDuration>().is_err());
    }

    #[derive(Debug, PartialEq, serde::Deserialize, serde::Serialize)]
    struct Both {
        size: ByteSize,
        wait: HumanDuration,
    }

    fn both(text: &str) -> Result<Both, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    #[test]
    fn sizes_and_durations_share_one_serde_shape() {
        let b = both("size = \"64MiB\"\nwait = \"100ms\"").unwrap();
        assert_eq!(b.size, ByteSize::mib(64));
        assert_eq!(b.wait, HumanDuration(Duration::from_millis(100)));
        // A bare integer is the base unit: bytes, seconds.
        let b = both("size = 4096\nwait = 5").unwrap();
        assert_eq!(b.size, ByteSize(4096));
        assert_eq!(b.wait, HumanDuration(Duration::from_secs(5)));
        assert_eq!(both(&toml::to_string(&b).unwrap()).unwrap(), b);
        for (text, needle) in [
            ("size = -1\nwait = 1", "expected a size"),
            ("size = 1\nwait = -1", "expected a duration"),
            ("size = 1.5\nwait = 1", "expected a size"),
            ("size = \"12zb\"\nwait = 1", "invalid size \"12zb\""),
            ("size = 1\nwait = \"soon\"", "invalid duration \"soon\""),
        ] {
            let e = both(text).unwrap_err();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn counts() {
        for (text, want) in [
            ("100000", 100_000),
            ("1_000_000", 1_000_000),
            (" 1e6 ", 1_000_000),
            ("2.5k", 2_500),
            ("200k", 200_000),
            ("2M", 2_000_000),
            ("1g", 1_000_000_000),
            ("18446744073709551615", u64::MAX),
            ("9007199254740993", 9_007_199_254_740_993),
        ] {
            assert_eq!(parse_count(text), Some(want), "{text}");
        }
        for text in [
            "",
            "k",
            "x",
            "1.5",
            "-3",
            "2e19",
            "18446744073709551616",
            "99999999999G",
            "1kb",
        ] {
            assert_eq!(parse_count(text), None, "{text}");
        }
    }
}
