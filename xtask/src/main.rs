//! Workspace automation: `cargo xtask test` (what CI runs) and `cargo xtask bench` (the
//! benchmark report). One file per subcommand.

mod background;
mod bench;
mod bench_machine;
mod core_to_core;
mod report;
mod report_chart;
mod report_markdown;
mod setup;
mod test;
mod unsafe_coverage;
mod zookeeper;

use anyhow::{bail, Result};

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let command = args.next();
    let rest: Vec<String> = args.collect();
    match command.as_deref() {
        Some("test") => test::run(&rest),
        Some("bench") => bench::run(&rest),
        Some("help") | Some("--help") | Some("-h") | None => {
            print_help();
            Ok(())
        }
        Some(other) => {
            print_help();
            bail!("unknown xtask command `{other}`")
        }
    }
}

fn print_help() {
    eprintln!(
        "cargo xtask <command>\n\n\
         commands:\n  \
         test            fmt check, clippy -D warnings, cargo test --workspace, loom models,\n                  Miri, valgrind (--no-loom, --no-miri, --no-valgrind skip one)\n  \
         bench [FILTER]  run the benchmarks and write target/bench-report/ (--full: longer)\n"
    );
}

/// The cargo that invoked us (`$CARGO`), so child builds use the same toolchain.
pub(crate) fn cargo() -> std::process::Command {
    std::process::Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// The workspace root (the parent of this crate's manifest directory).
pub(crate) fn workspace_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace root")
        .to_path_buf()
}
