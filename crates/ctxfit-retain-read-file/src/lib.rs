//! Rule `read-file`: of repeated reads of one file, keep the first, the last and a few in between (seed 004).
//!
//! ## What it does
//! Reads of the same file — the same path and, for partial reads, the same range — across `read_file`, Claude
//! Code `Read`, OpenHands `str_replace_editor view`, SWE-agent `open` and shell reads (`cat FILE`,
//! `nl -ba FILE | sed -n A,Bp`, by configurable patterns) are kept by seed 004's table:
//!
//! | reads of the file | kept |
//! |---|---|
//! | 1 | it |
//! | 2 | both |
//! | 3–5 | first and last; pointers for the middle |
//! | 6+ | first, last and up to `max_file_reads - 2` evenly sampled middles (default `max_file_reads = 5`) |
//!
//! A pointer reads `[Re-read of {path} - see earlier read for content]` (the `pointer` parameter). A read whose
//! content is identical to an earlier kept read becomes a pointer to it; a read followed by an edit or write of
//! the file says so in its pointer (`mark_identical = false`, `mark_edited = false`: seed 004's table exactly, as
//! the `seed-004` profile has it). The first read is always kept: it is the file's initial state. Shell
//! commands that are not reads are left to the next rule of the profile.
//!
//! ## Why
//! Agents re-read files constantly; the first read shows the starting point and the last the current state,
//! and the ones in between are mostly the same text again.
//!
//! ## Example
//! ```toml
//! [[profiles.mine.rules]]
//! rule = "read-file"
//! tools = ["read_file", "bash"]
//! params = { max_file_reads = 4, shell_patterns = ['^\s*less\s+(?P<path>\S+)$'] }
//! ```

use std::collections::BTreeSet;

use ctxfit_model::Value;
use ctxfit_retention::calls::{
    edit_calls, read_target, shell_command, ShellReads, DEFAULT_SHELL_READS, SHELL_TOOLS,
};
use ctxfit_retention::{
    read_params, register_rule, Decision, RetentionRule, RuleConfigError, RuleContext,
    SiblingResult,
};

pub const DEFAULT_POINTER: &str = "[Re-read of {path} - see earlier read for content]";
pub const IDENTICAL_POINTER: &str =
    "[Re-read of {path} - identical to an earlier read, see it for content]";
pub const EDITED_POINTER: &str =
    "[Re-read of {path} - see earlier read for content; the file was edited after this read]";

/// Keeps first, last and sampled reads of each file.
#[derive(Debug, Clone)]
pub struct KeepFirstAndLastReads {
    pub max_file_reads: usize,
    pub pointer: String,
    pub shell: ShellReads,
    /// A kept read whose text is the same as an earlier kept read's becomes a pointer to it (default; seed 004
    /// keeps it: `mark_identical = false`).
    pub mark_identical: bool,
    /// A pointer says when the file was edited after the read (default; seed 004's does not:
    /// `mark_edited = false`).
    pub mark_edited: bool,
}

impl Default for KeepFirstAndLastReads {
    fn default() -> Self {
        KeepFirstAndLastReads {
            max_file_reads: 5,
            pointer: DEFAULT_POINTER.to_owned(),
            shell: ShellReads::default(),
            mark_identical: true,
            mark_edited: true,
        }
    }
}

/// Positions (0-based, oldest first) kept among `n` reads of one file.
pub fn kept_positions(n: usize, max_file_reads: usize) -> BTreeSet<usize> {
    match n {
        0 => BTreeSet::new(),
        1 | 2 => (0..n).collect(),
        3..=5 => [0, n - 1].into(),
        _ => {
            let mut kept: BTreeSet<usize> = [0, n - 1].into();
            let k = max_file_reads.saturating_sub(2);
            let middles = n - 2;
            for j in 0..k.min(middles) {
                kept.insert(1 + (2 * j + 1) * middles / (2 * k));
            }
            kept
        }
    }
}

impl KeepFirstAndLastReads {
    fn text(&self, template: &str, path: &str) -> String {
        template.replace("{path}", path)
    }

    fn is_pointer(&self, text: &str) -> bool {
        text.starts_with("[Re-read of ")
            || text.starts_with(self.pointer.split("{path}").next().unwrap_or("\u{0}"))
    }
}

