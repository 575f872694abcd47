//! The gateway on real sessions sent request by request as a client would: the same decisions as the library's
//! live loop, the client's own bytes for every message left alone, conversations kept apart, restarts invisible.

use ctxfit_compactor::{Compactor, PolicyFile, Settings};
use ctxfit_import::import_file;
use ctxfit_model::{begins_response, Conversation, Value, WireFormat};
use ctxfit_proxy::{Api, Gateway};
use ctxfit_testkit::corpus_or_skip;
use ctxfit_testkit::corpus_trajectory_files;

fn smart() -> Settings {
    PolicyFile::default()
        .resolve(Some("smart"), None, &|_| None)
        .unwrap()
}

fn api(format: WireFormat) -> Api {
    match format {
        WireFormat::Anthropic => Api::AnthropicMessages,
        WireFormat::OpenAi => Api::OpenAiChat,
        WireFormat::Responses => Api::OpenAiResponses,
    }
}

fn wire(format: WireFormat, m: &ctxfit_model::Message) -> Value {
    ctxfit_model::write_message(format, m)
}

/// The bodies a client sends: the history before each model response, pretty-printed (so that a re-serialised
/// message would not match the client's bytes).
fn requests(conv: &Conversation, system: &str) -> Vec<(Vec<Value>, Vec<u8>)> {
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

fn sessions(corpus: &std::path::Path) -> Vec<ctxfit_import::Session> {
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
fn longest_session(corpus: &std::path::Path) -> ctxfit_import::Session {
    sessions(corpus)
        .into_iter()
        .max_by_key(|s| s.conversation.messages.len())
        .unwrap()
}

/// The library's live loop on `conv` as its next request: the messages it sends, as wire JSON.
fn library_next(library: &mut Compactor, conv: &Conversation) -> Vec<Value> {
    library.compact(conv, None);
    library
        .projection(conv)
        .messages()
        .map(|m| wire(conv.format, &m))
        .collect()
}

fn forwarded_messages(api: Api, body: &[u8]) -> Vec<Value> {
    let v: Value = serde_json::from_slice(body).unwrap();
    v[api.messages_key()].as_array().unwrap().clone()
}

#[test]
fn the_gateway_decides_as_the_library_and_keeps_the_clients_bytes() {
    let corpus = corpus_or_skip!();
    let all = sessions(&corpus);
    assert!(all.len() >= 5, "{} sessions", all.len());
    let registry = ctxfit_plugins::registry().unwrap();
    let (mut formats, mut changed, mut kept) = (std::collections::BTreeSet::new(), 0, 0);
    for s in &all {
        let format = s.conversation.format;
        let api = api(format);
        let gateway = Gateway::new(smart()).unwrap();
        let mut library =
            Compactor::new(smart(), &registry, Box::new(ctxfit_tokens::FastEstimator)).unwrap();
        let mut conversation: Option<String> = None;
        for (n, (messages, bytes)) in requests(&s.conversation, "You are a test agent.")
            .iter()
            .enumerate()
        {
            let out = gateway.forward(api, bytes, None).unwrap();
            assert_eq!(out.continued, n > 0, "request {n}");
            assert_eq!(
                conversation.get_or_insert(out.conversation.clone()),
                &out.conversation
            );
            // the library's live loop on the same messages
            let mut conv = Conversation::new(format);
            conv.system = (format == WireFormat::Anthropic)
                .then(|| ctxfit_model::Content::from_json("You are a test agent.".into()));
            conv.messages = s.conversation.messages[..messages.len()].to_vec();
            let expected = library_next(&mut library, &conv);
            let got = forwarded_messages(api, &out.body);
            assert_eq!(got, expected, "request {n}");
            // every message sent as the client sent it is the client's own bytes
            let body = String::from_utf8(out.body.clone()).unwrap();
            let client: Value = serde_json::from_slice(bytes).unwrap();
            let client_messages = client[api.messages_key()].as_array().unwrap();
            let raw: Vec<String> = {
                let parsed = ctxfit_proxy::RequestBody::parse(api, bytes).unwrap();
                parsed.messages.iter().map(|m| m.get().to_owned()).collect()
            };
            for (i, m) in client_messages.iter().enumerate() {
                if got.get(i) == Some(m) {
                    assert!(
                        body.contains(&raw[i]),
                        "request {n}: message {i} was re-serialised"
                    );
                    kept += 1;
                } else {
                    changed += 1;
                }
            }
            formats.insert(format.name());
            // and the other fields too
            assert!(
                body.starts_with("{\"model\":\"stand-in\""),
                "{}",
                &body[..40]
            );
        }
    }
    assert!(formats.len() >= 2, "{formats:?}");
    assert!(
        changed > 100 && kept > changed,
        "{changed} messages changed, {kept} kept"
    );
}

#[test]
fn conversations_that_share_a_system_prompt_stay_apart() {
    let corpus = corpus_or_skip!();
    let all: Vec<_> = sessions(&corpus)
        .into_iter()
        .filter(|s| s.conversation.format == WireFormat::Anthropic)
        .take(2)
        .collect();
    assert_eq!(all.len(), 2);
    let solo: Vec<Vec<Vec<u8>>> = all
        .iter()
        .map(|s| {
            let g = Gateway::new(smart()).unwrap();
            requests(&s.conversation, "Shared prompt.")
                .iter()
                .map(|(_, b)| g.forward(Api::AnthropicMessages, b, None).unwrap().body)
                .collect()
        })
        .collect();
    // interleaved through one gateway, with the same system prompt
    let g = Gateway::new(smart()).unwrap();
    let (a, b) = (
        requests(&all[0].conversation, "Shared prompt."),
        requests(&all[1].conversation, "Shared prompt."),
    );
    // request k of each, in turn
    let turns = a.len().max(b.len());
    let mut ids = [None, None];
    for k in 0..turns {
        for (which, reqs) in [&a, &b].into_iter().enumerate() {
            let Some((_, body)) = reqs.get(k) else {
                continue;
            };
            let out = g.forward(Api::AnthropicMessages, body, None).unwrap();
            assert_eq!(
                Some(&out.body),
                solo[which].get(k),
                "conversation {which}, request {k}"
            );
            assert_eq!(
                ids[which].get_or_insert(out.conversation.clone()),
                &out.conversation
            );
        }
    }
    assert_ne!(ids[0], ids[1]);
    assert_eq!(g.conversations(), 2);
}

#[test]
fn a_retry_and_a_restart_get_the_same_bytes() {
    let corpus = corpus_or_skip!();
    let s = longest_session(&corpus);
    let api = api(s.conversation.format);
    let reqs = requests(&s.conversation, "p");
    let g = Gateway::new(smart()).unwrap();
    let mut sent = Vec::new();
    for (_, body) in &reqs {
        let first = g.forward(api, body, None).unwrap();
        let retry = g.forward(api, body, None).unwrap();
        assert_eq!(first.body, retry.body);
        assert_eq!(first.conversation, retry.conversation);
        sent.push(first.body);
    }
    // a restarted gateway meets the conversation in the middle, and at its last request
    for k in [reqs.len() / 2, reqs.len() - 1] {
        let fresh = Gateway::new(smart()).unwrap();
        let out = fresh.forward(api, &reqs[k].1, None).unwrap();
        assert!(!out.continued);
        assert_eq!(out.body, sent[k], "request {k} after a restart");
    }
}

#[test]
fn a_named_session_whose_history_is_rewritten_starts_over() {
    let g = Gateway::new(smart()).unwrap();
    let body = |msgs: &str| format!(r#"{{"model":"m","messages":[{msgs}]}}"#).into_bytes();
    let one = r#"{"role":"user","content":"hello"}"#;
    let two = r#"{"role":"assistant","content":"hi"},{"role":"user","content":"go on"}"#;
    let a = g.forward(Api::OpenAiChat, &body(one), Some("s1")).unwrap();
    assert_eq!(a.conversation, "s1");
    let b = g
        .forward(Api::OpenAiChat, &body(&format!("{one},{two}")), Some("s1"))
        .unwrap();
    assert!(b.continued);
    let c = g
        .forward(
            Api::OpenAiChat,
            &body(r#"{"role":"user","content":"new start"}"#),
            Some("s1"),
        )
        .unwrap();
    assert!(!c.continued);
    assert_eq!(c.conversation, "s1");
    assert_eq!(g.conversations(), 1);
}

#[test]
fn unknown_blocks_and_fields_pass_through_byte_for_byte() {
    let g = Gateway::new(smart()).unwrap();
    let body = br#"{"model":"m","stream":true,"metadata":{"user_id":"u 1"},"messages":[
        {"role":"user","content":"search"},
        {"role":"assistant","content":[{"type":"server_tool_use","id":"srv_1","name":"web_search","input":{"query":"q"}},
                                       {"type":"web_search_tool_result","tool_use_id":"srv_1","content":[{"type":"web_search_result","url":"https://x.example","title":"X","encrypted_content":"AbC=="}]}]},
        {"role":"user","content":"thanks"}],"tools":[{"type":"web_search_20250305","name":"web_search"}]}"#;
    let out = g.forward(Api::AnthropicMessages, body, None).unwrap();
    let text = String::from_utf8(out.body).unwrap();
    let parsed = ctxfit_proxy::RequestBody::parse(Api::AnthropicMessages, body).unwrap();
    for m in &parsed.messages {
        assert!(text.contains(m.get()), "{text}");
    }
    assert!(text.contains(r#""stream":true,"metadata":{"user_id":"u 1"}"#));
    assert!(text.ends_with(r#""tools":[{"type":"web_search_20250305","name":"web_search"}]}"#));
}

#[test]
fn a_malformed_body_is_refused_with_its_place() {
    let g = Gateway::new(smart()).unwrap();
    let err = g
        .forward(
            Api::AnthropicMessages,
            b"{\"messages\": [\n {\"role\": \"user\", }]}",
            None,
        )
        .unwrap_err();
    assert!(
        err.to_string().starts_with("malformed JSON at line 2"),
        "{err}"
    );
    let err = g
        .forward(
            Api::AnthropicMessages,
            br#"{"messages":[{"content":"x"}]}"#,
            None,
        )
        .unwrap_err();
    assert!(err.to_string().contains("messages[0]"), "{err}");
    assert_eq!(
        g.conversations(),
        0,
        "a refused request starts no conversation"
    );
}

#[test]
fn the_least_recently_used_conversation_is_forgotten_and_replayed() {
    let mut g = Gateway::new(smart()).unwrap();
    g.max_conversations = 2;
    let body = |first: &str, more: &str| {
        format!(r#"{{"model":"m","messages":[{{"role":"user","content":"{first}"}}{more}]}}"#)
            .into_bytes()
    };
    let more = r#",{"role":"assistant","content":"ok"},{"role":"user","content":"next"}"#;
    let a = g.forward(Api::OpenAiChat, &body("a", ""), None).unwrap();
    g.forward(Api::OpenAiChat, &body("b", ""), None).unwrap();
    g.forward(Api::OpenAiChat, &body("c", ""), None).unwrap();
    assert_eq!(g.conversations(), 2);
    // `a` was forgotten: its next request starts it again, with the same bytes a kept one would get
    let again = g.forward(Api::OpenAiChat, &body("a", more), None).unwrap();
    assert!(!again.continued);
    assert_ne!(again.conversation, a.conversation);
    let kept = Gateway::new(smart()).unwrap();
    kept.forward(Api::OpenAiChat, &body("a", ""), None).unwrap();
    assert_eq!(
        kept.forward(Api::OpenAiChat, &body("a", more), None)
            .unwrap()
            .body,
        again.body
    );
}

#[test]
fn idle_conversations_are_forgotten() {
    let mut g = Gateway::new(smart()).unwrap();
    g.max_idle = Some(std::time::Duration::from_millis(50));
    let body = br#"{"model":"m","messages":[{"role":"user","content":"hello"}]}"#;
    g.forward(Api::OpenAiChat, body, None).unwrap();
    assert_eq!(g.conversations(), 1);
    std::thread::sleep(std::time::Duration::from_millis(120));
    let other = br#"{"model":"m","messages":[{"role":"user","content":"another"}]}"#;
    g.forward(Api::OpenAiChat, other, None).unwrap();
    assert_eq!(g.conversations(), 1, "the idle one was forgotten");
    assert!(!g.forward(Api::OpenAiChat, body, None).unwrap().continued);
}

#[test]
fn a_profiles_retrieval_tool_is_left_off_behind_the_proxy() {
    // the agent behind the proxy cannot call the tool: the same bytes as without it, no cut result naming it
    let corpus = corpus_or_skip!();
    let s = longest_session(&corpus);
    let api = api(s.conversation.format);
    let mut retrieving = smart();
    retrieving.retrieval_tool = Some("ctxfit_retrieve".into());
    let (with, without) = (
        Gateway::new(retrieving).unwrap(),
        Gateway::new(smart()).unwrap(),
    );
    let mut compacted = 0;
    for (_, body) in requests(&s.conversation, "p") {
        let out = with.forward(api, &body, None).unwrap().body;
        assert_eq!(out, without.forward(api, &body, None).unwrap().body);
        assert!(!String::from_utf8_lossy(&out).contains("ctxfit_retrieve"));
        compacted += usize::from(forwarded_messages(api, &out) != forwarded_messages(api, &body));
    }
    assert!(compacted > 0, "no request was compacted");
}

#[test]
fn a_pause_longer_than_the_cache_lives_lets_the_waiting_cuts_through() {
    // `smart` with a cache that lives two seconds: the read's small cut (its number column) waits while requests
    // follow each other, and is made at the first request after a pause of more than two seconds
    let settings = PolicyFile::parse(
        "[profiles.brief]\nextends = \"smart\"\ncache_ttl = 2\n",
        "test.toml",
    )
    .unwrap()
    .resolve(Some("brief"), None, &|_| None)
    .unwrap();
    let read = (1..=400)
        .map(|i| format!("{i:>6}→    let value_{i} = compute(input, {i});"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut messages = vec![serde_json::json!({"role": "user", "content": "fix the bug"})];
    for i in 0..6 {
        let id = format!("toolu_{i}");
        let (name, input, result) = if i == 0 {
            (
                "Read",
                serde_json::json!({"file_path": "src/lib.rs"}),
                read.clone(),
            )
        } else {
            (
                "Bash",
                serde_json::json!({"command": "git status"}),
                "clean".to_owned(),
            )
        };
        messages.push(serde_json::json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": id, "name": name, "input": input}]}));
        messages.push(serde_json::json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": result}]}));
    }
    let conv = ctxfit_model::from_value(serde_json::json!({"messages": messages})).unwrap();
    let sent = requests(&conv, "You are a test agent.");
    let read_sent = |body: &[u8]| {
        forwarded_messages(Api::AnthropicMessages, body)[2]["content"][0]["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let gateway = Gateway::new(settings).unwrap();
    let last = sent.len() - 1;
    for (messages, bytes) in &sent[..last] {
        let out = gateway
            .forward(Api::AnthropicMessages, bytes, None)
            .unwrap();
        if messages.len() > 2 {
            assert_eq!(read_sent(&out.body), read, "no pause yet: the cut waits");
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(2_300));
    let out = gateway
        .forward(Api::AnthropicMessages, &sent[last].1, None)
        .unwrap();
    assert!(out.continued);
    assert!(
        read_sent(&out.body).starts_with("[lines 1–400; numbers dropped, count from 1]\n"),
        "{}",
        &read_sent(&out.body)[..80]
    );
    // a client that asks for a longer-lived cache still has it after the pause, and the cut keeps waiting —
    // whether it asks on a block, on a tool or for the whole request (Anthropic's `cache_control` of one hour), or
    // for OpenAI's 24-hour retention; OpenAI's `"in_memory"` states no lifetime, and the profile's holds
    let hour = serde_json::json!({"type": "ephemeral", "ttl": "1h"});
    // the same session as an OpenAI Chat client sends it
    let mut chat = vec![serde_json::json!({"role": "user", "content": "fix the bug"})];
    for m in messages.iter().skip(1) {
        let block = &m["content"][0];
        chat.push(if m["role"] == "assistant" {
            serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{"id": block["id"],
                "type": "function", "function": {"name": block["name"],
                "arguments": block["input"].to_string()}}]})
        } else {
            serde_json::json!({"role": "tool", "tool_call_id": block["tool_use_id"],
                "content": block["content"]})
        });
    }
    let sent_openai = requests(
        &ctxfit_model::from_value(serde_json::json!({"messages": chat})).unwrap(),
        "",
    );
    type Ask = Box<dyn Fn(&mut Value)>;
    let asks: Vec<(Api, Ask, bool)> = vec![
        (
            Api::AnthropicMessages,
            Box::new({
                let hour = hour.clone();
                move |b| {
                    b["system"] = serde_json::json!([{"type": "text",
                        "text": "You are a test agent.", "cache_control": hour}]);
                }
            }),
            false,
        ),
        (
            Api::AnthropicMessages,
            Box::new({
                let hour = hour.clone();
                move |b| b["cache_control"] = hour.clone()
            }),
            false,
        ),
        (
            Api::AnthropicMessages,
            Box::new(move |b| {
                b["tools"] = serde_json::json!([{"name": "Read",
                    "input_schema": {"type": "object"}, "cache_control": hour}]);
            }),
            false,
        ),
        (
            Api::OpenAiChat,
            Box::new(|b| b["prompt_cache_retention"] = "24h".into()),
            false,
        ),
        (
            Api::OpenAiChat,
            Box::new(|b| b["prompt_cache_retention"] = "in_memory".into()),
            true,
        ),
    ];
    let asked = |ask: &Ask, bytes: &[u8]| {
        let mut body: Value = serde_json::from_slice(bytes).unwrap();
        ask(&mut body);
        serde_json::to_vec(&body).unwrap()
    };
    let mut gateways = Vec::new();
    for (api, ask, _) in &asks {
        let gateway = Gateway::new(
            PolicyFile::parse(
                "[profiles.brief]\nextends = \"smart\"\ncache_ttl = 2\n",
                "test.toml",
            )
            .unwrap()
            .resolve(Some("brief"), None, &|_| None)
            .unwrap(),
        )
        .unwrap();
        let sent = if *api == Api::OpenAiChat {
            &sent_openai
        } else {
            &sent
        };
        for (_, bytes) in &sent[..last] {
            gateway.forward(*api, &asked(ask, bytes), None).unwrap();
        }
        gateways.push(gateway);
    }
    std::thread::sleep(std::time::Duration::from_millis(2_300));
    for ((api, ask, cut), gateway) in asks.iter().zip(&mut gateways) {
        let sent = if *api == Api::OpenAiChat {
            &sent_openai
        } else {
            &sent
        };
        let out = gateway
            .forward(*api, &asked(ask, &sent[last].1), None)
            .unwrap();
        assert!(out.continued);
        let tool = if *api == Api::OpenAiChat {
            &forwarded_messages(*api, &out.body)[2]
        } else {
            &forwarded_messages(*api, &out.body)[2]["content"][0]
        };
        let text = tool["content"].as_str().unwrap();
        assert_eq!(text != read, *cut, "{api:?}: {}", &text[..80]);
    }
}

/// Leave out the `cache_control` markers of a wire message and of its blocks; say whether it had any.
fn strip_markers(m: &mut Value) -> bool {
    let mut had = m
        .as_object_mut()
        .and_then(|o| o.remove("cache_control"))
        .is_some();
    if let Some(blocks) = m.get_mut("content").and_then(Value::as_array_mut) {
        for b in blocks {
            if let Some(o) = b.as_object_mut() {
                had |= o.remove("cache_control").is_some();
            }
        }
    }
    had
}

#[test]
fn a_breakpoint_that_moves_every_request_stays_one_conversation() {
    // Claude Code's pattern: the breakpoint on the newest message's last block, taken off the one before, and one
    // on the system prompt's block
    let corpus = corpus_or_skip!();
    let s = sessions(&corpus)
        .into_iter()
        .filter(|s| s.conversation.format == WireFormat::Anthropic)
        .max_by_key(|s| s.conversation.messages.len())
        .unwrap();
    let format = s.conversation.format;
    let registry = ctxfit_plugins::registry().unwrap();
    let mut library =
        Compactor::new(smart(), &registry, Box::new(ctxfit_tokens::FastEstimator)).unwrap();
    let gateway = Gateway::new(smart()).unwrap();
    let system = serde_json::json!([{"type": "text", "text": "You are a test agent.",
        "cache_control": {"type": "ephemeral"}}]);
    let (mut ids, mut sent, mut cut) = (std::collections::BTreeSet::new(), 0, 0);
    for (n, (messages, _)) in requests(&s.conversation, "").iter().enumerate() {
        let mut marked = messages.clone();
        let mut has_marker = false;
        if let Some(Value::Array(blocks)) = marked.last_mut().and_then(|m| m.get_mut("content")) {
            if let Some(Value::Object(last)) = blocks.last_mut() {
                last.insert(
                    "cache_control".into(),
                    serde_json::json!({"type": "ephemeral"}),
                );
                has_marker = true;
            }
        }
        let body = serde_json::json!({"model": "stand-in", "system": system,
            "messages": marked, "max_tokens": 1024});
        let out = gateway
            .forward(
                Api::AnthropicMessages,
                &serde_json::to_vec(&body).unwrap(),
                None,
            )
            .unwrap();
        assert_eq!(out.continued, n > 0, "request {n}");
        ids.insert(out.conversation.clone());
        sent += usize::from(has_marker);
        // what is forwarded is the library's decision on the unmarked history ...
        let mut conv = Conversation::new(format);
        conv.system = Some(ctxfit_model::Content::from_json(system.clone()));
        conv.messages = s.conversation.messages[..messages.len()].to_vec();
        let expected = library_next(&mut library, &conv);
        let mut got = forwarded_messages(Api::AnthropicMessages, &out.body);
        // ... with the markers of this request where the client put them, and nowhere else
        for (i, m) in got.iter_mut().enumerate() {
            assert_eq!(
                strip_markers(m),
                has_marker && i + 1 == marked.len(),
                "request {n}, message {i}"
            );
        }
        assert_eq!(got, expected, "request {n}");
        cut += out.report.new_blocks.len();
    }
    assert!(sent >= 20, "{sent} requests with a breakpoint");
    assert!(
        cut > 0,
        "nothing was cut: the test would not see a stale marker"
    );
    assert_eq!(ids.len(), 1, "{} conversations", ids.len());
}

#[test]
fn each_conversation_counts_its_savings_and_the_cut_results_its_agent_fetched_again() {
    // a long log, cut as soon as it is stale (no payback wait); then the agent runs the same command again
    let eager = PolicyFile::parse(
        "[profiles.eager]\nextends = \"smart\"\ncache_write_premium = 0\nmax_regret = 1000000\n",
        "eager.toml",
    )
    .unwrap()
    .resolve(Some("eager"), None, &|_| None)
    .unwrap();
    let mut g = Gateway::new(eager).unwrap();
    let log: String = (0..2000)
        .map(|i| format!("step {i}: built module {i}\n"))
        .collect();
    let call = |id: &str, command: &str| {
        serde_json::json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": id, "name": "Bash", "input": {"command": command}}]})
    };
    let result = |id: &str, text: &str| {
        serde_json::json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": text}]})
    };
    let mut messages = vec![serde_json::json!({"role": "user", "content": "build it"})];
    let send = |g: &mut Gateway, messages: &[Value]| {
        let body = serde_json::json!({"model": "m", "max_tokens": 8, "messages": messages});
        g.forward(
            Api::AnthropicMessages,
            &serde_json::to_vec(&body).unwrap(),
            None,
        )
        .unwrap()
    };
    messages.extend([call("t1", "make all"), result("t1", &log)]);
    send(&mut g, &messages);
    messages.extend([call("t2", "git status"), result("t2", "clean")]);
    let cut = send(&mut g, &messages);
    assert!(cut.report.tokens_after < cut.report.tokens_before / 2);
    // the same command again: it fetches what the cut left out; another command does not
    messages.extend([call("t3", "make all"), result("t3", &log)]);
    send(&mut g, &messages);
    messages.extend([call("t4", "make test"), result("t4", "ok")]);
    let last = send(&mut g, &messages);
    let stats = g.conversation_stats();
    assert_eq!(stats.len(), 1);
    let s = &stats[0];
    assert_eq!(
        (s.id.as_str(), s.requests, s.refetches),
        (last.conversation.as_str(), 4, 1)
    );
    assert!(s.tokens_forwarded < s.tokens_in, "{s:?}");
    assert!(s.cost_saved > 0.0, "{s:?}");
}

/// Under a request budget the escalation makes again decisions it made before (a cut result becomes a pointer:
/// as many decisions in the message as before): the gateway forwards the new ones, not what it wrote before.
#[test]
fn a_result_cut_again_to_hold_the_budget_is_forwarded_as_cut_again() {
    let corpus = corpus_or_skip!();
    let s = longest_session(&corpus);
    let format = s.conversation.format;
    let api = api(format);
    let registry = ctxfit_plugins::registry().unwrap();
    let bodies = requests(&s.conversation, "You are a test agent.");
    // a budget under the session's largest request sent whole
    let peak: usize = (s.conversation.messages.iter())
        .map(|m| ctxfit_tokens::count_message(&ctxfit_tokens::FastEstimator, m))
        .sum();
    let policy = format!(
        "[profiles.tight]\nextends = \"smart\"\nrequest_budget = {}\n",
        peak * 6 / 10
    );
    let settings = PolicyFile::parse(&policy, "test")
        .unwrap()
        .resolve(Some("tight"), None, &|_| None)
        .unwrap();
    let gateway = Gateway::new(settings.clone()).unwrap();
    let mut library =
        Compactor::new(settings, &registry, Box::new(ctxfit_tokens::FastEstimator)).unwrap();
    let mut made_again = 0;
    for (n, (messages, bytes)) in bodies.iter().enumerate() {
        let out = gateway.forward(api, bytes, None).unwrap();
        let mut conv = Conversation::new(format);
        conv.system = (format == WireFormat::Anthropic)
            .then(|| ctxfit_model::Content::from_json("You are a test agent.".into()));
        conv.messages = s.conversation.messages[..messages.len()].to_vec();
        let report = library.compact(&conv, None);
        let expected: Vec<Value> = (library.projection(&conv).messages())
            .map(|m| wire(format, &m))
            .collect();
        made_again += report
            .new_blocks
            .iter()
            .filter(|b| b.rule == "budget" && b.action == ctxfit_compactor::Action::Pointer)
            .count();
        assert_eq!(forwarded_messages(api, &out.body), expected, "request {n}");
    }
    assert!(
        made_again > 0,
        "the budget never turned a result into a pointer"
    );
}
