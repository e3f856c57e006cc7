//! [`UnderreplicationManager`]: ledger re-replication bookkeeping on the metadata store.
//!
//! - [`UnderreplicationManager`]: Pulsar's `PulsarLedgerUnderreplicationManager` (BookKeeper's
//!   `LedgerUnderreplicationManager` on the metadata store): marks ledgers under-replicated,
//!   hands them to replication workers under a lock, switches replication off and on, and runs
//!   the "replication enabled" and "lost bookie recovery delay changed" callbacks on its
//!   `underreplication-notification` thread.
//! - [`ReplicationError`]: why a call failed.

mod error;
mod underreplication_manager;

pub use error::ReplicationError;
pub use underreplication_manager::UnderreplicationManager;
