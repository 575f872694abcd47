//! A compactor saved at any request and restored — through JSON, into a new compactor — sends from then on, byte
//! for byte, what the uninterrupted one sends: a restart (of an agent, of the proxy) does not break the cache.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::io::Read;

use ctxfit_compactor::{Compactor, PolicyFile, SavedState, BUILT_IN_PROFILES};
use ctxfit_import::{import_file, import_str};
use ctxfit_model::{begins_response, Conversation};
use ctxfit_testkit::corpus_trajectory_files;
use ctxfit_tokens::FastEstimator;

fn compactor(profile: &str) -> Compactor {
    let settings = PolicyFile::default()
        .resolve(Some(profile), None, &|_| None)
        .unwrap();
    let registry = ctxfit_plugins::registry().unwrap();
    Compactor::new(settings, &registry, Box::new(FastEstimator)).unwrap()
}

/// The request as sent, hashed.
fn sent(c: &Compactor, request: &Conversation) -> u64 {
    let mut out = Vec::new();
    c.projection(request).write_json(&mut out, false).unwrap();
    let mut h = DefaultHasher::new();
    out.hash(&mut h);
    h.finish()
}

/// Run the live loop; at the chosen requests save the state, then check that a compactor restored from each
/// save sends what the uninterrupted one sent at every later request. Returns the restores checked.
fn check(label: &str, conv: &Conversation, profile: &str) -> usize {
    let starts: Vec<usize> = (1..conv.messages.len())
        .filter(|&i| begins_response(&conv.messages, i))
        .collect();
    if starts.len() < 2 {
        return 0;
    }
    let stops = [starts.len() / 3, starts.len() / 2, starts.len() - 1];
    let prefix = |end: usize| Conversation {
        messages: conv.messages[..end].to_vec(),
        ..conv.clone()
    };
    let mut live = compactor(profile);
    let mut sent_at = Vec::new();
    let mut saves = Vec::new();
    let mut previous = None;
    for (n, &end) in starts.iter().enumerate() {
        let request = prefix(end);
        previous = Some(live.compact(&request, previous).tokens_after);
        sent_at.push((sent(&live, &request), previous));
        if stops.contains(&n) {
            saves.push((n, serde_json::to_string(&live.save()).unwrap()));
        }
    }
    for (n, json) in &saves {
        let saved: SavedState = serde_json::from_str(json).unwrap();
        let mut restored = compactor(profile);
        restored.restore(saved).unwrap();
        let mut previous = sent_at[*n].1;
        for (m, &end) in starts.iter().enumerate().skip(n + 1) {
            let request = prefix(end);
            previous = Some(restored.compact(&request, previous).tokens_after);
            assert_eq!(
                (sent(&restored, &request), previous),
                sent_at[m],
                "{label} under {profile}: restored after request {n}, request {m} differs"
            );
        }
    }
    saves.len()
}

#[test]
fn a_restored_compactor_sends_what_the_uninterrupted_one_sends() {
    let corpus = ctxfit_testkit::corpus_or_skip!();
    let mut checked = 0;
    let mut conversations = Vec::new();
    for path in corpus_trajectory_files(&corpus) {
        for s in import_file(&path, None).unwrap() {
            conversations.push((path.display().to_string(), s.conversation));
        }
    }
    // and long sessions of each kind: Claude Code, Codex (Responses items), mini-swe-agent
    for file in [
        "sessions/claude-code-entire/0a93878f-dc30-4a5d-882f-3cd81cd3d499.jsonl.gz",
        "sessions/codex-agentv/019ed917-1cf7-72a3-92f5-c0aa98fb134e.jsonl.gz",
        "sessions/mini-swe-agent/deepseek_chat_dev__pvlib__pvlib-python-1072.traj.json.gz",
    ] {
        let mut text = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(corpus.join(file)).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        for s in import_str(&text, None).unwrap() {
            conversations.push((file.to_owned(), s.conversation));
        }
    }
    for (label, conv) in &conversations {
        for profile in BUILT_IN_PROFILES {
            checked += check(label, conv, profile);
        }
    }
    assert!(checked > 300, "{checked}");
}

#[test]
fn a_state_is_restored_only_into_its_own_profile() {
    let saved = compactor("smart").save();
    let err = compactor("seed-002").restore(saved.clone()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "saved state is of profile `smart`, this compactor runs `seed-002`"
    );
    let future = SavedState {
        version: 99,
        ..saved
    };
    assert!(compactor("smart").restore(future).is_err());
}
