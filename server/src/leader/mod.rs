//! [`LeaderService`]: leader election on the metadata store, with callbacks on the service's
//! own thread.
//!
//! - [`LeaderService`]: the functions worker's `LeaderService`: an ephemeral node created with
//!   compare-and-set names the leader; `became_active` / `became_inactive` run in order on the
//!   `leader-service` thread.
//! - [`LeadershipListener`]: the two callbacks.
//! - [`LeaderServiceError`]: why a call failed.

mod error;
mod service;

pub use error::LeaderServiceError;
pub use service::{LeaderService, LeadershipListener, DEFAULT_RETRY_DELAY};
