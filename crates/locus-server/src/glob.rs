//! Redis's glob matching (`stringmatchlen`) for KEYS, SCAN MATCH and CONFIG GET.
//!
//! `*` any sequence, `?` any byte, `[abc]`, `[^abc]`, `[a-z]` (reversed ranges allowed), `\x` a
//! literal `x` (also inside classes); an unterminated class ends at the end of the pattern, as in
//! Redis. Matching is byte-wise; `*` backtracks to the latest star only, so the cost is
//! O(pattern × string) rather than exponential.

/// Whether `s` matches `pat` (case-sensitive unless `nocase`).
pub fn glob_match(pat: &[u8], s: &[u8], nocase: bool) -> bool {
    let eq = |a: u8, b: u8| {
        if nocase {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    };
    let (mut p, mut i) = (0usize, 0usize);
    // (pattern index after the star, string index the star currently covers up to)
    let mut star: Option<(usize, usize)> = None;
    loop {
        if p < pat.len() {
            match pat[p] {
                b'*' => {
                    while p < pat.len() && pat[p] == b'*' {
                        p += 1;
                    }
                    if p == pat.len() {
                        return true;
                    }
                    star = Some((p, i));
                    continue;
                }
                b'?' if i < s.len() => {
                    p += 1;
                    i += 1;
                    continue;
                }
                b'[' if i < s.len() => {
                    if let Some(next) = match_class(pat, p, s[i], nocase) {
                        p = next;
                        i += 1;
                        continue;
                    }
                }
                b'\\' if p + 1 < pat.len() && i < s.len() && eq(pat[p + 1], s[i]) => {
                    p += 2;
                    i += 1;
                    continue;
                }
                b'\\' if p + 1 < pat.len() => {}
                c if c != b'?' && c != b'[' && i < s.len() && eq(c, s[i]) => {
                    p += 1;
                    i += 1;
                    continue;
                }
                _ => {}
            }
        } else if i == s.len() {
            return true;
        }
        // Mismatch: let the latest star swallow one more byte, if it can.
        match star {
            Some((sp, si)) if si < s.len() => {
                star = Some((sp, si + 1));
                p = sp;
                i = si + 1;
            }
            _ => return false,
        }
    }
}

/// Matches byte `c` against the class starting at `pat[start] == b'['`; returns the pattern index
/// after the class when it matches.
fn match_class(pat: &[u8], start: usize, c: u8, nocase: bool) -> Option<usize> {
    let lower = |b: u8| if nocase { b.to_ascii_lowercase() } else { b };
    let c = lower(c);
    let mut p = start + 1;
    let not = pat.get(p) == Some(&b'^');
    if not {
        p += 1;
    }
    let mut matched = false;
    loop {
        if p >= pat.len() {
            break; // unterminated class: ends here
        }
        if pat[p] == b'\\' && p + 1 < pat.len() {
            p += 1;
            if lower(pat[p]) == c {
                matched = true;
            }
        } else if pat[p] == b']' {
            p += 1;
            break;
        } else if p + 2 < pat.len() && pat[p + 1] == b'-' {
            let (mut a, mut b) = (lower(pat[p]), lower(pat[p + 2]));
            if a > b {
                std::mem::swap(&mut a, &mut b);
            }
            if c >= a && c <= b {
                matched = true;
            }
            p += 2;
        } else if lower(pat[p]) == c {
            matched = true;
        }
        p += 1;
    }
    if matched != not { Some(p) } else { None }
}

/// The literal prefix of a pattern (up to its first special character), unescaped.
pub fn literal_prefix(pat: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < pat.len() {
        match pat[i] {
            b'*' | b'?' | b'[' => break,
            b'\\' if i + 1 < pat.len() => {
                out.push(pat[i + 1]);
                i += 2;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, s: &str) -> bool {
        glob_match(p.as_bytes(), s.as_bytes(), false)
    }

    #[test]
    fn redis_semantics() {
        assert!(m("*", ""));
        assert!(m("*", "abc"));
        assert!(m("a*c", "abbbc"));
        assert!(!m("a*c", "abbb"));
        assert!(m("h?llo", "hello"));
        assert!(!m("h?llo", "hllo"));
        assert!(m("h[ae]llo", "hallo"));
        assert!(!m("h[ae]llo", "hillo"));
        assert!(m("h[^e]llo", "hallo"));
        assert!(!m("h[^e]llo", "hello"));
        assert!(m("h[a-b]llo", "hbllo"));
        assert!(m("h[b-a]llo", "hallo"));
        assert!(m("a\\*b", "a*b"));
        assert!(!m("a\\*b", "axb"));
        assert!(m("[\\]]", "]"));
        assert!(
            m("a[bc", "ab"),
            "unterminated class ends at the pattern end"
        );
        assert!(m("*a*b*c*", "xxaxxbxxcxx"));
        assert!(!m("*a*b*c*", "xxaxxcxxbxx"));
        assert!(m("foo*", "foo"));
        assert!(!m("", "a"));
        assert!(glob_match(b"HeLLo", b"hello", true));
        assert!(m("?", "\u{0}"));
    }

    #[test]
    fn pathological_pattern_is_fast() {
        let s = "a".repeat(5000);
        let p = "a*".repeat(50) + "b";
        assert!(!m(&p, &s));
    }

    #[test]
    fn prefixes() {
        assert_eq!(literal_prefix(b"user:*"), b"user:");
        assert_eq!(literal_prefix(b"a\\*b?"), b"a*b");
        assert_eq!(literal_prefix(b"*"), b"");
    }
}
