//! pulsar-server (skeleton: filled in by its issue).
