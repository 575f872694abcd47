//! A request body as the client wrote it: its top-level fields in order, each as the client's own bytes, and the
//! messages (or Responses `input` items) one by one, also as the client's bytes.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

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
    #[error("the request has no `{0}`")]
    Missing(&'static str),
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
}

/// What the messages field must be.
const EXPECTED_LIST: &str = "a list of messages";

/// The messages list, each message borrowed as written.
struct ListSeed;

impl<'de> DeserializeSeed<'de> for ListSeed {
    type Value = Vec<&'de RawValue>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Vec<&'de RawValue>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(EXPECTED_LIST)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(16));
                while let Some(m) = seq.next_element::<&'de RawValue>()? {
                    out.push(m);
                }
                Ok(out)
            }
        }
        d.deserialize_seq(V)
    }
}

/// A body's top-level fields in order, each borrowed as written, and its messages, in one pass.
struct SplitSeed(&'static str);

type Split<'a> = (
    Vec<(String, &'a RawValue)>,
    Option<(usize, Vec<&'a RawValue>)>,
);

impl<'de> DeserializeSeed<'de> for SplitSeed {
    type Value = Split<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        struct V(&'static str);
        impl<'de> Visitor<'de> for V {
            type Value = Split<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let (mut fields, mut messages) = (Vec::new(), None);
                while let Some(k) = map.next_key::<String>()? {
                    if k == self.0 && messages.is_none() {
                        messages = Some((fields.len(), map.next_value_seed(ListSeed)?));
                    } else {
                        fields.push((k, map.next_value::<&'de RawValue>()?));
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
    /// Top-level fields in order; the messages field is left out (it is `messages`).
    fields: Vec<(String, &'a RawValue)>,
    /// Where the messages field was among the fields.
    messages_at: usize,
    /// The messages as the client wrote them.
    pub messages: Vec<&'a RawValue>,
}

impl<'a> RequestBody<'a> {
    /// Split a body in one pass, copying nothing; malformed JSON is named by line and column.
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
            Err(e) => return Err(BodyError::json(&e, bytes)),
        };
        let (messages_at, messages) = messages.ok_or(BodyError::Missing(key))?;
        Ok(RequestBody {
            api,
            fields,
            messages_at,
            messages,
        })
    }

    /// The raw value of a top-level field.
    pub fn field(&self, key: &str) -> Option<&'a RawValue> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    /// The body again, with message `i` written as `message(i)` gives it (`None`: left out). Every other field
    /// is written as the client wrote it.
    pub fn write<'s>(&'s self, message: impl Fn(usize) -> Option<&'s str>) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            self.messages
                .iter()
                .map(|m| m.get().len() + 1)
                .sum::<usize>()
                + 256,
        );
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
            out.extend_from_slice(v.get().as_bytes());
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
        message: &impl Fn(usize) -> Option<&'s str>,
    ) {
        out.push(b'[');
        let mut first = true;
        for i in 0..self.messages.len() {
            if let Some(m) = message(i) {
                if !first {
                    out.push(b',');
                }
                first = false;
                out.extend_from_slice(m.as_bytes());
            }
        }
        out.push(b']');
    }
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
            b.messages[1].get(),
            r#"{"role": "assistant","content":[{"type":"text","text":"yo"}]}"#
        );
        assert_eq!(b.field("system").unwrap().get(), r#""be  terse""#);
        let out = b.write(|i| Some(b.messages[i].get()));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"model":"m","system":"be  terse","messages":[{"role":"user","content":"hi"},{"role": "assistant","content":[{"type":"text","text":"yo"}]}],"max_tokens":10}"#
        );
        let dropped = b.write(|i| (i == 1).then(|| b.messages[i].get()));
        assert!(String::from_utf8(dropped)
            .unwrap()
            .contains(r#""messages":[{"role": "assistant""#));
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
