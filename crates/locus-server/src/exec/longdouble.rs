//! INCRBYFLOAT arithmetic exactly as Redis does it: x87 80-bit `long double` (64-bit mantissa,
//! round-half-even), `strtold` parsing and `"%.17Lf"` printing with trailing zeros trimmed.
//!
//! Redis computes INCRBYFLOAT in `long double` and prints with 17 fractional digits, so
//! `0.2 + 0.1` gives `0.3` and `9223372036854775807 + 300` gives `9223372036854776107`, which an
//! `f64` cannot reproduce. This module emulates the format with a small big integer: every
//! conversion is exact, then rounded once, as the hardware and glibc do.

/// Little-endian base-2^32 unsigned big integer (only what the conversions need).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Big(Vec<u32>);

impl Big {
    fn from_u64(v: u64) -> Big {
        let mut b = Big(vec![v as u32, (v >> 32) as u32]);
        b.trim();
        b
    }
    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }
    fn is_zero(&self) -> bool {
        self.0.is_empty()
    }
    fn bitlen(&self) -> u64 {
        match self.0.last() {
            None => 0,
            Some(&top) => (self.0.len() as u64 - 1) * 32 + (32 - u64::from(top.leading_zeros())),
        }
    }
    fn bit(&self, i: u64) -> bool {
        let limb = (i / 32) as usize;
        limb < self.0.len() && (self.0[limb] >> (i % 32)) & 1 == 1
    }
    /// Whether any bit below `i` is set.
    fn any_below(&self, i: u64) -> bool {
        let full = (i / 32) as usize;
        if self.0.iter().take(full).any(|&l| l != 0) {
            return true;
        }
        let r = i % 32;
        r > 0 && full < self.0.len() && self.0[full] & ((1u32 << r) - 1) != 0
    }
    fn mul_small(&mut self, m: u32) {
        let mut carry = 0u64;
        for l in &mut self.0 {
            let v = u64::from(*l) * u64::from(m) + carry;
            *l = v as u32;
            carry = v >> 32;
        }
        if carry > 0 {
            self.0.push(carry as u32);
        }
    }
    fn add_small(&mut self, a: u32) {
        let mut carry = u64::from(a);
        for l in &mut self.0 {
            if carry == 0 {
                break;
            }
            let v = u64::from(*l) + carry;
            *l = v as u32;
            carry = v >> 32;
        }
        if carry > 0 {
            self.0.push(carry as u32);
        }
    }
    /// Divides in place by `d`, returning the remainder.
    fn div_small(&mut self, d: u32) -> u32 {
        let mut rem = 0u64;
        for l in self.0.iter_mut().rev() {
            let v = (rem << 32) | u64::from(*l);
            *l = (v / u64::from(d)) as u32;
            rem = v % u64::from(d);
        }
        self.trim();
        rem as u32
    }
    fn shl(&self, bits: u64) -> Big {
        let limbs = (bits / 32) as usize;
        let r = bits % 32;
        let mut out = vec![0u32; limbs];
        let mut carry = 0u32;
        for &l in &self.0 {
            if r == 0 {
                out.push(l);
            } else {
                out.push((l << r) | carry);
                carry = l >> (32 - r);
            }
        }
        if carry > 0 {
            out.push(carry);
        }
        let mut b = Big(out);
        b.trim();
        b
    }
    fn shr(&self, bits: u64) -> Big {
        let limbs = (bits / 32) as usize;
        if limbs >= self.0.len() {
            return Big(Vec::new());
        }
        let r = bits % 32;
        let src = &self.0[limbs..];
        let mut out = Vec::with_capacity(src.len());
        for i in 0..src.len() {
            let lo = src[i] >> r;
            let hi = if r > 0 && i + 1 < src.len() {
                src[i + 1] << (32 - r)
            } else {
                0
            };
            out.push(lo | hi);
        }
        let mut b = Big(out);
        b.trim();
        b
    }
    fn low_u64(&self) -> u64 {
        let lo = u64::from(self.0.first().copied().unwrap_or(0));
        let hi = u64::from(self.0.get(1).copied().unwrap_or(0));
        lo | (hi << 32)
    }
    fn cmp(&self, o: &Big) -> std::cmp::Ordering {
        self.0
            .len()
            .cmp(&o.0.len())
            .then_with(|| self.0.iter().rev().cmp(o.0.iter().rev()))
    }
    fn add(&self, o: &Big) -> Big {
        let n = self.0.len().max(o.0.len());
        let mut out = Vec::with_capacity(n + 1);
        let mut carry = 0u64;
        for i in 0..n {
            let v = u64::from(self.0.get(i).copied().unwrap_or(0))
                + u64::from(o.0.get(i).copied().unwrap_or(0))
                + carry;
            out.push(v as u32);
            carry = v >> 32;
        }
        if carry > 0 {
            out.push(carry as u32);
        }
        Big(out)
    }
    /// `self - o`, requires `self >= o`.
    fn sub(&self, o: &Big) -> Big {
        let mut out = Vec::with_capacity(self.0.len());
        let mut borrow = 0i64;
        for i in 0..self.0.len() {
            let mut v = i64::from(self.0[i]) - i64::from(o.0.get(i).copied().unwrap_or(0)) - borrow;
            borrow = 0;
            if v < 0 {
                v += 1 << 32;
                borrow = 1;
            }
            out.push(v as u32);
        }
        let mut b = Big(out);
        b.trim();
        b
    }
    fn to_decimal(&self) -> String {
        if self.is_zero() {
            return "0".to_string();
        }
        let mut n = self.clone();
        let mut chunks = Vec::new();
        while !n.is_zero() {
            chunks.push(n.div_small(1_000_000_000));
        }
        let mut s = chunks.last().map(|c| c.to_string()).unwrap_or_default();
        for c in chunks.iter().rev().skip(1) {
            s.push_str(&format!("{c:09}"));
        }
        s
    }
}

