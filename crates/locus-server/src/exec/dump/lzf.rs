//! LZF, the compression RDB strings use (liblzf's format): a stream of literal runs
//! (`000LLLLL` then L+1 bytes) and back references (`LLLooooo oooooooo`, or `111ooooo LLLLLLLL
//! oooooooo` for long ones: length L+2, distance o+1, at most 8 KiB back).
//!
//! Written from the format's description; [`decompress`] trusts nothing in its input.

/// Why a compressed string was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LzfError {
    /// A literal or a reference passes the end of the input.
    Truncated,
    /// A reference points before the start of the output.
    BadReference,
    /// The output is not the length the header claimed.
    WrongLength,
}

/// Decompresses `input` into exactly `expected` bytes. The output grows with what the input
/// produces (never allocated up front from `expected`, which the payload claims), so a hostile
/// length costs nothing until real compressed bytes back it.
///
/// # Errors
/// [`LzfError`] when the input is malformed or does not expand to `expected` bytes.
pub fn decompress(input: &[u8], expected: usize) -> Result<Vec<u8>, LzfError> {
    // liblzf's best ratio is a 3-byte reference for 264 bytes: reserve at most that much.
    let mut out: Vec<u8> = Vec::with_capacity(expected.min(input.len().saturating_mul(88)));
    let mut i = 0;
    while i < input.len() {
        let ctrl = usize::from(input[i]);
        i += 1;
        if ctrl < 32 {
            let n = ctrl + 1;
            let lit = input.get(i..i + n).ok_or(LzfError::Truncated)?;
            if out.len() + n > expected {
                return Err(LzfError::WrongLength);
            }
            out.extend_from_slice(lit);
            i += n;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += usize::from(*input.get(i).ok_or(LzfError::Truncated)?);
                i += 1;
            }
            let lo = usize::from(*input.get(i).ok_or(LzfError::Truncated)?);
            i += 1;
            let back = ((ctrl & 0x1f) << 8) + lo + 1;
            len += 2;
            if back > out.len() {
                return Err(LzfError::BadReference);
            }
            if out.len() + len > expected {
                return Err(LzfError::WrongLength);
            }
            let start = out.len() - back;
            // Overlapping copies repeat the pattern, byte by byte.
            for k in 0..len {
                let b = out[start + k];
                out.push(b);
            }
        }
    }
    if out.len() != expected {
        return Err(LzfError::WrongLength);
    }
    Ok(out)
}

/// The hash table's largest size (2^14 slots); a short input gets a table its own size, so
/// compressing the many short strings of a large value costs no 16K-slot table each.
const HLOG_MAX: u32 = 14;
const HLOG_MIN: u32 = 6;
const MAX_OFF: usize = 1 << 13;
const MAX_REF: usize = (1 << 8) + (1 << 3);
const MAX_LIT: usize = 1 << 5;

fn hash3(p: &[u8], hlog: u32) -> usize {
    let v = (u32::from(p[0]) << 16) | (u32::from(p[1]) << 8) | u32::from(p[2]);
    (v.wrapping_mul(2_654_435_761) >> (32 - hlog)) as usize
}

/// Compresses `input`; `None` when the result would not be shorter than `max_out` bytes (Redis
/// then stores the string as it is).
pub fn compress(input: &[u8], max_out: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(max_out.min(input.len()));
    let hlog = (usize::BITS - input.len().leading_zeros()).clamp(HLOG_MIN, HLOG_MAX);
    let mut table = vec![usize::MAX; 1 << hlog];
    let mut lit_start = 0;
    let mut i = 0;
    let flush = |out: &mut Vec<u8>, lits: &[u8]| {
        for run in lits.chunks(MAX_LIT) {
            out.push((run.len() - 1) as u8);
            out.extend_from_slice(run);
        }
    };
    while i + 2 < input.len() {
        let h = hash3(&input[i..], hlog);
        let cand = table[h];
        table[h] = i;
        if cand != usize::MAX && i - cand <= MAX_OFF && input[cand..cand + 3] == input[i..i + 3] {
            let max = (input.len() - i).min(MAX_REF);
            let mut len = 3;
            while len < max && input[cand + len] == input[i + len] {
                len += 1;
            }
            flush(&mut out, &input[lit_start..i]);
            let off = i - cand - 1;
            let l = len - 2;
            if l < 7 {
                out.push(((l << 5) | (off >> 8)) as u8);
            } else {
                out.push(((7 << 5) | (off >> 8)) as u8);
                out.push((l - 7) as u8);
            }
            out.push((off & 0xff) as u8);
            if out.len() >= max_out {
                return None;
            }
            for k in i + 1..(i + len).min(input.len().saturating_sub(2)) {
                table[hash3(&input[k..], hlog)] = k;
            }
            i += len;
            lit_start = i;
        } else {
            i += 1;
        }
    }
    flush(&mut out, &input[lit_start..]);
    (out.len() < max_out).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn repetitive_text_compresses_and_comes_back() {
        let s = b"abcabcabcabcabcabcabcabcabcabcabcabc hello hello hello hello".repeat(20);
        let c = compress(&s, s.len()).expect("compressible");
        assert!(c.len() < s.len() / 4);
        assert_eq!(decompress(&c, s.len()).unwrap(), s);
    }

    #[test]
    fn random_bytes_do_not_compress() {
        let s: Vec<u8> = (0..100u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        assert!(compress(&s, s.len() - 4).is_none());
    }

    #[test]
    fn hostile_inputs_are_refused() {
        // A reference before anything was written.
        assert_eq!(decompress(&[0x20, 0x00], 3), Err(LzfError::BadReference));
        // A literal run longer than the input.
        assert_eq!(decompress(&[0x05, b'a'], 6), Err(LzfError::Truncated));
        // A long reference missing its length byte.
        assert_eq!(
            decompress(&[0x00, b'a', 0xe0], 20),
            Err(LzfError::Truncated)
        );
        // More output than claimed, and less.
        assert_eq!(
            decompress(&[0x01, b'a', b'b'], 1),
            Err(LzfError::WrongLength)
        );
        assert_eq!(
            decompress(&[0x01, b'a', b'b'], 3),
            Err(LzfError::WrongLength)
        );
        // A huge claimed length with a tiny input allocates only what the input makes.
        assert_eq!(
            decompress(&[0x00, b'a'], usize::MAX),
            Err(LzfError::WrongLength)
        );
    }

    proptest! {
        #[test]
        fn round_trip(data in proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), any::<u8>()], 0..3000)) {
            if let Some(c) = compress(&data, data.len() + 64) {
                prop_assert_eq!(decompress(&c, data.len()).unwrap(), data);
            }
        }

        #[test]
        fn garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..200), n in 0usize..5000) {
            let _ = decompress(&data, n);
        }
    }
}
