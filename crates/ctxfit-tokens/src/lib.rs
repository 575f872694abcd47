//! Token estimation for ctxfit.
//!
//! Compaction decisions are made on every model call, over histories of hundreds of thousands of tokens, so
//! counting must cost far less than the call it guards — yet a count that is 25% off triggers compaction too
//! late or too early. The seeds' `characters / 4` is fast but 25% off on average (worse on code, logs and CJK);
//! exact BPE is right but runs at a few MB/s. The key decision here: the default is a **calibrated single-pass
//! estimator** ([`FastEstimator`]) that counts adjacent character-class pairs in one branch-free pass and
//! weights them with coefficients fitted against exact o200k counts on real agent sessions
//! (`cargo xtask fit-tokens` refits them reproducibly). Exact o200k/cl100k counting is available behind the
//! `exact` cargo feature, with vocabularies embedded in the binary (no network, ever).
//!
//! Beyond plain text this crate knows one thing about messages: each message and each non-text block costs a
//! small fixed overhead ([`conversation`]). Per-message counts are cached so a growing history is counted once.
//! [`TokenBudget`] is the guard of seed 003: an error over `budget`, a warning over `warning_threshold`.
//!
//! ```
//! use ctxfit_tokens::{FastEstimator, TokenBudget, TokenEstimator};
//!
//! let tokens = FastEstimator.count_text("fn main() { println!(\"hello\"); }");
//! assert!((8..=16).contains(&tokens), "{tokens}");
//! let guard = TokenBudget { budget: 150_000, warning_threshold: 120_000 };
//! assert!(guard.check(100_000).is_ok());
//! assert_eq!(
//!     guard.check(200_000).unwrap_err().to_string(),
//!     "Prompt too large: 200000 tokens exceeds budget of 150000"
//! );
//! ```

mod budget;
pub mod conversation;
#[cfg(feature = "exact")]
mod exact;
mod fast;
mod payload;
mod weights;

pub use budget::{BudgetError, BudgetStatus, TokenBudget};
pub use conversation::{
    count_content, count_conversation, count_message, count_preamble, count_tool_result,
    MessageTokenCache,
};
#[cfg(feature = "exact")]
pub use exact::ExactEstimator;
pub use fast::{pair_counts, FastEstimator, CLASSES, CLASS_NAMES, FEATURES};
pub use payload::{PDF_BYTES_PER_PAGE, PDF_PAGE_TOKENS};

/// Something that turns text into a token count.
pub trait TokenEstimator: Send + Sync {
    /// Short name (`chars4`, `fast`, `o200k`, `cl100k`).
    fn name(&self) -> &'static str;

    /// Tokens of a plain text.
    fn count_text(&self, text: &str) -> usize;
}

/// The seeds' estimator: Unicode scalar values divided by 4, rounded down (Python's `len(text) // 4`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Chars4;

impl TokenEstimator for Chars4 {
    fn name(&self) -> &'static str {
        "chars4"
    }

    fn count_text(&self, text: &str) -> usize {
        text.chars().count() / 4
    }
}

/// `45231` → `45,231`: how counts of tokens, characters and bytes are printed in markers, messages and reports.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The names [`estimator`] accepts; `o200k` and `cl100k` only with the `exact` feature.
pub fn estimator_names() -> &'static [&'static str] {
    if cfg!(feature = "exact") {
        &["chars4", "fast", "o200k", "cl100k"]
    } else {
        &["chars4", "fast"]
    }
}

/// An estimator by name, `None` for an unknown name (or an exact one when the feature is off).
pub fn estimator(name: &str) -> Option<Box<dyn TokenEstimator>> {
    match name {
        "chars4" => Some(Box::new(Chars4)),
        "fast" => Some(Box::new(FastEstimator)),
        #[cfg(feature = "exact")]
        "o200k" => Some(Box::new(ExactEstimator::o200k())),
        #[cfg(feature = "exact")]
        "cl100k" => Some(Box::new(ExactEstimator::cl100k())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        for (n, s) in [
            (0, "0"),
            (999, "999"),
            (1000, "1,000"),
            (45231, "45,231"),
            (1234567, "1,234,567"),
        ] {
            assert_eq!(thousands(n), s);
        }
    }

    #[test]
    fn chars4_counts_unicode_scalar_values() {
        let check =
            |text: &str, expected: usize| assert_eq!(Chars4.count_text(text), expected, "{text:?}");
        check("", 0);
        check("abc", 0);
        check("abcd", 1);
        check("日本語の", 1);
        check("héllo wörld", 2);
    }

    #[test]
    fn fast_estimates_are_sane() {
        assert_eq!(FastEstimator.count_text(""), 0);
        assert_eq!(FastEstimator.count_text("a"), 1);
        let prose = "The quick brown fox jumps over the lazy dog. ".repeat(20);
        let n = FastEstimator.count_text(&prose);
        // 10 tokens per sentence in o200k
        assert!((180..=220).contains(&n), "{n}");
    }

    #[test]
    fn estimators_by_name() {
        for name in estimator_names() {
            assert_eq!(estimator(name).map(|e| e.name()), Some(*name));
        }
        assert!(estimator("gpt2").is_none());
    }
}
