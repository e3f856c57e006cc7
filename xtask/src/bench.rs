//! `cargo xtask bench`: runs the criterion benches and writes the report (filled in by the
//! benchmark issue).

use anyhow::{bail, Result};

pub(crate) fn run(_args: &[String]) -> Result<()> {
    bail!("cargo xtask bench is not implemented yet")
}
