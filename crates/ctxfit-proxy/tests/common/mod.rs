//! What the gateway tests share: the corpus sessions they send, and the bodies a client sends of them.

#![allow(dead_code)]

use ctxfit_compactor::{Compactor, PolicyFile, Settings};
use ctxfit_import::import_file;
use ctxfit_model::{begins_response, Conversation, Value, WireFormat};
use ctxfit_proxy::Api;
use ctxfit_testkit::corpus_trajectory_files;

pub fn smart() -> Settings {
    PolicyFile::default()
        .resolve(Some("smart"), None, &|_| None)
        .unwrap()
}

pub fn api(format: WireFormat) -> Api {
    match format {
        WireFormat::Anthropic => Api::AnthropicMessages,
        WireFormat::OpenAi => Api::OpenAiChat,
        WireFormat::Responses => Api::OpenAiResponses,
    }
}

pub fn wire(format: WireFormat, m: &ctxfit_model::Message) -> Value {
    ctxfit_model::write_message(format, m)
}

/// The bodies a client sends: the history before each model response, pretty-printed (so that a re-serialised
/// message would not match the client's bytes).
pub fn requests(conv: &Conversation, system: &str) -> Vec<(Vec<Value>, Vec<u8>)> {
    let key = conv.format.messages_key();
    let messages: Vec<Value> = conv.messages.iter().map(|m| wire(conv.format, m)).collect();
    (1..=conv.messages.len())
        .filter(|&i| i == conv.messages.len() || begins_response(&conv.messages, i))
        .map(|i| {
            let mut body = serde_json::Map::new();
            body.insert("model".into(), "stand-in".into());
            if conv.format == WireFormat::Anthropic {
                body.insert("system".into(), system.into());
            }
            body.insert(key.into(), Value::Array(messages[..i].to_vec()));
            body.insert("max_tokens".into(), 1024.into());
            let bytes = serde_json::to_vec_pretty(&Value::Object(body)).unwrap();
            (messages[..i].to_vec(), bytes)
        })
        .collect()
}

pub fn sessions(corpus: &std::path::Path) -> Vec<ctxfit_import::Session> {
    let mut out = Vec::new();
    for path in corpus_trajectory_files(corpus) {
        let name = path.to_string_lossy().into_owned();
        if name.contains("claude-code") || name.contains("swe-agent") || name.contains("openhands")
        {
            out.extend(import_file(&path, None).unwrap());
        }
    }
    out.retain(|s| s.conversation.messages.len() >= 6);
    out
}

/// The corpus session with the most messages.
pub fn longest_session(corpus: &std::path::Path) -> ctxfit_import::Session {
    sessions(corpus)
        .into_iter()
        .max_by_key(|s| s.conversation.messages.len())
        .unwrap()
}

/// The library's live loop on `conv` as its next request: the messages it sends, as wire JSON.
pub fn library_next(library: &mut Compactor, conv: &Conversation) -> Vec<Value> {
    library.compact(conv, None);
    library
        .projection(conv)
        .messages()
        .map(|m| wire(conv.format, &m))
        .collect()
}

pub fn forwarded_messages(api: Api, body: &[u8]) -> Vec<Value> {
    let v: Value = serde_json::from_slice(body).unwrap();
    v[api.messages_key()].as_array().unwrap().clone()
}
