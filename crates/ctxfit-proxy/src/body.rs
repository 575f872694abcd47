//! A request body as the client wrote it: its top-level fields in order, each as the client's own bytes, and the
//! messages (or Responses `input` items) one by one, also as the client's bytes.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::scan::{skip_ws, string_end, value_end};

/// Which API a body is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Api {
    /// Anthropic `POST /v1/messages`: `system` at the top, `messages`.
    AnthropicMessages,
    /// OpenAI `POST /v1/chat/completions`: `messages`, the system prompt among them.
    OpenAiChat,
    /// OpenAI `POST /v1/responses` with the whole conversation in `input`.
    OpenAiResponses,
}

impl Api {
    /// The field that holds the conversation.
    pub fn messages_key(self) -> &'static str {
        match self {
            Api::AnthropicMessages | Api::OpenAiChat => "messages",
            Api::OpenAiResponses => "input",
        }
    }

    /// The wire format of its messages.
    pub fn wire_format(self) -> ctxfit_model::WireFormat {
        match self {
            Api::AnthropicMessages => ctxfit_model::WireFormat::Anthropic,
            Api::OpenAiChat => ctxfit_model::WireFormat::OpenAi,
            Api::OpenAiResponses => ctxfit_model::WireFormat::Responses,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Api::AnthropicMessages => "anthropic-messages",
            Api::OpenAiChat => "openai-chat",
            Api::OpenAiResponses => "openai-responses",
        }
    }
}

/// Why a body cannot be compacted (it is then answered with a 400 in the API's own error shape).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    #[error("malformed JSON at line {line}, column {column}: {message}")]
    Json {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("`{0}` must be a list")]
    NotAList(&'static str),
    /// Well-formed JSON, but not an object: no API takes it (what it is instead).
    #[error("the request body must be a JSON object, found {0}")]
    NotAnObject(&'static str),
    #[error("the request has no `{0}`")]
    Missing(&'static str),
    /// The messages field written twice: which of them the provider reads is not defined (JSON leaves it open),
    /// so the proxy could compact one while the provider reads the other.
    #[error("the request has `{0}` twice: which of them the provider reads is not defined")]
    Twice(&'static str),
    #[error("{0}")]
    Message(String),
}

impl BodyError {
    /// A body that does not parse, in words that fit it: bytes that are no UTF-8 are named as such (serde_json
    /// calls them an invalid code point), a lone surrogate escape as such.
    fn json(e: &serde_json::Error, bytes: &[u8]) -> BodyError {
        let error = match std::str::from_utf8(bytes) {
            Ok(text) => ctxfit_model::ModelError::from_json_in(e, text),
            Err(_) if !e.to_string().starts_with("invalid unicode code point") => {
                ctxfit_model::ModelError::from_json(e)
            }
            Err(bad) => {
                let at = bad.valid_up_to();
                let before = &bytes[..at];
                let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
                let line_start = before
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |i| i + 1);
                let column = 1 + String::from_utf8_lossy(&before[line_start..])
                    .chars()
                    .count();
                return BodyError::Json {
                    line,
                    column,
                    message: format!(
                        "the body is not UTF-8: byte 0x{:02x} is no part of a character (JSON text is UTF-8)",
                        bytes[at]
                    ),
                };
            }
        };
        match error {
            ctxfit_model::ModelError::Json {
                line,
                column,
                message,
            } => BodyError::Json {
                line,
                column,
                message,
            },
            other => BodyError::Message(other.to_string()),
        }
    }

    /// A part of the body (`messages[3]`, `system`) that does not parse, in the words [`BodyError::json`] finds
    /// (a lone surrogate named as such), placed within the part.
    pub(crate) fn in_part(part: &str, e: &serde_json::Error, raw: &str) -> BodyError {
        match BodyError::json(e, raw.as_bytes()) {
            BodyError::Json {
                line,
                column,
                message,
            } => BodyError::Message(format!("{part}: {message} at line {line} column {column}")),
            other => BodyError::Message(format!("{part}: {other}")),
        }
    }
}

/// What the messages field must be.
const EXPECTED_LIST: &str = "a list of messages";
/// What the body must be.
const EXPECTED_OBJECT: &str = "a JSON object";

/// The messages list, each message borrowed as written.
struct ListSeed;

impl<'de> DeserializeSeed<'de> for ListSeed {
    type Value = Vec<&'de [u8]>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Vec<&'de [u8]>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(EXPECTED_LIST)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(16));
                while let Some(m) = seq.next_element::<&'de RawValue>()? {
                    out.push(m.get().as_bytes());
                }
                Ok(out)
            }
        }
        d.deserialize_seq(V)
    }
}

