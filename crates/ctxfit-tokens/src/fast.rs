//! The calibrated fast estimator: one pass over the bytes, counting pairs of adjacent character classes.
//!
//! A BPE tokenizer's count depends on where words, number groups, punctuation clusters, whitespace runs and
//! non-ASCII characters begin and end — all of which are visible in which *class* of byte follows which. So the
//! pass maps each byte to one of 15 classes and counts every (previous class, class) pair; the estimate is a
//! weighted sum of those pair counts, with weights fitted against exact o200k counts on the corpus by
//! `cargo xtask fit-tokens` (which writes `weights.rs`).
//!
//! Speed: at run time the loop adds the pair's fixed-point weight directly — one look-up per byte in a table of
//! every pair of *bytes* (their classes' weight, built at compile time), indexed by the two bytes read as one
//! `u16`; no branches, two independent accumulators — so there are no counters to clear or sum, which matters
//! as much as the loop for the many short texts of a history (1.25× the class-by-class loop it replaced, on the
//! lines of the Codex sessions). `pair_counts` materialises the counts for fitting; tests keep both paths equal,
//! the fixed-point sums exactly.

use crate::weights::{FAST_INTERCEPT, FAST_WEIGHTS};
use crate::TokenEstimator;

/// Number of byte classes (the 16th is the start-of-text pseudo-class).
pub const CLASSES: usize = 15;
/// Number of features: one per (previous class, class) pair, plus the start-of-text pseudo-class row.
pub const FEATURES: usize = 16 * 16;

const LOWER: u8 = 0;
const UPPER: u8 = 1;
const DIGIT: u8 = 2;
const SPACE: u8 = 3;
const NEWLINE: u8 = 4;
const TAB: u8 = 5;
const PUNCT: u8 = 6;
const CONTINUATION: u8 = 7;
const LEAD2: u8 = 8;
const LEAD3: u8 = 9;
const LEAD4: u8 = 10;
const CARRIAGE_RETURN: u8 = 11;
const CONTROL: u8 = 12;
const QUOTE: u8 = 13;
const BRACKET: u8 = 14;
/// The class "before" the first byte.
const START: u8 = 15;

/// Human names of the classes, for reports and the weights file.
pub const CLASS_NAMES: [&str; 16] = [
    "lower", "upper", "digit", "space", "newline", "tab", "punct", "cont", "lead2", "lead3",
    "lead4", "cr", "control", "quote", "bracket", "start",
];

const fn class_of(b: u8) -> u8 {
    match b {
        b'a'..=b'z' => LOWER,
        b'A'..=b'Z' => UPPER,
        b'0'..=b'9' => DIGIT,
        b' ' => SPACE,
        b'\n' => NEWLINE,
        b'\t' => TAB,
        b'\r' => CARRIAGE_RETURN,
        0..=0x1f | 0x7f => CONTROL,
        b'"' | b'\'' | b'`' => QUOTE,
        b'(' | b')' | b'[' | b']' | b'{' | b'}' => BRACKET,
        0x21..=0x7e => PUNCT,
        0x80..=0xbf => CONTINUATION,
        0xc0..=0xdf => LEAD2,
        0xe0..=0xef => LEAD3,
        0xf0..=0xff => LEAD4,
    }
}

const CLASS_TABLE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = class_of(i as u8);
        i += 1;
    }
    t
};

/// Counts of (previous class, class) pairs, indexed `prev * 16 + class`.
pub fn pair_counts(text: &str) -> [u64; FEATURES] {
    let mut total = [0u64; FEATURES];
    let mut prev = START;
    // u32 counters are flushed every block so no input can overflow them
    for block in text.as_bytes().chunks(1 << 30) {
        let mut t = [[0u32; FEATURES]; 4];
        let mut quads = block.chunks_exact(4);
        for q in &mut quads {
            let a = CLASS_TABLE[q[0] as usize];
            let b = CLASS_TABLE[q[1] as usize];
            let c = CLASS_TABLE[q[2] as usize];
            let d = CLASS_TABLE[q[3] as usize];
            t[0][((prev << 4) | a) as usize] += 1;
            t[1][((a << 4) | b) as usize] += 1;
            t[2][((b << 4) | c) as usize] += 1;
            t[3][((c << 4) | d) as usize] += 1;
            prev = d;
        }
        for &byte in quads.remainder() {
            let c = CLASS_TABLE[byte as usize];
            t[0][((prev << 4) | c) as usize] += 1;
            prev = c;
        }
        for table in &t {
            for (sum, &n) in total.iter_mut().zip(table.iter()) {
                *sum += u64::from(n);
            }
        }
    }
    total
}

/// Fixed-point scale of the weights used by the counting loop.
const SCALE: f64 = (1u64 << 20) as f64;

/// The fitted weights in fixed point, so the hot loop adds integers (no float latency chain).
const FIXED_WEIGHTS: [i32; FEATURES] = {
    let mut t = [0i32; FEATURES];
    let mut i = 0;
    while i < FEATURES {
        t[i] = (FAST_WEIGHTS[i] * SCALE) as i32;
        i += 1;
    }
    t
};

