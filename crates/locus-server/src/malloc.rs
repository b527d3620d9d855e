//! The process allocator's settings for a long-running cache.
//!
//! Values above an eighth of a page, and every hash, list, set and sorted set, live in the system
//! allocator (glibc's malloc), charged to their tenant. glibc raises its mmap threshold each time
//! a large mmapped block is freed (up to 32 MiB on 64-bit), so after the first few large values
//! are overwritten every later one up to 32 MiB is carved from the heap, where a churning mix of
//! sizes leaves holes the kernel never gets back: `bench/memory.py --part m` (10x overwrite of
//! hashes, lists, sorted sets and strings of 50 B..4 MB under 256 MiB) ended at 379-437 MiB of RSS
//! with the default, above the 358 MiB bound, and at 302-316 MiB with a fixed 128 KiB threshold
//! (BENCHMARKS.md, "Memory bound under overwrite: mixed types"). A fixed threshold gives every
//! block of 128 KiB or more its own mapping, returned to the kernel when freed, as Redis's
//! jemalloc does for its large size classes.
//!
//! An operator's own `GLIBC_TUNABLES=glibc.malloc.mmap_threshold=…` (or the older
//! `MALLOC_MMAP_THRESHOLD_`) wins: then nothing is changed.

/// The mmap threshold `locus serve` sets, in bytes.
pub const MMAP_THRESHOLD: usize = 128 * 1024;

/// Sets glibc's mmap threshold to [`MMAP_THRESHOLD`] (which also stops its dynamic growth),
/// unless the environment already sets one. Returns whether it changed anything. A no-op on
/// other C libraries.
pub fn tune_allocator() -> bool {
    let env_sets_it = std::env::var("GLIBC_TUNABLES").is_ok_and(|v| v.contains("mmap_threshold"))
        || std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_some();
    if env_sets_it {
        return false;
    }
    set_threshold()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set_threshold() -> bool {
    // SAFETY: mallopt only changes malloc's parameters; it is called once at start-up, before
    // the server's threads exist.
    unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int) == 1 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_threshold() -> bool {
    false
}

/// Hands the heap's free memory back to the kernel (glibc's `malloc_trim`), after a client let
/// go of many small allocations at once (a transaction's queue): glibc otherwise keeps them for
/// reuse and the process's RSS stays where the queue took it. A no-op on other C libraries.
pub fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap memory to the kernel; it is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
}
