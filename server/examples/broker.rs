//! A broker for fault drills: a `LeaderService` and a `LoadManager` on a `zk:` metadata store,
//! driven over stdin and reporting on stdout, one line per event.
//!
//! ```text
//! broker <store-url> <broker-id> <session-timeout-ms>
//! ```
//!
//! Prints `active` / `inactive` when it gains or loses leadership (election path
//! `/drill/leader`; a winner prints `active` before `ready`), `brokers <id>,<id>,...` with the
//! load manager's cache at start and after every refresh, `ready` once both components run, and `selected <bundle> <broker>` for each `select <bundle>` line
//! read from stdin. Closes everything and exits when stdin ends or reads `quit`.
//!
//! Built as the `broker` binary of `pulsar-server` (see its `Cargo.toml`) so that the
//! `broker_processes` test finds it in `CARGO_BIN_EXE_broker`; run it with
//! `cargo run -p pulsar-server --bin broker -- zk:127.0.0.1:2181/drill broker-1 4000`.

use pulsar_server::leader::{LeaderService, LeadershipListener};
use pulsar_server::loadbalance::{LoadManager, LoadReport};
use pulsar_server::metadata::{MetadataStore, MetadataStoreConfig};
use std::io::BufRead;
use std::process::ExitCode;
use std::time::Duration;

/// The election every drill broker joins.
const ELECTION_PATH: &str = "/drill/leader";

/// Prints the leadership transitions.
struct PrintTransitions;

impl LeadershipListener for PrintTransitions {
    fn became_active(&self) {
        println!("active");
    }

    fn became_inactive(&self) {
        println!("inactive");
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, id, session_ms] = args.as_slice() else {
        eprintln!("usage: broker <store-url> <broker-id> <session-timeout-ms>");
        return ExitCode::from(2);
    };
    let Ok(session_ms) = session_ms.parse::<u64>() else {
        eprintln!("broker: the session timeout must be a number of milliseconds");
        return ExitCode::from(2);
    };
    let config = MetadataStoreConfig::default()
        .with_session_timeout(Duration::from_millis(session_ms))
        .with_operation_timeout(Duration::from_secs(2));
    let store = match MetadataStore::open_with_config(url, config) {
        Ok(store) => store,
        Err(error) => {
            eprintln!("broker {id}: cannot open {url}: {error}");
            return ExitCode::FAILURE;
        }
    };
    let load = match LoadManager::start(store.clone(), id, LoadReport::default()) {
        Ok(load) => load,
        Err(error) => {
            eprintln!("broker {id}: cannot start the load manager: {error}");
            store.close();
            return ExitCode::FAILURE;
        }
    };
    load.add_cache_listener(|live| println!("brokers {}", live.join(",")));
    let leader = match LeaderService::start(store.clone(), ELECTION_PATH, id, PrintTransitions) {
        Ok(leader) => leader,
        Err(error) => {
            eprintln!("broker {id}: cannot start the leader service: {error}");
            load.stop();
            store.close();
            return ExitCode::FAILURE;
        }
    };
    // The cache as it is now (the listener hears only later refreshes).
    println!("brokers {}", load.available_brokers().join(","));
    println!("ready");
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        match line.split_once(' ') {
            Some(("select", bundle)) => match load.select_broker(bundle) {
                Ok(chosen) => println!("selected {bundle} {}", chosen.unwrap_or_default()),
                Err(error) => println!("selected {bundle} error: {error}"),
            },
            _ if line == "quit" => break,
            _ => eprintln!("broker {id}: unknown command `{line}`"),
        }
    }
    leader.close();
    load.stop();
    store.close();
    ExitCode::SUCCESS
}
