//! Shared benchmark support (skeleton: filled in by the benchmark issue).
