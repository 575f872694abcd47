//! The gateway over time, on real sessions: a pause longer than the cache lives, a breakpoint that moves on every
//! request, the savings and re-fetches each conversation counts, and a budget that cuts a result again.

mod common;

use common::*;
use ctxfit_compactor::{Compactor, PolicyFile};
use ctxfit_model::{Conversation, Value, WireFormat};
use ctxfit_proxy::{Api, Gateway};
use ctxfit_testkit::corpus_or_skip;

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
