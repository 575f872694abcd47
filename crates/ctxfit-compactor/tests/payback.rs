//! When a cut is made under the payback rule (`cache_write_premium`, on in `smart`): a cut that would cost more
//! in cache writes than the requests forecast to come will save waits, is tested again at each request, and is
//! made once it pays back; a large cut is made as soon as its result is stale; and of the latest cuts of a
//! request, an older one is made with the newer only when it pays for the cached tail it adds.

mod common;

use common::{live_at, sent_text, session, EAGER};
use ctxfit_compactor::{Compactor, HoldReason, PolicyFile, Report, Settings};
use ctxfit_model::{Conversation, Value};
use serde_json::json;

/// A numbered read (`Read`'s `     12→` column): dropping the numbers saves about a sixth of it, a small cut.
fn numbered_read(path: &str, lines: usize) -> (&'static str, Value, String) {
    let text = (1..=lines)
        .map(|i| format!("{i:>6}→    let value_{i} = compute(input, {i});"))
        .collect::<Vec<_>>()
        .join("\n");
    ("Read", json!({ "file_path": path }), text)
}

/// A long build log: cut to its head, tail and outcome lines, most of it goes — a large cut.
fn long_log() -> (&'static str, Value, String) {
    let text = (0..300)
        .map(|i| format!("   Compiling crate-{i} v0.{i}.0 (/work/crates/crate-{i})"))
        .collect::<Vec<_>>()
        .join("\n");
    ("Bash", json!({"command": "cargo build"}), text)
}

fn status() -> (&'static str, Value, String) {
    ("Bash", json!({"command": "git status"}), "clean".to_owned())
}

/// A profile with the payback rule alone: the regret bound, which can hold a cut that pays back
/// (`ctxfit-replay/tests/promises.rs`), out of the way.
fn profile(policy: &str, name: &str) -> Settings {
    let mut s = common::settings(policy, name);
    s.max_regret = None;
    s
}

/// `smart` with the payback rule's first forecast: as many requests still to come as so far.
const LINDY: &str = "[profiles.lindy]\nextends = \"smart\"\nhorizon = 1\nmin_horizon = 0\n";

/// `smart`'s payback rule alone (see [`profile`]).
fn smart() -> Settings {
    let mut s = PolicyFile::default()
        .resolve(Some("smart"), None, &|_| None)
        .unwrap();
    s.max_regret = None;
    s
}

/// The reports of a live agent's requests (one before each assistant message), and the compactor after them.
fn live(conv: &Conversation, settings: Settings) -> (Vec<Report>, Compactor) {
    live_at(conv, settings, |_| None)
}

/// The request (0-based) at which the result in message `message` was cut, if it was.
fn cut_at(reports: &[Report], message: usize) -> Option<usize> {
    reports
        .iter()
        .position(|r| r.new_blocks.iter().any(|b| b.message == message))
}

#[test]
fn a_small_cut_waits_until_the_requests_forecast_to_come_pay_for_its_cache_write() {
    // the read is the first result (message 2): stale from the third request on (the second answers it)
    let mut calls = vec![numbered_read("src/lib.rs", 400)];
    calls.extend((0..200).map(|_| status()));
    let conv = session(&calls);
    let (reports, c) = live(&conv, smart());
    let at = cut_at(&reports, 2).expect("the read is cut once the conversation is long enough");
    // held back first, for the payback rule
    let held = reports[2]
        .held_back
        .as_ref()
        .expect("held back when first stale");
    assert_eq!(
        (held.results, held.reason),
        (1, HoldReason::CacheWritePremium)
    );
    assert!(at > 10, "cut at request {at}");
    // tested again at every request until then, and held each time
    assert!(reports[2..at].iter().all(|r| r
        .held_back
        .as_ref()
        .is_some_and(|h| h.reason == HoldReason::CacheWritePremium)));
    // made as it would have been at once: the same excerpt
    let cut = &reports[at].new_blocks[0];
    let saved = (cut.tokens_before - cut.tokens_after) as f64;
    assert!(
        saved < cut.tokens_before as f64 / 3.0,
        "a small cut: {cut:?}"
    );
    let (eager_reports, eager_c) = live(&conv, profile(EAGER, "eager"));
    assert_eq!(cut_at(&eager_reports, 2), Some(2));
    assert_eq!(sent_text(&c, &conv, 2), sent_text(&eager_c, &conv, 2));
    assert!(sent_text(&c, &conv, 2).starts_with("[lines 1–400; numbers dropped, count from 1]\n"));
}

