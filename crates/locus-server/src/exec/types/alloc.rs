//! What the collections' allocations cost, as the allocator hands them out, so an object's
//! charge is the memory it holds and RSS follows the budget.

use std::mem::size_of;

/// Bytes the allocator takes for a request of `n` bytes (glibc: an 8-byte header, 16-byte
/// steps, 32 bytes at least; nothing for an empty request).
#[inline]
pub fn heap(n: usize) -> u64 {
    if n == 0 {
        0
    } else {
        ((n as u64 + 8).div_ceil(16) * 16).max(32)
    }
}

/// A boxed byte string of `n` bytes.
#[inline]
pub fn bytes(n: usize) -> u64 {
    heap(n)
}

/// Buckets a hashbrown table (std's `HashMap`, [`super::entries::Entries`]'s index) has for `cap` items.
#[inline]
pub fn buckets(cap: usize) -> usize {
    match cap {
        0 => 0,
        1..=3 => 4,
        4..=7 => 8,
        _ => (cap * 8 / 7).next_power_of_two(),
    }
}

/// A hashbrown table of `cap` items of `T`: one `T` and one control byte per bucket, plus a
/// group of control bytes.
#[inline]
pub fn table<T>(cap: usize) -> u64 {
    let b = buckets(cap);
    if b == 0 {
        0
    } else {
        heap(b * size_of::<T>() + b + 16)
    }
}

/// A `Vec<T>` of capacity `cap`.
#[inline]
pub fn vec<T>(cap: usize) -> u64 {
    heap(cap * size_of::<T>())
}

/// The capacity a `Vec` or table grows to from `cap` when it must hold `need` (amortized
/// doubling, as std and hashbrown do).
#[inline]
pub fn grown(cap: usize, need: usize) -> usize {
    if need <= cap {
        cap
    } else {
        need.max(cap * 2).max(4)
    }
}
