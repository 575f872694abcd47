//! Token counts of messages and conversations: text of each block plus small fixed overheads, cached per message.

use ctxfit_model::{Block, Content, Conversation, Message};
use serde_json::Value;

use crate::TokenEstimator;

/// Tokens of a message's framing (role, separators), as in OpenAI's published accounting.
pub const MESSAGE_OVERHEAD: usize = 3;
/// Tokens of a tool call's or result's framing (type, id, name).
pub const BLOCK_OVERHEAD: usize = 3;
pub use crate::payload::IMAGE_TOKENS;

/// Tokens of a content (the blocks' tokens, no framing).
pub fn count_content(est: &dyn TokenEstimator, content: &Content) -> usize {
    content.blocks.iter().map(|b| count_block(est, b)).sum()
}

fn count_json(est: &dyn TokenEstimator, v: &Value) -> usize {
    match v {
        Value::String(s) => est.count_text(s),
        other => count_written(est, |buf| serde_json::to_writer(buf, other)),
    }
}

/// Tokens of a value as compact JSON text (what `to_string` writes), written into a buffer kept per thread:
/// a call's input, a provider's opaque item (Codex's reasoning with its `encrypted_content`) are counted on
/// every ingest, and growing a new string for each cost as much as the writing.
fn count_written(
    est: &dyn TokenEstimator,
    write: impl Fn(&mut Vec<u8>) -> serde_json::Result<()>,
) -> usize {
    thread_local! {
        static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    /// A buffer grown past this is not kept (one huge value does not hold its memory for good).
    const KEPT: usize = 1 << 20;
    // (serde_json writes UTF-8 only, and cannot fail on a value read from JSON)
    let count = |buf: &mut Vec<u8>| match write(buf) {
        Ok(()) => std::str::from_utf8(buf).map_or(0, |text| est.count_text(text)),
        Err(_) => 0,
    };
    BUFFER.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            buf.clear();
            let counted = count(&mut buf);
            if buf.capacity() > KEPT {
                *buf = Vec::new();
            }
            counted
        }
        // (entered again from inside a count, which the estimators never do: a buffer of its own)
        Err(_) => count(&mut Vec::new()),
    })
}

/// Tokens of one block.
pub fn count_block(est: &dyn TokenEstimator, block: &Block) -> usize {
    match block {
        Block::Text(t) => est.count_text(&t.text),
        Block::Thinking(t) => est.count_text(&t.thinking),
        Block::ToolUse(u) => BLOCK_OVERHEAD + est.count_text(&u.name) + count_json(est, &u.input),
        Block::ToolResult(r) => BLOCK_OVERHEAD + count_content(est, &r.content),
        Block::Image(_) => IMAGE_TOKENS,
        Block::RedactedThinking(m) => {
            BLOCK_OVERHEAD + count_written(est, |buf| serde_json::to_writer(buf, m))
        }
        // a file's bytes (a PDF, audio) as the provider bills them, not as the text of their base64
        Block::Document(m) if crate::payload::map_holds_payload(m) => {
            let (payloads, rest) = crate::payload::take_from_map(m);
            BLOCK_OVERHEAD + payloads + count_written(est, |buf| serde_json::to_writer(buf, &rest))
        }
        Block::Document(m) => {
            BLOCK_OVERHEAD + count_written(est, |buf| serde_json::to_writer(buf, m))
        }
        Block::Unknown(v) if crate::payload::holds_payload(v) => {
            let (payloads, rest) = crate::payload::take_payloads(v);
            BLOCK_OVERHEAD + payloads + count_json(est, &rest)
        }
        Block::Unknown(v) => BLOCK_OVERHEAD + count_json(est, v),
    }
}

/// Tokens of one message.
pub fn count_message(est: &dyn TokenEstimator, msg: &Message) -> usize {
    MESSAGE_OVERHEAD + count_content(est, &msg.content)
}

/// Tokens of a tool result with this content.
pub fn count_tool_result(est: &dyn TokenEstimator, content: &Content) -> usize {
    BLOCK_OVERHEAD + count_content(est, content)
}

