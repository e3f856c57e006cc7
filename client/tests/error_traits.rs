//! The client's public errors fit the ecosystem (issue #13 item 6): each is an
//! `Error + Send + Sync + 'static`, so `?` turns it into a `Box<dyn Error + Send + Sync>` or an
//! `anyhow::Error`.

use pulsar_client::{
    ClientBuildError, DeliverError, ExecutorProvider, InvalidThreadCount, JobRejected,
    NewConsumerError, ReceiveError,
};
use std::error::Error;

/// Compiles only for errors that `Box<dyn Error + Send + Sync>` and `anyhow::Error` accept.
fn assert_ecosystem_error<E: Error + Send + Sync + 'static>() {}

#[test]
fn the_client_errors_are_send_sync_and_static_errors() {
    assert_ecosystem_error::<InvalidThreadCount>();
    assert_ecosystem_error::<ClientBuildError>();
    assert_ecosystem_error::<NewConsumerError>();
    assert_ecosystem_error::<DeliverError>();
    assert_ecosystem_error::<ReceiveError>();
    assert_ecosystem_error::<JobRejected>();
}

#[test]
fn a_client_error_converts_with_question_mark() {
    fn boxed() -> Result<ExecutorProvider, Box<dyn Error + Send + Sync>> {
        Ok(ExecutorProvider::new(0, "pool")?)
    }
    fn with_anyhow() -> anyhow::Result<ExecutorProvider> {
        Ok(ExecutorProvider::new(0, "pool")?)
    }
    let boxed = boxed().unwrap_err();
    assert_eq!(
        boxed
            .downcast_ref::<InvalidThreadCount>()
            .unwrap()
            .pool_name(),
        "pool"
    );
    assert!(with_anyhow().unwrap_err().is::<InvalidThreadCount>());
}
