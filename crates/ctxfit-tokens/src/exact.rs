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
        let mut start = 0;
        let mut total = 0;
        for cut in long_run_cuts(text, MAX_RUN) {
            total += self.bpe.count_ordinary(&text[start..cut]);
            start = cut;
        }
        total + self.bpe.count_ordinary(&text[start..])
    }
}

/// The longest run without whitespace counted in one piece. BPE on one piece costs far more than linear time
/// and memory in its length (a 50 MB word took 46 s and 2.6 GB), so longer runs — base64 blobs, minified code,
/// hostile input — are counted in pieces of this size. Text without such runs is counted exactly as one; a
/// long run may count a token or two more or less per cut.
pub const MAX_RUN: usize = 4096;

/// Where to cut `text` so that no run without ASCII whitespace is longer than `max` bytes (char boundaries).
fn long_run_cuts(text: &str, max: usize) -> Vec<usize> {
    let mut cuts = Vec::new();
    let mut run = 0;
    for (i, b) in text.bytes().enumerate() {
        if b.is_ascii_whitespace() {
            run = 0;
            continue;
        }
        if run >= max && text.is_char_boundary(i) {
            cuts.push(i);
            run = 0;
        }
        run += 1;
    }
    cuts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_text_is_one_piece_and_long_runs_are_cut() {
        assert!(long_run_cuts("some words, and code: fn main() { x }\n", MAX_RUN).is_empty());
        let word = "é".repeat(5000); // 10,000 bytes
        let cuts = long_run_cuts(&word, MAX_RUN);
        assert_eq!(cuts, [4096, 8192]);
        assert!(cuts.iter().all(|&c| word.is_char_boundary(c)));
        let odd = format!("a{}", "é".repeat(3000));
        assert!(long_run_cuts(&odd, MAX_RUN)
            .iter()
            .all(|&c| odd.is_char_boundary(c)));
    }

    #[test]
    fn a_long_run_counts_about_as_in_one_piece() {
        let est = ExactEstimator::o200k();
        let text = format!(
            "header line\n{}\ntrailer",
            "QmFzZTY0IGRhdGEgaGVyZQ".repeat(2000)
        );
        let whole = est.bpe.count_ordinary(&text);
        let cut = est.count_text(&text);
        assert!(cut.abs_diff(whole) * 100 <= whole, "{cut} vs {whole}");
        // no long run: the exact count
        let prose = "The quick brown fox jumps over the lazy dog. ".repeat(500);
        assert_eq!(est.count_text(&prose), est.bpe.count_ordinary(&prose));
    }
}
