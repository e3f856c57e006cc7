//! Three broker processes (`examples/broker.rs`: a `LeaderService` and a `LoadManager` on a
//! `zk:` store) on a ZooKeeper server the test starts; the leader's process is killed with
//! SIGKILL. Another takes over within the session timeout plus a margin, and the dead broker's
//! load report leaves the other brokers' caches and is never selected again; over the
//! processes' `active` / `inactive` lines, never two leaders at once.

mod common;

use common::leader_history::{check_one_leader_at_a_time, Transition};
use common::own_zookeeper_servers;
use pulsar_testkit::zookeeper::ZooKeeperServer;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread;
use std::time::{Duration, Instant};

/// The brokers' session timeout.
const SESSION_TIMEOUT: Duration = Duration::from_secs(2);

/// What a follower may take beyond the session timeout to lead: the server's expiry tick, the
/// deletion's notification, one election round, on a loaded machine.
const TAKEOVER_MARGIN: Duration = Duration::from_secs(8);

/// How long a broker may take to start or to answer.
const ANSWER: Duration = Duration::from_secs(20);

/// One broker process; killed (SIGKILL) and reaped on drop.
struct BrokerProcess {
    id: String,
    child: Child,
    stdin: Option<ChildStdin>,
    /// Its stdout, line by line, from a reader thread.
    lines: Receiver<String>,
    /// Every line received so far.
    seen: Vec<String>,
}

impl BrokerProcess {
    /// Starts broker `id`; its `active` / `inactive` lines also go to `transitions`, tagged
    /// with its id, in the order the reader threads received them.
    fn spawn(url: &str, id: &str, transitions: &Sender<Transition>) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_broker"))
            .args([url, id, &SESSION_TIMEOUT.as_millis().to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the broker binary");
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel();
        let transitions = transitions.clone();
        let candidate = id.to_owned();
        // Ends when the process's stdout closes (it exits or is killed).
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let transition = match line.as_str() {
                    "active" => Some(Transition::Active(candidate.clone())),
                    "inactive" => Some(Transition::Inactive(candidate.clone())),
                    _ => None,
                };
                if let Some(transition) = transition {
                    let _ = transitions.send(transition);
                }
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Self {
            id: id.to_owned(),
            child,
            stdin,
            lines,
            seen: Vec::new(),
        }
    }

    /// Moves the lines received since the last look into `seen`, without waiting.
    fn take_new_lines(&mut self) {
        self.seen.extend(self.lines.try_iter());
    }

    /// Reads lines until one matches, within `within`.
    #[track_caller]
    fn await_line(&mut self, within: Duration, wanted: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let matched = wanted(&line);
                    self.seen.push(line);
                    if matched {
                        return;
                    }
                }
                Err(error) => panic!(
                    "{}: no matching line within {within:?} ({error}); saw {:?}",
                    self.id, self.seen
                ),
            }
        }
    }

    /// Asks the broker's load manager to place `bundle`; the broker it chose.
    fn select(&mut self, bundle: &str) -> String {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "select {bundle}").unwrap();
        stdin.flush().unwrap();
        let prefix = format!("selected {bundle} ");
        self.await_line(ANSWER, |line| line.starts_with(&prefix));
        self.seen.last().unwrap()[prefix.len()..].to_owned()
    }

    /// SIGKILL, and reap it.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for BrokerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