/// A body's top-level fields in order, each borrowed as written, and its messages, in one pass.
struct SplitSeed(&'static str);

type Split<'a> = (Vec<(String, &'a [u8])>, Option<(usize, Vec<&'a [u8]>)>);

impl<'de> DeserializeSeed<'de> for SplitSeed {
    type Value = Split<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        struct V(&'static str);
        impl<'de> Visitor<'de> for V {
            type Value = Split<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(EXPECTED_OBJECT)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let (mut fields, mut messages) = (Vec::new(), None);
                while let Some(k) = map.next_key::<String>()? {
                    if k == self.0 && messages.is_none() {
                        messages = Some((fields.len(), map.next_value_seed(ListSeed)?));
                    } else {
                        fields.push((k, map.next_value::<&'de RawValue>()?.get().as_bytes()));
                    }
                }
                Ok((fields, messages))
            }
        }
        d.deserialize_map(V(self.0))
    }
}

/// A request body, split; everything is borrowed from the client's bytes.
pub struct RequestBody<'a> {
    pub api: Api,
    /// Top-level fields in order, each value as the client wrote it; the messages field is left out (it is
    /// `messages`).
    fields: Vec<(String, &'a [u8])>,
    /// Where the messages field was among the fields.
    messages_at: usize,
    /// The messages as the client wrote them (UTF-8 once checked: [`RequestBody::message`]).
    pub messages: Vec<&'a [u8]>,
    /// Split by its structure alone ([`RequestBody::split`]): the values are not yet known to be valid JSON.
    unchecked: bool,
}

impl<'a> RequestBody<'a> {
    /// Split a body in one pass, copying nothing, every value checked; malformed JSON is named by line and column.
    pub fn parse(api: Api, bytes: &'a [u8]) -> Result<RequestBody<'a>, BodyError> {
        let key = api.messages_key();
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let split = SplitSeed(key)
            .deserialize(&mut de)
            .and_then(|v| de.end().map(|()| v));
        let (fields, messages) = match split {
            Ok(v) => v,
            // a Responses `input` may be one string: nothing to compact
            Err(e) if e.to_string().contains(EXPECTED_LIST) => {
                return Err(BodyError::NotAList(key))
            }
            // a list, a string, a number: JSON, but no request
            Err(e)
                if e.classify() == serde_json::error::Category::Data
                    && e.to_string().contains(EXPECTED_OBJECT) =>
            {
                // (the object was refused at its first byte: the rest may not even be JSON)
                if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
                    return Err(BodyError::json(&e, bytes));
                }
                let start = bytes.iter().find(|b| !b.is_ascii_whitespace());
                return Err(BodyError::NotAnObject(match start {
                    Some(b'[') => "a list",
                    Some(b'"') => "a string",
                    Some(b't' | b'f') => "a boolean",
                    Some(b'n') => "null",
                    _ => "a number",
                }));
            }
            Err(e) => return Err(BodyError::json(&e, bytes)),
        };
        let (messages_at, messages) = messages.ok_or(BodyError::Missing(key))?;
        // (a second messages field is kept among the others by the split)
        if fields.iter().any(|(k, _)| k == key) {
            return Err(BodyError::Twice(key));
        }
        Ok(RequestBody {
            api,
            fields,
            messages_at,
            messages,
            unchecked: false,
        })
    }

    /// Split a body by its structure alone — where each field and message begins and ends, a fraction of what
    /// parsing costs — leaving its values unchecked ([`RequestBody::is_unchecked`]): a caller that knows some
    /// messages already (by their hash, as the proxy's conversation identity does) checks only the rest, with
    /// [`RequestBody::check_fields`] and by reading the messages it reads. Anything unusual (an escaped key, a
    /// messages field that is not a list, text after the object) is parsed in full ([`RequestBody::parse`]); a
    /// caller whose check fails asks [`RequestBody::named_error`], so errors are named as `parse` names them.
    pub fn split(api: Api, bytes: &'a [u8]) -> Result<RequestBody<'a>, BodyError> {
        match split_structure(api, bytes) {
            Some(body) => Ok(body),
            None => RequestBody::parse(api, bytes),
        }
    }

    /// Whether the values are unchecked (split by [`RequestBody::split`]'s structural pass).
    pub fn is_unchecked(&self) -> bool {
        self.unchecked
    }

    /// Check every top-level field but the messages as JSON (nothing to do after [`RequestBody::parse`]).
    pub fn check_fields(&self) -> Result<(), BodyError> {
        if !self.unchecked {
            return Ok(());
        }
        for (k, v) in &self.fields {
            // (skipping a string, serde_json does not look at its UTF-8)
            let text =
                std::str::from_utf8(v).map_err(|e| BodyError::Message(format!("{k}: {e}")))?;
            if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(text) {
                return Err(BodyError::Message(format!("{k}: {e}")));
            }
        }
        Ok(())
    }

    /// The error a full parse names for these bytes, or `otherwise` when they parse (a check of a split body
    /// failed: the full parse says where, by line and column).
    pub fn named_error(api: Api, bytes: &[u8], otherwise: BodyError) -> BodyError {
        RequestBody::parse(api, bytes).err().unwrap_or(otherwise)
    }

    /// The value of a top-level field, as the client wrote it (`None` also for one that is not UTF-8, which
    /// [`RequestBody::check_fields`] refuses); of a field written twice, the last, as JSON readers commonly take
    /// it (serde_json, Python's `json`, the CLI's readers).
    pub fn field(&self, key: &str) -> Option<&'a str> {
        let (_, v) = self.fields.iter().rev().find(|(k, _)| k == key)?;
        std::str::from_utf8(v).ok()
    }

    /// Message `i` as text, checked as UTF-8 (the bytes of the messages a caller knows by their hash need not be).
    pub fn message(&self, i: usize) -> Result<&'a str, BodyError> {
        let m = self.messages.get(i).ok_or(BodyError::Missing("message"))?;
        std::str::from_utf8(m).map_err(|e| BodyError::Message(format!("messages[{i}]: {e}")))
    }

    /// The body again, with message `i` written as `message(i)` gives it (`None`: left out). Every other field
    /// is written as the client wrote it.
    pub fn write<'s>(&'s self, message: impl Fn(usize) -> Option<&'s [u8]>) -> Vec<u8> {
        let mut out =
            Vec::with_capacity(self.messages.iter().map(|m| m.len() + 1).sum::<usize>() + 256);
        out.push(b'{');
        let key = self.api.messages_key();
        let mut first = true;
        let mut put_key = |out: &mut Vec<u8>, k: &str| {
            if !first {
                out.push(b',');
            }
            first = false;
            out.extend_from_slice(serde_json::to_string(k).unwrap_or_default().as_bytes());
            out.push(b':');
        };
        for (n, (k, v)) in self.fields.iter().enumerate() {
            if n == self.messages_at {
                put_key(&mut out, key);
                self.write_messages(&mut out, &message);
            }
            put_key(&mut out, k);
            out.extend_from_slice(v);
        }
        if self.messages_at == self.fields.len() {
            put_key(&mut out, key);
            self.write_messages(&mut out, &message);
        }
        out.push(b'}');
        out
    }

    fn write_messages<'s>(
        &'s self,
        out: &mut Vec<u8>,
        message: &impl Fn(usize) -> Option<&'s [u8]>,
    ) {
        out.push(b'[');
        let mut first = true;
        for i in 0..self.messages.len() {
            if let Some(m) = message(i) {
                if !first {
                    out.push(b',');
                }
                first = false;
                out.extend_from_slice(m);
            }
        }
        out.push(b']');
    }
}

