//! Tool output sent inside a JSON object: `{"output": "…", "metadata": {"exit_code": 0, "duration_seconds": 0.4}}`,
//! `{"status": "OK", "message": "…", "time": "…"}`.
//!
//! Codex CLI sent every shell and `apply_patch` result to the model this way before it switched to plain text
//! (`Exit code: 0\nWall time: …\nOutput:\n…`), and its rollouts of 2025 hold thousands of them; Letta's tools
//! answer with a status, a message and a time, the message a whole memory block when the tool edited one. To the
//! rules such a result is one line of escaped JSON: no log excerpt, no listing cut, no line shown elsewhere could
//! apply. So the compactor hands a rule the text inside, and writes the rule's replacement back into the same
//! object, the other fields as they were; the shown-lines index and the replay's references read that text too.
//! The model then sees the shape it has always seen, with less in it.
//!
//! What is an envelope is decided by shape, not by the tool's name: an object whose one text of several lines
//! holds at least half of the result's characters, every other field a number, a boolean, null or a one-line
//! string — or Codex's pair of a string `output` and an object `metadata`. A tool's JSON answer with nested
//! records (an API's answer) is never taken apart: its lists and records are the `json` excerpt's.
//! The object is written back compact, or indented as the original was (`{` then a new line and the indent of
//! its first field).

use ctxfit_model::{Block, Content, Shape, TextBlock, Value};
use serde::Serialize;
use serde_json::Map;

/// The most fields an envelope has: a status, a message, a time, a few flags.
const MAX_FIELDS: usize = 8;

/// A result whose text is a JSON envelope around one text: its fields, which one is the text, and the text.
#[derive(Debug, Clone, PartialEq)]
pub struct WrappedOutput {
    fields: Map<String, Value>,
    key: String,
    output: String,
    /// The indent of the original's first field when it was written over several lines; `None`: compact.
    indent: Option<String>,
}

impl WrappedOutput {
    /// The envelope of `text`, if it is one. Cheap for anything else: only a text that starts as an object and
    /// holds an escaped line break is parsed.
    pub fn parse(text: &str) -> Option<WrappedOutput> {
        let rest = text.trim_start().strip_prefix('{')?;
        if !text.contains("\\n") && !text.contains("\"metadata\"") {
            return None;
        }
        let Ok(Value::Object(mut fields)) = serde_json::from_str::<Value>(text) else {
            return None;
        };
        let key = Self::text_field(&fields, text.len())?;
        let output = match fields.get_mut(&key)? {
            Value::String(s) => std::mem::take(s),
            _ => return None,
        };
        let indent = rest
            .strip_prefix('\n')
            .or_else(|| rest.strip_prefix("\r\n"))
            .map(|r| r[..r.len() - r.trim_start_matches([' ', '\t']).len()].to_owned())
            .filter(|i| !i.is_empty());
        Some(WrappedOutput {
            fields,
            key,
            output,
            indent,
        })
    }

    /// Which field of `fields` (an object of `len` characters written) is the text an envelope carries.
    fn text_field(fields: &Map<String, Value>, len: usize) -> Option<String> {
        // Codex CLI's shell results of 2025
        if fields.len() == 2 && matches!(fields.get("metadata"), Some(Value::Object(_))) {
            return matches!(fields.get("output"), Some(Value::String(_)))
                .then(|| "output".to_owned());
        }
        if fields.len() > MAX_FIELDS {
            return None;
        }
        let mut text = None;
        for (k, v) in fields {
            match v {
                Value::String(s) if s.contains('\n') => {
                    if text.is_some() {
                        return None;
                    }
                    text = Some((k, s.len()));
                }
                Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => {}
                Value::Array(_) | Value::Object(_) => return None,
            }
        }
        let (k, n) = text?;
        (2 * n >= len).then(|| k.clone())
    }

    /// The envelope of a content that is one text block, if it is one.
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

    /// Another field of the envelope (`metadata`, `status`).
    pub fn field(&self, name: &str) -> Option<&Value> {
        self.fields.get(name)
    }

    /// The output as a content of one text block, as a rule is handed it.
    pub fn output_content(&self) -> Content {
        Content::text(self.output.clone())
    }

    /// `output` in this envelope: the same fields in the same order, written compact (as Codex CLI writes it)
    /// or with the original's indent.
    pub fn wrap(&self, output: &str) -> String {
        let mut fields = self.fields.clone();
        if let Some(v) = fields.get_mut(&self.key) {
            *v = Value::String(output.to_owned());
        }
        let value = Value::Object(fields);
        let Some(indent) = &self.indent else {
            return value.to_string();
        };
        let mut out = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(
            &mut out,
            serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes()),
        );
        match value.serialize(&mut ser) {
            Ok(()) => String::from_utf8(out).unwrap_or_else(|_| value.to_string()),
            Err(_) => value.to_string(),
        }
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
    fn a_status_and_message_envelope_is_one_too_written_back_as_indented() {
        // a Letta tool's answer, as Python's `json.dumps(..., indent=2)` writes it
        let tasks =
            "**Active tasks**\n\n- review the open pull requests\n- fix the Telegram crash\n\
                     - release the next alpha";
        let letta = |message: &str| {
            format!(
                "{{\n  \"status\": \"OK\",\n  \"message\": {},\n  \"time\": \"2026-02-11 08:08 PM\"\n}}",
                Value::String(message.to_owned())
            )
        };
        let w = WrappedOutput::parse(&letta(tasks)).expect("an envelope");
        assert_eq!(w.output(), tasks);
        assert_eq!(w.wrap(w.output()), letta(tasks));
        let cut = "**Active tasks**\n[… 4 lines omitted]";
        assert_eq!(w.wrap(cut), letta(cut));
        // compact stays compact, whatever the text field is called
        let compact = r#"{"ok":true,"text":"first line\nsecond line\nthird line","count":3}"#;
        let w = WrappedOutput::parse(compact).expect("an envelope");
        assert_eq!(w.output(), "first line\nsecond line\nthird line");
        assert_eq!(w.wrap(w.output()), compact);
    }

    #[test]
    fn records_and_small_texts_are_not_envelopes() {
        for text in [
            // an API's record: nested values are the `json` excerpt's
            r#"{"id":1,"body":"a\nb\nc\nd","user":{"login":"x"}}"#,
            r#"{"id":1,"body":"a\nb\nc\nd","labels":["bug"]}"#,
            // two texts: which one would a rule be handed?
            r#"{"stdout":"a\nb\nc\nd","stderr":"e\nf\ng\nh"}"#,
            // the text is not most of the result
            r#"{"note":"a\nb","title":"a long title that is the most of what this result holds, by far"}"#,
            // one line
            r#"{"status":"OK","message":"None"}"#,
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
