//! Where a replay's tokens go: each tool's results, as the requests sent them.
//!
//! A result is sent again with every request after it, so what a tool costs is its results' tokens summed over
//! the requests that carried them — as compacted when they were sent, and as they were. Kept current from the
//! compactor's per-request report like the rest of the replay: a request adds each tool's running total once,
//! whatever the history's length.

use std::collections::BTreeMap;
use std::ops::Range;

use ctxfit_model::{Block, Message, Value};
use ctxfit_retention::calls::{first_stage, program_of, shell_command};
use ctxfit_tokens::conversation::count_block;
use ctxfit_tokens::TokenEstimator;
use rustc_hash::FxHashMap;
use serde::Serialize;

use crate::idents::identifiers;

/// What one tool's results cost over a replay.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ToolTokens {
    /// The tool's name — for a shell command, with the program its command line starts with (`bash: grep`,
    /// [`tool_label`]).
    pub tool: String,
    /// Results of this tool in the session.
    pub results: usize,
    /// Their tokens as each request sent them, summed over the requests.
    pub input_tokens: usize,
    /// The same with no compaction.
    pub uncompacted_tokens: usize,
    /// References (as recall counts them) whose latest showing before they were used was a result of this tool.
    pub references: usize,
    /// Those of them the request that preceded their use still showed.
    pub references_visible: usize,
}

/// The name a tool's results are counted under: the tool's own, or for a shell command the tool's and the
/// program the command line starts with (`bash: pytest`, `exec_command: rg`: the first word of the first step
/// that is not a `cd`, [`first_stage`] — `cat` for a heredoc that writes a file and runs it), unless that is the
/// tool's own name.
pub fn tool_label(name: &str, input: &Value) -> String {
    match shell_command(input)
        .as_deref()
        .map(|c| program_of(first_stage(c)))
    {
        // (SWE-agent's `{"command": "edit 12:14 …"}` names its own tool: `edit`, not `edit: edit`)
        Some(program) if !program.is_empty() && program != name => format!("{name}: {program}"),
        _ => name.to_owned(),
    }
}

/// The tools' running totals during a replay.
#[derive(Default)]
pub(crate) struct Tally {
    tools: Vec<ToolTokens>,
    by_label: FxHashMap<String, usize>,
    /// call id → its calls, in order (an id may be reused)
    calls: FxHashMap<String, Vec<CallOf>>,
    /// every result so far: (message, tool, tokens as the request sends it now)
    results: Vec<(usize, usize, usize)>,
    /// (message, block) → index in `results`
    at: FxHashMap<(usize, usize), usize>,
    /// per tool: its results' tokens as sent now, and as they were
    sent: Vec<usize>,
    source: Vec<usize>,
    /// identifier → the tool whose result showed it last
    shown: FxHashMap<String, usize>,
}

impl Tally {
    fn tool(&mut self, label: String) -> usize {
        if let Some(&i) = self.by_label.get(&label) {
            return i;
        }
        self.by_label.insert(label.clone(), self.tools.len());
        self.tools.push(ToolTokens {
            tool: label,
            ..ToolTokens::default()
        });
        self.sent.push(0);
        self.source.push(0);
        self.tools.len() - 1
    }

    /// Message `mi` joins the history: its calls are named, its results counted.
    pub(crate) fn join(&mut self, est: &dyn TokenEstimator, mi: usize, msg: &Message) {
        for (bi, block) in msg.content.blocks.iter().enumerate() {
            match block {
                Block::ToolUse(u) => {
                    let t = self.tool(tool_label(&u.name, &u.input));
                    (self.calls.entry(u.id.clone()).or_default()).push(CallOf {
                        message: mi,
                        tool: t,
                        answered: false,
                    });
                }
                Block::ToolResult(r) => {
                    let t = match self.calls.get_mut(&r.tool_use_id).and_then(|c| answered(c)) {
                        Some(t) => t,
                        None => self.tool("(a result without its call)".to_owned()),
                    };
                    let tokens = count_block(est, block);
                    self.tools[t].results += 1;
                    self.sent[t] += tokens;
                    self.source[t] += tokens;
                    self.at.insert((mi, bi), self.results.len());
                    self.results.push((mi, t, tokens));
                    crate::for_each_text(block, |text| {
                        for id in identifiers(text) {
                            match self.shown.get_mut(id) {
                                Some(at) => *at = t,
                                None => {
                                    self.shown.insert(id.to_owned(), t);
                                }
                            }
                        }
                    });
                }
                _ => {}
            }
        }
    }

