//! Throwaway ZooKeeper servers on loopback, one or a quorum ensemble: `cargo xtask test` starts
//! one for the suites, and the fault drills start their own to kill and restart them.
//!
//! The server is the Debian `zookeeper` package's (`cargo xtask test` installs it when missing), run as
//! `java -cp <jars> org.apache.zookeeper.server.quorum.QuorumPeerMain <zoo.cfg>` (which runs a
//! standalone server when the config names no peers). `ZOOKEEPER_CLASSPATH` overrides the class
//! path. Every server gets its own scratch directory (config, data, log); dropping the handle
//! kills the process (SIGKILL) and removes the directory, so a failing test leaves nothing
//! running.

use std::fmt;
use std::fs;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Where the Debian package puts the server's jars.
const JAR_DIR: &str = "/usr/share/java";

/// The jars the server needs (the package's `zookeeper.jar` names the rest in its manifest).
const JARS: [&str; 2] = ["zookeeper.jar", "slf4j-api.jar"];

/// How long a server may take to serve requests (a JVM starts in a few seconds, slower on a
/// loaded machine).
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The server's tick: session timeouts from 2 ticks (1 s) to 120 ticks are accepted, so tests can
/// use sessions of a few seconds.
pub const TICK: Duration = Duration::from_millis(500);

/// Why a server could not be started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchError {
    /// What went wrong, with the end of the server's log where there is one.
    pub reason: String,
}

impl fmt::Display for LaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for LaunchError {}

fn error(reason: impl Into<String>) -> LaunchError {
    LaunchError {
        reason: reason.into(),
    }
}

/// The class path of the server: `ZOOKEEPER_CLASSPATH`, or the Debian package's jars.
///
/// # Errors
///
/// A jar is missing; the message says what to install.
pub fn classpath() -> Result<String, LaunchError> {
    if let Ok(classpath) = std::env::var("ZOOKEEPER_CLASSPATH") {
        return Ok(classpath);
    }
    let jars = JARS.map(|jar| Path::new(JAR_DIR).join(jar));
    if let Some(missing) = jars.iter().find(|jar| !jar.exists()) {
        return Err(error(format!(
            "{} is missing: `cargo xtask test` installs it (Debian package \
             `zookeeper`: `apt-get install zookeeper`)",
            missing.display()
        )));
    }
    let mut entries: Vec<String> = jars.iter().map(|jar| jar.display().to_string()).collect();
    // A logging backend when there is one, so the server's log says why it failed.
    let simple = Path::new(JAR_DIR).join("slf4j-simple.jar");
    if simple.exists() {
        entries.push(simple.display().to_string());
    }
    Ok(entries.join(":"))
}

/// Whether the server's jars are installed (or `ZOOKEEPER_CLASSPATH` names them).
pub fn installed() -> bool {
    classpath().is_ok()
}

/// One server process on loopback, with its scratch directory. Killed (SIGKILL) and its
/// directory removed on drop.
pub struct ZooKeeperServer {
    /// The server's id in its ensemble (1 for a standalone server).
    id: u32,
    client_port: u16,
    dir: PathBuf,
    classpath: String,
    child: Option<Child>,
}

/// The ports of one ensemble member.
#[derive(Debug, Clone, Copy)]
struct Ports {
    client: u16,
    peer: u16,
    election: u16,
}

impl ZooKeeperServer {
    /// Starts a standalone server on a free loopback port and waits until it serves requests.
    ///
    /// # Errors
    ///
    /// The jars are missing, `java` cannot be started, or the server did not serve within
    /// [`START_TIMEOUT`] (the error carries the end of its log).
    pub fn start() -> Result<Self, LaunchError> {
        let classpath = classpath()?;
        // A port found free can be taken before the server binds it: try a few.
        let mut last_error = None;
        for _ in 0..3 {
            let ports = Ports {
                client: free_loopback_port()?,
                peer: 0,
                election: 0,
            };
            let attempt = Self::configure(1, &[ports], &classpath).and_then(|mut server| {
                server.spawn()?;
                server.wait_until_serving(START_TIMEOUT)?;
                Ok(server)
            });
            match attempt {
                Ok(server) => return Ok(server),
                Err(error) => last_error = Some(error),
            }
        }
        Err(last_error.expect("three attempts were made"))
    }

    /// Writes the scratch directory of member `id` (1-based) of an ensemble of `ports.len()`.
    fn configure(id: u32, ports: &[Ports], classpath: &str) -> Result<Self, LaunchError> {
        let own = ports[id as usize - 1];
        let dir = scratch_dir(own.client)?;
        let data = dir.join("data");
        fs::create_dir_all(&data)
            .map_err(|e| error(format!("creating {}: {e}", data.display())))?;
        let mut config = zoo_cfg(own.client, &data);
        if ports.len() > 1 {
            for (index, member) in ports.iter().enumerate() {
                config.push_str(&format!(
                    "server.{}=127.0.0.1:{}:{}\n",
                    index + 1,
                    member.peer,
                    member.election
                ));
            }
            fs::write(data.join("myid"), format!("{id}\n"))
                .map_err(|e| error(format!("writing myid: {e}")))?;
        }
        fs::write(dir.join("zoo.cfg"), config)
            .map_err(|e| error(format!("writing zoo.cfg: {e}")))?;
        Ok(Self {
            id,
            client_port: own.client,
            dir,
            classpath: classpath.to_owned(),
            child: None,
        })
    }

