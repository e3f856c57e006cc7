//! [`ZooKeeperSession`]: the ZooKeeper session that survives expiry, and the runtime behind it.
//!
//! - [`ZooKeeperSession`]: Pulsar's `PulsarZooKeeperClient`: owns one session at a time,
//!   re-creates it after expiry and re-registers its watches on `zk-connect-executor`.
//! - [`ZooKeeperError`]: why a session operation failed.
//!
//! The client underneath is the `zookeeper-client` crate (async); `io.rs` runs it on a
//! one-thread runtime (`zk-io`) and gives the synchronous components a blocking facade.

mod error;
pub(crate) mod io;
mod session;

pub use error::ZooKeeperError;
pub use session::ZooKeeperSession;
