//! Test support for the ctxfit workspace: where the shared corpus of real sessions and pages is
//! ([`corpus_dir`]), its session files ([`corpus_trajectory_files`]), and the macros that skip a test when it is
//! missing ([`corpus_or_skip!`], [`skip_without_corpus!`]) — or fail it under `CTXFIT_REQUIRE_CORPUS=1`, as CI
//! runs. Only tests, benches and the xtask depend on it.

use std::path::{Path, PathBuf};

/// The shared corpus for a test that needs it: `Some` when it is there. When it is not, a test is skipped — one
/// line on standard error per test binary says so and how to run them (the line bypasses the test harness's
/// capture, so it is seen) — unless `CTXFIT_REQUIRE_CORPUS=1` (CI sets it), when a missing corpus fails the test.
/// Use it through [`corpus_or_skip!`].
pub fn corpus_for_tests() -> Option<PathBuf> {
    use std::io::Write;
    static SAID: std::sync::Once = std::sync::Once::new();
    if let Some(dir) = corpus_dir() {
        return Some(dir);
    }
    let required = std::env::var("CTXFIT_REQUIRE_CORPUS").is_ok_and(|v| v == "1");
    assert!(
        !required,
        "the shared corpus is missing: expected ../shared/corpus beside the repository or CTXFIT_CORPUS=DIR \
         (CTXFIT_REQUIRE_CORPUS=1 makes this a failure)"
    );
    SAID.call_once(|| {
        let binary = std::env::args().next().unwrap_or_default();
        let binary = Path::new(&binary)
            .file_name()
            .map_or(binary.clone(), |n| n.to_string_lossy().into_owned());
        let _ = writeln!(
            std::io::stderr(),
            "note: {binary}: tests that need the shared corpus skipped — not found at ../shared/corpus or \
             $CTXFIT_CORPUS; put it there or set CTXFIT_CORPUS=DIR to run them"
        );
    });
    None
}

/// Return from the calling test when the shared corpus is missing (skipped; see [`corpus_for_tests`]).
#[macro_export]
macro_rules! skip_without_corpus {
    () => {
        if $crate::corpus_for_tests().is_none() {
            return;
        }
    };
}

/// The shared corpus directory, or return from the calling test (skipped; see [`corpus_for_tests`]).
#[macro_export]
macro_rules! corpus_or_skip {
    () => {
        match $crate::corpus_for_tests() {
            Some(dir) => dir,
            None => return,
        }
    };
}

/// Where the shared corpus of real sessions and pages is: `$CTXFIT_CORPUS`, else `../shared/corpus` beside the
/// workspace. `None` when it is not there.
pub fn corpus_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CTXFIT_CORPUS") {
        let dir = PathBuf::from(dir);
        return dir.is_dir().then_some(dir);
    }
    // crates/ctxfit-testkit → workspace root → its parent
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(3)?;
    let dir = root.join("shared").join("corpus");
    dir.is_dir().then_some(dir)
}

/// Every session file under the corpus' `trajectories/` folder, sorted (subagent `.meta.json` files excluded).
pub fn corpus_trajectory_files(corpus: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![corpus.join("trajectories")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                stack.push(path);
            } else if !name.ends_with(".meta.json")
                && [".jsonl", ".json", ".traj", ".af"]
                    .iter()
                    .any(|ext| name.ends_with(ext))
            {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}
