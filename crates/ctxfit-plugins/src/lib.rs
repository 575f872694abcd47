//! Links every built-in retention rule crate into the binary that depends on this one.
//!
//! `inventory` registrations only exist in crates the final binary links, and Cargo drops a dependency nothing
//! references. This crate's only job is to reference each built-in rule crate; the CLI, benches and tests depend
//! on it. `cargo xtask tidy` checks that every `ctxfit-retain-*` crate is listed here.

extern crate ctxfit_retain_bash as _;
extern crate ctxfit_retain_edit_file as _;
extern crate ctxfit_retain_excerpt as _;
extern crate ctxfit_retain_images as _;
extern crate ctxfit_retain_read_file as _;
extern crate ctxfit_retain_recent as _;
extern crate ctxfit_retain_tiered as _;
extern crate ctxfit_retain_truncate as _;

/// The names of the built-in rules, sorted (what the registry must contain, at least).
pub const BUILT_IN_RULES: &[&str] = &[
    "bash",
    "edit-file",
    "excerpt",
    "images",
    "read-file",
    "recent",
    "tiered",
    "truncate",
];

/// The registry of every linked rule: the built-in ones and any custom rule crate the binary links.
pub fn registry() -> Result<ctxfit_retention::Registry, ctxfit_retention::DuplicateRule> {
    ctxfit_retention::Registry::collect()
}
