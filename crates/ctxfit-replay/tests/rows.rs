//! The per-policy rows of a replay: sessions compared with the same sessions under `none`.

use ctxfit_replay::{policy_rows, CacheTokens, PriceModel, SessionCosts, SessionReplay, TurnStats};

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
            cache_hour: false,
            cost: prices.cost(CacheTokens {
                read,
                write,
                hour: 0,
            }),
            cache_expired: false,
            references: 0,
            references_visible: 0,
            hidden: Vec::new(),
            unlogged_tokens: None,
            over_request_budget: false,
        }],
        tools: Vec::new(),
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

/// A session of one request of `tokens` input tokens, `refs` references of which `visible` were still shown.
fn measured(name: &str, policy: &str, tokens: usize, refs: usize, visible: usize) -> SessionReplay {
    let mut s = session(name, policy, 0, tokens);
    s.turns[0].references = refs;
    s.turns[0].references_visible = visible;
    s
}

#[test]
fn the_spread_resamples_the_same_sessions_for_every_policy() {
    // twenty sessions; `p` saves half the oracle's saving on every one, so on any resample of them
    let mut replays = Vec::new();
    for i in 0..20 {
        let name = format!("s{i}");
        let size = 1000 * (i + 1);
        replays.push(measured(&name, "none", size, 10, 10));
        replays.push(measured(&name, "oracle", size / 2, 10, 10));
        replays.push(measured(&name, "p", size * 3 / 4, 10, 10));
        // `q` saves as much as the oracle on the even sessions and nothing on the odd, and its recall is
        // 100% on the first half and 0% on the second
        let q = if i % 2 == 0 { size / 2 } else { size };
        replays.push(measured(&name, "q", q, 10, if i < 10 { 10 } else { 0 }));
    }
    let rows = policy_rows(&replays, &[PriceModel::Anthropic]);
    let row = |name: &str| rows.iter().find(|r| r.policy == name).unwrap();
    let [low, high] = row("p").share_of_oracle_spread.unwrap();
    assert!(
        (low - 0.5).abs() < 1e-9 && (high - 0.5).abs() < 1e-9,
        "{low} {high}"
    );
    assert_eq!(row("p").recall_spread, Some([1.0, 1.0]));
    // over all the sessions `q`'s share is that of the even sessions' sizes, 100k of 210k (48%); a resample moves
    // it both ways
    assert!((row("q").share_of_oracle.unwrap() - 100.0 / 210.0).abs() < 1e-9);
    let [low, high] = row("q").share_of_oracle_spread.unwrap();
    assert!(
        low < 0.476 && 0.477 < high && high - low > 0.1,
        "{low} {high}"
    );
    let [low, high] = row("q").recall_spread.unwrap();
    assert!(low < 0.5 && 0.5 < high, "{low} {high}");
    // the same every run
    assert_eq!(policy_rows(&replays, &[PriceModel::Anthropic]), rows);
}

#[test]
fn one_session_has_no_spread() {
    let replays = vec![
        measured("a", "none", 100, 1, 1),
        measured("a", "oracle", 50, 1, 1),
        measured("a", "p", 70, 1, 1),
    ];
    let rows = policy_rows(&replays, &[PriceModel::Anthropic]);
    assert!(rows
        .iter()
        .all(|r| r.share_of_oracle_spread.is_none() && r.recall_spread.is_none()));
}

#[test]
fn the_part_of_a_bill_the_log_does_not_show_is_cached_as_the_rest_is() {
    let mut warm = session("a", "p", 500, 100).turns.remove(0);
    assert_eq!(warm.billed(), None);
    warm.unlogged_tokens = Some(1000);
    // read with the cached prefix when the request reads anything from the cache ...
    let cache = |read, write| CacheTokens {
        read,
        write,
        hour: 0,
    };
    assert_eq!(warm.billed(), Some((1600, cache(1500, 100))));
    // ... written with the rest when it reads nothing (the first request, or after a pause)
    let mut cold = session("a", "p", 0, 600).turns.remove(0);
    cold.unlogged_tokens = Some(1000);
    assert_eq!(cold.billed(), Some((1600, cache(0, 1600))));
    // a request that writes to the one-hour cache writes the unlogged part there too
    cold.cache_hour = true;
    let hour = CacheTokens {
        hour: 1600,
        ..cache(0, 1600)
    };
    assert_eq!(cold.billed(), Some((1600, hour)));
    // a row sums them over the requests with a bill, against none's
    let mut none = session("a", "none", 1000, 100);
    none.turns[0].unlogged_tokens = Some(1000);
    let mut p = session("a", "p", 500, 100);
    p.turns[0].unlogged_tokens = Some(1000);
    let rows = policy_rows(&[none, p], &[PriceModel::Anthropic]);
    let billed = rows[1].billed.as_ref().unwrap();
    assert_eq!((billed.requests, billed.input_tokens), (1, 1600));
    assert_eq!(billed.tokens_saved, Some(1.0 - 1600.0 / 2100.0));
}

