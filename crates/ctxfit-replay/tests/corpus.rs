//! Replays of real sessions: consistency of the accounting, and the policies side by side.

use std::collections::BTreeMap;

use ctxfit_compactor::{PolicyFile, Settings, BUILT_IN_PROFILES};
use ctxfit_import::import_file;
use ctxfit_replay::{
    replay, replay_batch, totals, Policy, PriceModel, Prices, SessionInput, SessionReplay, Timing,
};
use ctxfit_testkit::{corpus_dir, corpus_trajectory_files};
use ctxfit_tokens::{count_conversation, FastEstimator, TokenEstimator};

fn policies() -> Vec<Policy> {
    let mut out = vec![Policy::None, Policy::Oracle];
    for p in BUILT_IN_PROFILES {
        out.push(Policy::Profile(Box::new(
            PolicyFile::default()
                .resolve(Some(p), None, &|_| None)
                .unwrap(),
        )));
    }
    out
}

fn fast() -> Box<dyn TokenEstimator> {
    Box::new(FastEstimator)
}

fn all_replays() -> Vec<SessionReplay> {
    let registry = ctxfit_plugins::registry().unwrap();
    let corpus =
        corpus_dir().expect("the shared corpus is missing (../shared/corpus or CTXFIT_CORPUS)");
    let mut out = Vec::new();
    for path in corpus_trajectory_files(&corpus) {
        for s in import_file(&path, None).unwrap() {
            for p in policies() {
                out.push(
                    replay(
                        &path.display().to_string(),
                        &s.conversation,
                        &p,
                        &registry,
                        &fast,
                        Prices::default(),
                    )
                    .unwrap(),
                );
            }
        }
    }
    out
}

#[test]
fn no_compaction_sends_the_history_and_reads_it_from_cache() {
    ctxfit_testkit::skip_without_corpus!();
    let registry = ctxfit_plugins::registry().unwrap();
    let corpus = corpus_dir().unwrap();
    let path = corpus.join("trajectories/claude-code/-src-experiments-claude_p/29ccd257-68b1-427f-ae5f-6524b7cb6f20/subagents/agent-a2271d1.jsonl");
    let conv = import_file(&path, None).unwrap().remove(0).conversation;
    let r = replay(
        "s",
        &conv,
        &Policy::None,
        &registry,
        &fast,
        Prices::default(),
    )
    .unwrap();
    assert_eq!(
        r.turns.len(),
        10,
        "one request per assistant message after the first user message"
    );
    for (i, t) in r.turns.iter().enumerate() {
        let prefix = ctxfit_model::Conversation {
            messages: conv.messages[..t.message].to_vec(),
            ..conv.clone()
        };
        assert_eq!(t.input_tokens, count_conversation(&FastEstimator, &prefix));
        assert_eq!(t.input_tokens, t.uncompacted_tokens);
        assert_eq!(t.cache_read_tokens + t.cache_write_tokens, t.input_tokens);
        if i == 0 {
            assert_eq!(t.cache_read_tokens, 0);
        } else {
            // the previous request is the cached prefix
            assert_eq!(t.cache_read_tokens, r.turns[i - 1].input_tokens);
        }
        assert_eq!(
            t.references, t.references_visible,
            "nothing is hidden without compaction"
        );
    }
}

#[test]
fn every_policy_replays_every_session_consistently() {
    ctxfit_testkit::skip_without_corpus!();
    let replays = all_replays();
    let t = totals(&replays);
    let none = t.iter().find(|p| p.policy == "none").unwrap().clone();
    assert!(none.references > 100, "{none:?}");
    for p in &t {
        assert_eq!(
            (p.sessions, p.turns),
            (none.sessions, none.turns),
            "{}",
            p.policy
        );
        assert!(p.input_tokens <= none.input_tokens, "{}", p.policy);
        assert!(p.references_visible <= p.references);
        assert_eq!(
            p.references, none.references,
            "references do not depend on the policy"
        );
    }
    for r in &replays {
        for t in &r.turns {
            assert!(
                t.input_tokens <= t.uncompacted_tokens,
                "{} {}",
                r.policy,
                r.session
            );
            assert_eq!(t.cache_read_tokens + t.cache_write_tokens, t.input_tokens);
        }
    }
    // where the tokens go: every policy's saving is its tools' savings (no built-in profile clears a call's input
    // or drops messages), and each tool's results weigh the same under every policy
    for session in replays.chunks(policies().len()) {
        let none = &session[0];
        assert_eq!(none.policy, "none");
        for r in session {
            let saved: usize = (r.tools.iter())
                .map(|t| t.uncompacted_tokens - t.input_tokens)
                .sum();
            assert_eq!(
                saved,
                none.input_tokens() - r.input_tokens(),
                "{} {}",
                r.policy,
                r.session
            );
            let weights = |r: &SessionReplay| -> Vec<(String, usize, usize)> {
                (r.tools.iter())
                    .map(|t| (t.tool.clone(), t.results, t.uncompacted_tokens))
                    .collect()
            };
            assert_eq!(weights(r), weights(none), "{} {}", r.policy, r.session);
        }
    }
}

