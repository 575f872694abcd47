//! The gateway on real sessions sent request by request as a client would: the same decisions as the library's
//! live loop, the client's own bytes for every message left alone, conversations kept apart, restarts invisible.

mod common;

use common::*;
use ctxfit_compactor::Compactor;
use ctxfit_model::{Conversation, Value, WireFormat};
use ctxfit_proxy::{Api, Gateway};
use ctxfit_testkit::corpus_or_skip;

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
                // the structural split the gateway takes finds the same fields and messages
                let split = ctxfit_proxy::RequestBody::split(api, bytes).unwrap();
                assert!(split.is_unchecked() && split.check_fields().is_ok());
                assert_eq!(split.messages, parsed.messages, "request {n}");
                let all = |b: &ctxfit_proxy::RequestBody<'_>| b.write(|i| Some(b.messages[i]));
                assert_eq!(all(&split), all(&parsed), "request {n}");
                (0..parsed.messages.len())
                    .map(|i| parsed.message(i).unwrap().to_owned())
                    .collect()
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
    for i in 0..parsed.messages.len() {
        assert!(text.contains(parsed.message(i).unwrap()), "{text}");
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
fn a_continued_conversation_still_refuses_a_malformed_body_with_its_place() {
    // the messages a conversation has read are known by their hashes; what is new, the other fields and a
    // message whose marker moved are checked, and named as a full parse names them
    let g = Gateway::new(smart()).unwrap();
    let first = br#"{"model":"m","messages":[{"role":"user","content":"look"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"path":"a.rs"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"fn main() {}","cache_control":{"type":"ephemeral"}}]}]}"#;
    let out = g.forward(Api::AnthropicMessages, first, None).unwrap();
    let before = out.body;
    let next = |tail: &[u8], tools: &str| -> Vec<u8> {
        let mut b = first[..first.len() - 2].to_vec();
        b.extend_from_slice(tail);
        b.push(b']');
        b.extend_from_slice(tools.as_bytes());
        b.push(b'}');
        b
    };
    let ok: &[u8] = br#",{"role":"assistant","content":"done"},{"role":"user","content":"thanks"}"#;
    for (body, line) in [
        // a new message that is no JSON
        (next(br#",{"role":"assistant","content":"done",}"#, ""), 1),
        // a new message that is not UTF-8
        (
            next(b",{\"role\":\"assistant\",\"content\":\"d\xff\"}", ""),
            1,
        ),
        // another field
        (next(ok, ",\n\"tools\":[{\"name\":tru}]"), 2),
        // text after the body
        ([next(ok, ""), b"\n}".to_vec()].concat(), 2),
    ] {
        let err = g.forward(Api::AnthropicMessages, &body, None).unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("malformed JSON at line {line}")),
            "{err}"
        );
    }
    // a message read before, its marker moved and its value broken
    let moved = String::from_utf8(next(ok, "")).unwrap().replacen(
        r#""cache_control":{"type":"ephemeral"}"#,
        r#""cache_control":{"type":ephemeral}"#,
        1,
    );
    let err = g
        .forward(Api::AnthropicMessages, moved.as_bytes(), None)
        .unwrap_err();
    assert!(
        err.to_string().starts_with("malformed JSON at line 1"),
        "{err}"
    );
    // none of it changed the conversation: the same request again gets the same bytes, continued
    let again = g.forward(Api::AnthropicMessages, first, None).unwrap();
    assert!(again.continued);
    assert_eq!(again.body, before);
    assert_eq!(g.conversations(), 1);
    let next_ok = g
        .forward(Api::AnthropicMessages, &next(ok, ""), None)
        .unwrap();
    assert!(next_ok.continued);
}

#[test]
fn a_lone_surrogate_is_mended_wherever_it_is() {
    // the body's split keeps a message's bytes as written; one that holds half a UTF-16 pair, anywhere, is
    // forwarded with the half written U+FFFD (the provider would refuse it), the rest as the client wrote it
    let g = Gateway::new(smart()).unwrap();
    let first = br#"{"model":"m","messages":[{"role":"user","content":"look"}]}"#;
    let look = g.forward(Api::AnthropicMessages, first, None).unwrap();
    for (body, continues, sent) in [
        // a new conversation
        (
            r#"{"model":"m","messages":[{"role":"user","content":"x \ud800 y"}]}"#,
            false,
            r#"{"model":"m","messages":[{"role":"user","content":"x \ufffd y"}]}"#,
        ),
        // a continued one: the new message
        (
            r#"{"model":"m","messages":[{"role":"user","content":"look"},{"role":"assistant","content":"\udc00"}]}"#,
            true,
            r#"{"model":"m","messages":[{"role":"user","content":"look"},{"role":"assistant","content":"\ufffd"}]}"#,
        ),
        // the system prompt
        (
            r#"{"model":"m","system":"a \ud800\u0041","messages":[{"role":"user","content":"other"}]}"#,
            false,
            r#"{"model":"m","system":"a \ufffd\u0041","messages":[{"role":"user","content":"other"}]}"#,
        ),
    ] {
        let f = g
            .forward(Api::AnthropicMessages, body.as_bytes(), None)
            .unwrap();
        assert_eq!((f.mended, f.continued), (1, continues), "{body}");
        assert_eq!(String::from_utf8(f.body).unwrap(), sent);
        assert_eq!(f.conversation == look.conversation, continues);
    }
    assert_eq!(g.conversations(), 3);
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
fn a_history_whose_old_results_the_client_cleared_is_a_new_conversation_sent_as_written() {
    // Claude Code 2.1.332, back after a long pause (its cache expired), replaces old tool results with a
    // placeholder before its next request: that history is not the one the proxy knew, so its compaction starts
    // over from it as sent — and goes on from there
    let g = Gateway::new(smart()).unwrap();
    let file: String = (0..3000)
        .map(|i| format!("line {i} of the file\n"))
        .collect();
    let result = |id: &str, text: &str| serde_json::json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": text}]});
    let call = |id: &str, command: &str| serde_json::json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "Bash", "input": {"command": command}}]});
    let mut messages = vec![
        serde_json::json!({"role": "user", "content": "look at the file"}),
        call("toolu_1", "cat big.txt"),
        result("toolu_1", &file),
        call("toolu_2", "wc -l big.txt"),
        result("toolu_2", "3000 big.txt"),
    ];
    let body = |messages: &[serde_json::Value]| {
        serde_json::to_vec(
            &serde_json::json!({"model": "m", "max_tokens": 8, "messages": messages}),
        )
        .unwrap()
    };
    let first = g
        .forward(Api::AnthropicMessages, &body(&messages), None)
        .unwrap();
    messages[2] = result("toolu_1", "[Old tool result content cleared]");
    messages.push(serde_json::json!({"role": "assistant", "content": "It has 3000 lines."}));
    messages.push(serde_json::json!({"role": "user", "content": "now count the words"}));
    let cleared = g
        .forward(Api::AnthropicMessages, &body(&messages), None)
        .unwrap();
    assert!(!cleared.continued);
    assert_ne!(cleared.conversation, first.conversation);
    let sent = forwarded_messages(Api::AnthropicMessages, &cleared.body);
    assert_eq!(
        sent[2]["content"][0]["content"], "[Old tool result content cleared]",
        "the client's placeholder goes as it wrote it"
    );
    assert_eq!(sent.len(), messages.len());
    messages.push(call("toolu_3", "wc -w big.txt"));
    messages.push(result("toolu_3", "9000 big.txt"));
    let next = g
        .forward(Api::AnthropicMessages, &body(&messages), None)
        .unwrap();
    assert!(next.continued);
    assert_eq!(next.conversation, cleared.conversation);
    assert_eq!(g.conversations(), 2);
}