/// Tokens of a whole request: system prompt, tool definitions and messages.
pub fn count_conversation(est: &dyn TokenEstimator, conv: &Conversation) -> usize {
    count_preamble(est, conv)
        + conv
            .messages
            .iter()
            .map(|m| count_message(est, m))
            .sum::<usize>()
}

/// Tokens of what precedes the messages: the system prompt and the tool definitions.
pub fn count_preamble(est: &dyn TokenEstimator, conv: &Conversation) -> usize {
    let system = conv
        .system
        .as_ref()
        .map_or(0, |s| MESSAGE_OVERHEAD + count_content(est, s));
    let tools: usize = conv
        .tools
        .iter()
        .flatten()
        .map(|t| {
            BLOCK_OVERHEAD
                + est.count_text(&t.name)
                + t.description.as_deref().map_or(0, |d| est.count_text(d))
                + t.input_schema.as_ref().map_or(0, |s| count_json(est, s))
        })
        .sum();
    system + tools
}

/// Per-message token counts of a growing history, so each message is counted once.
///
/// [`MessageTokenCache::update`] counts only messages it has not seen, and recounts a message whose size in
/// bytes changed (as compaction changes it). A rewrite that keeps the exact byte size needs
/// [`MessageTokenCache::invalidate_from`].
#[derive(Debug, Clone, Default)]
pub struct MessageTokenCache {
    /// (tokens, bytes of text) per message.
    entries: Vec<(usize, usize)>,
}

fn content_bytes(content: &Content) -> usize {
    content.blocks.iter().map(block_bytes).sum()
}

fn block_bytes(block: &Block) -> usize {
    match block {
        Block::Text(t) => t.text.len(),
        Block::Thinking(t) => t.thinking.len(),
        Block::ToolUse(u) => u.name.len() + u.raw_arguments.as_ref().map_or(0, String::len),
        Block::ToolResult(r) => 1 + content_bytes(&r.content),
        _ => 1,
    }
}

impl MessageTokenCache {
    pub fn new() -> Self {
        Self::default()
    }

    /// Bring the cache up to date with `messages` and return the total.
    pub fn update(&mut self, est: &dyn TokenEstimator, messages: &[Message]) -> usize {
        self.entries.truncate(messages.len());
        for (i, msg) in messages.iter().enumerate() {
            let bytes = content_bytes(&msg.content);
            match self.entries.get(i) {
                Some(&(_, b)) if b == bytes => {}
                Some(_) => self.entries[i] = (count_message(est, msg), bytes),
                None => self.entries.push((count_message(est, msg), bytes)),
            }
        }
        self.total()
    }

    /// Forget the counts of message `i` and after.
    pub fn invalidate_from(&mut self, i: usize) {
        self.entries.truncate(i);
    }

    /// Tokens of message `i`, if counted.
    pub fn get(&self, i: usize) -> Option<usize> {
        self.entries.get(i).map(|e| e.0)
    }

    pub fn total(&self) -> usize {
        self.entries.iter().map(|e| e.0).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Chars4, TokenEstimator};
    use ctxfit_model::{Content, Role};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// chars/4 that counts how many texts it was asked about.
    struct Counting(AtomicUsize);

