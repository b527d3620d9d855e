//! `locus`: one binary, one file per subcommand (`src/cmd/`).
//!
//! * `locus serve`: the cache server (Redis and memcached protocols), see `locus-server`.
//! * `locus trace`: trace statistics, generation and conversion, see `locus-trace`.
//! * `locus mrc`: miss ratio curves from a trace, see `locus-mrc`.
//! * `locus simulate`: memory controllers compared on a trace-driven experiment, see `locus-sim`.
//! * `locus replay`: a live server driven over the network as a look-aside application, see
//!   `locus-replay`.
//!
//! Only this file decides exit codes: every subcommand returns `anyhow::Result`, and an error is
//! printed as `locus: <error>` with its causes, exit status 1 (2 for usage errors, from clap).

use clap::{Parser, Subcommand};

mod cmd;

/// Locus: a multi-tenant in-memory key-value cache that models each tenant's locality and miss cost.
#[derive(Debug, Parser)]
#[command(name = "locus", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the cache server (Redis-compatible; 127.0.0.1:6379 by default).
    Serve(cmd::serve::Args),
    /// Trace statistics, synthetic generation and format conversion.
    #[command(subcommand)]
    Trace(cmd::trace::TraceCommand),
    /// Build miss ratio curves from a trace with one or more models.
    Mrc(cmd::mrc::Args),
    /// Compare memory controllers on an experiment (traces or generators, virtual clock).
    Simulate(cmd::simulate::Args),
    /// Drive a live server (Redis protocol or memcached) from a trace, with real backends.
    Replay(cmd::replay::Args),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => cmd::serve::run(args),
        Command::Trace(sub) => cmd::trace::run(sub),
        Command::Mrc(args) => cmd::mrc::run(args),
        Command::Simulate(args) => cmd::simulate::run(args),
        Command::Replay(args) => cmd::replay::run(args),
    };
    if let Err(e) = result {
        eprintln!("locus: {e:#}");
        std::process::exit(1);
    }
}
