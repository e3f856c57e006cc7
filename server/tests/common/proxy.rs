//! `PartitionProxy`: a loopback TCP relay in front of the test ZooKeeper server that a test can
//! cut (every connection dropped, new ones refused) and restore, to make the server expire a
//! session the way a network partition longer than the session timeout does.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};

/// Relays `127.0.0.1:<port>` to a target address until cut.
pub struct PartitionProxy {
    port: u16,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

struct Shared {
    target: String,
    partitioned: AtomicBool,
    stopping: AtomicBool,
    /// Both ends of every relayed connection, to cut them.
    connections: Mutex<Vec<(TcpStream, TcpStream)>>,
    pumps: Mutex<Vec<JoinHandle<()>>>,
}

impl PartitionProxy {
    /// Starts relaying to `target` (`host:port`).
    pub fn start(target: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared {
            target: target.to_owned(),
            partitioned: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            connections: Mutex::new(Vec::new()),
            pumps: Mutex::new(Vec::new()),
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name("test-zk-proxy".into())
                .spawn(move || accept_loop(listener, &shared))
                .unwrap()
        };
        Self {
            port,
            shared,
            acceptor: Some(acceptor),
        }
    }

    /// `127.0.0.1:<port>`: where clients connect.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Drops every relayed connection and refuses new ones until [`heal`](Self::heal).
    pub fn partition(&self) {
        self.shared.partitioned.store(true, Ordering::SeqCst);
        self.shared.cut_all();
    }

    /// Relays new connections again.
    pub fn heal(&self) {
        self.shared.partitioned.store(false, Ordering::SeqCst);
    }
}

impl Shared {
    fn cut_all(&self) {
        for (client, server) in self.connections.lock().unwrap().drain(..) {
            let _ = client.shutdown(Shutdown::Both);
            let _ = server.shutdown(Shutdown::Both);
        }
    }
}

fn accept_loop(listener: TcpListener, shared: &Arc<Shared>) {
    for client in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = client else { continue };
        if shared.partitioned.load(Ordering::SeqCst) {
            drop(client);
            continue;
        }
        let Ok(server) = TcpStream::connect(&shared.target) else {
            continue;
        };
        let (Ok(client_read), Ok(server_read), Ok(client_cut), Ok(server_cut)) = (
            client.try_clone(),
            server.try_clone(),
            client.try_clone(),
            server.try_clone(),
        ) else {
            continue;
        };
        shared
            .connections
            .lock()
            .unwrap()
            .push((client_cut, server_cut));
        let upstream = thread::spawn(move || pump(client_read, server));
        let downstream = thread::spawn(move || pump(server_read, client));
        shared.pumps.lock().unwrap().extend([upstream, downstream]);
    }
}

/// Copies bytes until either side closes, then closes both.
fn pump(mut from: TcpStream, mut to: TcpStream) {
    let mut buffer = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buffer[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

impl Drop for PartitionProxy {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        // Wake the acceptor with one last connection.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        self.shared.cut_all();
        let pumps = std::mem::take(&mut *self.shared.pumps.lock().unwrap());
        for pump in pumps {
            let _ = pump.join();
        }
    }
}
