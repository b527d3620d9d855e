//! Shared foundations of Locus.
//!
//! Every other crate builds on these few pieces, so that the server and the simulator run the same
//! code with only time and randomness swapped:
//!
//! * [`clock`]: where time comes from. [`clock::SystemClock`] reads the wall clock;
//!   [`clock::VirtualClock`] is advanced by its owner (the simulator, a test), so runs are
//!   reproducible bit for bit.
//! * [`rng`]: a small seeded PRNG (xoshiro256++) with the helpers the policies and profilers need
//!   (uniform integers without modulo bias, 53-bit doubles, `(0, 1]` doubles), and SplitMix64
//!   ([`rng::splitmix64`], its mixer [`rng::mix64`]) for seeding and scrambling.
//! * [`size`]: the human quantities of configuration files and command lines: [`ByteSize`]
//!   ("64MiB"), [`HumanDuration`] ("5s") and counts ([`parse_count`]: "1e6", "200k", "1_000").
//! * [`zipf`]: [`Zipf`], the one Zipf sampler (rejection inversion) of the trace generator and the
//!   tests' synthetic workloads.
//! * [`settings`]: the one rule turning a TOML table of controller settings into `(key, text)`
//!   pairs, for the server and the simulator alike.
//! * [`hash`]: the one seeded 64-bit key hash used for the index, spatial sampling and sharding.
//! * [`strict_assert!`]: an invariant check that is on in debug builds and tests, off in release.
//!
//! Non-goals: no I/O, no threads, no allocation-heavy helpers. This crate must stay cheap to depend on.

pub mod clock;
pub mod hash;
pub mod rng;
pub mod settings;
pub mod size;
pub mod zipf;

pub use clock::{Clock, PinnedTime, SharedClock, SystemClock, VirtualClock};
pub use hash::{hash_key, hash_key_seeded};
pub use rng::Rng;
pub use settings::{SettingError, setting_text, settings_from_toml};
pub use size::{ByteSize, HumanDuration, ParseSizeError, parse_count, parse_duration};
pub use zipf::Zipf;

/// Checks an invariant in debug builds and tests; compiled out in release builds.
///
/// Use it for internal consistency conditions (memory accounting, list links) whose failure means a
/// bug in Locus, never for conditions that depend on input: those get a typed error.
#[macro_export]
macro_rules! strict_assert {
    ($($arg:tt)*) => {
        debug_assert!($($arg)*)
    };
}
