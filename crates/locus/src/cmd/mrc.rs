//! `locus mrc`.

/// Arguments of `locus mrc`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `locus mrc`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("locus mrc is being built")
}