#[test]
fn a_write_to_the_one_hour_cache_is_counted_at_its_price() {
    // Anthropic charges 2.0 a token for a write to the cache that lives an hour, not 1.25: the same small cut
    // waits longer to pay back, and the regret bound's ledger counts the writes at that price
    let mut calls = vec![numbered_read("src/lib.rs", 400)];
    calls.extend((0..200).map(|_| status()));
    let conv = session(&calls);
    let mut hour = smart();
    hour.cache_ttl = 3600;
    let (five_reports, five) = live(&conv, smart());
    let (hour_reports, hour) = live(&conv, hour);
    let (at_five, at_hour) = (
        cut_at(&five_reports, 2).unwrap(),
        cut_at(&hour_reports, 2).unwrap(),
    );
    assert!(
        at_hour > at_five,
        "cut at request {at_hour}, {at_five} with the five-minute cache"
    );
    assert_eq!(sent_text(&five, &conv, 2), sent_text(&hour, &conv, 2));
    let (ledger_five, ledger_hour) = (five.ledger(), hour.ledger());
    assert_eq!(
        ledger_five.none[1], ledger_hour.none[1],
        "OpenAI: no write premium"
    );
    assert!(ledger_hour.none[0] > ledger_five.none[0]);
}

#[test]
fn a_large_cut_is_made_as_soon_as_its_result_is_stale() {
    let conv = session(&[long_log(), status(), status()]);
    let (reports, _) = live(&conv, smart());
    assert_eq!(cut_at(&reports, 2), Some(2));
    let cut = &reports[2].new_blocks[0];
    assert!(cut.tokens_after * 5 < cut.tokens_before, "{cut:?}");
    assert!(reports.iter().all(|r| r.held_back.is_none()));
}

#[test]
fn of_a_batch_the_latest_cuts_that_pay_back_are_made_and_the_earlier_wait() {
    // a small cut (the read) waits; the large one after it (the log) pays back alone and is made without it
    let mut calls = vec![numbered_read("src/lib.rs", 400), long_log()];
    calls.extend((0..200).map(|_| status()));
    let conv = session(&calls);
    let (reports, c) = live(&conv, smart());
    assert_eq!(cut_at(&reports, 4), Some(3));
    let read_cut = cut_at(&reports, 2).expect("the read is cut later");
    assert!(read_cut > 10, "{read_cut}");
    let held = reports[3].held_back.as_ref().unwrap();
    assert_eq!(
        (held.results, held.reason),
        (1, HoldReason::CacheWritePremium)
    );
    // every decision is made once: the last request changes nothing, and both results are sent cut
    let last = reports.last().unwrap();
    assert!(last.new_blocks.is_empty());
    assert!(sent_text(&c, &conv, 2).starts_with("[lines 1–400; numbers dropped, count from 1]\n"));
    let log = sent_text(&c, &conv, 4);
    assert!(log.contains(" lines omitted]"), "{log}");
}

#[test]
fn without_the_premium_every_cut_is_made_as_soon_as_its_result_is_stale() {
    let mut calls = vec![numbered_read("src/lib.rs", 400)];
    calls.extend((0..3).map(|_| status()));
    let conv = session(&calls);
    let (reports, _) = live(&conv, profile(EAGER, "eager"));
    assert_eq!(cut_at(&reports, 2), Some(2));
    assert!(reports.iter().all(|r| r.held_back.is_none()));
    // under smart, the same short conversation never pays for the cut: it is never made
    let (reports, _) = live(&conv, smart());
    assert_eq!(cut_at(&reports, 2), None);
}

