//! The CRC-64 Redis puts at the end of RDB files and DUMP payloads: the Jones polynomial
//! (0xad93d23594c935a9), reflected input and output, initial value 0, no final xor. Its check
//! value (the CRC of `123456789`) is 0xe9c6d914c4b8d9ca.
//!
//! Eight tables ("slicing by 8"): a DUMP of a large value is checked at RESTORE and computed at
//! DUMP with the engine lock held, so the CRC runs at several bytes a cycle rather than one.

use std::sync::LazyLock;

/// The Jones polynomial, bit-reversed (the reflected form the table update uses).
const POLY_REFLECTED: u64 = 0x95ac_9329_ac4b_c9b5;

static TABLES: LazyLock<[[u64; 256]; 8]> = LazyLock::new(|| {
    let mut t = [[0u64; 256]; 8];
    for (i, slot) in t[0].iter_mut().enumerate() {
        let mut c = i as u64;
        for _ in 0..8 {
            c = if c & 1 == 1 {
                (c >> 1) ^ POLY_REFLECTED
            } else {
                c >> 1
            };
        }
        *slot = c;
    }
    for i in 0..256 {
        for k in 1..8 {
            let prev = t[k - 1][i];
            t[k][i] = t[0][(prev & 0xff) as usize] ^ (prev >> 8);
        }
    }
    t
});

/// Continues CRC `crc` over `data` (start with 0).
pub fn crc64(mut crc: u64, data: &[u8]) -> u64 {
    let t = &*TABLES;
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let v = crc ^ u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        crc = t[7][(v & 0xff) as usize]
            ^ t[6][((v >> 8) & 0xff) as usize]
            ^ t[5][((v >> 16) & 0xff) as usize]
            ^ t[4][((v >> 24) & 0xff) as usize]
            ^ t[3][((v >> 32) & 0xff) as usize]
            ^ t[2][((v >> 40) & 0xff) as usize]
            ^ t[1][((v >> 48) & 0xff) as usize]
            ^ t[0][(v >> 56) as usize];
    }
    for &b in chunks.remainder() {
        crc = t[0][((crc ^ u64::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bitwise(data: &[u8]) -> u64 {
        let mut crc = 0u64;
        for &b in data {
            crc ^= u64::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ POLY_REFLECTED
                } else {
                    crc >> 1
                };
            }
        }
        crc
    }

    #[test]
    fn check_value_is_the_jones_crc() {
        assert_eq!(crc64(0, b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn sliced_equals_bitwise_at_every_length_and_split() {
        let data: Vec<u8> = (0..200u32).map(|i| (i * 37 + 11) as u8).collect();
        for n in 0..data.len() {
            assert_eq!(crc64(0, &data[..n]), bitwise(&data[..n]), "len {n}");
        }
        let whole = crc64(0, &data);
        for cut in [1, 7, 8, 9, 100] {
            assert_eq!(crc64(crc64(0, &data[..cut]), &data[cut..]), whole);
        }
    }
}
