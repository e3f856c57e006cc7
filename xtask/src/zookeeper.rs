//! A throwaway ZooKeeper server for the tests: `cargo xtask test` starts one on a free loopback
//! port and passes its address to `cargo test` in `PULSAR_TEST_ZOOKEEPER`; dropping the guard
//! stops it and removes its data.
//!
//! The server is the Debian `zookeeper` package's (`.ci/zookeeper.sh` installs it):
//! `java -cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-api.jar
//! org.apache.zookeeper.server.ZooKeeperServerMain <zoo.cfg>`. `ZOOKEEPER_CLASSPATH` overrides
//! the class path; an address already in `PULSAR_TEST_ZOOKEEPER` is used as it is.

use anyhow::{bail, Context, Result};
use std::fs;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The environment variable the ZooKeeper tests read the server's `host:port` from.
pub(crate) const ENV_VAR: &str = "PULSAR_TEST_ZOOKEEPER";

/// Where the Debian package puts the server's jars.
const JAR_DIR: &str = "/usr/share/java";

/// How long the server may take to serve requests (the JVM starts in a few seconds).
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A server this process started, stopped when the guard drops; or an address given in the
/// environment, left alone.
pub(crate) struct ZooKeeperGuard {
    address: String,
    server: Option<Server>,
}

/// The child process and its scratch directory (config, data, log).
struct Server {
    child: Child,
    dir: PathBuf,
}

impl ZooKeeperGuard {
    /// The variable and value to set on the `cargo test` child.
    pub(crate) fn env(&self) -> (&'static str, &str) {
        (ENV_VAR, &self.address)
    }
}

impl Drop for ZooKeeperGuard {
    fn drop(&mut self) {
        if let Some(mut server) = self.server.take() {
            let _ = server.child.kill();
            let _ = server.child.wait();
            let _ = fs::remove_dir_all(&server.dir);
            eprintln!("xtask: stopped the test ZooKeeper on {}", self.address);
        }
    }
}

/// Starts a ZooKeeper server for the tests unless `PULSAR_TEST_ZOOKEEPER` already names one,
/// and waits until it answers.
///
/// # Errors
///
/// The jars are missing (run `bash .ci/zookeeper.sh`), `java` cannot be started, or the server
/// did not answer within a minute (the error carries the end of its log).
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
    let classpath = classpath()?;
    // A port found free can be taken before the server binds it: try a few.
    let mut last_error = None;
    for _ in 0..3 {
        match start_once(&classpath) {
            Ok(guard) => return Ok(guard),
            Err(error) => last_error = Some(error),
        }
    }
    Err(last_error.expect("three attempts were made"))
}

fn classpath() -> Result<String> {
    if let Ok(classpath) = std::env::var("ZOOKEEPER_CLASSPATH") {
        return Ok(classpath);
    }
    let jars = ["zookeeper.jar", "slf4j-api.jar"].map(|jar| Path::new(JAR_DIR).join(jar));
    for jar in &jars {
        if !jar.exists() {
            bail!(
                "{} is missing: install ZooKeeper with `bash .ci/zookeeper.sh` \
                 (Debian package `zookeeper`), or set {ENV_VAR}=host:port",
                jar.display()
            );
        }
    }
    Ok(jars
        .iter()
        .map(|jar| jar.display().to_string())
        .collect::<Vec<_>>()
        .join(":"))
}

fn start_once(classpath: &str) -> Result<ZooKeeperGuard> {
    let port = free_loopback_port()?;
    let dir = scratch_dir(port)?;
    let data = dir.join("data");
    fs::create_dir_all(&data).with_context(|| format!("creating {}", data.display()))?;
    let config = dir.join("zoo.cfg");
    fs::write(&config, zoo_cfg(port, &data))
        .with_context(|| format!("writing {}", config.display()))?;
    let log_path = dir.join("zookeeper.log");
    let log = fs::File::create(&log_path)?;
    let child = Command::new("java")
        .arg("-Xmx256m")
        .arg("-cp")
        .arg(classpath)
        .arg("org.apache.zookeeper.server.ZooKeeperServerMain")
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context(
            "starting `java` (ZooKeeper needs a Java runtime; the `zookeeper` package brings one)",
        )?;
    let address = format!("127.0.0.1:{port}");
    let mut guard = ZooKeeperGuard {
        address: address.clone(),
        server: Some(Server { child, dir }),
    };
    let started = Instant::now();
    loop {
        if serves_requests(port) {
            eprintln!(
                "xtask: started a test ZooKeeper on {address} in {:.1} s (log: {})",
                started.elapsed().as_secs_f64(),
                log_path.display()
            );
            return Ok(guard);
        }
        let server = guard.server.as_mut().expect("started above");
        if let Some(status) = server.child.try_wait()? {
            bail!(
                "ZooKeeper exited ({status}) before answering on {address}:\n{}",
                log_tail(&log_path)
            );
        }
        if started.elapsed() > START_TIMEOUT {
            bail!(
                "ZooKeeper did not answer on {address} within {START_TIMEOUT:?}:\n{}",
                log_tail(&log_path)
            );
        }
        // Polling a starting JVM: nothing to wait on but time.
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The server's configuration: loopback only, a short tick (so tests can use 1 to 4 s session
/// timeouts), the `ruok`/`srvr` four-letter words (readiness), no admin server.
fn zoo_cfg(port: u16, data: &Path) -> String {
    format!(
        "tickTime=500\n\
         initLimit=10\n\
         syncLimit=5\n\
         dataDir={}\n\
         clientPort={port}\n\
         clientPortAddress=127.0.0.1\n\
         maxClientCnxns=0\n\
         minSessionTimeout=1000\n\
         maxSessionTimeout=60000\n\
         admin.enableServer=false\n\
         4lw.commands.whitelist=ruok,srvr\n\
         autopurge.purgeInterval=0\n",
        data.display()
    )
}

fn free_loopback_port() -> Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

fn scratch_dir(port: u16) -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "pulsar-xtask-zookeeper-{}-{port}",
        std::process::id()
    ));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// Whether a server on `port` serves requests: its `srvr` four-letter word reports a mode.
/// (`ruok` answers `imok` before the server is ready; `srvr` says "not currently serving
/// requests" until it is.)
fn serves_requests(port: u16) -> bool {
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let Ok(mut stream) = TcpStream::connect_timeout(&address, Duration::from_secs(1)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream.write_all(b"srvr").is_err() {
        return false;
    }
    let mut answer = String::new();
    stream.read_to_string(&mut answer).is_ok() && answer.contains("Mode:")
}

fn log_tail(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_binds_loopback_on_the_port_with_a_short_tick() {
        let config = zoo_cfg(21810, Path::new("/tmp/zk/data"));
        assert!(config.contains("clientPort=21810\n"));
        assert!(config.contains("clientPortAddress=127.0.0.1\n"));
        assert!(config.contains("dataDir=/tmp/zk/data\n"));
        assert!(config.contains("tickTime=500\n"));
        assert!(config.contains("4lw.commands.whitelist=ruok,srvr\n"));
    }

    #[test]
    fn an_address_in_the_environment_is_used_as_it_is() {
        let guard = ZooKeeperGuard {
            address: "127.0.0.1:2181".into(),
            server: None,
        };
        assert_eq!(guard.env(), (ENV_VAR, "127.0.0.1:2181"));
    }
}