#[test]
fn one_shot_makes_the_cuts_a_live_agent_made() {
    let mut calls = vec![numbered_read("src/a.rs", 120), long_log()];
    calls.extend((0..30).map(|_| status()));
    calls.push(numbered_read("src/b.rs", 200));
    calls.extend((0..30).map(|_| status()));
    let conv = session(&calls);
    let (_, live_c) = live(&conv, smart());
    let registry = ctxfit_plugins::registry().unwrap();
    let mut once =
        Compactor::new(smart(), &registry, Box::new(ctxfit_tokens::FastEstimator)).unwrap();
    // the live agent's last request is the history before the final answer
    let mut history = conv.clone();
    history.messages.pop();
    once.compact_history(&history, None);
    assert_eq!(once.project(&history), live_c.project(&history));
}

#[test]
fn a_waiting_cut_does_not_ride_on_the_surplus_of_a_large_cut_after_it() {
    // the read's small cut waits; a few requests later the log's large cut pays back at once, with a surplus
    // that would also pay for writing the read's whole tail again — but the read's own cut does not pay for the
    // stretch of tail it adds, so it keeps waiting, and is made once it does
    let mut calls = vec![numbered_read("src/lib.rs", 400)];
    calls.extend((0..6).map(|_| status()));
    calls.push(long_log());
    calls.extend((0..200).map(|_| status()));
    let conv = session(&calls);
    let log_message = 2 + 2 * 7;
    let (reports, c) = live(&conv, smart());
    let log_cut = cut_at(&reports, log_message).expect("the log is cut");
    let read_cut = cut_at(&reports, 2).expect("the read is cut later");
    assert_eq!(log_cut, 9, "the log's cut is made as soon as it is stale");
    assert!(
        read_cut > log_cut,
        "read cut at {read_cut}, log at {log_cut}"
    );
    let held = reports[log_cut].held_back.as_ref().unwrap();
    assert_eq!(
        (held.results, held.reason),
        (1, HoldReason::CacheWritePremium)
    );
    // the read waited until then, and its rule was asked again when it was made: the same excerpt as if it had
    // been cut at once
    let (_, eager_c) = live(&conv, profile(EAGER, "eager"));
    assert_eq!(sent_text(&c, &conv, 2), sent_text(&eager_c, &conv, 2));
}

/// A live agent that says when it sends each request: one second after the one before, but `gap_ms` after
/// request `gap_after` (0-based).
fn live_timed(
    conv: &Conversation,
    settings: Settings,
    gap_after: usize,
    gap_ms: u64,
) -> (Vec<Report>, Compactor) {
    live_at(conv, settings, |k| {
        let pause = if k > gap_after { gap_ms - 1_000 } else { 0 };
        Some(1_700_000_000_000 + k as u64 * 1_000 + pause)
    })
}

