//! [`FunctionInstance`]: runs a user [`Function`] per record and emits its asynchronous results,
//! in input order, on the instance's own `function-instance` thread (Pulsar's `JavaInstance`).
//!
//! - `instance.rs`: the instance, its builder and what it hands back ([`Processed`],
//!   [`ExecutionResult`]).
//! - `function.rs`: what a user function is ([`Function`], [`FunctionOutput`]) and how it
//!   completes a result later ([`ResultCompleter`]).

mod function;
mod instance;

pub use function::{AsyncOutput, Function, FunctionOutput, ResultCompleter};
pub use instance::{
    ExecutionResult, FunctionInstance, FunctionInstanceBuilder, Processed,
    DEFAULT_FUNCTION_CLOSE_TIMEOUT, DEFAULT_MAX_PENDING, FUNCTION_INSTANCE_POOL_NAME,
};
