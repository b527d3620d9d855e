//! `locus trace`.

/// Subcommands of `locus trace`.
#[derive(Debug, clap::Subcommand)]
pub enum TraceCommand {
    /// Statistics of a trace file.
    Stats,
}

/// Runs `locus trace …`.
pub fn run(_cmd: TraceCommand) -> anyhow::Result<()> {
    anyhow::bail!("locus trace is being built")
}