/// One shot and live loop under every built-in profile, and the `extra` ones: the projections, byte for byte —
/// at the times the log recorded, when it did (a request is sent when the latest of its messages with a time
/// was written; where the cache expired between two, the waiting cuts are made).
fn assert_one_shot_equals_live(
    label: &str,
    conv: &ctxfit_model::Conversation,
    times: &[Option<u64>],
    cache_ttl: Option<u64>,
    extra: &[Settings],
) -> usize {
    let registry = ctxfit_plugins::registry().unwrap();
    let json = |c: &ctxfit_compactor::Compactor| {
        let mut out = Vec::new();
        c.projection(conv).write_json(&mut out, false).unwrap();
        out
    };
    let mut checked = 0;
    let profiles = policies().into_iter().filter_map(|p| match p {
        Policy::Profile(settings) => Some(settings),
        _ => None,
    });
    for settings in profiles.chain(extra.iter().cloned().map(Box::new)) {
        let mut one_shot =
            ctxfit_compactor::Compactor::new((*settings).clone(), &registry, fast()).unwrap();
        if let Some(ttl) = cache_ttl {
            one_shot.set_cache_ttl(ttl);
        }
        one_shot.compact_history_at(conv, None, times);
        // the agent's loop: append what arrived, send the history before each model call
        let mut live = ctxfit_compactor::Compactor::new(*settings, &registry, fast()).unwrap();
        if let Some(ttl) = cache_ttl {
            live.set_cache_ttl(ttl);
        }
        let mut request = ctxfit_model::Conversation {
            messages: Vec::new(),
            ..conv.clone()
        };
        let (mut previous, mut latest) = (None, None);
        for (mi, m) in conv.messages.iter().enumerate() {
            if mi > 0 && ctxfit_model::begins_response(&conv.messages, mi) {
                previous = Some(live.compact_at(&request, previous, latest).tokens_after);
            }
            latest = times.get(mi).copied().flatten().or(latest);
            request.messages.push(m.clone());
        }
        live.compact_at(conv, previous, latest);
        assert!(
            json(&one_shot) == json(&live),
            "{label} under {}: one shot differs from the live loop",
            one_shot.settings().profile
        );
        checked += 1;
    }
    checked
}

/// The long sessions (gzipped) as the corpus stores them: every Claude Code, Codex CLI, mini-swe-agent session
/// (and the Gemini CLI and Copilot CLI ones beside them), one shot against the live loop under every profile.
#[test]
fn one_shot_compaction_equals_the_live_loop_on_the_long_sessions() {
    ctxfit_testkit::skip_without_corpus!();
    use std::io::Read;
    let corpus = corpus_dir().unwrap();
    let (mut checked, mut sessions_seen, mut unreadable) = (0, 0, Vec::new());
    // sessions whose log records times, and of those the ones with a pause longer than the cache lives
    let (mut timed, mut paused) = (0, 0);
    for family in ["claude-code-entire", "codex-agentv", "mini-swe-agent"] {
        let mut files: Vec<_> = std::fs::read_dir(corpus.join("sessions").join(family))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "gz"))
            .collect();
        files.sort();
        for path in files {
            let mut text = String::new();
            flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
                .read_to_string(&mut text)
                .unwrap();
            match ctxfit_import::import_str(&text, None) {
                Ok(sessions) => {
                    for s in sessions {
                        sessions_seen += 1;
                        let known: Vec<u64> = s.times.iter().flatten().copied().collect();
                        timed += usize::from(!known.is_empty());
                        paused += usize::from(known.windows(2).any(|w| {
                            ctxfit_compactor::cache_expired(
                                w[0],
                                w[1],
                                ctxfit_compactor::DEFAULT_CACHE_TTL,
                            )
                        }));
                        checked += assert_one_shot_equals_live(
                            &path.display().to_string(),
                            &s.conversation,
                            &s.times,
                            s.cache_ttl,
                            &[],
                        );
                    }
                }
                Err(e) => unreadable.push(format!("{}: {e}", path.display())),
            }
        }
    }
    assert!(unreadable.is_empty(), "{unreadable:#?}");
    assert!(sessions_seen >= 270, "{sessions_seen}");
    // the Claude Code and Codex CLI logs record times, and many of their sessions pause for longer than the
    // cache lives: the timed path is what they check
    assert!(
        timed >= 200 && paused >= 50,
        "{timed} timed, {paused} paused"
    );
    assert_eq!(checked, sessions_seen * BUILT_IN_PROFILES.len());
}

