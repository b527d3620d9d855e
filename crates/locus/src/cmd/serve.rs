//! `locus serve`.

/// Arguments of `locus serve`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `locus serve`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("locus serve is being built")
}