#[test]
fn half_an_emoji_a_client_cut_off_is_written_u_fffd_and_the_conversation_goes_on() {
    // JavaScript's `slice` cut a tool result inside an emoji's UTF-16 pair; `JSON.stringify` wrote the half
    // left as a lone escape, which the Anthropic API refuses ("no low surrogate in string") on this request and
    // on every later one, which repeats it
    let g = Gateway::new(smart()).unwrap();
    let body = |extra: &str| {
        format!(
            r#"{{"model":"m","max_tokens":8,"messages":[{{"role":"user","content":"what is in notes.md?"}},{{"role":"assistant","content":[{{"type":"tool_use","id":"toolu_1","name":"Read","input":{{"file_path":"notes.md"}}}}]}},{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"toolu_1","content":"done \ud83d\ude00 and cut \ud83d"}}]}}{extra}]}}"#
        )
        .into_bytes()
    };
    let first = g
        .forward(Api::AnthropicMessages, &body(""), None)
        .expect("forwarded, not refused");
    assert_eq!(first.mended, 1);
    let sent = forwarded_messages(Api::AnthropicMessages, &first.body);
    assert_eq!(
        sent[2]["content"][0]["content"], "done \u{1F600} and cut \u{FFFD}",
        "the pair kept, the lone half written U+FFFD"
    );
    // the next request repeats the lone half: the same conversation, mended the same way
    let next = g
        .forward(
            Api::AnthropicMessages,
            &body(r#",{"role":"assistant","content":"It is cut."},{"role":"user","content":"thanks"}"#),
            None,
        )
        .unwrap();
    assert!(next.continued);
    assert_eq!(next.conversation, first.conversation);
    assert_eq!(next.mended, 1);
    assert_eq!(g.conversations(), 1);
    // a body that does not read for another reason is refused as before, in the same words
    let broken = String::from_utf8(body("")).unwrap().replace("]}", "]");
    let err = g
        .forward(Api::AnthropicMessages, broken.as_bytes(), None)
        .unwrap_err();
    assert!(err.to_string().contains("malformed JSON"), "{err}");
    // a body whose only fault is not a lone half is not touched either: no escape is written for it
    let plain = g
        .forward(Api::AnthropicMessages, &messages_body_plain(), None)
        .unwrap();
    assert_eq!(plain.mended, 0);
}

fn messages_body_plain() -> Vec<u8> {
    br#"{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"a pair \ud83d\ude00 and a backslash \\ud800"}]}"#.to_vec()
}
