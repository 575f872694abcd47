//! Rule `bash`: keep the head and the tail of long shell output.
//!
//! ## What it does
//! Output shorter than `keep_below` characters (1,000) is kept. Output up to `head_tail_above` (10,000) is kept
//! too — unless `cut_medium = true`, when it gets the same treatment with `medium_head`/`medium_tail` (500
//! each). Longer output becomes its first `head` characters (2,000), a line
//! `... [truncated: 45,231 chars total, 342 lines] ...`, and its last `tail` characters (2,000). Cuts fall on
//! character boundaries and move to a line boundary when one is near (within a fifth of the kept part).
//!
//! ## Why
//! A command's output says what ran at the top and how it ended at the bottom (the error, the summary line);
//! the middle of a long build or test log is rarely needed again, and the command can be re-run.
//!
//! ## Example
//! ```toml
//! [[profiles.mine.rules]]
//! rule = "bash"
//! params = { head = 1500, tail = 2500, cut_medium = true }
//! ```

use ctxfit_model::{Content, Value};
use ctxfit_retention::{
    char_count, read_params, register_rule, thousands, Decision, RetentionRule, RuleConfigError,
    RuleContext,
};

/// Head and tail of long shell output; its parameters are its fields.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KeepHeadAndTail {
    pub keep_below: usize,
    pub head_tail_above: usize,
    pub head: usize,
    pub tail: usize,
    pub cut_medium: bool,
    pub medium_head: usize,
    pub medium_tail: usize,
}

impl Default for KeepHeadAndTail {
    fn default() -> Self {
        KeepHeadAndTail {
            keep_below: 1_000,
            head_tail_above: 10_000,
            head: 2_000,
            tail: 2_000,
            cut_medium: false,
            medium_head: 500,
            medium_tail: 500,
        }
    }
}

/// Byte offset after the first `n` characters.
fn byte_at_char(s: &str, n: usize) -> usize {
    s.char_indices().nth(n).map_or(s.len(), |(b, _)| b)
}

/// The first `head` and last `tail` characters of `text` with a truncation line between, snapped to lines.
pub fn head_and_tail(text: &str, head: usize, tail: usize) -> String {
    let chars = char_count(text);
    let lines = text.lines().count();
    let mut head_end = byte_at_char(text, head);
    if let Some(nl) = text[..head_end].rfind('\n') {
        if char_count(&text[nl..head_end]) <= head / 5 {
            head_end = nl + 1;
        }
    }
    let mut tail_start = byte_at_char(text, chars.saturating_sub(tail));
    if let Some(nl) = text[tail_start..].find('\n') {
        if char_count(&text[tail_start..tail_start + nl]) <= tail / 5 {
            tail_start += nl + 1;
        }
    }
    let tail_start = tail_start.max(head_end);
    let head_part = text[..head_end].trim_end_matches('\n');
    format!(
        "{head_part}\n... [truncated: {} chars total, {} lines] ...\n{}",
        thousands(chars),
        thousands(lines),
        &text[tail_start..]
    )
}

/// Is this already the output of `head_and_tail`?
fn already_cut(text: &str) -> bool {
    text.contains("\n... [truncated: ") && text.contains(" chars total, ")
}

impl RetentionRule for KeepHeadAndTail {
    fn name(&self) -> &'static str {
        "bash"
    }

    fn decide(&self, ctx: &RuleContext<'_>) -> Decision {
        if ctx.chars < self.keep_below {
            return Decision::Keep;
        }
        let (head, tail) = if ctx.chars > self.head_tail_above {
            (self.head, self.tail)
        } else if self.cut_medium {
            (self.medium_head, self.medium_tail)
        } else {
            return Decision::Keep;
        };
        let text = ctx.content.joined_text();
        if already_cut(&text) || head + tail >= ctx.chars {
            return Decision::Keep;
        }
        Decision::Replace(Content::text(head_and_tail(&text, head, tail)))
    }
}

fn build(params: &Value) -> Result<Box<dyn RetentionRule>, RuleConfigError> {
    Ok(Box::new(read_params::<KeepHeadAndTail>("bash", params)?))
}

register_rule!(
    name: "bash",
    tools: &["bash"],
    summary: "keep head and tail of long shell output (< 1k kept, > 10k → 2,000 + 2,000)",
    factory: build,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_and_tail_snaps_to_lines_and_counts() {
        let text: String = (1..=500)
            .map(|i| format!("line {i:03} of the build log\n"))
            .collect();
        let cut = head_and_tail(&text, 200, 200);
        assert!(cut.starts_with("line 001"));
        assert!(
            cut.contains("\n... [truncated: 13,000 chars total, 500 lines] ...\n"),
            "{cut}"
        );
        assert!(cut.ends_with("line 500 of the build log\n"));
        let middle = cut.split("\n... [").next().unwrap();
        assert!(
            middle.ends_with("of the build log"),
            "head ends on a line boundary: {middle:?}"
        );
        // multi-byte text is cut between characters
        let wide = "日本語テキスト".repeat(3000);
        let cut = head_and_tail(&wide, 100, 100);
        assert!(cut.starts_with(&"日本語テキスト".repeat(14)));
        assert!(already_cut(&cut));
    }
}
