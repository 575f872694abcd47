//! Texts of the corpus, labelled by kind, for fitting and evaluating token estimators.

use std::path::Path;

use anyhow::{Context, Result};
use ctxfit_import::import_file;
use ctxfit_model::{Block, Role, ToolCallIndex};
use ctxfit_testkit::corpus_trajectory_files;

/// What kind of text a sample is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A tool result holding JSON.
    Json,
    /// A tool result of a file read or code view.
    Code,
    /// A tool result of a shell command.
    Log,
    /// Any other tool result.
    OtherResult,
    /// User, assistant and system text, tool-call inputs.
    Message,
    /// Article text (Latin script) from the HTML ground truth.
    Prose,
    /// Article text mostly in CJK or Hangul.
    Cjk,
    /// Article text mostly in Cyrillic.
    Cyrillic,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Json => "tool result: JSON",
            Kind::Code => "tool result: code / file read",
            Kind::Log => "tool result: shell output",
            Kind::OtherResult => "tool result: other",
            Kind::Message => "message text",
            Kind::Prose => "article prose (Latin)",
            Kind::Cjk => "article text (CJK)",
            Kind::Cyrillic => "article text (Cyrillic)",
        }
    }

    pub fn is_tool_result(self) -> bool {
        matches!(
            self,
            Kind::Json | Kind::Code | Kind::Log | Kind::OtherResult
        )
    }
}

/// One text with its kind and which fold (0 or 1) of a two-fold split it falls in.
pub struct Sample {
    pub kind: Kind,
    pub fold: usize,
    pub text: String,
}

const READ_TOOLS: &[&str] = &["Read", "read_file", "open", "str_replace_editor", "view"];
const SHELL_TOOLS: &[&str] = &[
    "Bash",
    "bash",
    "execute_bash",
    "shell",
    "execute_ipython_cell",
];

fn classify_result(tool: &str, text: &str) -> Kind {
    let t = text.trim_start();
    if (t.starts_with('{') || t.starts_with('['))
        && serde_json::from_str::<serde_json::Value>(text).is_ok()
    {
        Kind::Json
    } else if READ_TOOLS.contains(&tool) {
        Kind::Code
    } else if SHELL_TOOLS.contains(&tool) {
        Kind::Log
    } else {
        Kind::OtherResult
    }
}

/// A stable fold for a name (FNV-1a), so the split does not change between runs.
fn fold_of(name: &str) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    (h >> 32) as usize % 2
}

/// Every non-empty text of the corpus' sessions and article ground truth.
pub fn load(corpus: &Path) -> Result<Vec<Sample>> {
    let mut out = Vec::new();
    for path in corpus_trajectory_files(corpus) {
        let sessions =
            import_file(&path, None).with_context(|| format!("importing {}", path.display()))?;
        let file_fold = fold_of(&path.to_string_lossy());
        for (si, session) in sessions.iter().enumerate() {
            // multi-session files (tau-bench) are split by session, others by file
            let fold = if sessions.len() > 1 {
                (file_fold + si) % 2
            } else {
                file_fold
            };
            let conv = &session.conversation;
            let index = ToolCallIndex::build(conv);
            for msg in &conv.messages {
                for block in &msg.content.blocks {
                    let (kind, text) = match block {
                        Block::ToolResult(r) => {
                            let tool = index.tool_name(&r.tool_use_id).unwrap_or("");
                            let text = r.content.joined_text();
                            (classify_result(tool, &text), text)
                        }
                        Block::Text(t) if msg.role != Role::Tool => (Kind::Message, t.text.clone()),
                        Block::ToolUse(u) => (Kind::Message, u.input.to_string()),
                        _ => continue,
                    };
                    if !text.is_empty() {
                        out.push(Sample { kind, fold, text });
                    }
                }
            }
        }
    }
    let truth_path = corpus.join("html").join("ground-truth.json");
    let truth: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&truth_path)
            .with_context(|| format!("reading {}", truth_path.display()))?,
    )?;
    if let Some(pages) = truth.as_object() {
        for (id, page) in pages {
            let body = page
                .get("articleBody")
                .and_then(|v| v.as_str())
                .unwrap_or("");
            for (pi, para) in body.split('\n').filter(|p| p.trim().len() > 40).enumerate() {
                // paragraphs alternate between folds, so a script seen on one page only is in both
                let fold = (fold_of(id) + pi) % 2;
                let chars = para.chars().count().max(1);
                let cjk = para
                    .chars()
                    .filter(|c| matches!(*c as u32, 0x3000..=0x9fff | 0xac00..=0xd7af))
                    .count();
                let cyr = para
                    .chars()
                    .filter(|c| matches!(*c as u32, 0x400..=0x4ff))
                    .count();
                let kind = if cjk * 3 > chars {
                    Kind::Cjk
                } else if cyr * 3 > chars {
                    Kind::Cyrillic
                } else {
                    Kind::Prose
                };
                out.push(Sample {
                    kind,
                    fold,
                    text: para.to_owned(),
                });
            }
        }
    }
    Ok(out)
}
