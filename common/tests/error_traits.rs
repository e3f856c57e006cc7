//! The public error types of `pulsar-common`'s executors fit the ecosystem (issue #13 item 6):
//! each is an `Error + Send + Sync + 'static`, so `?` turns it into a
//! `Box<dyn Error + Send + Sync>` or an `anyhow::Error`, and a panic's payload survives the
//! trip.

use pulsar_common::executors::{
    InvokeAnyError, PulsarExecutors, RejectReason, RejectedExecution, TaskError, TaskPanic,
    ThreadFactoryPanicked,
};
use std::error::Error;

/// Compiles only for errors that `Box<dyn Error + Send + Sync>` and `anyhow::Error` accept.
fn assert_ecosystem_error<E: Error + Send + Sync + 'static>() {}

#[test]
fn the_executor_errors_are_send_sync_and_static_errors() {
    assert_ecosystem_error::<TaskError>();
    assert_ecosystem_error::<ThreadFactoryPanicked>();
    assert_ecosystem_error::<RejectReason>();
    // Generic errors are, when what they carry is (a plain function here; a closure is `Sync`
    // when its captures are).
    assert_ecosystem_error::<RejectedExecution<fn()>>();
    assert_ecosystem_error::<InvokeAnyError<std::io::Error>>();
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<TaskPanic>();
}

fn panicked_task() -> Result<u32, TaskError> {
    let executor = PulsarExecutors::new_single_thread_executor();
    executor
        .submit(|| -> u32 { panic!("deep inside") })
        .unwrap()
        .join()
}

#[test]
fn a_task_error_boxes_with_question_mark_and_keeps_its_panic() {
    fn boxed() -> Result<u32, Box<dyn Error + Send + Sync>> {
        Ok(panicked_task()?)
    }
    let error = boxed().unwrap_err();
    assert_eq!(error.to_string(), "task panicked: deep inside");
    let task_error = error.downcast::<TaskError>().unwrap();
    let payload = task_error.into_panic().unwrap();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"deep inside"));
}

#[test]
fn a_task_error_becomes_an_anyhow_error_and_back() {
    fn with_anyhow() -> anyhow::Result<u32> {
        Ok(panicked_task()?)
    }
    let error = with_anyhow().unwrap_err();
    assert!(error.to_string().contains("deep inside"));
    assert!(error.downcast::<TaskError>().unwrap().is_panic());
}

#[test]
fn a_rejection_becomes_an_anyhow_error_with_its_reason() {
    fn rejected() -> anyhow::Result<()> {
        let executor = PulsarExecutors::new_single_thread_executor();
        executor.shutdown();
        fn noop() {}
        executor.execute(noop as fn())?;
        Ok(())
    }
    let error = rejected().unwrap_err();
    assert_eq!(
        error.to_string(),
        "task rejected: the executor has been shut down"
    );
}

#[test]
fn invoke_any_errors_box_with_their_failures() {
    fn all_failed() -> Result<u32, Box<dyn Error + Send + Sync>> {
        let executor = PulsarExecutors::new_single_thread_executor();
        let tasks: Vec<fn() -> Result<u32, std::io::Error>> =
            vec![|| Err(std::io::Error::other("first")), || panic!("second")];
        Ok(executor.invoke_any(tasks)?)
    }
    let error = all_failed().unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("first") && message.contains("second"),
        "{message}"
    );
}
