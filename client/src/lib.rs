//! pulsar-client (skeleton: filled in by its issue).
