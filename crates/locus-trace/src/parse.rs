//! Fast, strict parsing of the numbers and fields trace text is made of.
//!
//! `str::parse` validates UTF-8 and handles signs and radices we do not need; on a 12.7 M-line
//! trace that shows up. These functions work on bytes, reject anything that is not the exact
//! expected syntax (so a wrong column is an error, not a zero) and never allocate.

/// Parses an unsigned decimal integer (ASCII digits only, no sign, no spaces, no overflow).
#[inline]
pub(crate) fn u64_dec(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    if s.len() <= 19 {
        // At most 19 digits cannot overflow: no checks in the loop.
        for &b in s {
            let d = b.wrapping_sub(b'0');
            if d > 9 {
                return None;
            }
            v = v * 10 + d as u64;
        }
        return Some(v);
    }
    for &b in s {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(d as u64)?;
    }
    Some(v)
}

/// Parses a signed decimal integer (optional leading `-` or `+`).
#[inline]
pub(crate) fn i64_dec(s: &[u8]) -> Option<i64> {
    match s.first() {
        Some(b'-') => {
            let m = u64_dec(&s[1..])?;
            if m <= i64::MAX as u64 + 1 {
                Some((m as i64).wrapping_neg())
            } else {
                None
            }
        }
        Some(b'+') => i64::try_from(u64_dec(&s[1..])?).ok(),
        _ => i64::try_from(u64_dec(s)?).ok(),
    }
}

/// Parses a non-negative decimal number with an optional fraction (`123`, `123.4560`, `.5`) and
/// returns it multiplied by `10^scale`, truncating extra fractional digits
/// (e.g. seconds to microseconds with `scale = 6`). No exponents, no sign.
#[inline]
pub(crate) fn scaled_dec(s: &[u8], scale: u32) -> Option<u64> {
    let (int, frac) = match memchr::memchr(b'.', s) {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, &s[..0]),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let whole = if int.is_empty() { 0 } else { u64_dec(int)? };
    let mut v = whole.checked_mul(10u64.checked_pow(scale)?)?;
    let mut unit = 10u64.pow(scale);
    for &b in frac {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        unit /= 10;
        v = v.checked_add(d as u64 * unit)?;
    }
    Some(v)
}

/// Splits `line` at `delim` into `out` as `(start, end)` ranges. A field that starts with `"` runs
/// to the matching closing quote (a doubled `""` inside stays as is) and is returned without the
/// quotes. Returns false for an unterminated quote.
#[inline]
pub(crate) fn split_fields(line: &[u8], delim: u8, out: &mut Vec<(usize, usize)>) -> bool {
    out.clear();
    let n = line.len();
    let mut i = 0;
    loop {
        if i < n && line[i] == b'"' {
            let mut j = i + 1;
            loop {
                match memchr::memchr(b'"', &line[j..]) {
                    None => return false,
                    Some(k) => {
                        let q = j + k;
                        if line.get(q + 1) == Some(&b'"') {
                            j = q + 2;
                            continue;
                        }
                        out.push((i + 1, q));
                        i = q + 1;
                        break;
                    }
                }
            }
            match line.get(i) {
                None => return true,
                Some(&b) if b == delim => i += 1,
                Some(_) => return false,
            }
        } else {
            // Fields are short: a plain scan beats a vectorised search here.
            let start = i;
            while i < n && line[i] != delim {
                i += 1;
            }
            out.push((start, i));
            if i == n {
                return true;
            }
            i += 1;
        }
    }
}

/// Splits `line` at runs of spaces/tabs (leading and trailing blanks ignored).
#[inline]
pub(crate) fn split_blanks(line: &[u8], out: &mut Vec<(usize, usize)>) {
    out.clear();
    let mut i = 0;
    let n = line.len();
    while i < n {
        while i < n && (line[i] == b' ' || line[i] == b'\t') {
            i += 1;
        }
        if i == n {
            break;
        }
        let s = i;
        while i < n && line[i] != b' ' && line[i] != b'\t' {
            i += 1;
        }
        out.push((s, i));
    }
}

/// Trims ASCII spaces and tabs.
#[inline(always)]
pub(crate) fn trim(s: &[u8]) -> &[u8] {
    let mut a = 0;
    let mut b = s.len();
    while a < b && (s[a] == b' ' || s[a] == b'\t') {
        a += 1;
    }
    while b > a && (s[b - 1] == b' ' || s[b - 1] == b'\t') {
        b -= 1;
    }
    &s[a..b]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_strict() {
        assert_eq!(u64_dec(b"0"), Some(0));
        assert_eq!(u64_dec(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(u64_dec(b"18446744073709551616"), None);
        assert_eq!(u64_dec(b""), None);
        assert_eq!(u64_dec(b"12a"), None);
        assert_eq!(u64_dec(b" 1"), None);
        assert_eq!(i64_dec(b"-1"), Some(-1));
        assert_eq!(i64_dec(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(i64_dec(b"9223372036854775808"), None);
        assert_eq!(i64_dec(b"-"), None);
    }

    #[test]
    fn scaled_decimals() {
        assert_eq!(
            scaled_dec(b"1456095145.133076000", 6),
            Some(1_456_095_145_133_076)
        );
        assert_eq!(scaled_dec(b"0.000806000", 6), Some(806));
        assert_eq!(scaled_dec(b"12", 6), Some(12_000_000));
        assert_eq!(scaled_dec(b"1.5", 0), Some(1));
        assert_eq!(scaled_dec(b".", 6), None);
        assert_eq!(scaled_dec(b"1.2.3", 6), None);
        assert_eq!(scaled_dec(b"-1", 6), None);
    }

    #[test]
    fn fields_split_with_quotes() {
        let mut v = Vec::new();
        let line = b"a,\"b,c\",,d";
        assert!(split_fields(line, b',', &mut v));
        let got: Vec<&[u8]> = v.iter().map(|&(s, e)| &line[s..e]).collect();
        assert_eq!(got, vec![&b"a"[..], b"b,c", b"", b"d"]);
        assert!(!split_fields(b"\"open", b',', &mut v));
        let line = b"  1 \t 2  ";
        split_blanks(line, &mut v);
        assert_eq!(v, vec![(2, 3), (6, 7)]);
    }
}