impl RetentionRule for KeepFirstAndLastReads {
    fn name(&self) -> &'static str {
        "read-file"
    }

    fn decide(&self, ctx: &RuleContext<'_>) -> Decision {
        let Some(target) = read_target(ctx.tool_name, ctx.input, &self.shell) else {
            // a shell command that is not a read: the next rule decides
            return if ctx.tool_kind == "read_file" {
                Decision::Keep
            } else {
                Decision::Defer
            };
        };
        let text = ctx.content.joined_text();
        if self.is_pointer(&text) {
            return Decision::Keep;
        }
        // the compactor hands over the reads of this file (the rule's group); by hand, search for them
        let mut reads: Vec<SiblingResult<'_>> = if ctx.group.is_empty() {
            let mentions_path = |r: &SiblingResult<'_>| match shell_command(r.input) {
                // cheap test first: a shell read of this file names it
                Some(cmd) if SHELL_TOOLS.contains(&r.tool_name) => {
                    cmd.contains(target.path.as_str())
                }
                _ => true,
            };
            ["read_file", "bash"]
                .iter()
                .flat_map(|kind| ctx.results_of(kind).iter())
                .filter(|r| {
                    mentions_path(r)
                        && read_target(r.tool_name, r.input, &self.shell).as_ref() == Some(&target)
                })
                .collect()
        } else {
            ctx.group.iter().collect()
        };
        reads.sort_by_key(|r| (r.message_index, r.block_index));
        reads.dedup_by(|a, b| a.tool_use_id == b.tool_use_id);
        let Some(pos) = reads.iter().position(|r| r.tool_use_id == ctx.tool_use_id) else {
            return Decision::Keep;
        };
        let kept = kept_positions(reads.len(), self.max_file_reads);
        if kept.contains(&pos) {
            let same_as_earlier = self.mark_identical
                && kept
                    .range(..pos)
                    .any(|&k| reads[k].content.joined_text() == text);
            return if same_as_earlier {
                Decision::Pointer(self.text(IDENTICAL_POINTER, &target.path))
            } else {
                Decision::Keep
            };
        }
        let edited_after = self.mark_edited
            && ctx.results_of("edit_file").iter().any(|e| {
                e.is_after(ctx.message_index, ctx.block_index)
                    && edit_calls(e.tool_name, e.input)
                        .iter()
                        .any(|c| c.path.as_deref() == Some(target.path.as_str()))
            });
        let template = if edited_after && self.pointer == DEFAULT_POINTER {
            EDITED_POINTER
        } else {
            &self.pointer
        };
        Decision::Pointer(self.text(template, &target.path))
    }

    fn depends_on_history(&self) -> bool {
        true
    }

    /// A kept read changes only when another read arrives. Reads done through a shell (kind `bash`) are not
    /// listed, or every shell command would make the compactor ask again about every kept read: a shell re-read
    /// of a file read with a read tool is seen when the shell result itself is decided, and by the read tool's
    /// results the next time one of them arrives.
    fn reconsider_on_kinds(&self) -> Option<&'static [&'static str]> {
        Some(&["read_file"])
    }

    /// Reads of one file and range form a group: a kept read changes only when the same file is read again.
    fn group_key(&self, tool_name: &str, input: &Value) -> Option<String> {
        let t = read_target(tool_name, input, &self.shell)?;
        Some(format!("{}\u{0}{}", t.path, t.range.unwrap_or_default()))
    }
}

/// The parameters: the rule's fields, and `shell_patterns` (regexes of shell reads, beside the built-in ones).
#[derive(serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Params {
    max_file_reads: usize,
    pointer: String,
    shell_patterns: Vec<String>,
    mark_identical: bool,
    mark_edited: bool,
}

impl Default for Params {
    fn default() -> Self {
        let rule = KeepFirstAndLastReads::default();
        Params {
            max_file_reads: rule.max_file_reads,
            pointer: rule.pointer,
            shell_patterns: Vec::new(),
            mark_identical: rule.mark_identical,
            mark_edited: rule.mark_edited,
        }
    }
}

fn build(params: &Value) -> Result<Box<dyn RetentionRule>, RuleConfigError> {
    let p: Params = read_params("read-file", params)?;
    if p.max_file_reads < 2 {
        return Err(RuleConfigError::new(
            "read-file",
            "`max_file_reads` must be an integer of 2 or more",
        ));
    }
    let mut rule = KeepFirstAndLastReads {
        max_file_reads: p.max_file_reads,
        pointer: p.pointer,
        mark_identical: p.mark_identical,
        mark_edited: p.mark_edited,
        ..KeepFirstAndLastReads::default()
    };
    if !p.shell_patterns.is_empty() {
        let mut all: Vec<&str> = DEFAULT_SHELL_READS.to_vec();
        all.extend(p.shell_patterns.iter().map(String::as_str));
        rule.shell = ShellReads::new(&all).map_err(|e| RuleConfigError::new("read-file", e))?;
    }
    Ok(Box::new(rule))
}

register_rule!(
    name: "read-file",
    tools: &["read_file", "bash"],
    summary: "of repeated reads of a file keep first, last and a few sampled; pointers for the rest (seed 004)",
    factory: build,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_004_table() {
        let check = |n: usize, expected: &[usize]| {
            assert_eq!(
                kept_positions(n, 5).into_iter().collect::<Vec<_>>(),
                expected,
                "{n} reads"
            );
        };
        check(1, &[0]);
        check(2, &[0, 1]);
        check(3, &[0, 2]);
        check(5, &[0, 4]);
        check(6, &[0, 1, 3, 4, 5]);
        check(10, &[0, 2, 5, 7, 9]);
        check(30, &[0, 5, 15, 24, 29]);
        assert_eq!(kept_positions(30, 2).len(), 2);
    }
}
