//! Shared inputs of the ctxfit benchmarks: texts and sessions of the shared corpus, its web pages with their
//! ground truth, and long histories generated from them.

pub mod history;
pub mod pages;

use ctxfit_import::{import_file, Session};
use ctxfit_model::Block;
use ctxfit_testkit::{corpus_dir, corpus_trajectory_files};

/// Every session of the corpus. Panics with a clear message when the corpus is missing: benchmarks need it.
pub fn corpus_sessions() -> Vec<Session> {
    let corpus = corpus_dir().expect(
        "the shared corpus is missing: put it at ../shared/corpus beside the workspace or set CTXFIT_CORPUS",
    );
    corpus_trajectory_files(&corpus)
        .iter()
        .flat_map(|p| import_file(p, None).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .collect()
}

/// The text of every tool result in the corpus, in order.
pub fn corpus_tool_results() -> Vec<String> {
    let mut out = Vec::new();
    for session in corpus_sessions() {
        for msg in &session.conversation.messages {
            for block in &msg.content.blocks {
                if let Block::ToolResult(r) = block {
                    out.push(r.content.joined_text());
                }
            }
        }
    }
    out
}