#[test]
fn a_waiting_cut_is_made_when_the_cache_has_expired() {
    // the read's small cut waits (it does not pay for rewriting the cached tail) until the agent pauses for six
    // minutes: the provider's five-minute cache is gone, the whole request is written anyway, and the cut is free
    let mut calls = vec![numbered_read("src/lib.rs", 400)];
    calls.extend((0..8).map(|_| status()));
    let conv = session(&calls);
    let (warm, _) = live_timed(&conv, smart(), 4, 60_000);
    assert_eq!(
        cut_at(&warm, 2),
        None,
        "a pause of a minute leaves the cache warm"
    );
    let (cold, c) = live_timed(&conv, smart(), 4, 6 * 60_000);
    assert_eq!(
        cut_at(&cold, 2),
        Some(5),
        "made at the first request after the pause"
    );
    assert!(cold[2..5].iter().all(|r| r
        .held_back
        .as_ref()
        .is_some_and(|h| h.reason == HoldReason::CacheWritePremium)));
    assert!(sent_text(&c, &conv, 2).starts_with("[lines 1–400; numbers dropped, count from 1]\n"));
    // the report says which request found the cache expired: the one after the pause, and no other
    let expired = |reports: &[Report]| -> Vec<usize> {
        (reports.iter().enumerate())
            .filter(|(_, r)| r.cache_expired)
            .map(|(k, _)| k)
            .collect()
    };
    assert_eq!(expired(&cold), [5]);
    assert_eq!(expired(&warm), [0usize; 0]);
    // a profile that says the cache lives an hour (or forever, 0) keeps waiting through the same pause
    for ttl in [3600, 0] {
        let hour = profile(
            &format!("[profiles.hour]\nextends = \"smart\"\ncache_ttl = {ttl}\n"),
            "hour",
        );
        assert_eq!(hour.cache_ttl, ttl);
        let (reports, _) = live_timed(&conv, hour, 4, 6 * 60_000);
        assert_eq!(cut_at(&reports, 2), None, "ttl {ttl}");
    }
    // without times (compact), nothing is known to have expired
    let (untimed, _) = live(&conv, smart());
    assert_eq!(cut_at(&untimed, 2), None);
}

#[test]
fn one_shot_with_the_log_times_makes_the_cuts_a_live_agent_made_at_those_times() {
    let mut calls = vec![numbered_read("src/lib.rs", 400)];
    calls.extend((0..8).map(|_| status()));
    let conv = session(&calls);
    let (_, live_c) = live_timed(&conv, smart(), 4, 6 * 60_000);
    // the times a log would record: each request is sent when its last message (the result) was written
    let mut times = vec![None; conv.messages.len()];
    let (mut now, mut request) = (1_700_000_000_000u64, 0);
    for mi in 1..conv.messages.len() {
        if ctxfit_model::begins_response(&conv.messages, mi) {
            times[mi - 1] = Some(now);
            now += if request == 4 { 6 * 60_000 } else { 1_000 };
            request += 1;
        }
    }
    let registry = ctxfit_plugins::registry().unwrap();
    let mut history = conv.clone();
    history.messages.pop();
    let mut once =
        Compactor::new(smart(), &registry, Box::new(ctxfit_tokens::FastEstimator)).unwrap();
    let report = once.compact_history_at(&history, None, &times[..history.messages.len()]);
    assert!(report.new_blocks.iter().any(|b| b.message == 2));
    assert_eq!(once.project(&history), live_c.project(&history));
    // the time of the last request survives a save: after a restart, an expiry is still seen
    let saved = once.save();
    assert_eq!(saved.last_sent_at, times[history.messages.len() - 1]);
    let json = serde_json::to_string(&saved).unwrap();
    let back: ctxfit_compactor::SavedState = serde_json::from_str(&json).unwrap();
    assert_eq!(back, saved);
    // a state saved before the field existed still reads
    let mut old: serde_json::Value = serde_json::from_str(&json).unwrap();
    old.as_object_mut().unwrap().remove("last_sent_at");
    let old: ctxfit_compactor::SavedState = serde_json::from_value(old).unwrap();
    assert_eq!(old.last_sent_at, None);
}

#[test]
fn the_cache_expires_after_its_lifetime_not_at_it() {
    use ctxfit_compactor::cache_expired;
    let t = 1_700_000_000_000;
    assert!(!cache_expired(t, t + 300_000, 300));
    assert!(cache_expired(t, t + 300_001, 300));
    assert!(!cache_expired(t, t + 10_000_000_000, 0), "0: forever");
    assert!(!cache_expired(t + 5, t, 300), "a clock that went back");
}

