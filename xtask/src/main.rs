//! `cargo xtask`: project automation.
//!
//! * `tidy` — repository checks (also run as a test): every `.rs` file opens with a `//!` doc.
//! * `fit-tokens` — refit the fast token estimator against exact o200k counts on the corpus and rewrite
//!   `crates/ctxfit-tokens/src/weights.rs`; prints the accuracy report.
//! * `eval-tokens` — print the accuracy report of chars/4 and the fast estimator without refitting.
//! * `compare-profiles` — tokens of the final request of every corpus session under each built-in profile.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod profiles;
mod samples;
mod tidy;
mod tokens;

use std::path::PathBuf;

use anyhow::{bail, Result};

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace")
        .to_owned()
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("tidy") => {
            let problems = tidy::check(&workspace_root())?;
            if problems.is_empty() {
                println!("tidy: ok");
                Ok(())
            } else {
                for p in &problems {
                    eprintln!("{p}");
                }
                bail!("tidy: {} problem(s)", problems.len())
            }
        }
        Some("fit-tokens") => tokens::fit_and_write(&workspace_root()),
        Some("eval-tokens") => tokens::eval(),
        Some("compare-profiles") => profiles::compare(),
        _ => {
            eprintln!("usage: cargo xtask <tidy | fit-tokens | eval-tokens | compare-profiles>");
            bail!("unknown or missing command")
        }
    }
}
