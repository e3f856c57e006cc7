//! What `cargo xtask test` installs on a fresh machine before the steps that need it: Debian
//! packages (ZooKeeper, valgrind) through `apt-get`, and toolchain components (rustfmt, clippy,
//! Miri) through `rustup`.
//!
//! Each `ensure_*` function checks first and installs only what is missing. Installing needs
//! root (or a working `sudo`); where that is not possible the error says, in one line, what to
//! run by hand. Nothing is skipped silently: a step whose tool cannot be installed fails.

use anyhow::{bail, Context, Result};
use std::process::{Command, Stdio};

/// The toolchain Miri runs on: a dated nightly, so that the test command gives the same
/// verdict on every machine and every day. A floating `nightly` is whatever rustup last
/// fetched, and a later Miri may judge a dependency differently (the 2026-10-29 nightly
/// flags `parking_lot_core` 0.9.12's futex call, which this one accepts); moving to a newer
/// Miri is a deliberate change of this constant.
pub(crate) const MIRI_TOOLCHAIN: &str = "nightly-2026-05-20";

/// Installs Debian packages with `apt-get`, as root or through `sudo`.
///
/// # Errors
///
/// Neither root nor a usable `sudo`, or `apt-get` failed; the message names the command to
/// run by hand.
pub(crate) fn apt_install(packages: &[&str]) -> Result<()> {
    let by_hand = format!(
        "apt-get update && apt-get install -y {}",
        packages.join(" ")
    );
    let prefix: Vec<&str> = if is_root() {
        Vec::new()
    } else if succeeds(Command::new("sudo").args(["-n", "true"])) {
        vec!["sudo", "-n"]
    } else {
        bail!("need root to install {packages:?}: run `{by_hand}` as root, then try again");
    };
    println!("==> xtask test: installing {}", packages.join(" "));
    let mut commands: Vec<Vec<&str>> = vec![
        vec!["apt-get", "update", "-qq"],
        vec!["apt-get", "install", "-y", "-qq", "--no-install-recommends"],
    ];
    commands[1].extend_from_slice(packages);
    for command in commands {
        // Through `env`: `sudo` resets the environment, and apt-get would then ask debconf's
        // questions interactively.
        let argv: Vec<&str> = prefix
            .iter()
            .copied()
            .chain(["env", "DEBIAN_FRONTEND=noninteractive"])
            .chain(command)
            .collect();
        let status = Command::new(argv[0])
            .args(&argv[1..])
            .status()
            .with_context(|| format!("running {argv:?}"))?;
        if !status.success() {
            bail!("{argv:?} failed ({status}): run `{by_hand}` by hand, then try again");
        }
    }
    Ok(())
}

/// Makes sure `cargo fmt` and `cargo clippy` run, adding the `rustfmt` and `clippy`
/// components to the toolchain that runs xtask when they are missing.
///
/// # Errors
///
/// They are missing and `rustup` cannot add them.
pub(crate) fn ensure_lints() -> Result<()> {
    let present = |tool: &str| succeeds(crate::cargo().args([tool, "--version"]));
    if present("fmt") && present("clippy") {
        return Ok(());
    }
    println!("==> xtask test: installing rustfmt and clippy");
    let status = Command::new("rustup")
        .args(["component", "add", "rustfmt", "clippy"])
        .status()
        .context("running rustup (rustfmt and clippy are missing)")?;
    if !status.success() || !present("fmt") || !present("clippy") {
        bail!("cannot add rustfmt and clippy: run `rustup component add rustfmt clippy`");
    }
    Ok(())
}

/// Makes sure `valgrind` runs, installing Debian's package when it is missing.
///
/// # Errors
///
/// It is missing and cannot be installed ([`apt_install`]).
pub(crate) fn ensure_valgrind() -> Result<()> {
    if succeeds(Command::new("valgrind").arg("--version")) {
        return Ok(());
    }
    apt_install(&["valgrind"])?;
    if !succeeds(Command::new("valgrind").arg("--version")) {
        bail!("valgrind still does not run after installing it");
    }
    Ok(())
}

/// Makes sure `cargo miri` runs on [`MIRI_TOOLCHAIN`], installing that toolchain (minimal
/// profile) with the `miri` and `rust-src` components when it or they are missing, and builds
/// Miri's sysroot.
///
/// # Errors
///
/// `rustup` is missing, or the toolchain or its components cannot be installed (no network,
/// say); the message names the command to run by hand.
pub(crate) fn ensure_miri() -> Result<()> {
    let by_hand = format!(
        "rustup toolchain install {MIRI_TOOLCHAIN} --profile minimal --component miri,rust-src"
    );
    if !succeeds(Command::new("rustup").arg("--version")) {
        bail!("Miri needs rustup: install rustup, then run `{by_hand}`");
    }
    if !succeeds(miri_cargo().args(["miri", "--version"])) {
        println!("==> xtask test: installing Miri ({by_hand})");
        // `toolchain install` of an installed toolchain adds the missing components and leaves
        // the toolchain itself as it is.
        let installed = Command::new("rustup")
            .args([
                "toolchain",
                "install",
                MIRI_TOOLCHAIN,
                "--profile",
                "minimal",
            ])
            .args(["--component", "miri,rust-src"])
            .status()
            .context("running rustup")?;
        if !installed.success() {
            bail!("cannot install Miri's toolchain: run `{by_hand}` by hand");
        }
        if !succeeds(miri_cargo().args(["miri", "--version"])) {
            bail!("Miri still does not run after installing it: run `{by_hand}` by hand");
        }
    }
    // Builds (or checks) the sysroot once here, so that its output does not interleave with
    // the first test run's.
    let status = miri_cargo()
        .args(["miri", "setup"])
        .stdout(Stdio::null())
        .status()
        .context("running cargo miri setup")?;
    if !status.success() {
        bail!("`cargo +{MIRI_TOOLCHAIN} miri setup` failed ({status})");
    }
    Ok(())
}

/// `cargo` of the Miri toolchain, through rustup (the `cargo` that runs xtask is the stable
/// one, so `+nightly` cannot be used on it), without the variables the outer cargo set.
pub(crate) fn miri_cargo() -> Command {
    let mut command = Command::new("rustup");
    command
        .args(["run", MIRI_TOOLCHAIN, "cargo"])
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO")
        .env_remove("RUSTC")
        .env_remove("RUSTDOC");
    command
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
        .unwrap_or(false)
}

fn succeeds(command: &mut Command) -> bool {
    command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|status| status.success())
        .unwrap_or(false)
}