/// [`RequestBody::split`]'s structural pass: `None` for anything it leaves to the full parse.
fn split_structure(api: Api, bytes: &[u8]) -> Option<RequestBody<'_>> {
    let key = api.messages_key();
    let (mut fields, mut messages) = (Vec::new(), None);
    let mut i = skip_ws(bytes, 0);
    if bytes.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(bytes, i + 1);
    if bytes.get(i) == Some(&b'}') {
        return None;
    }
    loop {
        if bytes.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(bytes, i);
        let name = std::str::from_utf8(bytes.get(i + 1..key_end.checked_sub(1)?)?).ok()?;
        // an escaped key, or one holding a control character (no JSON), is left to the full parse
        if name.bytes().any(|b| b == b'\\' || b < 0x20) {
            return None;
        }
        i = skip_ws(bytes, key_end);
        if bytes.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(bytes, i + 1);
        if name == key {
            // (a second one is named by the full parse)
            if messages.is_some() {
                return None;
            }
            let (list, end) = split_list(bytes, i)?;
            messages = Some((fields.len(), list));
            i = end;
        } else {
            let end = scalar_trimmed(bytes, i, value_end(bytes, i))?;
            fields.push((name.to_owned(), &bytes[i..end]));
            i = end;
        }
        i = skip_ws(bytes, i);
        match bytes.get(i) {
            Some(b',') => i = skip_ws(bytes, i + 1),
            Some(b'}') => break,
            _ => return None,
        }
    }
    if skip_ws(bytes, i + 1) != bytes.len() {
        return None;
    }
    let (messages_at, messages) = messages?;
    Some(RequestBody {
        api,
        fields,
        messages_at,
        messages,
        unchecked: true,
    })
}

