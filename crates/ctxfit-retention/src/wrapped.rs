//! Tool output sent inside a JSON object: `{"output": "…", "metadata": {"exit_code": 0, "duration_seconds": 0.4}}`.
//!
//! Codex CLI sent every shell and `apply_patch` result to the model this way before it switched to plain text
//! (`Exit code: 0\nWall time: …\nOutput:\n…`), and its rollouts of 2025 hold thousands of them. To the rules such
//! a result is one line of escaped JSON: no log excerpt, no listing cut, no line shown elsewhere could apply. So
//! the compactor hands a rule the `output` text itself, and writes the rule's replacement back into the same
//! object, the other fields as they were; the shown-lines index reads the `output` text too. The model then sees
//! the shape it has always seen, with less in it.
//!
//! Only an object of exactly these two fields, a string `output` and an object `metadata`, is one: a tool's
//! real JSON result (an API's answer) is never taken apart.

use ctxfit_model::{Block, Content, Shape, TextBlock, Value};
use serde_json::Map;

/// A result whose text is an `{"output", "metadata"}` object: its fields, and the output text.
#[derive(Debug, Clone, PartialEq)]
pub struct WrappedOutput {
    fields: Map<String, Value>,
    output: String,
}

impl WrappedOutput {
    /// The wrapper of `text`, if it is one. Cheap for anything else: only a text that starts as one is parsed.
    pub fn parse(text: &str) -> Option<WrappedOutput> {
        let rest = text.trim_start().strip_prefix('{')?.trim_start();
        if !(rest.starts_with("\"output\"") || rest.starts_with("\"metadata\"")) {
            return None;
        }
        let Ok(Value::Object(mut fields)) = serde_json::from_str::<Value>(text) else {
            return None;
        };
        if fields.len() != 2 || !matches!(fields.get("metadata"), Some(Value::Object(_))) {
            return None;
        }
        let output = match fields.get_mut("output")? {
            Value::String(s) => std::mem::take(s),
            _ => return None,
        };
        Some(WrappedOutput { fields, output })
    }

    /// The wrapper of a content that is one text block, if it is one.
    pub fn of_content(content: &Content) -> Option<WrappedOutput> {
        match content.blocks.as_slice() {
            [Block::Text(t)] => WrappedOutput::parse(&t.text),
            _ => None,
        }
    }

    /// The output text.
    pub fn output(&self) -> &str {
        &self.output
    }

    /// The output as a content of one text block, as a rule is handed it.
    pub fn output_content(&self) -> Content {
        Content::text(self.output.clone())
    }

    /// `output` in this wrapper: the same fields in the same order, compact JSON as Codex CLI writes it.
    pub fn wrap(&self, output: &str) -> String {
        let mut fields = self.fields.clone();
        if let Some(v) = fields.get_mut("output") {
            *v = Value::String(output.to_owned());
        }
        Value::Object(fields).to_string()
    }

    /// A rule's replacement, written back into the wrapper of `original` (whose shape it keeps). A replacement
    /// that is not one text block is returned as it is.
    pub fn wrap_content(&self, original: &Content, replacement: Content) -> Content {
        let Some(text) = (match replacement.blocks.as_slice() {
            [Block::Text(t)] => Some(self.wrap(&t.text)),
            _ => None,
        }) else {
            return replacement;
        };
        let extra = match original.blocks.as_slice() {
            [Block::Text(t)] => t.extra.clone(),
            _ => Map::new(),
        };
        Content {
            blocks: vec![Block::Text(TextBlock { text, extra })],
            shape: if original.shape == Shape::String {
                Shape::String
            } else {
                Shape::List
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CODEX: &str =
        r#"{"output":"file1.txt\nfile2.txt\n","metadata":{"exit_code":0,"duration_seconds":0.0}}"#;

    #[test]
    fn codex_legacy_output_is_unwrapped_and_wrapped_back() {
        let w = WrappedOutput::parse(CODEX).expect("a wrapper");
        assert_eq!(w.output(), "file1.txt\nfile2.txt\n");
        // the same bytes back, numbers as written
        assert_eq!(w.wrap(w.output()), CODEX);
        assert_eq!(
            w.wrap("file1.txt\n[… 1 line omitted]"),
            r#"{"output":"file1.txt\n[… 1 line omitted]","metadata":{"exit_code":0,"duration_seconds":0.0}}"#
        );
        // metadata first is the same object
        let flipped = r#"{"metadata":{"exit_code":1},"output":"boom"}"#;
        let w = WrappedOutput::parse(flipped).expect("a wrapper");
        assert_eq!(w.output(), "boom");
        assert_eq!(w.wrap("boom"), flipped);
    }

    #[test]
    fn other_json_is_not_a_wrapper() {
        for text in [
            r#"{"output":"x"}"#,
            r#"{"output":"x","metadata":{},"error":null}"#,
            r#"{"output":["x"],"metadata":{}}"#,
            r#"{"output":"x","metadata":"y"}"#,
            r#"{"result":"x","metadata":{}}"#,
            r#"{"output":"x","metadata":{}"#,
            r#"[{"output":"x","metadata":{}}]"#,
            "output: x",
            "",
        ] {
            assert_eq!(WrappedOutput::parse(text), None, "{text}");
        }
    }

    #[test]
    fn a_replacement_keeps_the_original_shape() {
        let original = Content::list(vec![Block::Text(TextBlock::new(CODEX.to_owned()))]);
        let w = WrappedOutput::of_content(&original).expect("a wrapper");
        let back = w.wrap_content(&original, Content::text("file1.txt"));
        assert_eq!(back.shape, Shape::List);
        assert_eq!(
            back.blocks[0].as_text(),
            Some(r#"{"output":"file1.txt","metadata":{"exit_code":0,"duration_seconds":0.0}}"#)
        );
        let two = Content::list(vec![
            Block::Text(TextBlock::new("a".to_owned())),
            Block::Text(TextBlock::new("b".to_owned())),
        ]);
        assert_eq!(w.wrap_content(&original, two.clone()), two);
    }
}