#[test]
fn a_request_says_which_cache_it_asks_for() {
    use ctxfit_compactor::stated_cache_ttl;
    let conv = |system: serde_json::Value, last: serde_json::Value| {
        ctxfit_model::from_value(json!({"system": system, "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": [last]}]}))
        .unwrap()
    };
    let plain = json!({"type": "text", "text": "go on"});
    let hour = json!({"type": "text", "text": "go on", "cache_control": {"type": "ephemeral", "ttl": "1h"}});
    let five = json!({"type": "text", "text": "go on", "cache_control": {"type": "ephemeral"}});
    assert_eq!(
        stated_cache_ttl(&conv(json!("be brief"), plain.clone()), 0),
        None
    );
    assert_eq!(
        stated_cache_ttl(&conv(json!("be brief"), hour.clone()), 0),
        Some(3600)
    );
    assert_eq!(
        stated_cache_ttl(&conv(json!("be brief"), five.clone()), 0),
        Some(300)
    );
    // only the messages from `from` on are read (the ones new to the request), and the system prompt
    assert_eq!(
        stated_cache_ttl(&conv(json!("be brief"), hour.clone()), 3),
        None
    );
    assert_eq!(stated_cache_ttl(&conv(json!([hour]), plain), 3), Some(3600));
    // the longest asked for wins
    assert_eq!(
        stated_cache_ttl(
            &conv(
                json!([five]),
                json!({"type": "text", "text": "x", "cache_control": {"type": "ephemeral", "ttl": "1h"}})
            ),
            0
        ),
        Some(3600)
    );
    // the request's own fields: Anthropic's request-level mark (automatic caching), a tool definition's mark,
    // OpenAI's 24-hour retention; `"in_memory"` states nothing
    let with = |fields: serde_json::Value| {
        let mut body = json!({"messages": [{"role": "user", "content": "hi"}]});
        body.as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        stated_cache_ttl(&ctxfit_model::from_value(body).unwrap(), 1)
    };
    let hour_mark = json!({"type": "ephemeral", "ttl": "1h"});
    assert_eq!(with(json!({"cache_control": hour_mark})), Some(3600));
    assert_eq!(
        with(json!({"cache_control": {"type": "ephemeral"}})),
        Some(300)
    );
    assert_eq!(
        with(
            json!({"tools": [{"name": "Read", "input_schema": {"type": "object"},
            "cache_control": hour_mark}]})
        ),
        Some(3600)
    );
    assert_eq!(
        with(json!({"tools": [{"name": "Read", "input_schema": {"type": "object"}}]})),
        None
    );
    assert_eq!(
        with(json!({"model": "gpt-5", "prompt_cache_retention": "24h"})),
        Some(86_400)
    );
    assert_eq!(
        with(json!({"model": "gpt-5", "prompt_cache_retention": "in_memory"})),
        None
    );
    assert_eq!(with(json!({"cache_control": null})), None);
    // a gateway that keeps the request's fields apart reads them alone
    let fields = json!({"prompt_cache_retention": "24h", "cache_control": hour_mark,
        "tools": [{"name": "Read", "cache_control": {"type": "ephemeral"}}]});
    assert_eq!(
        ctxfit_compactor::requested_cache_ttl(fields.as_object().unwrap()),
        Some(86_400)
    );
    assert_eq!(
        ctxfit_compactor::requested_cache_ttl(&serde_json::Map::new()),
        None
    );
    // a compactor told one hour keeps the read's cut waiting through a six-minute pause
    let mut calls = vec![numbered_read("src/lib.rs", 400)];
    calls.extend((0..8).map(|_| status()));
    let session = session(&calls);
    let registry = ctxfit_plugins::registry().unwrap();
    let mut c = Compactor::new(smart(), &registry, Box::new(ctxfit_tokens::FastEstimator)).unwrap();
    c.set_cache_ttl(3600);
    assert_eq!(c.settings().cache_ttl, 3600);
    let (reports, _) = live_timed(&session, c.settings().clone(), 4, 6 * 60_000);
    assert_eq!(cut_at(&reports, 2), None);
}

