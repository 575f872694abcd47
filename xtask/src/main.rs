//! `cargo xtask`: project automation (tidy checks, fitting the token estimator).

fn main() {}