/// An x87 extended value: `(-1)^neg × mant × 2^exp`, `mant` normalized to 64 bits (or 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LongDouble {
    neg: bool,
    mant: u64,
    exp: i64,
}

/// Largest binary exponent of a finite long double (value < 2^16384).
const MAX_EXP2: i64 = 16384;

impl LongDouble {
    /// Zero.
    pub const ZERO: LongDouble = LongDouble {
        neg: false,
        mant: 0,
        exp: 0,
    };

    /// Rounds `n × 2^e0 (+ a sticky fraction)` to 64 bits, half to even. `None` on overflow.
    fn round(neg: bool, n: &Big, e0: i64, sticky_in: bool) -> Option<LongDouble> {
        let len = n.bitlen();
        if len == 0 {
            return Some(LongDouble { neg, ..Self::ZERO });
        }
        let (mut mant, mut exp) = if len <= 64 {
            (n.low_u64() << (64 - len), e0 - (64 - len as i64))
        } else {
            let shift = len - 64;
            let q = n.shr(shift).low_u64();
            let half = n.bit(shift - 1);
            let sticky = sticky_in || n.any_below(shift - 1);
            let mut q = q;
            let mut e = e0 + shift as i64;
            if half && (sticky || q & 1 == 1) {
                q = q.wrapping_add(1);
                if q == 0 {
                    q = 1 << 63;
                    e += 1;
                }
            }
            (q, e)
        };
        if mant == 0 {
            exp = 0;
        }
        if exp + 64 > MAX_EXP2 {
            return None;
        }
        if exp + 64 < -16445 {
            // Below the smallest subnormal: zero (Redis rejects such inputs anyway).
            mant = 0;
            exp = 0;
        }
        Some(LongDouble { neg, mant, exp })
    }