/// The values of the list at `i` and the index just past it.
fn split_list(bytes: &[u8], mut i: usize) -> Option<(Vec<&[u8]>, usize)> {
    if bytes.get(i) != Some(&b'[') {
        return None;
    }
    let mut out = Vec::new();
    i = skip_ws(bytes, i + 1);
    if bytes.get(i) == Some(&b']') {
        return Some((out, i + 1));
    }
    loop {
        let end = scalar_trimmed(bytes, i, value_end(bytes, i))?;
        out.push(&bytes[i..end]);
        i = skip_ws(bytes, end);
        match bytes.get(i) {
            Some(b',') => i = skip_ws(bytes, i + 1),
            Some(b']') => return Some((out, i + 1)),
            _ => return None,
        }
    }
}

/// The end of the value from `start` to `end` without the whitespace a number or literal ends with; `None` for an
/// empty value or one that runs to the end of the text (it did not end).
fn scalar_trimmed(bytes: &[u8], start: usize, mut end: usize) -> Option<usize> {
    if end >= bytes.len() {
        return None;
    }
    while end > start && matches!(bytes[end - 1], b' ' | b'\t' | b'\n' | b'\r') {
        end -= 1;
    }
    (end > start).then_some(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_messages_keep_their_bytes_and_order() {
        let body = br#"{"model":"m", "system" : "be  terse",
            "messages":[ {"role":"user","content":"hi"} ,{"role": "assistant","content":[{"type":"text","text":"yo"}]}],
            "max_tokens":  10}"#;
        let b = RequestBody::parse(Api::AnthropicMessages, body).unwrap();
        assert_eq!(b.messages.len(), 2);
        assert_eq!(
            b.message(1).unwrap(),
            r#"{"role": "assistant","content":[{"type":"text","text":"yo"}]}"#
        );
        assert_eq!(b.field("system").unwrap(), r#""be  terse""#);
        let out = b.write(|i| Some(b.messages[i]));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"model":"m","system":"be  terse","messages":[{"role":"user","content":"hi"},{"role": "assistant","content":[{"type":"text","text":"yo"}]}],"max_tokens":10}"#
        );
        let dropped = b.write(|i| (i == 1).then(|| b.messages[i]));
        assert!(String::from_utf8(dropped)
            .unwrap()
            .contains(r#""messages":[{"role": "assistant""#));
    }

    /// `split` on `body`: the same fields, order and messages as `parse` when the body parses; when it does not,
    /// the same error, or a split whose checks fail (the fields', or a message that does not parse).
    fn split_agrees(api: Api, body: &[u8]) {
        let shown = String::from_utf8_lossy(body);
        match (RequestBody::parse(api, body), RequestBody::split(api, body)) {
            (Ok(parsed), Ok(split)) => {
                assert_eq!(split.messages, parsed.messages, "{shown}");
                assert_eq!(split.fields, parsed.fields, "{shown}");
                assert_eq!(split.messages_at, parsed.messages_at, "{shown}");
                assert!(split.check_fields().is_ok(), "{shown}");
            }
            (Err(e), Ok(split)) => {
                // as the gateway reads a message: UTF-8, then JSON
                let message_fails = (0..split.messages.len()).any(|i| {
                    split.message(i).map_or(true, |m| {
                        serde_json::from_str::<serde::de::IgnoredAny>(m).is_err()
                    })
                });
                assert!(
                    split.is_unchecked() && (split.check_fields().is_err() || message_fails),
                    "{shown}: parse says {e}, split passes"
                );
            }
            (parsed, split) => assert_eq!(parsed.err(), split.err(), "{shown}"),
        }
    }

    #[test]
    fn a_split_body_is_the_parsed_one() {
        let valid: &[&str] = &[
            r#"{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":10}"#,
            " \n{ \"messages\" :\t[ {\"role\":\"user\",\"content\":\"a \\\"quoted\\\" ] } , text\"} ,\n 1 , [] , \"\\\\\" ] , \"n\": -1.5e+3 , \"t\" : true , \"z\" : null }\r\n",
            r#"{"messages":[],"system":[{"type":"text","text":"é ü 漢字 \u00e9 \ud83d\ude00"}]}"#,
            r#"{"stream":true,"messages":[[[]],{"a":{"b":[{"c":"}]"}]}}],"metadata":"second"}"#,
            r#"{"messages":[1,2.5,-0,true,false,null,"s",{},[]]}"#,
        ];
        for body in valid {
            assert!(
                RequestBody::parse(Api::AnthropicMessages, body.as_bytes()).is_ok(),
                "{body}"
            );
            split_agrees(Api::AnthropicMessages, body.as_bytes());
            let split = RequestBody::split(Api::AnthropicMessages, body.as_bytes()).unwrap();
            assert!(split.is_unchecked(), "{body}: taken by the structural pass");
        }
        let malformed: &[&[u8]] = &[
            b"",
            b"{}",
            b"[]",
            b"{\"messages\":[{\"role\": }]}",
            b"{\"messages\":[{\"role\":\"user\"}]",
            b"{\"messages\":[{\"role\":\"user\"}]}}",
            b"{\"messages\":[{\"role\":\"user\"},]}",
            b"{\"messages\":[{\"role\":\"user\"}] \"x\":1}",
            b"{\"messages\":[{\"role\":\"us\ner\"}]}",
            b"{\"messages\":[tru],\"x\":1}",
            b"{\"messages\":[1],\"tools\":[{\"a\":01}]}",
            b"{\"messages\":[1],\"x\":}",
            b"{\"messages\":[1],\"x\":\"\\q\"}",
            b"{\"mess\\u0061ges\":[1]}",
            b"{\"messages\":\"one string\"}",
            b"{\"messages\":[\"\xff\"]}",
            b"{\"model\":\"m\"}",
            b"{\"messages\":[\"unterminated]}",
            b"{\"messages\":[1]} trailing",
            b"{\"mess\nages\":[1]}",
        ];
        for body in malformed {
            split_agrees(Api::AnthropicMessages, body);
        }
        split_agrees(Api::OpenAiResponses, br#"{"input":"hello"}"#);
        // a field that is not UTF-8 fails its check
        split_agrees(
            Api::AnthropicMessages,
            b"{\"messages\":[],\"system\":\"\xc3\"}",
        );
    }

    /// JSON values whose strings hold what trips a scanner (escaped quotes and backslashes, brackets, commas,
    /// `\n`, non-ASCII), nested a few deep, with or without spaces.
    fn value() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let leaf = proptest::sample::select(vec![
            "1",
            "-2.5e3",
            "0",
            "null",
            "true",
            "false",
            r#""""#,
            r#""\\""#,
            r#""a\"b""#,
            r#""\\\"]}""#,
            r#""[{,:}]""#,
            r#""line\nline\\n""#,
            r#""é😀 \u00e9""#,
            r#""cache_control""#,
        ])
        .prop_map(str::to_owned);
        leaf.prop_recursive(4, 48, 6, |inner| {
            (
                proptest::collection::vec(inner, 0..6),
                any::<bool>(),
                any::<bool>(),
            )
                .prop_map(|(items, object, spaced)| {
                    let (sep, colon) = if spaced { (" ,\n ", " : ") } else { (",", ":") };
                    if object {
                        let members: Vec<String> = items
                            .iter()
                            .enumerate()
                            .map(|(i, v)| format!("\"k{i}\"{colon}{v}"))
                            .collect();
                        format!("{{{}}}", members.join(sep))
                    } else {
                        format!("[{}]", items.join(sep))
                    }
                })
        })
    }

    /// Bytes a mutation puts in: JSON's own pieces, and one that is not UTF-8.
    const PIECES: &[&[u8]] = &[
        b"\"", b"\\", b",", b":", b"{", b"}", b"[", b"]", b" ", b"x", b"\xff", b"1",
    ];

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config { cases: 2_000, failure_persistence: None, ..Default::default() })]

        /// On any body, whole or with a byte taken out, put in or the rest cut off, the structural split agrees
        /// with the full parse: the same fields and messages, or a check that fails where the parse fails.
        #[test]
        fn any_body_splits_as_it_parses(
            fields in proptest::collection::vec(value(), 0..4),
            messages in proptest::collection::vec(value(), 0..6),
            at in 0..5usize,
            spaced in proptest::bool::ANY,
            mutation in proptest::option::of((0..3usize, 0..10_000usize, 0..PIECES.len())),
        ) {
            let sep = if spaced { " , " } else { "," };
            let mut members: Vec<String> =
                fields.iter().enumerate().map(|(i, v)| format!("\"f{i}\":{v}")).collect();
            members.insert(at.min(members.len()), format!("\"messages\" : [{}]", messages.join(sep)));
            let mut body = format!("{{{}}}", members.join(sep)).into_bytes();
            if let Some((kind, place, piece)) = mutation {
                let place = place % (body.len() + 1);
                match kind {
                    0 if place < body.len() => { body.remove(place); }
                    1 => { body.splice(place..place, PIECES[piece].iter().copied()); }
                    _ => body.truncate(place),
                }
            }
            split_agrees(Api::AnthropicMessages, &body);
        }
    }

    #[test]
    fn malformed_bodies_are_named() {
        let err = RequestBody::parse(Api::OpenAiChat, b"{\"messages\": [\n  {\"role\": }]}").err();
        assert!(
            matches!(err, Some(BodyError::Json { line: 2, .. })),
            "{err:?}"
        );
        assert_eq!(
            RequestBody::parse(Api::OpenAiChat, br#"{"model":"m"}"#).err(),
            Some(BodyError::Missing("messages"))
        );
        assert_eq!(
            RequestBody::parse(Api::OpenAiResponses, br#"{"input":"hello"}"#).err(),
            Some(BodyError::NotAList("input"))
        );
        // JSON, but no object: said as such, not as malformed JSON
        for (body, found) in [
            (&b" [[1]]"[..], "a list"),
            (b"\"x\"", "a string"),
            (b"42", "a number"),
            (b"-1.5", "a number"),
            (b"true", "a boolean"),
            (b"null", "null"),
        ] {
            let err = RequestBody::split(Api::AnthropicMessages, body).err();
            assert_eq!(err, Some(BodyError::NotAnObject(found)));
            assert_eq!(
                err.unwrap().to_string(),
                format!("the request body must be a JSON object, found {found}")
            );
        }
        // a list cut short is malformed JSON, named by its place
        assert!(matches!(
            RequestBody::parse(Api::AnthropicMessages, b"[1,").err(),
            Some(BodyError::Json { .. })
        ));
        // the messages twice: the proxy would compact one, the provider might read the other
        for body in [
            &br#"{"messages":[{"role":"user","content":"a"}],"model":"m","messages":[]}"#[..],
            br#"{"messages":[],"messages":[{"role":"user","content":"a"}]}"#,
        ] {
            assert_eq!(
                RequestBody::parse(Api::AnthropicMessages, body).err(),
                Some(BodyError::Twice("messages"))
            );
            assert_eq!(
                RequestBody::split(Api::AnthropicMessages, body).err(),
                Some(BodyError::Twice("messages"))
            );
        }
        // another field twice: read as JSON readers commonly read it, the last
        let body = br#"{"system":"first","messages":[],"system":"second"}"#;
        for split in [
            RequestBody::parse(Api::AnthropicMessages, body),
            RequestBody::split(Api::AnthropicMessages, body),
        ] {
            assert_eq!(
                split.ok().and_then(|b| b.field("system")),
                Some(r#""second""#)
            );
        }
        // bytes that are no UTF-8, in their own words
        let err = RequestBody::parse(
            Api::AnthropicMessages,
            b"{\"messages\": [\n {\"role\": \"user\", \"content\": \"h\xc3\xa9\xff\"}]}",
        )
        .err()
        .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some(
                "malformed JSON at line 2, column 33: the body is not UTF-8: byte 0xff is no part of a \
                 character (JSON text is UTF-8)"
            )
        );
    }
}
