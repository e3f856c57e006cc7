//! Workspace automation (skeleton).
fn main() {}