/// `compact_history` on a whole history sends, byte for byte, what a live agent running the same profile would
/// have sent at its last request: a fresh compactor fed every request in turn, then the whole history.
#[test]
fn one_shot_compaction_equals_the_live_loop_on_every_corpus_file_and_profile() {
    ctxfit_testkit::skip_without_corpus!();
    let corpus = corpus_dir().unwrap();
    // and `smart` with the retrieval handle, whose trailers must come out the same either way
    let retrieving = PolicyFile::parse(
        "[profiles.retrieving]\nextends = \"smart\"\nretrieval_tool = \"ctxfit_retrieve\"\n",
        "test",
    )
    .unwrap()
    .resolve(Some("retrieving"), None, &|_| None)
    .unwrap();
    let mut checked = 0;
    for path in corpus_trajectory_files(&corpus) {
        for s in import_file(&path, None).unwrap() {
            checked += assert_one_shot_equals_live(
                &path.display().to_string(),
                &s.conversation,
                &s.times,
                s.cache_ttl,
                std::slice::from_ref(&retrieving),
            );
        }
    }
    assert!(checked > 100, "{checked}");
}

/// The oracle's defining property: every later reference stays visible, in every corpus session, while it sends
/// fewer tokens than no compaction whenever there is a stale result to cut.
#[test]
fn the_oracle_keeps_every_reference_in_every_session() {
    ctxfit_testkit::skip_without_corpus!();
    let replays = all_replays();
    let oracle: Vec<&SessionReplay> = replays.iter().filter(|r| r.policy == "oracle").collect();
    assert!(!oracle.is_empty());
    for r in oracle {
        let (refs, visible) = r.references();
        assert_eq!(refs, visible, "{}", r.session);
    }
    let t = totals(&replays);
    let input = |name: &str| t.iter().find(|p| p.policy == name).unwrap().input_tokens;
    assert!(input("oracle") < input("none"));
}

/// `smart`'s promise, per family of recorded sessions (`trajectories/<family>/`): under each price model it costs
/// no more than sending the whole history — its payback rule makes a cut only when the cache reads it saves, on
/// the requests forecast to come (twice as many as so far, at least ten), pay for the cache write it causes.
#[test]
fn smart_costs_no_more_than_no_compaction_on_any_family_under_any_price_model() {
    ctxfit_testkit::skip_without_corpus!();
    let registry = ctxfit_plugins::registry().unwrap();
    let corpus = corpus_dir().unwrap();
    let smart = Policy::named("smart").unwrap();
    let mut families: BTreeMap<String, Vec<SessionReplay>> = BTreeMap::new();
    for path in corpus_trajectory_files(&corpus) {
        let rel = path.strip_prefix(corpus.join("trajectories")).unwrap();
        let family = rel.iter().next().unwrap().to_string_lossy().into_owned();
        for s in import_file(&path, None).unwrap() {
            for p in [&Policy::None, &smart] {
                let r = replay("s", &s.conversation, p, &registry, &fast, Prices::default());
                families.entry(family.clone()).or_default().push(r.unwrap());
            }
        }
    }
    assert!(families.len() >= 5, "{:?}", families.keys());
    let mut saved_somewhere = false;
    for (family, replays) in &families {
        let t = totals(replays);
        let (none, smart) = (&t[0], &t[1]);
        assert_eq!(
            (none.policy.as_str(), smart.policy.as_str()),
            ("none", "smart")
        );
        saved_somewhere |= smart.input_tokens < none.input_tokens;
        for model in PriceModel::ALL {
            let (a, b) = (
                smart.cost_under(model.prices()),
                none.cost_under(model.prices()),
            );
            assert!(
                a <= b,
                "{family}: smart {a:.0} > none {b:.0} under {}",
                model.name()
            );
        }
    }
    assert!(saved_somewhere);
}

#[test]
fn a_batch_replayed_in_parallel_equals_the_serial_replays_in_job_order() {
    ctxfit_testkit::skip_without_corpus!();
    let registry = ctxfit_plugins::registry().unwrap();
    let corpus = corpus_dir().unwrap();
    let mut sessions = Vec::new();
    for path in corpus_trajectory_files(&corpus) {
        for s in import_file(&path, None).unwrap() {
            sessions.push((path.display().to_string(), s));
        }
    }
    let inputs: Vec<SessionInput<'_>> = sessions
        .iter()
        .map(|(label, s)| SessionInput {
            label,
            conversation: &s.conversation,
            timing: Timing::NONE,
        })
        .collect();
    let policies = policies();
    let batch = replay_batch(&inputs, &policies, &registry, &fast, Prices::default()).unwrap();
    // session by session, each under the policies in their order
    assert_eq!(batch.len(), sessions.len() * policies.len());
    assert_eq!(batch, all_replays());
}
