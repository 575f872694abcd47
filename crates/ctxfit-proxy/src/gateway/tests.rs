//! Unit tests of `gateway.rs`.

use std::sync::mpsc;
use std::time::Duration;

use ctxfit_compactor::PolicyFile;

use super::*;

fn body(turns: &[&str]) -> Vec<u8> {
    let messages: Vec<serde_json::Value> = turns
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            serde_json::json!({"role": role, "content": text})
        })
        .collect();
    serde_json::json!({"model": "m", "max_tokens": 10, "messages": messages})
        .to_string()
        .into_bytes()
}

/// A gateway under `smart` that has met one conversation, A: the gateway and A's id.
fn with_conversation_a() -> (Arc<Gateway>, String) {
    let settings = PolicyFile::default()
        .resolve(Some("smart"), None, &|_| None)
        .unwrap();
    let gateway = Arc::new(Gateway::new(settings).unwrap());
    let a = gateway
        .forward(Api::AnthropicMessages, &body(&["task A"]), None)
        .unwrap();
    (gateway, a.conversation)
}

/// Forward on another thread; the answer comes on the channel.
fn forward_on(gateway: &Arc<Gateway>, bytes: Vec<u8>) -> mpsc::Receiver<Result<Forwarded, String>> {
    let (tx, rx) = mpsc::channel();
    let g = Arc::clone(gateway);
    std::thread::spawn(move || {
        let _ = tx.send(
            g.forward(Api::AnthropicMessages, &bytes, None)
                .map_err(|e| e.to_string()),
        );
    });
    rx
}

