//! The ZooKeeper server of `cargo xtask test`: started on a free loopback port (by
//! `pulsar_testkit::zookeeper`, the launcher the fault drills use too), its address passed to
//! `cargo test` in `PULSAR_TEST_ZOOKEEPER`, stopped when the guard drops. An address already in
//! `PULSAR_TEST_ZOOKEEPER` is used as it is. [`ensure_installed`] installs the server's package
//! (`.ci/zookeeper.sh`) when it is missing and this process may install packages.

use crate::workspace_root;
use anyhow::{bail, Context, Result};
use pulsar_testkit::zookeeper::ZooKeeperServer;
use std::process::{Command, Stdio};
use std::time::Instant;

/// The environment variable the ZooKeeper tests read the server's `host:port` from.
pub(crate) const ENV_VAR: &str = "PULSAR_TEST_ZOOKEEPER";

/// A server this process started, stopped when the guard drops; or an address given in the
/// environment, left alone.
pub(crate) struct ZooKeeperGuard {
    address: String,
    server: Option<ZooKeeperServer>,
}

impl ZooKeeperGuard {
    /// The variable and value to set on the `cargo test` child.
    pub(crate) fn env(&self) -> (&'static str, &str) {
        (ENV_VAR, &self.address)
    }
}

impl Drop for ZooKeeperGuard {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            drop(server);
            eprintln!("xtask: stopped the test ZooKeeper on {}", self.address);
        }
    }
}

/// How `.ci/zookeeper.sh` can be run here: directly as root, or through password-less sudo.
enum Privilege {
    Root,
    Sudo,
}

/// Makes sure the ZooKeeper jars are there, for the suites' server and for the fault drills
/// (which start their own servers even when `PULSAR_TEST_ZOOKEEPER` names one): installs them
/// with `.ci/zookeeper.sh` (Debian's `zookeeper` package) as root or through `sudo -n`, and
/// otherwise fails with one line saying what to run. Skipped when the ZooKeeper tests are
/// opted out (`PULSAR_TEST_ZOOKEEPER=off`).
///
/// # Errors
///
/// The jars are missing and cannot be installed from here, or the install failed.
pub(crate) fn ensure_installed() -> Result<()> {
    if pulsar_testkit::zookeeper::installed()
        || std::env::var(ENV_VAR).is_ok_and(|value| value == "off")
    {
        return Ok(());
    }
    let script = workspace_root().join(".ci/zookeeper.sh");
    let mut install = match privilege() {
        Some(Privilege::Root) => {
            let mut command = Command::new("bash");
            command.arg(&script);
            command
        }
        Some(Privilege::Sudo) => {
            let mut command = Command::new("sudo");
            command.args(["-n", "bash"]).arg(&script);
            command
        }
        None => bail!(
            "ZooKeeper is missing and this user cannot install packages: run `sudo bash \
             .ci/zookeeper.sh` once, then `cargo xtask test` again"
        ),
    };
    eprintln!("xtask: ZooKeeper is missing; installing it with .ci/zookeeper.sh");
    let status = install
        .status()
        .with_context(|| format!("cannot run {}", script.display()))?;
    if !status.success() || !pulsar_testkit::zookeeper::installed() {
        bail!(
            "installing ZooKeeper with .ci/zookeeper.sh failed ({status}); run it by hand to \
             see why"
        );
    }
    Ok(())
}

/// Root, or a `sudo` that needs no password; `None` when neither.
fn privilege() -> Option<Privilege> {
    let uid = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&uid.stdout).trim() == "0" {
        return Some(Privilege::Root);
    }
    let sudo = Command::new("sudo")
        .args(["-n", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    sudo.success().then_some(Privilege::Sudo)
}

/// Starts a ZooKeeper server for the tests unless `PULSAR_TEST_ZOOKEEPER` already names one,
/// and waits until it serves requests.
///
/// # Errors
///
/// The jars are missing, `java` cannot be started, or the server did not serve within a minute
/// (the error carries the end of its log).
pub(crate) fn start_for_tests() -> Result<ZooKeeperGuard> {
    if let Ok(address) = std::env::var(ENV_VAR) {
        if !address.is_empty() {
            eprintln!("xtask: using the ZooKeeper at {address} from {ENV_VAR}");
            return Ok(ZooKeeperGuard {
                address,
                server: None,
            });
        }
    }
    let started = Instant::now();
    let server = ZooKeeperServer::start()?;
    let address = server.address();
    eprintln!(
        "xtask: started a test ZooKeeper on {address} in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(ZooKeeperGuard {
        address,
        server: Some(server),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_in_the_environment_is_used_as_it_is() {
        let guard = ZooKeeperGuard {
            address: "127.0.0.1:2181".into(),
            server: None,
        };
        assert_eq!(guard.env(), (ENV_VAR, "127.0.0.1:2181"));
    }
}