#[test]
fn killing_the_leaders_process_hands_leadership_over_and_drops_its_report_everywhere() {
    if !own_zookeeper_servers() {
        return;
    }
    let started = Instant::now();
    let server = ZooKeeperServer::start().unwrap();
    let url = format!("zk:{}/drill", server.address());
    let ids = ["broker-1", "broker-2", "broker-3"];
    let (transitions, heard) = mpsc::channel();
    let mut brokers: Vec<BrokerProcess> = ids
        .iter()
        .map(|id| BrokerProcess::spawn(&url, id, &transitions))
        .collect();
    drop(transitions);
    for broker in &mut brokers {
        broker.await_line(ANSWER, |line| line == "ready");
    }
    // Every cache holds all three before the kill.
    let all = format!("brokers {}", ids.join(","));
    for broker in &mut brokers {
        if !broker.seen.contains(&all) {
            broker.await_line(ANSWER, |line| line == all);
        }
    }
    // A winner prints `active` before `ready`: exactly one did.
    let leaders: Vec<usize> = (0..brokers.len())
        .filter(|&i| brokers[i].seen.iter().any(|line| line == "active"))
        .collect();
    assert_eq!(leaders.len(), 1, "one leader among {:?}", ids);

    let mut dead = brokers.remove(leaders[0]);
    dead.kill();
    let killed_at = Instant::now();
    let dead = dead.id.clone();
    // The leaders' history across the processes, the kill included.
    let mut history: Vec<Transition> = heard.try_iter().collect();
    history.push(Transition::Gone(dead.clone()));

    // One of the others takes over within the session timeout plus the margin: the reader
    // threads pass every `active` / `inactive` line on to `heard` as it arrives, so the wait
    // blocks on that channel until a live broker's `active` comes.
    let within = SESSION_TIMEOUT + TAKEOVER_MARGIN;
    let new_leader = loop {
        let left = within.saturating_sub(killed_at.elapsed());
        let transition = heard.recv_timeout(left).unwrap_or_else(|error| {
            panic!("no broker took over within {within:?} of the kill ({error}): {history:?}")
        });
        match transition {
            // Printed by the dead process before the kill but read after it: not history.
            Transition::Active(ref id) | Transition::Inactive(ref id) if *id == dead => {}
            Transition::Active(ref id) => {
                let index = brokers.iter().position(|b| b.id == *id);
                history.push(transition);
                break index.expect("an active line comes from a broker of the drill");
            }
            transition => history.push(transition),
        }
    };
    // What the brokers printed up to the takeover, for the checks below.
    for broker in &mut brokers {
        broker.take_new_lines();
    }
    let successor = brokers[new_leader].id.clone();
    eprintln!(
        "{successor} took over {:?} after {dead} was killed",
        killed_at.elapsed()
    );

    // The dead broker's report leaves both caches and is never selected.
    let without = format!(
        "brokers {}",
        brokers
            .iter()
            .map(|b| b.id.as_str())
            .collect::<Vec<_>>()
            .join(",")
    );
    for broker in &mut brokers {
        if !broker.seen.contains(&without) {
            broker.await_line(ANSWER, |line| line == without);
        }
    }
    for broker in &mut brokers {
        for bundle in 0..16 {
            let chosen = broker.select(&format!("drill/ns/0x{bundle:08x}_0x{:08x}", bundle + 1));
            assert_ne!(chosen, dead, "{} selected the dead broker", broker.id);
            assert!(!chosen.is_empty(), "{} selected no broker", broker.id);
        }
        assert!(
            !broker.seen.iter().any(|line| line == "inactive"),
            "{} never led, so never stepped down",
            broker.id
        );
    }
    drop(brokers);
    // Whatever the dead process printed before the kill but was read after it is ignored.
    history.extend(heard.try_iter().filter(|transition| {
        !matches!(transition, Transition::Active(id) | Transition::Inactive(id) if *id == dead)
    }));
    let active = check_one_leader_at_a_time(&history).unwrap_or_else(|overlap| panic!("{overlap}"));
    assert_eq!(
        active.into_iter().collect::<Vec<_>>(),
        [successor],
        "the successor leads at the end: {history:?}"
    );
    assert_eq!(
        history
            .iter()
            .filter(|transition| matches!(transition, Transition::Active(_)))
            .count(),
        2,
        "the first leader, then one successor: {history:?}"
    );
    drop(server);
    eprintln!("drill: broker processes took {:?}", started.elapsed());
}