#[test]
fn a_newest_message_wrapped_to_carry_the_breakpoint_stays_the_same_conversation() {
    // the program sends its messages as strings, but wraps the newest one in a text block to mark it
    let request = |turns: &[&str]| -> Vec<u8> {
        let mut v: serde_json::Value = serde_json::from_slice(&body(turns)).unwrap();
        let last = v["messages"].as_array_mut().unwrap().last_mut().unwrap();
        let text = last["content"].take();
        last["content"] = serde_json::json!([
            {"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}
        ]);
        v.to_string().into_bytes()
    };
    let (gateway, a) = with_conversation_a();
    let mut turns = vec!["task A"];
    for (k, (answer, next)) in [("one", "two"), ("three", "four"), ("five", "six")]
        .into_iter()
        .enumerate()
    {
        turns.extend([answer, next]);
        let f = gateway
            .forward(Api::AnthropicMessages, &request(&turns), None)
            .unwrap();
        assert_eq!(
            (f.conversation.as_str(), f.continued),
            (a.as_str(), true),
            "{k}"
        );
        // what is forwarded is the client's own bytes, the block and its marker included
        let sent: serde_json::Value = serde_json::from_slice(&f.body).unwrap();
        assert_eq!(
            sent["messages"][turns.len() - 1]["content"][0]["cache_control"]["type"],
            "ephemeral"
        );
        assert!(sent["messages"][turns.len() - 3]["content"].is_string());
    }
    assert_eq!(gateway.conversations(), 1);
    // a message whose text differs is another conversation
    let other = gateway
        .forward(Api::AnthropicMessages, &request(&["task B"]), None)
        .unwrap();
    assert_ne!(other.conversation, a);
}

#[test]
fn a_conversation_being_compacted_holds_up_its_own_requests_and_no_others() {
    let (gateway, a) = with_conversation_a();
    // conversation A is busy (its lock held, as while a large request of it is compacted)
    let busy = Arc::clone(&gateway.index().convs[&a].conv);
    let held = locked(&busy);
    // another conversation goes through, and the figures are read, meanwhile
    let b = forward_on(&gateway, body(&["task B"]));
    let b = b
        .recv_timeout(Duration::from_secs(60))
        .expect("B waited for A");
    assert_ne!(b.unwrap().conversation, a);
    assert_eq!(gateway.conversations(), 2);
    assert_eq!(gateway.conversation_stats().len(), 2);
    // A's next request waits for A, then continues it
    let next = forward_on(&gateway, body(&["task A", "done A", "more A"]));
    assert!(next.recv_timeout(Duration::from_millis(200)).is_err());
    drop(held);
    let next = next.recv_timeout(Duration::from_secs(60)).unwrap().unwrap();
    assert_eq!(next.conversation, a);
    assert!(next.continued);
}

#[test]
fn a_conversation_forgotten_while_it_is_compacted_finishes_and_leaves_no_tip_behind() {
    let (gateway, a) = with_conversation_a();
    let busy = Arc::clone(&gateway.index().convs[&a].conv);
    let held = locked(&busy);
    let next = forward_on(&gateway, body(&["task A", "done A", "more A"]));
    // the request found A (it holds A, as the index and this test do) and waits for its lock; A is
    // forgotten meanwhile (the memory cap, say)
    let started = std::time::Instant::now();
    while Arc::strong_count(&busy) < 3 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the request never found A"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(gateway.forget_least_recent());
    drop(held);
    let next = next.recv_timeout(Duration::from_secs(60)).unwrap().unwrap();
    assert!(next.continued);
    assert_eq!(gateway.conversations(), 0);
    assert!(gateway.index().tips.is_empty());
    // its next request starts it again from its history
    let again = gateway
        .forward(
            Api::AnthropicMessages,
            &body(&["task A", "done A", "more A", "ok", "last"]),
            None,
        )
        .unwrap();
    assert!(!again.continued);
}

#[test]
fn the_last_requests_kept_for_the_next_chains_stay_within_their_bytes() {
    let (gateway, a) = with_conversation_a();
    let mut g = Arc::try_unwrap(gateway).ok().expect("one owner");
    let known_bytes = |g: &Gateway| g.index().known_bytes;
    let kept = |g: &Gateway, id: &str| g.index().convs[id].known.is_some();
    assert!(kept(&g, &a) && known_bytes(&g) > 0);
    // room for one conversation's last request, not two: the one used least recently lets go of its own
    g.max_known_bytes = 2_000;
    let (long_a, long_b) = (
        format!("task A {}", "a".repeat(900)),
        format!("task B {}", "b".repeat(900)),
    );
    let mut turns_a = vec![long_a.as_str()];
    let mut turns_b = vec![long_b.as_str()];
    let a = g
        .forward(Api::AnthropicMessages, &body(&turns_a), None)
        .unwrap()
        .conversation;
    let b = g
        .forward(Api::AnthropicMessages, &body(&turns_b), None)
        .unwrap()
        .conversation;
    for k in 0..4 {
        turns_a.extend(["done", "next"]);
        turns_b.extend(["done", "next"]);
        let out_a = g
            .forward(Api::AnthropicMessages, &body(&turns_a), None)
            .unwrap();
        assert!(
            out_a.continued && out_a.conversation == a,
            "request {k} of A"
        );
        assert!(kept(&g, &a) && !kept(&g, &b), "request {k} of A");
        let out_b = g
            .forward(Api::AnthropicMessages, &body(&turns_b), None)
            .unwrap();
        assert!(
            out_b.continued && out_b.conversation == b,
            "request {k} of B"
        );
        assert!(kept(&g, &b));
        assert!(known_bytes(&g) <= g.max_known_bytes, "{}", known_bytes(&g));
    }
    // a request too large to keep lets go of what its conversation kept; forgetting a conversation, of its own
    g.max_known_bytes = 1_000;
    turns_b.extend(["done", "next"]);
    let out_b = g
        .forward(Api::AnthropicMessages, &body(&turns_b), None)
        .unwrap();
    assert!(out_b.continued && !kept(&g, &b));
    turns_a.extend(["done", "next"]);
    g.max_known_bytes = 2_000;
    g.forward(Api::AnthropicMessages, &body(&turns_a), None)
        .unwrap();
    assert!(kept(&g, &a));
    g.index().forget(&a);
    assert_eq!(known_bytes(&g), 0);
    assert!(g.index().firsts.is_empty());
}

/// Under a request budget, what a request holds besides its messages — the tool definitions (and Responses'
/// `instructions`) — counts against it: a request whose messages alone fit, but not with its tools, is cut.
#[test]
fn tool_definitions_count_against_the_request_budget() {
    let read = |k: usize| -> String {
        (0..40)
            .map(|i| {
                format!("let value_{k}_{i} = compute_{i}(input_{k}); // step {i} of file {k}\n")
            })
            .collect()
    };
    let mut messages = vec![serde_json::json!({"role": "user", "content": "read them"})];
    for k in 0..12 {
        messages.push(
            serde_json::json!({"role": "assistant", "content": [{"type": "tool_use",
            "id": format!("t{k}"), "name": "Read", "input": {"file_path": format!("/f{k}")}}]}),
        );
        messages.push(
            serde_json::json!({"role": "user", "content": [{"type": "tool_result",
            "tool_use_id": format!("t{k}"), "content": read(k)}]}),
        );
    }
    let tools: Vec<serde_json::Value> = (0..40)
        .map(|t| serde_json::json!({"name": format!("tool_{t}"), "description": "A tool of the agent's, described at length. ".repeat(12),
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}))
        .collect();
    let request = |tools: &[serde_json::Value]| {
        serde_json::json!({"model": "m", "max_tokens": 10, "tools": tools, "messages": messages})
            .to_string()
            .into_bytes()
    };
    let alone = Gateway::new(
        PolicyFile::default()
            .resolve(Some("smart"), None, &|_| None)
            .unwrap(),
    )
    .unwrap()
    .forward(Api::AnthropicMessages, &request(&[]), None)
    .unwrap()
    .report
    .tokens_after;
    let tools_tokens = preamble(None, [Some(&serde_json::to_string(&tools).unwrap()), None]).1;
    assert!(tools_tokens > alone / 2, "{tools_tokens} against {alone}");
    // a budget the messages fit in alone, but not beside the tools
    let budget = alone + tools_tokens / 2;
    let policy = format!("[profiles.b]\nextends = \"smart\"\nrequest_budget = {budget}\n");
    let settings = PolicyFile::parse(&policy, "test")
        .unwrap()
        .resolve(Some("b"), None, &|_| None)
        .unwrap();
    let g = Gateway::new(settings).unwrap();
    let without = g
        .forward(Api::AnthropicMessages, &request(&[]), None)
        .unwrap();
    assert_eq!(without.report.tokens_after, alone, "without tools it fits");
    let with = Gateway::new(g.settings.clone())
        .unwrap()
        .forward(Api::AnthropicMessages, &request(&tools), None)
        .unwrap();
    assert!(
        with.report.tokens_after + tools_tokens <= budget,
        "{} + {tools_tokens} > {budget}",
        with.report.tokens_after
    );
}
