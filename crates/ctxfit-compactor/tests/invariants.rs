//! The compactor's invariants, property-tested on random histories: parallel tool calls, list contents,
//! multi-byte text, already-compacted results, long listings and tracebacks, JSON lists of records and records
//! fetched again, under
//! several profiles. 1,000 cases per invariant by default, so that `cargo test --workspace` is something a newcomer
//! waits for; `.ci/run` runs 10,000 in a release build (`CTXFIT_PROPTEST_CASES` sets the count).

use ctxfit_compactor::{Compactor, PolicyFile, Settings};
use ctxfit_model::{
    Block, Content, Conversation, Message, Role, TextBlock, ToolCallIndex, ToolResult, ToolUse,
    WireFormat,
};
use ctxfit_retention::content_chars;
use proptest::prelude::*;

const TOOLS: &[&str] = &[
    "Read",
    "Bash",
    "get_orderbook",
    "store_memory",
    "search_web",
    "Grep",
    "custom_tool",
];
const PIECES: &[&str] = &[
    "lorem ipsum ",
    "fn main() {}\n",
    "日本語のテキスト",
    "é",
    "😀",
    "\t",
    "  ",
    "{\"a\": 1}",
    "\n",
    "x",
    // the shapes the excerpt rule reads: a long listing's lines, a traceback's frames
    "-rw-r--r-- 1 root root 1157 May  6  2025 a é.py\n",
    "drwxr-xr-x 2 me staff 4.0K 2025-09-10 07:00 src\n",
    "Traceback (most recent call last):\n",
    "  File \"/testbed/pkg/m.py\", line 3, in f\n",
    "    return g(x)\n",
    "ValueError: bad\n",
];
const MARKERS: &[&str] = &[
    "\n[truncated for context management]",
    "\n...[truncated, already processed]",
];

fn text() -> impl Strategy<Value = String> {
    (prop::collection::vec(0..PIECES.len(), 0..120), 0..6usize).prop_map(|(pieces, marker)| {
        let mut s: String = pieces.into_iter().map(|i| PIECES[i]).collect();
        if marker < MARKERS.len() {
            s.push_str(MARKERS[marker]); // sometimes already compacted
        }
        s
    })
}

/// An API result that is a JSON list of records (the excerpt rule's lists): records of a few fields, some nested,
/// in one line or pretty-printed; sometimes one holds prose (and the list is not one of records), sometimes one is
/// already cut (` …`, so the text is not JSON).
fn records() -> impl Strategy<Value = String> {
    const VALUES: &[&str] = &[
        "1",
        "\"é😀\"",
        "{\"n\": [1, 2]}",
        "[{\"k\": \"v\"}, {\"k\": \"w\"}]",
        "null",
    ];
    const PROSE: &str = "\"a long string of prose that goes on and on, far beyond what a record's field holds, past two hundred bytes of text in all: lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor\"";
    (
        prop::collection::vec(prop::collection::vec(0..VALUES.len(), 0..5), 0..60),
        any::<bool>(),
        0..8usize,
    )
        .prop_map(|(records, pretty, odd)| {
            let records: Vec<String> = records
                .iter()
                .enumerate()
                .map(|(i, fields)| {
                    let mut members = vec![format!("\"id\": \"record-{i}\"")];
                    members.extend(
                        fields
                            .iter()
                            .enumerate()
                            .map(|(j, &v)| format!("\"f{j}\": {}", VALUES[v])),
                    );
                    match (odd, i) {
                        (0, 1) => members.push(format!("\"body\": {PROSE}")),
                        (1, 4) => members.push("\"cut\": 1 …".into()),
                        _ => {}
                    }
                    format!("{{{}}}", members.join(", "))
                })
                .collect();
            let sep = if pretty { ",\n  " } else { ", " };
            format!("[{}]", records.join(sep))
        })
}

