//! The extraction benchmark's metric, so that tests, `cargo xtask eval-html` and anyone comparing cleaners score
//! pages the same way: 4-word shingles of the output against those of the ground-truth article text, as
//! precision, recall and F1. Markdown output is read as the text it shows first ([`markdown_text`]: the ground
//! truth is plain text, with no link URLs, emphasis marks or escapes); words are lower-cased and trimmed of
//! punctuation.

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

/// Markdown as the text it shows: link and image URLs removed, the brackets around link text, emphasis marks,
/// code marks and fences, heading, quote and list item marks (`- `, `3. `) removed, the escapes of literal
/// characters undone (`\[1\]` is the text's `[1]`, `*` emphasis; the writer never marks emphasis with `_`, so an
/// underscore is the text's); inside code, every character is the text's. Without it a footnote mark escaped in
/// the Markdown (`word\[1\]`) would be another word than the text's `word[1]`, and an ordered list's numbers words
/// the page does not show as text.
pub fn markdown_text(markdown: &str) -> String {
    let stripped = strip_link_urls(markdown);
    let mut text = String::with_capacity(stripped.len());
    // the open code block's fence: its length
    let mut fenced: Option<usize> = None;
    for line in stripped.lines() {
        // a code block's fence (```rust) is markup, its language no word of the text; its lines are text, up to
        // a fence as long or longer
        let fence = line.trim_start().bytes().take_while(|&b| b == b'`').count();
        let closes = fenced.is_some_and(|open| fence >= open && line.trim().len() == fence);
        if closes || (fenced.is_none() && fence >= 3) {
            fenced = if closes { None } else { Some(fence) };
            text.push('\n');
            continue;
        }
        if fenced.is_some() {
            text.push_str(line);
            text.push('\n');
            continue;
        }
        // the marks that open a line: quotes and list items (nested in each other), then a heading's
        let mut line = line.trim_start();
        loop {
            let rest = line.trim_start_matches('>').trim_start();
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            let rest = rest
                .strip_prefix("- ")
                .or_else(|| rest[digits..].strip_prefix(". ").filter(|_| digits > 0))
                .unwrap_or(rest);
            if rest.len() == line.len() {
                break;
            }
            line = rest.trim_start();
        }
        let line = line.trim_start_matches('#');
        // (inside a code span, opened and closed by runs of as many backticks, every character is the text's)
        let (mut chars, mut code) = (line.chars().peekable(), None);
        while let Some(c) = chars.next() {
            match c {
                '`' => {
                    let mut run = 1;
                    while chars.next_if_eq(&'`').is_some() {
                        run += 1;
                    }
                    match code {
                        None => code = Some(run),
                        Some(open) if open == run => code = None,
                        Some(_) => text.extend(std::iter::repeat_n('`', run)),
                    }
                }
                c if code.is_some() => text.push(c),
                '\\' => text.extend(chars.next()),
                '*' | '[' | ']' => {}
                c => text.push(c),
            }
        }
        text.push('\n');
    }
    text
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

/// Score extracted Markdown against the ground-truth text, as the text it shows ([`markdown_text`]). Both empty is
/// a perfect score; one empty, zero.
pub fn shingle_score(extracted: &str, truth: &str) -> Score {
    text_score(&markdown_text(extracted), truth)
}

/// Score extracted plain text (an extractor that writes no Markdown) against the ground-truth text.
pub fn text_score(extracted: &str, truth: &str) -> Score {
    let (e, t) = (shingles(extracted), shingles(truth));
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

    #[test]
    fn markdown_is_scored_as_the_text_it_shows() {
        // the writer escapes a footnote's brackets and a star of the text, marks a link and emphasis: none of it is
        // the text's, and the reference text has none of it
        let html = "<p>The claim<sup><a href=\"#n1\">[1]</a></sup> holds for <b>every</b> snake_case name and \
                    2*3 words, as <a href=\"/x\">the [docs]</a> say</p>";
        let markdown = crate::HtmlCleaner::new(crate::StripLevel::Minimal)
            .clean(html)
            .0;
        assert!(markdown.contains("\\[1\\]"), "{markdown}");
        let truth = "The claim[1] holds for every snake_case name and 2*3 words, as the [docs] say";
        assert_eq!(shingle_score(&markdown, truth).f1, 1.0);
        assert_eq!(
            markdown_text("# Title\n\nSee **the [docs](https://x.io/a)** and `code`.\n> quoted"),
            " Title\n\nSee the docs and code.\nquoted\n"
        );
        // list marks and code fences are markup; a heading's number, an escaped one and code are the text's
        assert_eq!(
            markdown_text("1. first\n2. - nested\n> 3. quoted\n\n## 4. Heading\n\n5\\. text\n\n```rust\nlet p = *q; // \\n\n```\n`a*b\\c` d"),
            "first\nnested\nquoted\n\n 4. Heading\n\n5. text\n\n\nlet p = *q; // \\n\n\na*b\\c d\n"
        );
        assert_eq!(markdown_text("`` a`b `` c"), " a`b  c\n");
        assert_eq!(
            markdown_text("````\n```rust\n- x\n```\n````\n- y"),
            "\n```rust\n- x\n```\n\ny\n"
        );
        // plain text is scored as it is: its stars and brackets are the text's, not marks
        let plain = "the product a*b*c of [three] numbers";
        assert_eq!(text_score(plain, plain).f1, 1.0);
        assert!(shingle_score(plain, plain).f1 < 1.0);
        assert_eq!(
            shingle_score("\\[1\\] words are here", "[1] words are here").f1,
            1.0
        );
    }
}
