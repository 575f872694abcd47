//! The extraction benchmark's metric, so that tests, `cargo xtask eval-html` and anyone comparing cleaners score
//! pages the same way: 4-word shingles of the output against those of the ground-truth article text, as
//! precision, recall and F1. Markdown link and image URLs are stripped from the output first (the ground truth
//! has none); words are lower-cased and trimmed of punctuation.

use std::collections::HashSet;

/// Precision, recall and F1 of one page.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Score {
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
}

/// Remove the `(url)` part of Markdown links and images: `[text](https://…)` → `[text]`.
pub fn strip_link_urls(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut rest = markdown;
    while let Some(i) = rest.find("](") {
        out.push_str(&rest[..=i]);
        match rest[i..].find(')') {
            Some(j) => rest = &rest[i + j + 1..],
            None => rest = "",
        }
    }
    out.push_str(rest);
    out
}

fn shingles(text: &str) -> HashSet<String> {
    let words: Vec<String> = text
        .split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect();
    words.windows(4).map(|w| w.join(" ")).collect()
}

/// Score extracted Markdown against the ground-truth text. Both empty is a perfect score; one empty, zero.
pub fn shingle_score(extracted: &str, truth: &str) -> Score {
    let (e, t) = (shingles(&strip_link_urls(extracted)), shingles(truth));
    if e.is_empty() || t.is_empty() {
        let v = if e.is_empty() && t.is_empty() {
            1.0
        } else {
            0.0
        };
        return Score {
            precision: v,
            recall: v,
            f1: v,
        };
    }
    let common = e.intersection(&t).count() as f64;
    let (precision, recall) = (common / e.len() as f64, common / t.len() as f64);
    let f1 = if common == 0.0 {
        0.0
    } else {
        2.0 * precision * recall / (precision + recall)
    };
    Score {
        precision,
        recall,
        f1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_shingles_without_link_urls() {
        assert_eq!(
            strip_link_urls("see [the docs](https://x.io/a_(b)) and ![img](i.png) end"),
            "see [the docs]) and ![img] end"
        );
        let truth = "one two three four five six";
        let perfect = shingle_score("One, two three four five six.", truth);
        assert_eq!(perfect.f1, 1.0);
        // half the output is extra: precision 3/6, recall 1
        let extra = shingle_score("one two three four five six x y z", truth);
        assert_eq!((extra.precision, extra.recall), (0.5, 1.0));
        assert_eq!(shingle_score("", "").f1, 1.0);
        assert_eq!(shingle_score("", truth).f1, 0.0);
        assert_eq!(shingle_score("seven eight nine ten", truth).f1, 0.0);
    }
}