/// An API result that is one record on one line (the excerpt rule's records fetched again): one of two ids first,
/// then fields from a few values, so that a later result often repeats fields of an earlier one; sometimes
/// pretty-printed (no longer a record on one line) or with a field already cut (not JSON).
fn record() -> impl Strategy<Value = String> {
    const VALUES: &[&str] = &[
        "\"a value long enough to be worth leaving out, é😀\"",
        "{\"nested\": [1, 2, {\"k\": \"a, b}\"}], \"more\": \"text that makes it long\"}",
        "7",
        "\"say \\\"}\\\" twice, and a comma, here\"",
    ];
    (
        0..2usize,
        prop::collection::vec(0..VALUES.len(), 0..12),
        0..6usize,
    )
        .prop_map(|(id, fields, odd)| {
            let mut members = vec![format!("\"id\": \"rec-{id}\"")];
            members.extend(
                fields
                    .iter()
                    .enumerate()
                    .map(|(j, &v)| format!("\"f{}\": {}", j % 3, VALUES[v])),
            );
            match odd {
                0 => format!("{{\n  {}\n}}", members.join(",\n  ")),
                1 => format!("{{{} …}}", members.join(", ")),
                _ => format!("{{{}}}", members.join(", ")),
            }
        })
}

fn content() -> impl Strategy<Value = Content> {
    prop_oneof![
        3 => text().prop_map(Content::text),
        1 => records().prop_map(Content::text),
        1 => record().prop_map(Content::text),
        1 => (text(), any::<bool>(), text()).prop_map(|(a, image, b)| {
            let mut blocks = vec![Block::Text(TextBlock::new(a))];
            if image {
                blocks.push(Block::Image(serde_json::from_str(r#"{"type":"image","source":{"type":"url","url":"u"}}"#).unwrap()));
            }
            blocks.push(Block::Text(TextBlock::new(b)));
            Content::list(blocks)
        }),
    ]
}

/// A turn: parallel tool calls (tool index, result content) and whether the assistant said something first.
type Turn = (bool, Vec<(usize, Content)>);

fn history() -> impl Strategy<Value = Conversation> {
    (
        prop::collection::vec(
            (
                any::<bool>(),
                prop::collection::vec((0..TOOLS.len(), content()), 1..4),
            ),
            1..8,
        ),
        any::<bool>(),
    )
        .prop_map(|(turns, ends_answered): (Vec<Turn>, bool)| build(turns, ends_answered))
}

fn build(turns: Vec<Turn>, ends_answered: bool) -> Conversation {
    let mut conv = Conversation::new(WireFormat::Anthropic);
    conv.messages
        .push(Message::new(Role::User, Content::text("do the task")));
    let mut id = 0;
    for (talk, calls) in turns {
        let mut uses = Vec::new();
        if talk {
            uses.push(Block::Text(TextBlock::new("let me look")));
        }
        let mut results = Vec::new();
        for (tool, content) in calls {
            id += 1;
            uses.push(Block::ToolUse(ToolUse {
                id: format!("t{id}"),
                name: TOOLS[tool].to_owned(),
                input: serde_json::json!({"path": format!("f{}.rs", id % 3)}),
                ..ToolUse::default()
            }));
            results.push(Block::ToolResult(ToolResult {
                tool_use_id: format!("t{id}"),
                content,
                ..ToolResult::default()
            }));
        }
        conv.messages
            .push(Message::new(Role::Assistant, Content::list(uses)));
        conv.messages
            .push(Message::new(Role::User, Content::list(results)));
    }
    if ends_answered {
        conv.messages
            .push(Message::new(Role::Assistant, Content::text("done")));
    }
    conv
}

fn profiles() -> Vec<Settings> {
    let text = r#"
[profiles.low-budget]
extends = "seed-000"
budget = 1

[profiles.batched]
extends = "seed-002"
trigger = "budget"
budget = 200
target = 120
keep_last_tool_uses = 2
clear_tool_inputs = true
exclude_tools = ["Grep"]
retrieval_tool = "ctxfit_retrieve"

[profiles.capped]
extends = "seed-002"
max_tool_result_chars = 300
min_reclaim_tokens = 20
retrieval_tool = "get_original"

[profiles.eager]
extends = "smart"
cache_write_premium = 0

[profiles.held]
extends = "smart"
request_budget = 400
retrieval_tool = "get_original"
"#;
    let file = PolicyFile::parse(text, "test").unwrap();
    [
        "low-budget",
        "seed-002",
        "batched",
        "capped",
        "smart",
        "eager",
        "held",
        "seed-004",
        "keep-last-30",
    ]
    .iter()
    .map(|p| file.resolve(Some(p), None, &|_| None).unwrap())
    .collect()
}

fn compact(settings: &Settings, conv: &Conversation) -> (Conversation, ctxfit_compactor::Report) {
    let registry = ctxfit_plugins::registry().unwrap();
    let mut c = Compactor::new(
        settings.clone(),
        &registry,
        Box::new(ctxfit_tokens::FastEstimator),
    )
    .unwrap();
    let report = c.compact(conv, None);
    (c.project(conv), report)
}

fn results(conv: &Conversation) -> Vec<(usize, &ToolResult)> {
    conv.messages
        .iter()
        .enumerate()
        .flat_map(|(i, m)| m.tool_results().map(move |r| (i, r)))
        .collect()
}

fn config() -> ProptestConfig {
    let cases = std::env::var("CTXFIT_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn pairs_stay_valid(conv in history()) {
        for s in profiles() {
            let (out, _) = compact(&s, &conv);
            let index = ToolCallIndex::build(&out);
            prop_assert_eq!(index.orphan_results().count(), 0);
            prop_assert_eq!(index.calls_without_result().count(), 0);
            prop_assert_eq!(out.tool_use_count(), conv.tool_use_count());
            prop_assert_eq!(out.tool_result_count(), conv.tool_result_count());
        }
    }

    #[test]
    fn compacting_twice_changes_nothing(conv in history()) {
        // (not under a request budget that cut: its cuts change what later results' rules compare them with, so
        // a second pass may cut further — `budget.rs`; it never cuts what the budget cut, checked here too)
        for s in profiles() {
            let (once, first) = compact(&s, &conv);
            if s.request_budget > 0 && first.new_blocks.iter().any(|b| b.rule == ctxfit_compactor::BUDGET_RULE) {
                let (twice, again) = compact(&s, &once);
                for b in again.new_blocks.iter().filter(|b| b.rule == ctxfit_compactor::BUDGET_RULE) {
                    prop_assert!(!results(&once).iter().any(|(_, r)| r.tool_use_id == b.tool_use_id
                        && r.content.joined_text().contains("to keep the request within its token budget")), "{:?}", b);
                }
                prop_assert!(results(&twice).len() == results(&once).len());
                continue;
            }
            let (twice, report) = compact(&s, &once);
            prop_assert_eq!(report.new_blocks.iter().filter(|b| b.action != ctxfit_compactor::Action::InputCleared).count(), 0, "{}", s.profile);
            prop_assert_eq!(&twice, &once, "{}", s.profile);
        }
    }

    #[test]
    fn blocks_never_grow(conv in history()) {
        for s in profiles() {
            let (out, report) = compact(&s, &conv);
            for ((_, before), (_, after)) in results(&conv).into_iter().zip(results(&out)) {
                if ctxfit_retention::holds_media(&before.content) {
                    // an image's cost is not its text: written as a line, it is fewer tokens
                    let tokens = |c| ctxfit_tokens::count_tool_result(&ctxfit_tokens::FastEstimator, c);
                    prop_assert!(tokens(&after.content) <= tokens(&before.content));
                } else {
                    prop_assert!(content_chars(&after.content) <= content_chars(&before.content));
                }
            }
            prop_assert!(report.tokens_after <= report.tokens_before);
        }
    }

    #[test]
    fn unanswered_results_are_untouched(conv in history()) {
        let last_assistant = conv.messages.iter().rposition(|m| m.role == Role::Assistant).unwrap_or(0);
        for s in profiles().into_iter().filter(|s| s.max_tool_result_chars == 0) {
            let (out, _) = compact(&s, &conv);
            for ((i, before), (_, after)) in results(&conv).into_iter().zip(results(&out)) {
                if i > last_assistant {
                    prop_assert_eq!(before, after);
                }
            }
        }
    }

    #[test]
    fn cuts_keep_a_prefix_on_character_boundaries(conv in history()) {
        for s in profiles() {
            let (out, _) = compact(&s, &conv);
            let mut seen_ids = std::collections::HashMap::new();
            for ((_, before), (_, after)) in results(&conv).into_iter().zip(results(&out)) {
                let nth = seen_ids.entry(before.tool_use_id.clone()).and_modify(|n| *n += 1).or_insert(0u32);
                if before == after { continue; }
                let original = before.content.joined_text();
                let cut = after.content.joined_text();
                // with a retrieval tool, the cut ends with the line naming it and this result's handle
                let cut = match &s.retrieval_tool {
                    Some(tool) => {
                        let handle = ctxfit_compactor::handle_of(&before.tool_use_id, *nth);
                        let trailer = format!("[the full result: call {tool} with {}]", serde_json::json!({"handle": handle}));
                        let body = cut.strip_suffix(&trailer);
                        prop_assert!(body.is_some(), "{:?} does not end with {:?}", cut, trailer);
                        let body = body.unwrap_or_default();
                        body.strip_suffix('\n').unwrap_or(body).to_owned()
                    }
                    None => cut,
                };
                if before.content.blocks.iter().any(ctxfit_retain_images::is_image) {
                    // images written as a line each, the text around them as it was
                    let mut rest = cut.clone();
                    for (start, end) in ctxfit_retain_images::image_lines(&cut).into_iter().rev() {
                        rest.replace_range(start..end, "");
                    }
                    if rest == original {
                        continue;
                    }
                }
                let truncated = MARKERS.iter().chain([&ctxfit_compactor::INGESTION_MARKER])
                    .find_map(|m| cut.strip_suffix(m));
                if let Some((head, tail)) = cut.split_once(" lines left out to keep the request within its token budget; run the call again for them …]\n") {
                    // the request budget's first and last lines: a prefix and a suffix of the original's lines
                    let head = head.rsplit_once("\n[… ").map_or("", |(h, _)| h);
                    prop_assert!(original.starts_with(head) && original.ends_with(tail), "{:?} / {:?}", original, cut);
                } else if let Some(kept) = truncated {
                    // the part kept (up to the first marker of this compaction) is a prefix of the original
                    prop_assert!(original.starts_with(kept.split(MARKERS[1]).next().unwrap_or(kept)), "{:?} / {:?}", original, cut);
                } else if let Some(kept) = ctxfit_retain_excerpt::keeps_records_of(&original, &cut) {
                    // lists of records: the original's text, in order, with ` …` where fields were left out
                    prop_assert!(kept, "{:?} / {:?}", original, cut);
                } else if let Some(kept) = ctxfit_retain_excerpt::keeps_fields_of(&original, &cut) {
                    // a record fetched again: the original's text, in order, with markers where fields were left out
                    prop_assert!(kept, "{:?} / {:?}", original, cut);
                } else if cut.starts_with("[lines ") || cut.lines().any(|l| l.starts_with("[excerpt of a stale result — ")) {
                    // an excerpt: the original's lines (less a line number, or a long listing line's mode and name), in order, and markers
                    let blocks: Vec<&str> = before.content.blocks.iter().filter_map(|b| b.as_text()).collect();
                    let original = blocks.join("\n");
                    let mut lines = original.split('\n');
                    for line in cut.lines().filter(|l| !(l.starts_with('[') && l.ends_with(']'))) {
                        prop_assert!(lines.any(|o| ctxfit_retain_excerpt::keeps_of(o, line)), "{:?} / {:?}", original, cut);
                    }
                } else if let Some((head, rest)) = cut.split_once("\n... [truncated: ") {
                    // head and tail of shell output: a prefix and a suffix of the original
                    let tail = rest.split_once("] ...\n").map_or("", |(_, t)| t);
                    prop_assert!(original.starts_with(head) && original.ends_with(tail), "{:?} / {:?}", original, cut);
                } else {
                    // otherwise a one-line pointer
                    prop_assert!(cut.starts_with('[') && !cut.contains('\n'), "{:?}", cut);
                }
            }
        }
    }

    #[test]
    fn deterministic(conv in history()) {
        for s in profiles() {
            prop_assert_eq!(compact(&s, &conv).0, compact(&s, &conv).0);
        }
    }

    #[test]
    fn decisions_are_sticky_across_turns(conv in history()) {
        let registry = ctxfit_plugins::registry().unwrap();
        for s in profiles() {
            let mut c = Compactor::new(s.clone(), &registry, Box::new(ctxfit_tokens::FastEstimator)).unwrap();
            let mut previous: Option<Conversation> = None;
            for k in (1..=conv.messages.len()).filter(|&k| k == conv.messages.len() || conv.messages[k].role == Role::Assistant) {
                let request = Conversation { messages: conv.messages[..k].to_vec(), ..conv.clone() };
                let report = c.compact(&request, None);
                let out = c.project(&request);
                if let Some(prev) = &previous {
                    // everything the previous request compacted is byte-identical now
                    for ((_, p), (_, now)) in results(prev).into_iter().zip(results(&out)) {
                        let (src_p, _) = results(&request).into_iter().find(|(_, r)| r.tool_use_id == p.tool_use_id).map(|(i, r)| (r, i)).unwrap();
                        // (the request budget may cut further what was cut: its one exception, `budget.rs`)
                        let cut_further = now.content.joined_text().contains("to keep the request within its token budget");
                        if p != src_p && !cut_further {
                            prop_assert_eq!(p, now, "{}", s.profile);
                        }
                    }
                    // before the first changed message, the request is the previous one
                    let unchanged = report.first_changed_message.unwrap_or(prev.messages.len()).min(prev.messages.len());
                    prop_assert_eq!(&out.messages[..unchanged], &prev.messages[..unchanged], "{}", s.profile);
                }
                previous = Some(out);
            }
        }
    }

    #[test]
    fn with_pauses_decisions_stay_sticky_and_one_shot_equals_live(
        conv in history(),
        pauses in proptest::collection::vec(proptest::bool::weighted(0.2), 16),
    ) {
        // a time per message: a second apart, or ten minutes (the cache expires) where the agent paused
        let mut now = 1_700_000_000_000u64;
        let times: Vec<Option<u64>> = (0..conv.messages.len())
            .map(|i| {
                now += if pauses[i % pauses.len()] { 600_000 } else { 1_000 };
                Some(now)
            })
            .collect();
        let registry = ctxfit_plugins::registry().unwrap();
        for s in profiles() {
            let new = || Compactor::new(s.clone(), &registry, Box::new(ctxfit_tokens::FastEstimator)).unwrap();
            let mut live = new();
            let (mut previous, mut tokens, mut latest) = (None::<Conversation>, None, None);
            for (k, t) in times.iter().enumerate() {
                if k > 0 && ctxfit_model::begins_response(&conv.messages, k) {
                    let request = Conversation { messages: conv.messages[..k].to_vec(), ..conv.clone() };
                    let report = live.compact_at(&request, tokens, latest);
                    let out = live.project(&request);
                    if let Some(prev) = &previous {
                        let unchanged = report.first_changed_message.unwrap_or(prev.messages.len()).min(prev.messages.len());
                        prop_assert_eq!(&out.messages[..unchanged], &prev.messages[..unchanged], "{}", s.profile);
                    }
                    prop_assert!(report.tokens_after <= report.tokens_before);
                    tokens = Some(report.tokens_after);
                    previous = Some(out);
                }
                latest = t.or(latest);
            }
            live.compact_at(&conv, tokens, latest);
            let mut once = new();
            once.compact_history_at(&conv, None, &times);
            prop_assert_eq!(once.project(&conv), live.project(&conv), "{}", s.profile);
        }
    }
}

/// The histories above reach what they are meant to test: under `smart` without its payback rule (`eager`),
/// every kind of excerpt is cut somewhere in a few hundred of them — a JSON list of records and a record fetched
/// again among them.
#[test]
fn the_generated_histories_reach_every_excerpt() {
    use proptest::strategy::ValueTree;
    let eager = profiles()
        .into_iter()
        .find(|s| s.profile == "eager")
        .unwrap();
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut seen = [false; 4];
    for _ in 0..300 {
        let conv = history().new_tree(&mut runner).unwrap().current();
        let (out, _) = compact(&eager, &conv);
        for (_, r) in results(&out) {
            let text: String = r.content.blocks.iter().filter_map(Block::as_text).collect();
            seen[0] |= text.contains("only the first field of");
            seen[1] |= text.contains("[mode and name only");
            seen[2] |= text.contains(" omitted]");
            seen[3] |= text.contains("of a record fetched again");
        }
    }
    assert_eq!(
        seen, [true; 4],
        "records, long listings, logs, records fetched again"
    );
}
