//! Miss ratio curves and the profilers that build them.
//!
//! `locus-mrc` turns a stream of accesses into miss ratio curves (MRCs). It depends only on
//! `locus-common`: profilers take plain `(key: u64, size: u32, op)` tuples, so the live server's
//! sampler and the offline `locus mrc` command feed the same code. The models and the variants used
//! here are specified in `docs/models.md` (the book's page on the models); each file cites its paper and section.
//!
//! ```text
//!   (key, size, op) ──► Profiler::access ──► model state (stack / histograms / tables)
//!                                                     │
//!                       Profiler::mrc(capacities) ◄───┘──► Mrc { unit, metric, points }
//!                                                               │ merge_min (kRedis mMRC, argmin)
//!                                                               │ error_vs (MAE, worst point)
//! ```
//!
//! Components:
//! * [`Mrc`] ([`curve`]): points with the capacity [`Unit`] (objects or bytes) and the miss-ratio
//!   [`Metric`] (requests or bytes) in the type; interpolation, merge-by-minimum, MAE.
//! * [`Profiler`] ([`profiler`]): the one trait; [`Op`] is GET / SET / DEL.
//! * Models, one file each:
//!   [`ExactLru`] (Mattson with a Fenwick tree, objects and bytes, DEL as a hole: exact),
//!   [`Shards`] (fixed rate and fixed size, with `_adj`),
//!   [`Aet`] (reference sampling), [`Eaet`] (byte clock, SET/DEL, Eq. 5),
//!   [`Footprint`] (LAMA's conversion with `≤`), [`Krr`] (K-LRU for any K, exponent setting,
//!   sizeArray for bytes, SET/DEL with holes, spatial sampling).
//!   Miniature simulation runs the engine's own policies and therefore lives in `locus-engine`,
//!   implementing [`Profiler`].
//! * [`registry`]: models by name ([`ModelKind`], [`build`]) for the CLI and configuration.
//! * [`sampling`]: the spatial hash filter (`hash mod 2^24 < T`) shared by the sampled models.
//!
//! Non-goals: reading trace files (that is `locus-trace`), plotting (the CLI), threads.

mod aet;
pub mod curve;
mod eaet;
mod error;
mod exact;
mod footprint;
mod hist;
mod krr;
pub mod profiler;
pub mod registry;
pub mod sampling;
mod shards;
mod stack;

pub use aet::Aet;
pub use curve::{ErrorStats, MergedMrc, Metric, Mrc, Unit, even_capacities};
pub use eaet::Eaet;
pub use error::MrcError;
pub use exact::ExactLru;
pub use footprint::Footprint;
pub use krr::{EXPONENT_REDIS_POOL, EXPONENT_TEXTBOOK, Krr, KrrConfig};
pub use profiler::{Op, Profiler};
pub use registry::{ModelKind, ModelSettings, build};
pub use shards::{Shards, ShardsConfig, ShardsMode};