    /// Starts the JVM on the scratch directory (appending to its log); does not wait.
    fn spawn(&mut self) -> Result<(), LaunchError> {
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .map_err(|e| error(format!("opening the server log: {e}")))?;
        let log_err = log
            .try_clone()
            .map_err(|e| error(format!("opening the server log: {e}")))?;
        let child = Command::new("java")
            .args([
                "-Xmx128m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-Djava.net.preferIPv4Stack=true",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-Dzookeeper.admin.enableServer=false",
                "-cp",
            ])
            .arg(&self.classpath)
            .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
            .arg(self.dir.join("zoo.cfg"))
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(|e| {
                error(format!(
                    "starting `java` ({e}); ZooKeeper needs a Java runtime (the `zookeeper` \
                     package brings one)"
                ))
            })?;
        self.child = Some(child);
        Ok(())
    }

    /// Polls `srvr` until the server serves requests (a mode is reported), it exits, or
    /// `timeout` passes.
    fn wait_until_serving(&mut self, timeout: Duration) -> Result<(), LaunchError> {
        let started = Instant::now();
        loop {
            // Our process first: if it exited (its port taken since it was picked), a server
            // answering on that port is another one, not ours.
            let Some(child) = self.child.as_mut() else {
                return Err(error("the server is not running"));
            };
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return Err(error(format!(
                    "ZooKeeper exited ({status}) before serving on {}:\n{}",
                    self.address(),
                    self.log_tail()
                )));
            }
            if self.mode().is_some() {
                return Ok(());
            }
            if started.elapsed() > timeout {
                return Err(error(format!(
                    "ZooKeeper did not serve on {} within {timeout:?}:\n{}",
                    self.address(),
                    self.log_tail()
                )));
            }
            // Polling a starting JVM: there is nothing to wait on but time.
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `127.0.0.1:<client port>`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.client_port)
    }

    /// The server's id in its ensemble (1 for a standalone server).
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The process id while the server runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// What `srvr` reports as the server's mode (`standalone`, `leader`, `follower`), or `None`
    /// when it does not serve requests (down, starting, or without a quorum).
    pub fn mode(&self) -> Option<String> {
        self.four_letter_word("srvr")?
            .lines()
            .find_map(|line| line.strip_prefix("Mode: "))
            .map(|mode| mode.trim().to_owned())
    }

    /// The server's answer to a four-letter word (`srvr`, `cons`, `wchc`, `wchp` are enabled);
    /// `None` when it does not answer.
    pub fn four_letter_word(&self, word: &str) -> Option<String> {
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, self.client_port));
        let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(1)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        stream.write_all(word.as_bytes()).ok()?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).ok()?;
        Some(answer)
    }

    /// Kills the server with SIGKILL (no clean shutdown: what it acknowledged is on disk,
    /// nothing else) and waits for the process to end. Its directory stays for
    /// [`restart`](Self::restart). Does nothing when it is not running.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port and data directory (killing it first if it
    /// runs), and waits until it serves requests. A member of an ensemble serves once it has
    /// joined a quorum.
    ///
    /// # Errors
    ///
    /// As for [`start`](Self::start).
    pub fn restart(&mut self) -> Result<(), LaunchError> {
        self.kill();
        self.spawn()?;
        self.wait_until_serving(START_TIMEOUT)
    }

    /// Whether the process runs (it may not serve yet).
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(child) => matches!(child.try_wait(), Ok(None)),
            None => false,
        }
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join("zookeeper.log")
    }

    /// The last lines of the server's log.
    pub fn log_tail(&self) -> String {
        let text = fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for ZooKeeperServer {
    fn drop(&mut self) {
        self.kill();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

impl fmt::Debug for ZooKeeperServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZooKeeperServer")
            .field("id", &self.id)
            .field("address", &self.address())
            .field("pid", &self.pid())
            .finish()
    }
}

/// A quorum of servers on loopback (`server.N=127.0.0.1:<peer>:<election>`, a `myid` file in
/// each data directory). Dropping it kills every member.
#[derive(Debug)]
pub struct ZooKeeperEnsemble {
    servers: Vec<ZooKeeperServer>,
}

impl ZooKeeperEnsemble {
    /// Starts `size` members at once (their JVMs start in parallel) and waits until every one
    /// serves requests (a leader is elected and the others follow it).
    ///
    /// # Errors
    ///
    /// As for [`ZooKeeperServer::start`], for any member.
    pub fn start(size: usize) -> Result<Self, LaunchError> {
        assert!(size >= 1, "an ensemble has at least one member");
        let classpath = classpath()?;
        let mut last_error = None;
        for _ in 0..3 {
            match Self::start_once(size, &classpath) {
                Ok(ensemble) => return Ok(ensemble),
                Err(error) => last_error = Some(error),
            }
        }
        Err(last_error.expect("three attempts were made"))
    }

    fn start_once(size: usize, classpath: &str) -> Result<Self, LaunchError> {
        // Every port is held until all are chosen, so no two are the same.
        let listeners = (0..size * 3)
            .map(|_| {
                TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                    .map_err(|e| error(format!("finding a free port: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let port = |i: usize| listeners[i].local_addr().map(|a| a.port()).unwrap_or(0);
        let ports: Vec<Ports> = (0..size)
            .map(|i| Ports {
                client: port(3 * i),
                peer: port(3 * i + 1),
                election: port(3 * i + 2),
            })
            .collect();
        drop(listeners);
        let mut servers = Vec::with_capacity(size);
        for id in 1..=size {
            servers.push(ZooKeeperServer::configure(id as u32, &ports, classpath)?);
        }
        let mut ensemble = Self { servers };
        for server in &mut ensemble.servers {
            server.spawn()?;
        }
        for server in &mut ensemble.servers {
            server.wait_until_serving(START_TIMEOUT)?;
        }
        Ok(ensemble)
    }

    /// `127.0.0.1:<port>,...` of every member.
    pub fn connect_string(&self) -> String {
        self.servers
            .iter()
            .map(ZooKeeperServer::address)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The members, in id order (member `i` has id `i + 1`).
    pub fn servers(&self) -> &[ZooKeeperServer] {
        &self.servers
    }

    /// Member `index` (0-based), to kill or restart it.
    pub fn server_mut(&mut self, index: usize) -> &mut ZooKeeperServer {
        &mut self.servers[index]
    }

    /// The index of the member that reports itself leader now, if any.
    pub fn leader(&self) -> Option<usize> {
        self.servers
            .iter()
            .position(|server| server.mode().as_deref() == Some("leader"))
    }

    /// Polls until a member reports itself leader, at most `timeout`; its index.
    pub fn wait_for_leader(&self, timeout: Duration) -> Option<usize> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(leader) = self.leader() {
                return Some(leader);
            }
            if Instant::now() > deadline {
                return None;
            }
            // Polling other processes: there is nothing to wait on but time.
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The configuration of one server: loopback only, a short tick, the `ruok`/`srvr` four-letter
/// words (readiness and role; connections and watches for diagnosis), no admin server, no purge.
fn zoo_cfg(port: u16, data: &Path) -> String {
    format!(
        "tickTime={}\n\
         initLimit=10\n\
         syncLimit=5\n\
         dataDir={}\n\
         clientPort={port}\n\
         clientPortAddress=127.0.0.1\n\
         maxClientCnxns=0\n\
         minSessionTimeout=1000\n\
         maxSessionTimeout=60000\n\
         admin.enableServer=false\n\
         4lw.commands.whitelist=ruok,srvr,cons,wchc,wchp\n\
         autopurge.purgeInterval=0\n",
        TICK.as_millis(),
        data.display()
    )
}

fn free_loopback_port() -> Result<u16, LaunchError> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| error(format!("finding a free port: {e}")))?;
    listener
        .local_addr()
        .map(|address| address.port())
        .map_err(|e| error(format!("finding a free port: {e}")))
}

fn scratch_dir(port: u16) -> Result<PathBuf, LaunchError> {
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    let dir = std::env::temp_dir().join(format!(
        "pulsar-test-zookeeper-{}-{port}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).map_err(|e| error(format!("creating {}: {e}", dir.display())))?;
    Ok(dir)
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
        assert!(config.contains("4lw.commands.whitelist=ruok,srvr,cons,wchc,wchp\n"));
    }

    #[test]
    fn an_ensemble_member_names_every_peer_and_has_its_id() {
        let ports: Vec<Ports> = (0..3)
            .map(|i| Ports {
                client: 30000 + i,
                peer: 31000 + i,
                election: 32000 + i,
            })
            .collect();
        let server = ZooKeeperServer::configure(2, &ports, "cp").unwrap();
        let config = fs::read_to_string(server.dir.join("zoo.cfg")).unwrap();
        assert!(config.contains("clientPort=30001\n"));
        assert!(config.contains("server.1=127.0.0.1:31000:32000\n"));
        assert!(config.contains("server.3=127.0.0.1:31002:32002\n"));
        let myid = fs::read_to_string(server.dir.join("data/myid")).unwrap();
        assert_eq!(myid, "2\n");
    }
}