    /// Parses a decimal float (`[+-]digits[.digits][e[+-]digits]`) as `strtold` rounds it.
    /// `None` for anything else (infinities, hex floats) or out of range.
    pub fn parse(s: &[u8]) -> Option<LongDouble> {
        let mut i = 0;
        let mut neg = false;
        if let Some(&c) = s.first()
            && (c == b'+' || c == b'-')
        {
            neg = c == b'-';
            i = 1;
        }
        let mut digits = Big(Vec::new());
        let mut ndigits = 0usize;
        let mut dexp: i64 = 0;
        let mut seen_dot = false;
        while i < s.len() {
            match s[i] {
                b'0'..=b'9' => {
                    if !digits.is_zero() || s[i] != b'0' {
                        digits.mul_small(10);
                        digits.add_small(u32::from(s[i] - b'0'));
                    }
                    ndigits += 1;
                    if seen_dot {
                        dexp -= 1;
                    }
                }
                b'.' if !seen_dot => seen_dot = true,
                _ => break,
            }
            i += 1;
        }
        if ndigits == 0 {
            return None;
        }
        if i < s.len() {
            if s[i] != b'e' && s[i] != b'E' {
                return None;
            }
            let rest = std::str::from_utf8(&s[i + 1..]).ok()?;
            let rest = rest.strip_prefix('+').unwrap_or(rest);
            if rest.is_empty()
                || rest.len() > 6
                || !rest
                    .trim_start_matches('-')
                    .bytes()
                    .all(|b| b.is_ascii_digit())
            {
                return None;
            }
            dexp += rest.parse::<i64>().ok()?;
        }
        if digits.is_zero() {
            return Some(LongDouble { neg, ..Self::ZERO });
        }
        if dexp > 5000 {
            return None;
        }
        if dexp < -5200 {
            return Some(LongDouble { neg, ..Self::ZERO });
        }
        if dexp >= 0 {
            let mut n = digits;
            for _ in 0..dexp {
                n.mul_small(10);
            }
            Self::round(neg, &n, 0, false)
        } else {
            let q = (-dexp) as u64;
            // value = digits / (2^q 5^q); scale so the quotient keeps >= 66 significant bits.
            let five_bits = q * 2322 / 1000 + 1;
            let s = (66 + five_bits + 1).saturating_sub(digits.bitlen());
            let mut x = digits.shl(s);
            let mut sticky = false;
            let mut left = q;
            while left > 0 {
                let k = left.min(13);
                sticky |= x.div_small(5u32.pow(k as u32)) != 0;
                left -= k;
            }
            Self::round(neg, &x, -(s as i64) - q as i64, sticky)
        }
    }

    /// `self + o`, rounded to nearest even. `None` on overflow.
    pub fn checked_add(self, o: LongDouble) -> Option<LongDouble> {
        if o.mant == 0 {
            return Some(self);
        }
        if self.mant == 0 {
            return Some(o);
        }
        // Far apart: the smaller one is below half an ulp of the larger (no tie possible).
        let (big, small) = if self.exp >= o.exp {
            (self, o)
        } else {
            (o, self)
        };
        if big.exp - small.exp > 70 {
            let mut n = Big::from_u64(big.mant).shl(2);
            // Sticky: nudge by a quarter ulp in the small value's direction, then round.
            if big.neg == small.neg {
                n.add_small(1);
                return Self::round(big.neg, &n, big.exp - 2, true);
            }
            let n = n.sub(&Big::from_u64(1));
            return Self::round(big.neg, &n, big.exp - 2, true);
        }
        let emin = self.exp.min(o.exp);
        let a = Big::from_u64(self.mant).shl((self.exp - emin) as u64);
        let b = Big::from_u64(o.mant).shl((o.exp - emin) as u64);
        if self.neg == o.neg {
            return Self::round(self.neg, &a.add(&b), emin, false);
        }
        match a.cmp(&b) {
            std::cmp::Ordering::Equal => Some(Self::ZERO),
            std::cmp::Ordering::Greater => Self::round(self.neg, &a.sub(&b), emin, false),
            std::cmp::Ordering::Less => Self::round(o.neg, &b.sub(&a), emin, false),
        }
    }