#[test]
fn a_session_that_paused_before_makes_a_small_cut_sooner() {
    // at a request that finds the cache expired, a cut token saves a cache write, not a read: a session that has
    // paused before is forecast to pause again as often, and the read's small cut pays back sooner than in the
    // same session without its pauses (measured with the forecast of as many requests again as so far, under
    // which the read's cut still waits in both)
    let lindy = || profile(LINDY, "lindy");
    let mut calls: Vec<_> = (0..6).map(|_| status()).collect();
    calls.push(numbered_read("src/lib.rs", 400));
    calls.extend((0..200).map(|_| status()));
    let conv = session(&calls);
    let read = 14;
    let start = 1_700_000_000_000u64;
    let steady = |k: usize| Some(start + k as u64 * 1_000);
    // six minutes before request 2, long before the read arrives
    let paused = |k: usize| Some(start + k as u64 * 1_000 + if k >= 2 { 6 * 60_000 } else { 0 });
    let (steady_reports, _) = live_at(&conv, lindy(), steady);
    let (paused_reports, c) = live_at(&conv, lindy(), paused);
    let without = cut_at(&steady_reports, read).unwrap();
    let with = cut_at(&paused_reports, read).unwrap();
    assert!(
        with < without,
        "cut at request {with}, and {without} without the pause"
    );
    assert!(with > 8, "not at once: it still waits, at request {with}");
    assert!(paused_reports[8..with].iter().all(|r| r
        .held_back
        .as_ref()
        .is_some_and(|h| h.reason == HoldReason::CacheWritePremium)));
    // a restart keeps the count of the pauses: a compactor saved at request 5 and restored makes the cut at the
    // same request
    assert_eq!(c.save().expired_requests, 1);
    let registry = ctxfit_plugins::registry().unwrap();
    let new =
        || Compactor::new(lindy(), &registry, Box::new(ctxfit_tokens::FastEstimator)).unwrap();
    let (mut first, mut restored) = (new(), new());
    let mut request = Conversation {
        messages: Vec::new(),
        ..conv.clone()
    };
    let mut k = 0;
    let mut cut = None;
    for (mi, msg) in conv.messages.iter().enumerate() {
        if mi > 0 && ctxfit_model::begins_response(&conv.messages, mi) {
            if k <= 5 {
                first.compact_at(&request, None, paused(k));
            } else {
                if k == 6 {
                    restored.restore(first.save()).unwrap();
                }
                let report = restored.compact_at(&request, None, paused(k));
                if report.new_blocks.iter().any(|b| b.message == read) {
                    cut.get_or_insert(k);
                }
            }
            k += 1;
        }
        request.messages.push(msg.clone());
    }
    assert_eq!(cut, Some(with));
}

#[test]
fn the_forecast_of_the_requests_to_come_decides_how_soon_a_small_cut_pays_back() {
    // the read's small cut (its number column) waits under every forecast, and is made the sooner the more
    // requests the forecast expects: twice those so far (smart), or as many again
    let mut calls = vec![numbered_read("src/lib.rs", 400)];
    calls.extend((0..200).map(|_| status()));
    let conv = session(&calls);
    let (reports, _) = live(&conv, smart());
    let (lindy_reports, _) = live(&conv, profile(LINDY, "lindy"));
    let (at, lindy_at) = (
        cut_at(&reports, 2).unwrap(),
        cut_at(&lindy_reports, 2).unwrap(),
    );
    assert!(
        2 < at && at < lindy_at,
        "cut at request {at}, {lindy_at} as many again"
    );
    // the cut is the same one, made later
    assert_eq!(
        reports[at].new_blocks[0].tokens_after,
        lindy_reports[lindy_at].new_blocks[0].tokens_after
    );
    // a forecast of at least 60 requests to come makes it at once; of three times as many again, sooner than smart
    let long = "[profiles.long]\nextends = \"smart\"\nmin_horizon = 60\n\
                [profiles.longer]\nextends = \"smart\"\nhorizon = 3\n";
    let (long_reports, _) = live(&conv, profile(long, "long"));
    assert_eq!(cut_at(&long_reports, 2), Some(2));
    let (longer_reports, _) = live(&conv, profile(long, "longer"));
    assert!(cut_at(&longer_reports, 2).unwrap() < at);
    assert_eq!((smart().horizon, smart().min_horizon), (2.0, 10));
}
