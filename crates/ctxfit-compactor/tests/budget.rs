//! `request_budget` holds: when the rules' cuts leave a request above it, stale results go further — oldest
//! first (from the oldest the regret bound can pay to write the cache again from), to their first and last
//! lines, then to a pointer — edits and the newest result never; and a request whose other part alone is above it
//! is refused by the token guard.

mod common;

use common::{compactor, session};
use ctxfit_compactor::{Action, BUDGET_RULE};
use serde_json::json;

/// A source file of `n` lines no other result shares.
fn source(tag: &str, n: usize) -> String {
    (0..n)
        .map(|i| format!("    let {tag}_{i} = compute_{tag}(input, {});", i * 7919))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Ten first reads of 300 lines (which `smart`'s rules keep whole), an edit among them, and a newest result the
/// model has not answered.
fn long_session() -> ctxfit_model::Conversation {
    let mut calls = Vec::new();
    for k in 0..10 {
        calls.push((
            "Read",
            json!({"file_path": format!("/src/part{k}.rs")}),
            source(&format!("part{k}"), 300),
        ));
        if k == 4 {
            calls.push((
                "Edit",
                json!({"file_path": "/src/part4.rs", "old_string": "a", "new_string": "b"}),
                "The file /src/part4.rs has been updated.".to_owned(),
            ));
        }
    }
    calls.push((
        "Bash",
        json!({"command": "cargo test"}),
        "test result: ok. 12 passed".to_owned(),
    ));
    // the request before the model answers the newest result
    let mut conv = session(&calls);
    conv.messages.pop();
    conv
}

/// Tokens of the request when every stale result that may go is a pointer: the least a budget can reach.
fn floor(conv: &ctxfit_model::Conversation) -> usize {
    budgeted(1).compact_history(conv, None).tokens_after
}

fn budgeted(limit: usize) -> ctxfit_compactor::Compactor {
    compactor(
        &format!("[profiles.b]\nextends = \"smart\"\nrequest_budget = {limit}\n"),
        "b",
    )
}

/// [`budgeted`] with the regret bound out of the way: escalation always begins at the oldest result.
fn unbounded(limit: usize) -> ctxfit_compactor::Compactor {
    compactor(
        &format!(
            "[profiles.b]\nextends = \"smart\"\nrequest_budget = {limit}\nmax_regret = 1000000\n"
        ),
        "b",
    )
}

#[test]
fn a_request_above_the_budget_is_cut_down_to_it_oldest_first() {
    let conv = long_session();
    let unbudgeted = {
        let mut c = budgeted(0);
        c.compact_history(&conv, None).tokens_after
    };
    let least = floor(&conv);
    assert!(least < unbudgeted / 2, "{least} of {unbudgeted}");
    let limit = (least + unbudgeted) / 2;
    let mut c = unbounded(limit);
    let report = c.compact_history(&conv, None);
    assert!(
        report.tokens_after <= limit,
        "{} > {limit} (unbudgeted {unbudgeted})",
        report.tokens_after
    );
    assert!(c.check_request(&report).is_ok());
    let escalated: Vec<_> = report
        .new_blocks
        .iter()
        .filter(|b| b.rule == BUDGET_RULE)
        .collect();
    assert!(!escalated.is_empty());
    let projected = c.project(&conv);
    let results: Vec<(String, String)> = projected
        .messages
        .iter()
        .zip(&conv.messages)
        .flat_map(|(p, o)| {
            p.tool_results()
                .zip(o.tool_results())
                .map(|(p, o)| (p.content.joined_text(), o.content.joined_text()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(results.len(), 12);
    // the edit (the sixth result) and the newest result are sent whole
    assert_eq!(results[5].0, results[5].1);
    assert_eq!(results[11].0, results[11].1);
    // oldest first: the results cut by the budget are the oldest ones
    let cut: Vec<usize> = (0..results.len())
        .filter(|&i| results[i].0 != results[i].1)
        .collect();
    let first_whole = (0..11).find(|i| !cut.contains(i) && *i != 5).unwrap_or(11);
    assert!(
        cut.iter().all(|&i| i < first_whole),
        "cut {cut:?}, first whole {first_whole}"
    );
    // honest: the original's first and last lines in order with a marker that says how to get the rest, or a
    // pointer that says the same
    for &i in &cut {
        let (sent, original) = &results[i];
        let lines: Vec<&str> = original.lines().collect();
        if sent.starts_with("[tool result of") {
            assert!(sent.contains("run the call again"), "{sent}");
            continue;
        }
        let got: Vec<&str> = sent.lines().collect();
        assert_eq!(got[..10], lines[..10]);
        assert_eq!(got[got.len() - 10..], lines[lines.len() - 10..]);
        assert!(
            got[10].contains(
                "lines left out to keep the request within its token budget; run the call again"
            ),
            "{}",
            got[10]
        );
    }
    // the middle budget is met by first and last lines, before any pointer
    assert!(
        escalated.iter().any(|b| b.action == Action::Replaced),
        "{escalated:?}"
    );
    // sticky: the next request sends the same bytes for every result decided
    let again = c.compact(&conv, None);
    assert!(again.new_blocks.is_empty(), "{:?}", again.new_blocks);
}

#[test]
fn a_tighter_budget_turns_excerpts_into_pointers_and_then_refuses() {
    let conv = long_session();
    let pointers_only = {
        let mut c = budgeted(1);
        c.compact_history(&conv, None);
        c.project(&conv)
    };
    // at a budget nothing stale can meet, every stale result but the edit is a pointer, and the guard refuses
    let mut c = budgeted(1);
    let report = c.compact_history(&conv, None);
    assert!(c.check_request(&report).is_err());
    let texts: Vec<String> = pointers_only
        .messages
        .iter()
        .flat_map(|m| m.tool_results().map(|r| r.content.joined_text()))
        .collect();
    for (i, t) in texts.iter().enumerate() {
        match i {
            5 => assert!(
                t.starts_with("The file /src/part4.rs has been updated."),
                "{t}"
            ),
            11 => assert!(t.starts_with("test result: ok"), "{t}"),
            _ => assert!(t.starts_with("[tool result of 300 lines"), "{i}: {t}"),
        }
    }
}

#[test]
fn with_a_retrieval_tool_every_budget_cut_names_its_handle() {
    let conv = long_session();
    let mut c = budgeted(0);
    let unbudgeted = c.compact_history(&conv, None).tokens_after;
    let mut c = compactor(
        &format!(
            "[profiles.b]\nextends = \"smart\"\nrequest_budget = {}\nretrieval_tool = \"fetch_result\"\n",
            (floor(&conv) + unbudgeted) / 2
        ),
        "b",
    );
    let report = c.compact_history(&conv, None);
    let projected = c.project(&conv);
    let budget_cuts: Vec<_> = report
        .new_blocks
        .iter()
        .filter(|b| b.rule == BUDGET_RULE)
        .collect();
    assert!(!budget_cuts.is_empty());
    for b in budget_cuts {
        let ctxfit_model::Block::ToolResult(r) =
            &projected.messages[b.message].content.blocks[b.block]
        else {
            panic!("not a tool result: {b:?}")
        };
        let text = r.content.joined_text();
        assert!(text.contains("call fetch_result with"), "{text}");
    }
}

#[test]
fn a_restored_compactor_sends_what_the_budgeted_one_sent() {
    let conv = long_session();
    let unbudgeted = budgeted(0).compact_history(&conv, None).tokens_after;
    let limit = (floor(&conv) + unbudgeted) / 2;
    let mut c = budgeted(limit);
    let before = c.revision();
    let report = c.compact_history(&conv, None);
    assert!(report.new_blocks.iter().any(|b| b.rule == BUDGET_RULE));
    assert_ne!(
        c.revision(),
        before,
        "a saved state would be thought current"
    );
    let mut restored = budgeted(limit);
    restored.restore(c.save()).unwrap();
    let again = restored.compact(&conv, None);
    assert!(again.new_blocks.is_empty(), "{:?}", again.new_blocks);
    assert_eq!(restored.project(&conv), c.project(&conv));
}

/// Which results `c` sends other than as they were.
fn cut_results(c: &ctxfit_compactor::Compactor, conv: &ctxfit_model::Conversation) -> Vec<usize> {
    let projected = c.project(conv);
    let sent = projected
        .messages
        .iter()
        .flat_map(|m| m.tool_results().map(|r| r.content.joined_text()));
    let original = conv
        .messages
        .iter()
        .flat_map(|m| m.tool_results().map(|r| r.content.joined_text()));
    sent.zip(original)
        .enumerate()
        .filter(|(_, (s, o))| s != o)
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn escalation_starts_where_the_regret_bound_can_pay_for_the_cache_it_rewrites() {
    let conv = long_session();
    // the last request (the newest result, a line) is the first above the limit
    let mut before_last = conv.clone();
    before_last.messages.truncate(conv.messages.len() - 2);
    let last = budgeted(0).compact_history(&conv, None).tokens_after;
    let penultimate = budgeted(0).compact_history(&before_last, None).tokens_after;
    assert!(penultimate < last);
    let limit = last - 1;

    // a conversation this short has saved nothing and may spend 3% of what it cost: cutting from the oldest read
    // would write almost all of it to the cache again; escalation starts at the latest reads that bring the
    // request down, and the older ones are read from the cache
    let mut c = budgeted(limit);
    let report = c.compact_history(&conv, None);
    assert!(
        report.tokens_after <= limit,
        "{} > {limit}",
        report.tokens_after
    );
    let cut = cut_results(&c, &conv);
    assert!(!cut.is_empty());
    assert!(cut.iter().all(|i| (6..11).contains(i)), "cut {cut:?}");
    // a break the bound cannot pay for is made to count: every read after it goes (riding on the tail written
    // again), so the next break comes as late as it can
    assert_eq!(cut, (cut[0]..11).collect::<Vec<_>>(), "cut {cut:?}");
    let first = report.first_changed_message.expect("a change");
    assert!(
        first > conv.messages.len() / 2,
        "the cache breaks at message {first}"
    );

    // with the bound out of the way, the oldest go first
    let mut c = unbounded(limit);
    let report = c.compact_history(&conv, None);
    assert!(report.tokens_after <= limit);
    assert_eq!(cut_results(&c, &conv).first(), Some(&0));
}

#[test]
fn a_break_the_bound_cannot_pay_for_takes_every_stale_result_after_it() {
    // a large read, then small ones the model has answered, then the newest result
    let mut calls = Vec::new();
    for k in 0..6 {
        let file = json!({"file_path": format!("/src/part{k}.rs")});
        calls.push(("Read", file, source(&format!("part{k}"), 300)));
    }
    let big = json!({"file_path": "/src/big.rs"});
    calls.push(("Read", big, source("big", 900)));
    for k in 0..4 {
        let file = json!({"file_path": format!("/src/small{k}.rs")});
        calls.push(("Read", file, source(&format!("small{k}"), 40)));
    }
    calls.push(("Bash", json!({"command": "ls"}), "Cargo.toml".to_owned()));
    let mut conv = session(&calls);
    conv.messages.pop();
    let last = budgeted(0).compact_history(&conv, None).tokens_after;
    let limit = last - 1;
    // the small reads alone cannot bring the request down: the break is at the large one, and the small ones
    // after it go too, although the large one's cut alone would do
    let mut c = budgeted(limit);
    let report = c.compact_history(&conv, None);
    assert!(report.tokens_after <= limit);
    assert_eq!(cut_results(&c, &conv), (6..11).collect::<Vec<_>>());
    assert!(
        report.tokens_after < limit * 9 / 10,
        "{} of {limit}",
        report.tokens_after
    );
    // where the bound can pay (it is off), escalation goes only as far as the budget needs, oldest first
    let mut c = unbounded(limit);
    c.compact_history(&conv, None);
    let cut = cut_results(&c, &conv);
    assert_eq!(cut.first(), Some(&0));
    assert!(cut.len() < 6, "{cut:?}");
}

#[test]
fn a_break_takes_every_result_it_writes_again_anyway() {
    // reads the model has answered, then one answer calling three reads at once (their results in one message),
    // small reads after them, and the newest result
    let call = |id: &str, tool: &str, input: serde_json::Value| json!({"type": "tool_use", "id": id, "name": tool, "input": input});
    let read = |tag: &str| {
        let input = json!({"file_path": format!("/src/{tag}.rs")});
        call(&format!("toolu_{tag}"), "Read", input)
    };
    let result = |tag: &str, text: String| json!({"type": "tool_result", "tool_use_id": format!("toolu_{tag}"), "content": text});
    let answer = |calls: Vec<serde_json::Value>| {
        let mut content = vec![json!({"type": "text", "text": "Looking."})];
        content.extend(calls);
        json!({"role": "assistant", "content": content})
    };
    let user = |blocks: Vec<serde_json::Value>| json!({"role": "user", "content": blocks});
    let mut messages = vec![json!({"role": "user", "content": "fix the bug"})];
    let reads = |messages: &mut Vec<serde_json::Value>, tags: &[String], lines: usize| {
        messages.push(answer(tags.iter().map(|t| read(t)).collect()));
        messages.push(user(
            tags.iter().map(|t| result(t, source(t, lines))).collect(),
        ));
    };
    for k in 0..6 {
        reads(&mut messages, &[format!("part{k}")], 300);
    }
    let three: Vec<String> = (0..3).map(|k| format!("par{k}")).collect();
    reads(&mut messages, &three, 300);
    for k in 0..3 {
        reads(&mut messages, &[format!("small{k}")], 40);
    }
    messages.push(answer(vec![call(
        "toolu_ls",
        "Bash",
        json!({"command": "ls"}),
    )]));
    messages.push(user(vec![
        json!({"type": "tool_result", "tool_use_id": "toolu_ls", "content": "Cargo.toml"}),
    ]));
    let conv = ctxfit_model::from_value(json!({"model": "m", "messages": messages})).unwrap();
    let limit = budgeted(0).compact_history(&conv, None).tokens_after - 1;

    // the small reads alone cannot bring the request down, the last of the three could; the cache breaks at
    // their message whichever of them goes, so all three go (and, the break being one the bound cannot pay
    // for, everything after them): the break writes the least it can again
    let mut c = budgeted(limit);
    let report = c.compact_history(&conv, None);
    assert!(report.tokens_after <= limit);
    assert_eq!(cut_results(&c, &conv), (6..12).collect::<Vec<_>>());
}

#[test]
fn what_the_request_holds_besides_the_conversation_counts_against_the_budget() {
    // a system prompt and tools the caller keeps elsewhere, or what a log leaves out: the budget holds for the
    // request as the provider counts it
    let conv = long_session();
    let unbudgeted = budgeted(0).compact_history(&conv, None).tokens_after;
    let least = floor(&conv);
    let limit = (least + unbudgeted) / 2;
    let unseen = (limit - least) / 2;
    let alone = {
        let mut c = budgeted(limit);
        c.compact_history(&conv, None)
    };
    let mut c = budgeted(limit);
    c.set_unseen_tokens(unseen);
    let seen = c.compact_history(&conv, None);
    // the unseen part made the budget cut further, and the whole request fits
    assert!(
        seen.tokens_after < alone.tokens_after,
        "{} vs {}",
        seen.tokens_after,
        alone.tokens_after
    );
    assert!(
        seen.tokens_after + unseen <= limit,
        "{} + {unseen} > {limit}",
        seen.tokens_after
    );
    assert!(
        alone.tokens_after + unseen > limit,
        "the test's unseen part changes nothing"
    );
    // and the guard counts it: the same request is refused once what it holds besides does not fit
    assert!(c.check_request(&seen).is_ok());
    c.set_unseen_tokens(limit);
    assert!(c.check_request(&seen).is_err());
}

#[test]
fn a_caller_reading_only_what_changed_holds_the_request_the_projection_writes() {
    // request by request under a budget: cuts made, and made again smaller by escalation (a decision taken back
    // and replaced) — a caller that keeps its own copy of the messages and converts only those
    // `changes_since` names (as the Python binding does) sends what the projection writes
    let whole = long_session();
    let unbudgeted = budgeted(0).compact_history(&whole, None).tokens_after;
    let limit = (floor(&whole) + unbudgeted) / 2;
    let mut c = unbounded(limit);
    let mut copy: Vec<Option<(usize, ctxfit_model::Message)>> = Vec::new();
    let mut mark = ctxfit_compactor::ChangeMark::default();
    let (mut escalated, mut converted) = (0, 0);
    for end in (3..=whole.messages.len()).step_by(2) {
        let conv = ctxfit_model::Conversation {
            messages: whole.messages[..end].to_vec(),
            ..whole.clone()
        };
        let report = c.compact(&conv, None);
        escalated += report
            .new_blocks
            .iter()
            .filter(|b| b.rule == BUDGET_RULE)
            .count();
        let projection = c.projection(&conv);
        copy.resize(end, None);
        for (i, stamp) in projection.changes_since(mark) {
            if !matches!(&copy[i], Some((s, _)) if *s == stamp) {
                copy[i] = Some((stamp, projection.message(i).into_owned()));
                converted += 1;
            }
        }
        mark = projection.change_mark();
        let held: Vec<&ctxfit_model::Message> = (0..end)
            .map(|i| copy[i].as_ref().map_or(&conv.messages[i], |(_, m)| m))
            .collect();
        let written: Vec<ctxfit_model::Message> =
            projection.messages().map(|m| m.into_owned()).collect();
        assert_eq!(held.len(), written.len());
        for (i, (h, w)) in held.iter().zip(&written).enumerate() {
            assert!(**h == *w, "message {i} of {end}");
        }
        // and nothing more is named than what changed: a second look finds nothing new
        assert_eq!(projection.changes_since(mark).count(), 0);
    }
    assert!(escalated > 0, "escalation ran");
    assert!(converted > 0);
    // a mark of another compactor's state reads from the beginning
    let mut fresh = unbounded(limit);
    fresh.compact(&whole, None);
    let projection = fresh.projection(&whole);
    assert_eq!(
        projection.changes_since(mark).count(),
        projection.changes_since(Default::default()).count()
    );
}

#[test]
fn a_cut_keeps_the_blocks_it_does_not_know_such_as_a_deferred_tools_reference() {
    // Claude Code's `ToolSearch` answers with `tool_reference` blocks, which make a deferred tool callable: text
    // beside them may go, they stay — under escalation's pointer and under a rule's (observation masking's)
    let mut conv = long_session();
    let reference = json!({"type": "tool_reference", "tool_name": "mcp__weather__get_forecast"});
    let text = source("search", 300);
    conv.messages[2] = ctxfit_model::read_message(
        ctxfit_model::WireFormat::Anthropic,
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_00",
            "content": [{"type": "text", "text": text}, reference]}]}),
        "",
    )
    .unwrap();
    let least = floor(&conv);
    let mut masking = compactor("", "mask-last-10");
    let pointers = [
        "[tool result of 300 lines (~",
        // (the pointer's `{lines}` is the result's line count)
        "Old tool output: (300 lines omitted)",
    ];
    for (c, pointer) in [&mut unbounded(least), &mut masking]
        .into_iter()
        .zip(pointers)
    {
        c.compact_history(&conv, None);
        let projected = c.project(&conv);
        let result = projected.messages[2].tool_results().next().unwrap();
        let sent = result.content.joined_text();
        assert!(sent.starts_with(pointer), "{sent}");
        match result.content.blocks.as_slice() {
            [ctxfit_model::Block::Text(_), ctxfit_model::Block::Unknown(kept)] => {
                assert_eq!(kept, &reference)
            }
            other => panic!("{other:?}"),
        }
        // compacting the compacted history again changes nothing
        let again = c.project(&projected);
        assert_eq!(again.messages[2], projected.messages[2]);
    }
}

/// A provider's refusal of the last request as too long for its model teaches the window: the same history
/// compacted again fits it, later requests are held there, each reported count measures the rate again, and
/// `save`/`restore` carry it. A refusal that says no numbers falls back on the request before, which the
/// provider took.
#[test]
fn a_refusal_teaches_the_window_and_later_requests_hold_it() {
    use ctxfit_compactor::window::{Overflow, Window};
    let conv = long_session();
    let smart = || compactor("", "smart");
    let mut c = smart();
    let refused = c.compact_history(&conv, None).tokens_after;
    // nothing learned before a request, nor from a refusal of another kind
    assert_eq!(smart().learn_window(&Overflow { counted: None }), None);
    // the provider counted the request a fifth over its window (its count twice this compactor's)
    let overflow = Overflow {
        counted: Some((2 * refused as u64, (2 * refused as u64) * 5 / 6)),
    };
    let budget = c.learn_window(&overflow).unwrap();
    assert_eq!(budget, refused * 5 / 6);
    assert_eq!(
        c.window().unwrap().limit,
        Some((2 * refused as u64) * 5 / 6)
    );
    let again = c.compact(&conv, None);
    assert!(
        again.tokens_after <= budget && again.tokens_after < refused,
        "{}",
        again.tokens_after
    );
    // the provider counts the request sent again 3× this compactor's count: the window shrinks to match
    let reported = 3 * again.tokens_after;
    let next = c.compact(&conv, Some(reported));
    let w = c.window().unwrap();
    assert_eq!(
        w.budget,
        (w.limit.unwrap() as f64 * again.tokens_after as f64 / reported as f64) as usize
    );
    assert!(
        next.tokens_after <= w.budget,
        "{} > {}",
        next.tokens_after,
        w.budget
    );
    // saved and restored with the decisions
    let saved = c.save();
    assert_eq!(saved.window, Some(w));
    let mut restored = smart();
    restored.restore(saved).unwrap();
    assert_eq!(restored.window(), Some(w));
    assert_eq!(restored.settings().request_budget, w.budget);
    // no numbers: the request before the refused one, as both counted it
    let mut bare = smart();
    let mut shorter = conv.clone();
    shorter.messages.truncate(conv.messages.len() - 2);
    let before = bare.compact_history(&shorter, None).tokens_after;
    let last = bare.compact(&conv, Some(1234)).tokens_after;
    assert!(before < last);
    assert_eq!(bare.learn_window(&Overflow { counted: None }), Some(before));
    assert_eq!(
        bare.window(),
        Some(Window {
            limit: Some(1234),
            budget: before
        })
    );
    // the profile's own budget, where lower, still holds: a window measured above it does not raise it
    let mut tight = budgeted(refused / 2);
    let sent = tight.compact_history(&conv, None).tokens_after as u64;
    let learned = tight.learn_window(&Overflow {
        counted: Some((2 * sent, 2 * sent * 9 / 10)),
    });
    assert!(learned.unwrap() < refused / 2);
    tight.compact(&conv, Some(1));
    assert!(tight.window().unwrap().budget > refused / 2);
    assert_eq!(tight.settings().request_budget, refused / 2);
}
