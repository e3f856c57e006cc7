//! The ZooKeeper server of `cargo xtask test`: started on a free loopback port (by
//! `pulsar_testkit::zookeeper`, the launcher the fault drills use too), its address passed to
//! `cargo test` in `PULSAR_TEST_ZOOKEEPER`, stopped when the guard drops. An address already in
//! `PULSAR_TEST_ZOOKEEPER` is used as it is. [`ensure_installed`] installs the server's package
//! when it is missing.

use anyhow::{bail, Result};
use pulsar_testkit::zookeeper::ZooKeeperServer;
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

/// Makes sure the ZooKeeper jars are there, for the suites' server and for the fault drills
/// (which start their own servers even when `PULSAR_TEST_ZOOKEEPER` names one): installs
/// Debian's `zookeeper` package (which brings a Java runtime) when they are missing, through
/// [`crate::setup::apt_install`]. Skipped when the ZooKeeper tests are opted out
/// (`PULSAR_TEST_ZOOKEEPER=off`).
///
/// # Errors
///
/// The jars are missing and cannot be installed from here (the message names the command to
/// run), or they are still missing after the install.
pub(crate) fn ensure_installed() -> Result<()> {
    if pulsar_testkit::zookeeper::installed()
        || std::env::var(ENV_VAR).is_ok_and(|value| value == "off")
    {
        return Ok(());
    }
    crate::setup::apt_install(&["zookeeper"])?;
    if !pulsar_testkit::zookeeper::installed() {
        bail!("the zookeeper package is installed but its jars are still missing");
    }
    Ok(())
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