    /// The block at (`message`, `block`) is sent `saved` tokens smaller from now on (a block that is not a
    /// result — a call whose input was cleared — is not a tool's result: ignored).
    pub(crate) fn cut(&mut self, message: usize, block: usize, saved: usize) {
        if let Some(&i) = self.at.get(&(message, block)) {
            let (_, t, tokens) = &mut self.results[i];
            let saved = saved.min(*tokens);
            *tokens -= saved;
            self.sent[*t] -= saved;
        }
    }

    /// A request is sent: each tool's results as they are now, but those in the messages it leaves out.
    pub(crate) fn request(&mut self, dropped: Option<Range<usize>>) {
        for (t, tool) in self.tools.iter_mut().enumerate() {
            tool.input_tokens += self.sent[t];
            tool.uncompacted_tokens += self.source[t];
        }
        // (only a profile with `max_conversation_messages` drops messages: their results counted one by one)
        if let Some(range) = dropped {
            for &(mi, t, tokens) in &self.results {
                if range.contains(&mi) {
                    self.tools[t].input_tokens -= tokens;
                }
            }
        }
    }

    /// A response used `references`; `visible` tells which of them its request showed. Each is counted under
    /// the tool whose result showed it last.
    pub(crate) fn used(&mut self, references: &[String], visible: impl Fn(&str) -> bool) {
        for id in references {
            if let Some(&t) = self.shown.get(id.as_str()) {
                self.tools[t].references += 1;
                self.tools[t].references_visible += usize::from(visible(id));
            }
        }
    }

    /// The label of the tool whose result showed `id` last, if a result has shown it.
    pub(crate) fn tool_of(&self, id: &str) -> Option<&str> {
        self.shown.get(id).map(|&t| self.tools[t].tool.as_str())
    }

    /// The tools whose results the session had, most costly first (uncompacted), then by name.
    pub(crate) fn finish(self) -> Vec<ToolTokens> {
        costliest_first(self.tools.into_iter().filter(|t| t.results > 0).collect())
    }
}

/// Many sessions' tools summed, most costly first (uncompacted), then by name.
pub fn sum_tools<'a>(lists: impl IntoIterator<Item = &'a [ToolTokens]>) -> Vec<ToolTokens> {
    let mut by: BTreeMap<&str, ToolTokens> = BTreeMap::new();
    for list in lists {
        for t in list {
            let e = by.entry(&t.tool).or_insert_with(|| ToolTokens {
                tool: t.tool.clone(),
                ..ToolTokens::default()
            });
            e.results += t.results;
            e.input_tokens += t.input_tokens;
            e.uncompacted_tokens += t.uncompacted_tokens;
            e.references += t.references;
            e.references_visible += t.references_visible;
        }
    }
    costliest_first(by.into_values().collect())
}

/// Most costly first (uncompacted), then by name.
fn costliest_first(mut tools: Vec<ToolTokens>) -> Vec<ToolTokens> {
    tools.sort_by(|a, b| {
        (b.uncompacted_tokens.cmp(&a.uncompacted_tokens)).then_with(|| a.tool.cmp(&b.tool))
    });
    tools
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_shell_call_is_named_by_the_program_its_command_line_runs() {
        for (name, input, want) in [
            (
                "bash",
                json!({"command": "cd /testbed && grep -rn foo src | head"}),
                "bash: grep",
            ),
            (
                "exec_command",
                json!({"cmd": "FOO=1 pytest -x tests"}),
                "exec_command: pytest",
            ),
            (
                "shell",
                json!({"command": ["bash", "-lc", "rg -n bar"]}),
                "shell: rg",
            ),
            (
                "bash",
                json!({"command": "/usr/bin/python3 run.py"}),
                "bash: python3",
            ),
            (
                "bash",
                json!({"command": "cat > t.py <<'EOF'\nprint(1)\nEOF\npython t.py"}),
                "bash: cat",
            ),
            ("Read", json!({"file_path": "src/a.rs"}), "Read"),
            (
                "edit",
                json!({"command": "edit 12:14\nx = 1\nend_of_edit"}),
                "edit",
            ),
            ("bash", json!({"command": "cd /testbed"}), "bash"),
        ] {
            assert_eq!(tool_label(name, &input), want, "{input}");
        }
    }
}

/// A call with an id, as the tally met it: where, of which tool, and whether a result answered it yet.
#[derive(Debug, Clone)]
pub(crate) struct CallOf {
    message: usize,
    tool: usize,
    answered: bool,
}

/// The tool a result answers, of the calls with its id so far: of those in the latest message that has one, the
/// first not answered yet (parallel calls sharing an id take their results in order), else the latest — as
/// `ToolCallIndex::call_before` pairs them.
fn answered(calls: &mut [CallOf]) -> Option<usize> {
    let message = calls.last()?.message;
    if let Some(c) = (calls.iter_mut()).find(|c| c.message == message && !c.answered) {
        c.answered = true;
        return Some(c.tool);
    }
    calls.last().map(|c| c.tool)
}