    /// `printf("%.17Lf")` with trailing zeros (and a trailing '.') removed; `-0` prints as `0`.
    pub fn to_redis_string(self) -> String {
        const FRAC: u64 = 17;
        if self.mant == 0 {
            return "0".to_string();
        }
        let m = Big::from_u64(self.mant);
        let (int_part, frac_digits) = if self.exp >= 0 {
            (m.shl(self.exp as u64).to_decimal(), String::new())
        } else {
            // value = mant × 5^f / 10^f
            let f = (-self.exp) as u64;
            let mut p = m;
            let mut left = f;
            while left > 0 {
                let k = left.min(13);
                p.mul_small(5u32.pow(k as u32));
                left -= k;
            }
            let mut d = p.to_decimal();
            if (d.len() as u64) <= f {
                d = "0".repeat((f - d.len() as u64 + 1) as usize) + &d;
            }
            let split = d.len() - f as usize;
            (d[..split].to_string(), d[split..].to_string())
        };
        // Round the fraction to 17 digits, half to even on the exact digits.
        let mut digits: Vec<u8> = int_part
            .bytes()
            .chain(frac_digits.bytes().take(FRAC as usize))
            .collect();
        let kept_frac = frac_digits.len().min(FRAC as usize);
        digits.extend(std::iter::repeat_n(b'0', FRAC as usize - kept_frac));
        let dropped = frac_digits.as_bytes().get(FRAC as usize..).unwrap_or(&[]);
        let round_up = match dropped.first() {
            None => false,
            Some(&c) if c > b'5' => true,
            Some(&c) if c < b'5' => false,
            Some(_) => {
                dropped[1..].iter().any(|&c| c != b'0')
                    || (digits.last().copied().unwrap_or(b'0') - b'0') % 2 == 1
            }
        };
        if round_up {
            let mut i = digits.len();
            loop {
                if i == 0 {
                    digits.insert(0, b'1');
                    break;
                }
                i -= 1;
                if digits[i] == b'9' {
                    digits[i] = b'0';
                } else {
                    digits[i] += 1;
                    break;
                }
            }
        }
        let split = digits.len() - FRAC as usize;
        let int_s = std::str::from_utf8(&digits[..split])
            .unwrap_or("0")
            .trim_start_matches('0');
        let int_s = if int_s.is_empty() { "0" } else { int_s };
        let frac_s = std::str::from_utf8(&digits[split..])
            .unwrap_or("")
            .trim_end_matches('0');
        let mut out = String::new();
        if self.neg && (int_s != "0" || !frac_s.is_empty()) {
            out.push('-');
        }
        out.push_str(int_s);
        if !frac_s.is_empty() {
            out.push('.');
            out.push_str(frac_s);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn incr(a: &str, b: &str) -> String {
        let x = LongDouble::parse(a.as_bytes()).unwrap();
        let y = LongDouble::parse(b.as_bytes()).unwrap();
        x.checked_add(y).unwrap().to_redis_string()
    }

    #[test]
    fn matches_redis_long_double_results() {
        assert_eq!(incr("0.2", "0.1"), "0.3");
        assert_eq!(incr("10.5", "0.1"), "10.6");
        assert_eq!(incr("0", "1e20"), "100000000000000000000");
        assert_eq!(incr("0", "1e17"), "100000000000000000");
        assert_eq!(incr("0", "1e-20"), "0");
        assert_eq!(incr("9223372036854775807", "3.0e2"), "9223372036854776107");
        assert_eq!(incr("5.0e3", "2.0e2"), "5200");
        assert_eq!(incr("17179869184", "1.5"), "17179869185.5");
        assert_eq!(incr("1.5", "-1.5"), "0");
        assert_eq!(incr("-9223372036854775808", "2.25"), "-9223372036854775806");
        assert_eq!(incr("3", "-0.5"), "2.5");
        assert_eq!(incr("1", "-3"), "-2");
    }

    #[test]
    fn parse_rejects_non_decimal() {
        for bad in ["", "-", ".", "1e", "0x10", "inf", "1.2.3", "1e+", "abc"] {
            assert!(LongDouble::parse(bad.as_bytes()).is_none(), "{bad}");
        }
        assert!(LongDouble::parse(b"1e99999").is_none());
    }
}

#[cfg(test)]
mod golden {
    use super::LongDouble;

    /// `a b result` lines produced by glibc on x86-64: `strtold(a) + strtold(b)` printed with
    /// `%.17Lf`, trailing zeros trimmed, "-0" as "0" (as Redis); regenerate deliberately with
    /// `tests/data/gen_incrbyfloat_golden.sh` on an x86-64 Linux box.
    const GOLDEN: &str = include_str!("../../tests/data/incrbyfloat_golden.txt");

    #[test]
    fn agrees_with_real_x87_long_double() {
        let mut n = 0;
        for line in GOLDEN.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            let a = LongDouble::parse(f[0].as_bytes()).unwrap();
            let b = LongDouble::parse(f[1].as_bytes()).unwrap();
            let got = a.checked_add(b).unwrap().to_redis_string();
            assert_eq!(got, f[2], "{} + {}", f[0], f[1]);
            n += 1;
        }
        assert_eq!(n, 1000);
    }
}