#[test]
fn a_session_is_also_held_against_none_s_bill() {
    // none: 1,000 read, 100 written; `p` cut 800 of its 1,100 logged tokens and wrote 200 of what is left again
    let mut none = session("a", "none", 1000, 100);
    let mut p = session("a", "p", 100, 200);
    p.turns[0].uncompacted_tokens = 1100;
    // the log leaves 10,000 tokens out of each bill (system prompt, tools): read from the cache under both
    none.turns[0].unlogged_tokens = Some(10_000);
    p.turns[0].unlogged_tokens = Some(10_000);
    let models = [PriceModel::Anthropic, PriceModel::OpenAi];
    let rows = policy_rows(&[none.clone(), p.clone()], &models);
    let row = rows.iter().find(|r| r.policy == "p").unwrap();
    // on the logged messages: 10 + 250 against 100 + 125
    let logged = row.costlier_sessions["anthropic"];
    assert_eq!((logged.costlier, logged.over_3_percent), (1, 1));
    assert!((logged.worst - (260.0 / 225.0 - 1.0)).abs() < 1e-9);
    // against the bill, the same excess over a bill that also reads the 10,000 from the cache
    let (_, base) = none.turns[0].billed().unwrap();
    let (_, sent) = p.turns[0].billed().unwrap();
    let prices = PriceModel::Anthropic.prices();
    let expected = prices.cost(sent) / prices.cost(base) - 1.0;
    let billed = row.billed.as_ref().unwrap().costlier_sessions["anthropic"];
    assert_eq!(billed.costlier, 1);
    assert!((billed.worst - expected).abs() < 1e-9, "{billed:?}");
    assert!(billed.worst < logged.worst / 4.0, "{billed:?} {logged:?}");
    // under OpenAI's prices (no write premium): 10 + 200 against 100 + 100 on the logged messages, more than 3%
    // above; against the bill, under 1%
    let logged = row.costlier_sessions["openai"];
    assert_eq!(logged.over_3_percent, 1);
    assert!((logged.worst - 0.05).abs() < 1e-9);
    let billed = row.billed.as_ref().unwrap().costlier_sessions["openai"];
    assert_eq!((billed.costlier, billed.over_3_percent), (1, 0));
    assert!(billed.worst < 0.01, "{billed:?}");
    // a session whose log records no bill has no place in the billed tail
    let (mut none_b, mut p_b) = (none.clone(), p.clone());
    none_b.session = "b".into();
    p_b.session = "b".into();
    none_b.turns[0].unlogged_tokens = None;
    p_b.turns[0].unlogged_tokens = None;
    let rows = policy_rows(&[none, p, none_b, p_b], &models);
    let row = rows.iter().find(|r| r.policy == "p").unwrap();
    assert_eq!(row.costlier_sessions["anthropic"].costlier, 2);
    assert_eq!(
        row.billed.as_ref().unwrap().costlier_sessions["anthropic"].costlier,
        1
    );
}

#[test]
fn the_share_of_the_oracle_s_billed_saving_has_its_spread() {
    // twenty sessions, `p` cutting half what the oracle cuts on each; the even ones' logs record a bill (5,000
    // tokens the log leaves out), the odd ones' none
    let mut replays = Vec::new();
    for i in 0..20 {
        let name = format!("s{i}");
        let size = 1000 * (i + 1);
        for (policy, sent) in [("none", size), ("oracle", size / 2), ("p", size * 3 / 4)] {
            let mut s = measured(&name, policy, sent, 1, 1);
            s.turns[0].uncompacted_tokens = size;
            s.turns[0].unlogged_tokens = (i % 2 == 0).then_some(5000);
            replays.push(s);
        }
    }
    let rows = policy_rows(&replays, &[PriceModel::Anthropic]);
    let billed = |name: &str| {
        rows.iter()
            .find(|r| r.policy == name)
            .and_then(|r| r.billed.clone())
            .unwrap()
    };
    let p = billed("p");
    // the cuts are counted as Anthropic bills tool results, each rounded: half the oracle's, within the rounding
    let share = p.share_of_oracle.unwrap();
    assert!((share - 0.5).abs() < 1e-3, "{share}");
    let [low, high] = p.share_of_oracle_spread.unwrap();
    assert!(
        (low - 0.5).abs() < 1e-3 && (high - 0.5).abs() < 1e-3,
        "{low} {high}"
    );
    assert_eq!(billed("oracle").share_of_oracle, Some(1.0));
    assert_eq!(billed("none").share_of_oracle_spread, Some([0.0, 0.0]));
    // without bills there is no billed row, and so no spread of one
    for s in &mut replays {
        s.turns[0].unlogged_tokens = None;
    }
    let rows = policy_rows(&replays, &[PriceModel::Anthropic]);
    assert!(rows.iter().all(|r| r.billed.is_none()));
}

#[test]
fn a_write_to_the_one_hour_cache_costs_what_anthropic_charges_for_it() {
    // one request writing 100 and reading 1,000: 1.25 a written token, or 2.0 to the cache that lives an hour
    let five = session("a", "p", 1000, 100);
    let mut hour = five.clone();
    hour.turns[0].cache_hour = true;
    let (anthropic, openai) = (PriceModel::Anthropic.prices(), PriceModel::OpenAi.prices());
    assert_eq!(anthropic.cost(five.cache_tokens()), 100.0 + 125.0);
    assert_eq!(anthropic.cost(hour.cache_tokens()), 100.0 + 200.0);
    // OpenAI charges no premium for writing, whatever the cache's life
    assert_eq!(
        openai.cost(hour.cache_tokens()),
        openai.cost(five.cache_tokens())
    );
    // and a row sums the hour's writes apart
    let rows = policy_rows(&[hour], &[PriceModel::Anthropic]);
    assert_eq!(
        (rows[0].cache_write_tokens, rows[0].cache_write_1h_tokens),
        (100, 100)
    );
    assert_eq!(rows[0].costs["anthropic"], 300.0);
}
