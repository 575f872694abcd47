//! Exact BPE counts with tiktoken-rs (feature `exact`); its vocabularies are compiled into the binary.

use tiktoken_rs::CoreBPE;

use crate::TokenEstimator;

/// Exact token counts for OpenAI's o200k_base or cl100k_base encodings (special tokens read as text).
#[derive(Clone, Copy)]
pub struct ExactEstimator {
    name: &'static str,
    bpe: &'static CoreBPE,
}

impl ExactEstimator {
    pub fn o200k() -> Self {
        ExactEstimator {
            name: "o200k",
            bpe: tiktoken_rs::o200k_base_singleton(),
        }
    }

    pub fn cl100k() -> Self {
        ExactEstimator {
            name: "cl100k",
            bpe: tiktoken_rs::cl100k_base_singleton(),
        }
    }
}

impl std::fmt::Debug for ExactEstimator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExactEstimator")
            .field("name", &self.name)
            .finish()
    }
}

impl TokenEstimator for ExactEstimator {
    fn name(&self) -> &'static str {
        self.name
    }

    fn count_text(&self, text: &str) -> usize {
        self.bpe.count_ordinary(text)
    }
}
