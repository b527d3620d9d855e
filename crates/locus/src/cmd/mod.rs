//! One module per subcommand.

pub mod mrc;
pub mod replay;
pub mod serve;
pub mod simulate;
pub mod trace;