/// The fixed-point weight of every pair of adjacent *bytes*, indexed by the two bytes as a little-endian `u16`
/// (`previous | byte << 8`): the weight of their classes' pair. 256 KiB, of which text touches a small part.
static BYTE_PAIR_WEIGHTS: [i32; 1 << 16] = {
    let mut t = [0i32; 1 << 16];
    let mut i = 0;
    while i < 1 << 16 {
        let (prev, byte) = (CLASS_TABLE[i & 0xff] as usize, CLASS_TABLE[i >> 8] as usize);
        t[i] = FIXED_WEIGHTS[(prev << 4) | byte];
        i += 1;
    }
    t
};

/// The fixed-point weight of a text's first byte (after the start-of-text pseudo-class).
const FIRST_WEIGHTS: [i32; 256] = {
    let mut t = [0i32; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = FIXED_WEIGHTS[((START as usize) << 4) | CLASS_TABLE[i] as usize];
        i += 1;
    }
    t
};

/// Σ weight[pair] over the text, in fixed point: the same model as `pair_counts` · weights, in one pass with
/// no tables to clear or sum, which matters for the many short texts of a history. Each pair of adjacent bytes
/// is one look-up in [`BYTE_PAIR_WEIGHTS`] (two bytes read as one `u16`), two independent accumulators.
fn weighted_pairs(bytes: &[u8]) -> i64 {
    let Some(&first) = bytes.first() else {
        return 0;
    };
    let weight = |pair: &[u8]| {
        i64::from(BYTE_PAIR_WEIGHTS[usize::from(u16::from_le_bytes([pair[0], pair[1]]))])
    };
    let (mut s0, mut s1) = (i64::from(FIRST_WEIGHTS[usize::from(first)]), 0i64);
    // the pairs (bytes[k], bytes[k + 1]), eight at a time: a window of nine bytes, advancing by eight
    let mut rest = bytes;
    while rest.len() >= 9 {
        let w = &rest[..9];
        s0 += weight(&w[0..2]) + weight(&w[2..4]) + weight(&w[4..6]) + weight(&w[6..8]);
        s1 += weight(&w[1..3]) + weight(&w[3..5]) + weight(&w[5..7]) + weight(&w[7..9]);
        rest = &rest[8..];
    }
    for pair in rest.windows(2) {
        s0 += weight(pair);
    }
    s0 + s1
}

/// The default estimator: fitted pair weights, see the module doc.
#[derive(Debug, Clone, Copy, Default)]
pub struct FastEstimator;

impl FastEstimator {
    /// The estimate before rounding, from pair counts (what the fit sees; `count_text` computes the same sum
    /// in fixed point without materialising the counts).
    pub fn estimate_from_counts(counts: &[u64; FEATURES]) -> f64 {
        let mut sum = FAST_INTERCEPT;
        for (&n, &w) in counts.iter().zip(FAST_WEIGHTS.iter()) {
            sum += n as f64 * w;
        }
        sum
    }

    /// The estimate before rounding.
    pub fn estimate(text: &str) -> f64 {
        FAST_INTERCEPT + weighted_pairs(text.as_bytes()) as f64 / SCALE
    }
}

impl TokenEstimator for FastEstimator {
    fn name(&self) -> &'static str {
        "fast"
    }

    fn count_text(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        // at least one token for any non-empty text
        Self::estimate(text).round().max(1.0) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_count_every_byte_once() {
        for text in [
            "",
            "a",
            "ab",
            "abcd",
            "abcde",
            "héllo wörld 12345\n\tx",
            "日本語のテキスト",
        ] {
            let counts = pair_counts(text);
            assert_eq!(counts.iter().sum::<u64>(), text.len() as u64, "{text:?}");
        }
    }

    #[test]
    fn fixed_point_sum_matches_the_counted_model() {
        for text in [
            "",
            "x",
            "fn main() {\n    println!(\"hi\");\n}\n",
            "日本語 and English 123",
            "\t\r\n\u{7f}",
        ] {
            let counted = FastEstimator::estimate_from_counts(&pair_counts(text));
            let fixed = FastEstimator::estimate(text);
            assert!(
                (counted - fixed).abs() < 1e-3 * (1.0 + counted.abs()),
                "{text:?}: {counted} vs {fixed}"
            );
        }
    }

    #[test]
    fn byte_pairs_sum_exactly_the_class_pairs_weights() {
        // every length up to two windows and a tail, ASCII and multi-byte text, control bytes
        let source = "fn main() {\n\t\"héllo\" → 日本語 [x] 12_345\r\n}\u{1}";
        for end in (0..=source.len()).filter(|&e| source.is_char_boundary(e)) {
            let text = &source[..end];
            let counted: i64 = pair_counts(text)
                .iter()
                .zip(FIXED_WEIGHTS.iter())
                .map(|(&n, &w)| n as i64 * i64::from(w))
                .sum();
            assert_eq!(weighted_pairs(text.as_bytes()), counted, "{text:?}");
        }
    }

    #[test]
    fn pairs_see_class_changes() {
        let counts = pair_counts("ab 1");
        let idx = |p: u8, c: u8| (p as usize) * 16 + c as usize;
        assert_eq!(counts[idx(START, LOWER)], 1);
        assert_eq!(counts[idx(LOWER, LOWER)], 1);
        assert_eq!(counts[idx(LOWER, SPACE)], 1);
        assert_eq!(counts[idx(SPACE, DIGIT)], 1);
    }
}