    impl TokenEstimator for Counting {
        fn name(&self) -> &'static str {
            "counting"
        }
        fn count_text(&self, text: &str) -> usize {
            self.0.fetch_add(1, Ordering::Relaxed);
            Chars4.count_text(text)
        }
    }

    #[test]
    fn cache_counts_each_message_once_and_recounts_changed_ones() {
        let est = Counting(AtomicUsize::new(0));
        let mut msgs = vec![Message::new(Role::User, Content::text("a".repeat(40)))];
        let mut cache = MessageTokenCache::new();
        assert_eq!(cache.update(&est, &msgs), MESSAGE_OVERHEAD + 10);
        msgs.push(Message::new(Role::Assistant, Content::text("b".repeat(80))));
        assert_eq!(cache.update(&est, &msgs), 2 * MESSAGE_OVERHEAD + 30);
        assert_eq!(
            est.0.load(Ordering::Relaxed),
            2,
            "the first message is not recounted"
        );
        msgs[0] = Message::new(Role::User, Content::text("a".repeat(8)));
        assert_eq!(cache.update(&est, &msgs), 2 * MESSAGE_OVERHEAD + 22);
        assert_eq!(est.0.load(Ordering::Relaxed), 3);
        msgs.truncate(1);
        assert_eq!(cache.update(&est, &msgs), MESSAGE_OVERHEAD + 2);
    }

    /// Keeps every text it was asked about.
    struct Recording(std::sync::Mutex<Vec<String>>);

    impl TokenEstimator for Recording {
        fn name(&self) -> &'static str {
            "recording"
        }
        fn count_text(&self, text: &str) -> usize {
            self.0.lock().map(|mut t| t.push(text.to_owned())).ok();
            text.len()
        }
    }

    #[test]
    fn a_structured_value_is_counted_as_its_compact_json_text() {
        let est = Recording(std::sync::Mutex::new(Vec::new()));
        // numbers as written, escapes, text beyond ASCII, nesting; then a large one and a small one after it
        // (the buffer is reused: nothing of the large one may be left in the small one's text)
        let values: Vec<Value> = [
            r#"{"cmd":["bash","-lc","rg -n \"a\tb\" src"],"n":1e400,"x":-0.0,"big":123456789012345678901234567890}"#,
            r#"{"type":"reasoning","encrypted_content":"gAAAA…","summary":[{"text":"é ✓ 🙂 \u0000"}]}"#,
            r#"[1,2,{"a":null,"b":true}]"#,
            r#"{"a":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}"#,
            r#"{"a":1}"#,
            "17",
        ]
        .iter()
        .map(|t| serde_json::from_str(t).expect("valid JSON"))
        .collect();
        for v in &values {
            let n = count_json(&est, v);
            let written = v.to_string();
            assert_eq!(n, written.len());
            assert_eq!(est.0.lock().expect("not poisoned").last(), Some(&written));
        }
        // an opaque block (Anthropic's redacted thinking) likewise, and a string as its text alone
        let Value::Object(map) = &values[1] else {
            panic!("an object")
        };
        let block = Block::RedactedThinking(map.clone());
        assert_eq!(
            count_block(&est, &block),
            BLOCK_OVERHEAD + values[1].to_string().len()
        );
        assert_eq!(count_json(&est, &Value::String("a\"b".into())), 3);
    }
}

#[cfg(test)]
mod totals {
    use super::*;
    use crate::Chars4;
    use ctxfit_model::{Content, Role};

    #[test]
    fn a_conversation_is_its_preamble_plus_its_messages() {
        let mut conv = Conversation::new(ctxfit_model::WireFormat::Anthropic);
        conv.system = Some(Content::text("s".repeat(40)));
        conv.messages
            .push(Message::new(Role::User, Content::text("u".repeat(80))));
        assert_eq!(count_preamble(&Chars4, &conv), MESSAGE_OVERHEAD + 10);
        assert_eq!(
            count_conversation(&Chars4, &conv),
            2 * MESSAGE_OVERHEAD + 30
        );
    }

    #[test]
    fn a_pdf_a_tool_read_counts_its_pages_not_its_base64() {
        use crate::payload::tests::{b64, pdf};
        // Claude Code's `Read` of a 4-page PDF: a document block in the tool result
        let data = b64(&pdf(4, 200_000));
        let conv = ctxfit_model::from_value(serde_json::json!({"messages": [
            {"role": "user", "content": "read the spec"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Read", "input": {"file_path": "spec.pdf"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": data}}]}]}
        ]}))
        .unwrap();
        let est = crate::FastEstimator;
        let result = count_message(&est, &conv.messages[2]);
        // four pages and the block's few fields, where the base64's text would be ~120,000 tokens
        assert!(
            (4 * crate::PDF_PAGE_TOKENS..4 * crate::PDF_PAGE_TOKENS + 60).contains(&result),
            "{result}"
        );
        assert!(est.count_text(&data) > 50_000);
    }
}
