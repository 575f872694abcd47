//! Compacting a history `smart`'s `images` rule cut changes nothing: found by `tests/invariants.rs` at 10,000
//! cases (its shrunk input, below). The result whose image was written as a line is kept for good on the second
//! pass, so its lines count as shown as they did when the cut was made, and the other results are decided the
//! same way.

use ctxfit_compactor::{Compactor, PolicyFile};

/// Two results of one message — a read holding an image and a listing of the same `ls -l` lines — then three
/// results holding images, the last unanswered.
const HISTORY: &str = r#"{"messages": [{"role": "user", "content": "do the task"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"path": "f1.rs"}}, {"type": "tool_use", "id": "t2", "name": "Grep", "input": {"path": "f2.rs"}}]}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "日本語のテキスト\nTraceback (most recent call last):\n-rw-r--r-- 1 root root 1157 May  6  2025 a é.py\n  File \"/testbed/pkg/m.py\", line 3, in f\nlorem ipsum \n[truncated for context management]"}, {"type": "image", "source": {"type": "url", "url": "u"}}, {"type": "text", "text": "ValueError: bad\n    return g(x)\nlorem ipsum -rw-r--r-- 1 root root 1157 May  6  2025 a é.py\nfn main() {}\n\n[truncated for context management]"}]}, {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "    return g(x)\n    return g(x)\n-rw-r--r-- 1 root root 1157 May  6  2025 a é.py\n{\"a\": 1}-rw-r--r-- 1 root root 1157 May  6  2025 a é.py\n日本語のテキストlorem ipsum lorem ipsum lorem ipsum fn main() {}\nlorem ipsum lorem ipsum -rw-r--r-- 1 root root 1157 May  6  2025 a é.py\nlorem ipsum -rw-r--r-- 1 root root 1157 May  6  2025 a é.py\nlorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum lorem ipsum \nlorem ipsum lorem ipsum lorem ipsum -rw-r--r-- 1 root root 1157 May  6  2025 a é.py\nlorem ipsum lorem ipsum \nlorem ipsum lorem ipsum 日本語のテキストlorem ipsum -rw-r--r-- 1 root root 1157 May  6  2025 a é.py\n\n\n-rw-r--r-- 1 root root 1157 May  6  2025 a é.py\nfn main() {}\ndrwxr-xr-x 2 me staff 4.0K 2025-09-10 07:00 src\nTraceback (most recent call last):\nfn main() {}\n日本語のテキスト-rw-r--r-- 1 root root 1157 May  6  2025 a é.py\n\nlorem ipsum lorem ipsum \n-rw-r--r-- 1 root root 1157 May  6  2025 a é.py\n\n\nfn main() {}\n-rw-r--r-- 1 root root 1157 May  6  2025 a é.py\n-rw-r--r-- 1 root root 1157 May  6  2025 a é.py\n日本語のテキストx    return g(x)\néfn main() {}\nlorem ipsum \n\nlorem ipsum lorem ipsum lorem ipsum lorem ipsum \nTraceback (most recent call last):\nlorem ipsum élorem ipsum éé    return g(x)\n    return g(x)\n\n...[truncated, already processed]"}, {"type": "text", "text": "drwxr-xr-x 2 me staff 4.0K 2025-09-10 07:00 src\ndrwxr-xr-x 2 me staff 4.0K 2025-09-10 07:00 src\nTraceback (most recent call last):\nTraceback (most recent call last):\né    return g(x)\n\n    return g(x)\n日本語のテキスト\n日本語のテキスト-rw-r--r-- 1 root root 1157 May  6  2025 a é.py\n    return g(x)\n    return g(x)\n    return g(x)\nlorem ipsum drwxr-xr-x 2 me staff 4.0K 2025-09-10 07:00 src\né\n-rw-r--r-- 1 root root 1157 May  6  2025 a é.py\n-rw-r--r-- 1 root root 1157 May  6  2025 a é.py\n-rw-r--r-- 1 root root 1157 May  6  2025 a é.py\n    return g(x)\né\nTraceback (most recent call last):\n    return g(x)\nfn main() {}\nlorem ipsum drwxr-xr-x 2 me staff 4.0K 2025-09-10 07:00 src\n日本語のテキスト-rw-r--r-- 1 root root 1157 May  6  2025 a é.py\nlorem ipsum \n[truncated for context management]"}]}]}, {"role": "assistant", "content": [{"type": "tool_use", "id": "t3", "name": "Read", "input": {"path": "f0.rs"}}]}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t3", "content": [{"type": "text", "text": "\n[truncated for context management]"}, {"type": "image", "source": {"type": "url", "url": "u"}}, {"type": "text", "text": "\n[truncated for context management]"}]}]}, {"role": "assistant", "content": [{"type": "tool_use", "id": "t4", "name": "Read", "input": {"path": "f1.rs"}}]}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t4", "content": [{"type": "text", "text": "\n[truncated for context management]"}, {"type": "image", "source": {"type": "url", "url": "u"}}, {"type": "text", "text": "\n[truncated for context management]"}]}]}, {"role": "assistant", "content": [{"type": "tool_use", "id": "t5", "name": "Read", "input": {"path": "f2.rs"}}]}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t5", "content": [{"type": "text", "text": "\n[truncated for context management]"}, {"type": "image", "source": {"type": "url", "url": "u"}}, {"type": "text", "text": "\n[truncated for context management]"}]}]}]}"#;

#[test]
fn a_history_the_images_rule_cut_is_compacted_again_to_the_same_bytes() {
    let conv = ctxfit_model::from_json_str(HISTORY).unwrap();
    let settings = PolicyFile::parse("", "test")
        .unwrap()
        .resolve(Some("smart"), None, &|_| None)
        .unwrap();
    let registry = ctxfit_plugins::registry().unwrap();
    let run = |c: &ctxfit_model::Conversation| {
        let mut k = Compactor::new(
            settings.clone(),
            &registry,
            Box::new(ctxfit_tokens::FastEstimator),
        )
        .unwrap();
        let report = k.compact(c, None);
        (k.project(c), report)
    };
    let (once, first) = run(&conv);
    assert_eq!(
        first
            .new_blocks
            .iter()
            .map(|b| (b.tool_use_id.as_str(), b.rule.as_str()))
            .collect::<Vec<_>>(),
        [("t1", "images")]
    );
    let (twice, again) = run(&once);
    assert!(again.new_blocks.is_empty(), "{:?}", again.new_blocks);
    assert_eq!(twice, once);
}
