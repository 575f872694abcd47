//! The per-policy rows of a replay: sessions compared with the same sessions under `none`.

use ctxfit_replay::{policy_rows, PriceModel, SessionCosts, SessionReplay, TurnStats};

/// A session of one request: `read` tokens read from the cache, `write` written to it.
fn session(name: &str, policy: &str, read: usize, write: usize) -> SessionReplay {
    let prices = PriceModel::Anthropic.prices();
    SessionReplay {
        session: name.to_owned(),
        policy: policy.to_owned(),
        turns: vec![TurnStats {
            message: 1,
            input_tokens: read + write,
            uncompacted_tokens: read + write,
            cache_read_tokens: read,
            cache_write_tokens: write,
            cost: prices.cost(read, write),
            cache_expired: false,
            references: 0,
            references_visible: 0,
        }],
    }
}

#[test]
fn a_session_that_costs_more_than_with_no_compaction_is_counted_with_its_excess() {
    let replays = vec![
        session("a", "none", 1000, 100),
        session("a", "p", 500, 100), // anthropic: 50 + 125 = 175 against 100 + 125: less
        session("b", "none", 1000, 100), // 225
        session("b", "p", 0, 300),   // 375: 2/3 more
        // a second session with the label `b` is paired with `none`'s second `b`
        session("b", "none", 0, 1000), // 1,250
        session("b", "p", 0, 900),     // 1,125: less
    ];
    let rows = policy_rows(&replays, &[PriceModel::Anthropic, PriceModel::Uncached]);
    let p = rows.iter().find(|r| r.policy == "p").unwrap();
    let anthropic = p.costlier_sessions["anthropic"];
    assert_eq!(anthropic.costlier, 1);
    assert!((anthropic.worst - 2.0 / 3.0).abs() < 1e-9, "{anthropic:?}");
    // uncached, every token costs 1: 600 < 1,100, 300 < 1,100, 900 < 1,000
    assert_eq!(p.costlier_sessions["uncached"], SessionCosts::default());
    let none = rows.iter().find(|r| r.policy == "none").unwrap();
    assert_eq!(none.costlier_sessions["anthropic"].costlier, 0);
}

#[test]
fn without_none_there_is_nothing_to_compare_with() {
    let replays = vec![session("a", "p", 10, 10)];
    let rows = policy_rows(&replays, &[PriceModel::Anthropic]);
    assert!(rows[0].costlier_sessions.is_empty());
}
