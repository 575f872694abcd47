//! `replay`: every policy, files in parallel, profiles of a file, the bill, folders, `--by-tool`, `--json`, the README's figures.

use super::*;

#[test]
fn replay_the_sample_under_every_policy() {
    let dir = temp_dir("replay");
    let svg = dir.join("tokens.svg");
    let frontier = dir.join("frontier.svg");
    let o = ctxfit(
        &[
            "replay",
            "--sample",
            "--plot",
            svg.to_str().unwrap(),
            "--frontier",
            frontier.to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let policies: Vec<&str> = out
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("against what") && !l.starts_with("sessions against none"))
        .map(|l| l.split_whitespace().next().unwrap())
        .filter(|p| !p.ends_with(':'))
        .collect();
    assert_eq!(
        policies,
        [
            "none",
            "oracle",
            "anthropic-clear",
            "keep-last-30",
            "mask-last-10",
            "seed-000",
            "seed-002",
            "seed-004",
            "smart"
        ]
    );
    // `none` against itself reads +0.0% in every column, never -0.0%
    assert!(!out.contains("-0.0%"), "{out}");
    assert!(
        out.lines().nth(1).unwrap().contains("+0.0%   100.0%")
            && out.lines().nth(2).unwrap().contains("100%")
            && out.contains("oracle: evaluation only"),
        "{out}"
    );
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(
        plot.starts_with("<svg")
            && plot.contains(
                "each session&apos;s cost against none&apos;s bill (anthropic prices), sorted"
            )
            && plot.contains("the 1 of 1 whose logs record what was billed")
            && plot.contains("smart")
            && plot.contains("+3%"),
        "{plot}"
    );
    // the frontier: tokens and cost saved against recall, up to 100%
    let frontier = std::fs::read_to_string(&frontier).unwrap();
    assert!(
        frontier.contains("tokens (circles), cost (triangles)") && frontier.contains("smart"),
        "{frontier}"
    );
    // it compares with none: without it, a clear error and no file
    let other = dir.join("other.svg");
    let o = ctxfit(
        &[
            "replay",
            "--sample",
            "--policy",
            "smart",
            "--plot",
            other.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("add --policy none"), "{}", stderr(&o));
    assert!(!other.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn replay_plots_sessions_without_a_bill_on_their_messages() {
    ctxfit_testkit::skip_without_corpus!();
    let dir = temp_dir("plot-logged");
    let svg = dir.join("costs.svg");
    let swe = corpus().join("trajectories/swe-agent/marshmallow-1867.traj");
    let o = ctxfit(
        &[
            "replay",
            swe.to_str().unwrap(),
            "--policy",
            "none",
            "--policy",
            "smart",
            "--plot",
            svg.to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(
        plot.contains("each session&apos;s cost against none (anthropic prices), sorted"),
        "{plot}"
    );
    // a drawing that cannot be written is said before the replay, and nothing is written
    let missing = dir.join("no-such-folder").join("costs.svg");
    for (flag, path, said) in [
        ("--plot", &missing, "there is no folder"),
        ("--frontier", &dir, "it is a folder"),
    ] {
        let o = ctxfit(
            &[
                "replay",
                swe.to_str().unwrap(),
                "--policy",
                "none",
                flag,
                path.to_str().unwrap(),
            ],
            None,
        );
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains(said), "{}", stderr(&o));
        assert!(stdout(&o).is_empty(), "the replay ran: {}", stdout(&o));
    }
    assert!(!missing.parent().unwrap().exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn replay_many_files_in_parallel_gives_the_serial_result() {
    ctxfit_testkit::skip_without_corpus!();
    let files: Vec<String> = ctxfit_testkit::corpus_trajectory_files(&corpus())
        .into_iter()
        .filter(|p| {
            p.to_string_lossy().contains("swe-agent") || p.to_string_lossy().contains("openhands")
        })
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let mut args = vec![
        "replay", "--json", "--policy", "none", "--policy", "smart", "--policy", "seed-002",
    ];
    args.extend(files.iter().map(String::as_str));
    let parallel = ctxfit(&args, None);
    assert!(parallel.status.success(), "{}", stderr(&parallel));
    let serial = Command::new(env!("CARGO_BIN_EXE_ctxfit"))
        .args(&args)
        .env("RAYON_NUM_THREADS", "1")
        .output()
        .unwrap();
    assert_eq!(parallel.stdout, serial.stdout);
    let v: serde_json::Value = serde_json::from_slice(&parallel.stdout).unwrap();
    assert_eq!(v["policies"].as_array().unwrap().len(), 3);
    assert_eq!(
        v["sessions"].as_array().unwrap().len(),
        3 * 10,
        "10 sessions × 3 policies"
    );
    let o = ctxfit(&["replay", "--sample", "--policy", "nope"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("policy nope: profile `nope`: no such profile"),
        "{}",
        stderr(&o)
    );
    for missing in ["policies/mine.toml", "mine.json"] {
        let o = ctxfit(&["replay", "--sample", "--policy", missing], None);
        assert_eq!(o.status.code(), Some(2));
        assert!(
            stderr(&o).contains(&format!("policy {missing}: no such policy file")),
            "{}",
            stderr(&o)
        );
    }
    // a folder or a device without end: named, not taken for a profile's name nor read into memory
    let dir = std::env::temp_dir();
    for (policy, said) in [
        (
            dir.to_str().unwrap(),
            "cannot read: a folder, not a policy file",
        ),
        (
            "/dev/zero",
            "/dev/zero: cannot read: more than 1048576 bytes",
        ),
    ] {
        let o = ctxfit(&["replay", "--sample", "--policy", policy], None);
        assert_eq!(o.status.code(), Some(2), "{policy}");
        assert!(stderr(&o).contains(said), "{policy}: {}", stderr(&o));
    }
}

#[test]
fn replay_rows_say_which_profile_of_a_file_ran() {
    let dir = temp_dir("replay-policy-files");
    let only = dir.join("only.toml");
    std::fs::write(
        &only,
        "[profiles.smart-150k]\nextends = \"smart\"\nbudget = 150000\n",
    )
    .unwrap();
    let two = dir.join("two.toml");
    std::fs::write(
        &two,
        "[profiles.smart]\ncache_write_premium = 0\n[profiles.lean]\nextends = \"seed-002\"\n",
    )
    .unwrap();
    let (only, two) = (only.to_str().unwrap(), two.to_str().unwrap());
    let rows = |args: &[&str]| -> Vec<(String, u64)> {
        let mut all = vec!["replay", "--sample", "--json"];
        all.extend_from_slice(args);
        let o = ctxfit(&all, None);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["policies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["policy"].as_str().unwrap().to_owned(),
                    r["sessions"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    // a file's only profile runs, under its own name; a file's change to a built-in profile is labelled by both
    let got = rows(&[
        "--policy",
        "smart",
        "--policy",
        only,
        "--policy",
        &format!("{two}:smart"),
        "--policy",
        &format!("{two}:lean"),
    ]);
    let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["smart", "smart-150k", &format!("{two}:smart"), "lean"]
    );
    assert!(got.iter().all(|(_, n)| *n == got[0].1), "{got:?}");
    // a file of several profiles and no default must say which; the same policy twice is refused
    for (args, says) in [
        (
            vec!["--policy", two],
            "profiles: several (lean, smart) and no `default_profile`: set it, or name the one to use as ",
        ),
        (
            vec!["--policy", "smart", "--policy", "smart"],
            "both run as `smart`",
        ),
        (
            vec!["--policy", only, "--policy", &format!("{only}:smart-150k")],
            "both run as `smart-150k`",
        ),
    ] {
        let mut all = vec!["replay", "--sample"];
        all.extend_from_slice(&args);
        let o = ctxfit(&all, None);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn replay_measures_savings_against_what_the_log_says_was_billed() {
    let o = ctxfit(
        &[
            "replay", "--sample", "--json", "--policy", "none", "--policy", "smart",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["policies"].as_array().unwrap();
    let (none, smart) = (&rows[0], &rows[1]);
    // the sample's log records every request's usage: the bill is larger than the messages it shows
    let (billed, logged) = (
        none["billed"]["input_tokens"].as_f64().unwrap(),
        none["input_tokens"].as_f64().unwrap(),
    );
    assert_eq!(none["billed"]["requests"], none["turns"]);
    assert!(billed > 1.5 * logged, "{billed} billed, {logged} logged");
    // the tokens smart saves, counted as Anthropic bills tool results (each request's cut rounded); against the
    // bill they are a smaller share
    let saved = |r: &serde_json::Value| r["input_tokens"].as_f64().unwrap();
    let billed_saved = none["billed"]["input_tokens"].as_f64().unwrap()
        - smart["billed"]["input_tokens"].as_f64().unwrap();
    let scaled = ctxfit_replay::ANTHROPIC_TOOL_RESULT_SCALE * (saved(none) - saved(smart));
    let turns = none["turns"].as_f64().unwrap();
    assert!(
        (billed_saved - scaled).abs() <= turns,
        "{billed_saved} billed saved, {scaled} scaled"
    );
    let (share, billed_share) = (
        smart["tokens_saved"].as_f64().unwrap(),
        smart["billed"]["tokens_saved"].as_f64().unwrap(),
    );
    assert!(
        0.0 < billed_share && billed_share < share,
        "{billed_share} {share}"
    );
    assert!(
        smart["billed"]["cost_vs_none"]["anthropic"]
            .as_f64()
            .unwrap()
            < 0.0
    );
    // the session against none's bill: cheaper, so in no tail
    let tail = &smart["billed"]["costlier_sessions"]["anthropic"];
    assert_eq!(
        (tail["costlier"].as_u64(), tail["worst"].as_f64()),
        (Some(0), Some(0.0))
    );
    // and the table says so
    let table = stdout(&ctxfit(
        &[
            "replay", "--sample", "--policy", "none", "--policy", "smart",
        ],
        None,
    ));
    assert!(
        table.contains("against what the logs say was billed (53 of 53 requests"),
        "{table}"
    );
    let billed_smart = table
        .lines()
        .skip_while(|l| !l.starts_with("against what the logs say"))
        .find(|l| l.starts_with("smart"))
        .unwrap();
    assert!(billed_smart.ends_with("0 / 0 / +0.0%"), "{table}");
    assert!(table.contains("costlier: sessions whose bill is above their bill under none"));
    // (its share of the oracle's billed saving: no oracle replayed here)
    assert!(
        table
            .lines()
            .any(|l| l.contains("billed input") && l.contains("of oracle")),
        "{table}"
    );
}

#[test]
fn replay_walks_a_folder_reports_what_it_cannot_read_and_goes_on() {
    ctxfit_testkit::skip_without_corpus!();
    let dir = temp_dir("folder");
    let nested = dir.join("project").join("sessions");
    std::fs::create_dir_all(&nested).unwrap();
    let swe = corpus().join("trajectories/swe-agent/marshmallow-1867.traj");
    std::fs::copy(&swe, nested.join("marshmallow-1867.traj")).unwrap();
    std::fs::write(nested.join("broken.json"), "{\"messages\": [").unwrap();
    std::fs::write(dir.join("notes.txt"), "not a session").unwrap();
    let o = ctxfit(
        &[
            "replay",
            dir.to_str().unwrap(),
            "--policy",
            "none",
            "--policy",
            "smart",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(
        out.lines().nth(1).unwrap().starts_with("none           1"),
        "{out}"
    );
    assert!(out.contains("smart"), "{out}");
    assert!(err.contains("1 file(s) passed over"), "{err}");
    assert!(
        err.contains("skipped: ") && err.contains("broken.json:1:"),
        "{err}"
    );
    assert!(err.contains("1 of 2 files could not be read"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_folder_of_more_sessions_than_a_batch_replays_as_one_file_of_them_all() {
    // 40 files of one session each are replayed a batch at a time (never all in memory); the totals are those
    // of one file holding the same 40 conversations, replayed at once
    let dir = temp_dir("batches");
    let folder = dir.join("many");
    std::fs::create_dir_all(&folder).unwrap();
    let conversation = |i: usize| {
        let listing: String = (0..40 * (i % 7 + 1))
            .map(|k| format!("src/file_{i}_{k}.rs\n"))
            .collect();
        serde_json::json!([
            {"role": "user", "content": format!("task {i}: find the parser")},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "Bash", "input": {"command": "ls -R"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": listing}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "b", "name": "Bash", "input": {"command": "cat README"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b", "content": "the parser is in src/file_0_3.rs"}]},
            {"role": "assistant", "content": format!("src/file_{i}_1.rs it is")}
        ])
    };
    for i in 0..40 {
        std::fs::write(
            folder.join(format!("s{i:02}.json")),
            conversation(i).to_string(),
        )
        .unwrap();
    }
    let all = dir.join("all.json");
    std::fs::write(
        &all,
        serde_json::Value::Array((0..40).map(conversation).collect()).to_string(),
    )
    .unwrap();
    let totals = |input: &Path| {
        let o = ctxfit(
            &[
                "replay",
                input.to_str().unwrap(),
                "--policy",
                "none",
                "--policy",
                "smart",
                "--json",
            ],
            None,
        );
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        (v["policies"].as_array().unwrap().iter())
            .map(|p| {
                (
                    p["sessions"].as_u64(),
                    p["turns"].as_u64(),
                    p["input_tokens"].as_u64(),
                    p["recall"].as_f64(),
                )
            })
            .collect::<Vec<_>>()
    };
    let batched = totals(&folder);
    assert_eq!(batched[0].0, Some(40));
    assert_eq!(batched, totals(&all));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn replay_by_tool_shows_where_the_tokens_go() {
    let args = [
        "replay", "--sample", "--policy", "none", "--policy", "smart",
    ];
    let o = ctxfit(&[&args[..], &["--by-tool", "2"]].concat(), None);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let table: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("where the tokens go"))
        .take_while(|l| !l.starts_with("what the agent used again"))
        .collect();
    assert_eq!(
        table.len(),
        6,
        "a header, the two costliest tools, the others, the rest:\n{out}"
    );
    assert!(
        table[1].starts_with("tool ") && table[1].ends_with("smart"),
        "{out}"
    );
    // the sample's reads cost most, then its searches; `smart` cuts both
    assert!(
        table[2].starts_with("Read ") && table[2].ends_with('%'),
        "{out}"
    );
    assert!(table[3].starts_with("Grep "), "{out}");
    assert!(table[4].starts_with("(4 other tools)"), "{out}");
    assert!(
        table[5].starts_with("(not results: system, messages, calls)")
            && table[5].ends_with("+0.0%")
    );
    // the shares of the input add up to the whole
    let share = |l: &str| -> f64 {
        l.split_whitespace()
            .rev()
            .nth(1)
            .unwrap()
            .trim_end_matches('%')
            .parse()
            .unwrap()
    };
    let total: f64 = table[2..].iter().map(|l| share(l)).sum();
    assert!((total - 100.0).abs() < 0.3, "{total}: {out}");
    // without the flag no such table; the JSON has every tool of every policy
    assert!(!stdout(&ctxfit(&args, None)).contains("where the tokens go"));
    let o = ctxfit(&[&args[..], &["--json"]].concat(), None);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = v["policies"].as_array().unwrap();
    let tools = |i: usize| rows[i]["tools"].as_array().unwrap().clone();
    assert_eq!(tools(0).len(), 6);
    let read = |i: usize| tools(i).into_iter().find(|t| t["tool"] == "Read").unwrap();
    assert_eq!(read(0)["input_tokens"], read(0)["uncompacted_tokens"]);
    assert!(read(1)["input_tokens"].as_u64() < read(1)["uncompacted_tokens"].as_u64());
    // every reference is counted under one tool: per tool they add up to the policy's own, kept and all
    for (i, row) in rows.iter().enumerate() {
        let sum =
            |field: &str| -> u64 { tools(i).iter().map(|t| t[field].as_u64().unwrap()).sum() };
        assert_eq!(sum("references"), row["references"].as_u64().unwrap());
        assert_eq!(
            sum("references_visible"),
            row["references_visible"].as_u64().unwrap()
        );
    }
    assert!(rows[1]["references_visible"].as_u64() < rows[1]["references"].as_u64());
    // and the table of them: most used first, `smart`'s share of each; none keeps every one
    let used: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("what the agent used again"))
        .collect();
    assert_eq!(used.len(), 5, "a header, two tools, the others:\n{out}");
    assert!(
        used[1].starts_with("tool ") && used[1].ends_with("smart"),
        "{out}"
    );
    assert!(
        used[2].starts_with("Read ") && used[3].starts_with("Grep "),
        "{out}"
    );
    assert!(used[2..].iter().all(|l| l.ends_with('%')), "{out}");
}

#[test]
fn replay_misses_names_what_recall_counts_as_lost() {
    let args = [
        "replay", "--sample", "--policy", "none", "--policy", "smart", "--policy", "seed-002",
    ];
    let o = ctxfit(&[&args[..], &["--misses", "3"]].concat(), None);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lost: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("what recall counts as lost"))
        .collect();
    // the JSON has every hidden reference, per turn: as many as the references the requests no longer showed
    let o = ctxfit(&[&args[..], &["--json"]].concat(), None);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let mut hidden = std::collections::BTreeMap::new();
    for s in v["sessions"].as_array().unwrap() {
        for t in s["turns"].as_array().unwrap() {
            let list = t.get("hidden").map_or(0, |h| h.as_array().unwrap().len()) as u64;
            let refs = t["references"].as_u64().unwrap();
            assert_eq!(
                list,
                refs - t["references_visible"].as_u64().unwrap(),
                "{t}"
            );
            *hidden
                .entry(s["policy"].as_str().unwrap().to_owned())
                .or_insert(0) += list;
        }
    }
    assert_eq!(hidden["none"], 0);
    assert!(
        hidden["smart"] > 0 && hidden["seed-002"] > hidden["smart"],
        "{hidden:?}"
    );
    // the table: no line for `none`, which hid nothing; each other policy's count, then its first three
    assert_eq!(lost.len(), 1 + 2 * 4, "{out}");
    for (k, policy) in ["smart", "seed-002"].into_iter().enumerate() {
        let head = lost[1 + 4 * k];
        assert!(
            head.starts_with(&format!("{policy}: {} of ", hidden[policy])),
            "{out}"
        );
        for line in &lost[2 + 4 * k..5 + 4 * k] {
            assert!(
                line.starts_with("  <sample: claude-code-session.jsonl>, request ")
                    && line.contains(": `")
                    && line.contains("`, last shown by "),
                "{line}"
            );
        }
    }
    assert!(!stdout(&ctxfit(&args, None)).contains("what recall counts as lost"));
    // a policy that hides nothing: said in a line, not an empty section
    let o = ctxfit(
        &["replay", "--sample", "--policy", "none", "--misses"],
        None,
    );
    let out = stdout(&o);
    let tail: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("what recall counts as lost"))
        .collect();
    assert_eq!(tail.len(), 2, "{out}");
    assert!(tail[1].starts_with("(no policy hid any of the "), "{out}");
}

#[test]
fn replay_json_carries_tokens_peak_costs_recall_and_the_oracle_share() {
    let o = ctxfit(
        &[
            "replay", "--sample", "--json", "--prices", "all", "--policy", "none", "--policy",
            "oracle", "--policy", "smart",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v["prices"]["openai"],
        serde_json::json!({"base": 1.0, "cache_read": 0.1, "cache_write": 1.0, "cache_write_1h": 1.0})
    );
    assert_eq!(v["prices"]["anthropic"]["cache_write_1h"], 2.0);
    let rows = v["policies"].as_array().unwrap();
    let row = |name: &str| rows.iter().find(|r| r["policy"] == name).unwrap();
    let (none, oracle, smart) = (row("none"), row("oracle"), row("smart"));
    for r in [none, oracle, smart] {
        for key in ["input_tokens", "peak_tokens", "cost", "recall"] {
            assert!(r[key].is_number(), "{key} in {r}");
        }
        // every token costs 1.0 uncached: the cost is the input tokens
        assert_eq!(r["costs"]["uncached"].as_f64(), r["input_tokens"].as_f64());
        assert_eq!(
            r["cost"], r["costs"]["anthropic"],
            "the first price model is `cost`"
        );
    }
    assert_eq!(
        oracle["recall"], 1.0,
        "the oracle keeps every later reference"
    );
    assert_eq!(oracle["share_of_oracle"], 1.0);
    assert!(oracle["input_tokens"].as_u64() < smart["input_tokens"].as_u64());
    assert!(smart["input_tokens"].as_u64() < none["input_tokens"].as_u64());
    assert!(smart["peak_tokens"].as_u64() < none["peak_tokens"].as_u64());
    // session by session against no compaction, under each price model
    for model in ["anthropic", "openai", "uncached"] {
        assert_eq!(
            smart["costlier_sessions"][model],
            serde_json::json!({"costlier": 0, "over_3_percent": 0, "worst": 0.0}),
            "{model}"
        );
    }
    let table = stdout(&ctxfit(
        &[
            "replay",
            "--sample",
            "--policy",
            "none",
            "--policy",
            "keep-last-30",
        ],
        None,
    ));
    let row = table
        .lines()
        .find(|l| l.starts_with("keep-last-30"))
        .unwrap();
    assert!(row.ends_with("1 (+193.1%)"), "{table}");
    assert!(table
        .contains("costlier: sessions that cost more than with no compaction (anthropic prices)"));
    let o = ctxfit(&["replay", "--sample", "--prices", "azure"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown price model `azure`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn the_readmes_figures_are_what_the_sample_replays_to() {
    // README, "What works today": `smart` on the embedded sample, against the bill and of the messages alone
    let o = ctxfit(
        &[
            "replay", "--sample", "--json", "--policy", "none", "--policy", "oracle", "--policy",
            "smart",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let smart = &v["policies"][2];
    assert_eq!(smart["policy"], "smart");
    let pct = |x: &serde_json::Value| format!("{:.1}", 100.0 * x.as_f64().unwrap());
    assert_eq!(
        [
            pct(&smart["billed"]["tokens_saved"]),
            pct(&smart["recall"]),
            pct(&smart["billed"]["cost_vs_none"]["anthropic"]),
            pct(&smart["tokens_saved"]),
            pct(&smart["cost_vs_none"]["anthropic"]),
        ],
        ["11.2", "98.5", "-7.4", "20.0", "-12.8"]
    );
    assert_eq!(
        format!("{:.0}", 100.0 * smart["share_of_oracle"].as_f64().unwrap()),
        "42"
    );
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    for figure in [
        "11.2% fewer",
        "98.5% recall",
        "7.4% less",
        "20.0% and 12.8%",
    ] {
        assert!(
            readme.contains(figure),
            "the README no longer says {figure:?}"
        );
    }
}

#[test]
fn parallel_calls_sharing_an_id_are_counted_under_their_own_tools() {
    let dir = temp_dir("parallel-ids");
    let file = dir.join("s.json");
    std::fs::write(
        &file,
        r#"{"messages":[{"role":"user","content":"go"},
{"role":"assistant","content":null,"tool_calls":[{"id":"x","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.py\"}"}},{"id":"x","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]},
{"role":"tool","tool_call_id":"x","content":"print('a')"},
{"role":"tool","tool_call_id":"x","content":"a.py\nb.py"},
{"role":"assistant","content":"done"}]}"#,
    )
    .unwrap();
    let o = ctxfit(
        &[
            "replay",
            file.to_str().unwrap(),
            "--policy",
            "none",
            "--by-tool",
            "6",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let results = |tool: &str| -> Option<String> {
        let line = out.lines().find(|l| l.starts_with(tool))?;
        line[tool.len()..]
            .split_whitespace()
            .next()
            .map(str::to_owned)
    };
    // the first result is the read's, the second the listing's: one each
    assert_eq!(results("read_file").as_deref(), Some("1"), "{out}");
    assert_eq!(results("bash: ls").as_deref(), Some("1"), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn replay_counts_the_requests_a_request_budget_refuses() {
    let dir = temp_dir("replay-request-budget");
    let tight = dir.join("tight.toml");
    std::fs::write(
        &tight,
        "[profiles.tight]\nextends = \"smart\"\nrequest_budget = 60000\n",
    )
    .unwrap();
    let tight = tight.to_str().unwrap();
    let args = ["replay", "--sample", "--policy", "smart", "--policy", tight];
    let o = ctxfit(&[&args[..], &["--json"]].concat(), None);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // per turn: above the budget after every cut, and only then (the sample's requests counted as billed: what
    // the log leaves out counts against the budget)
    let (mut refused, mut largest_sent) = (0, 0);
    for s in v["sessions"].as_array().unwrap() {
        for t in s["turns"].as_array().unwrap() {
            let over = t.get("over_request_budget").is_some_and(|b| b == true);
            let budget = if s["policy"] == "smart" {
                u64::MAX
            } else {
                60_000
            };
            let whole =
                t["input_tokens"].as_u64().unwrap() + t["unlogged_tokens"].as_u64().unwrap_or(0);
            assert_eq!(over, whole > budget, "{t}");
            refused += usize::from(over);
            if s["policy"] != "smart" && !over {
                largest_sent = largest_sent.max(whole);
            }
        }
    }
    let rows = v["policies"].as_array().unwrap();
    let count = |name: &str| {
        let row = rows.iter().find(|r| r["policy"] == name).unwrap();
        (
            row["over_request_budget"].as_u64().unwrap(),
            row["turns"].as_u64().unwrap(),
        )
    };
    assert_eq!(count("smart").0, 0);
    let (over, turns) = count("tight");
    assert!(over > 0 && over < turns, "{over} of {turns}");
    assert_eq!(over as usize, refused);
    // the largest request sent, the refused ones aside, is within the budget (the peak counts them as sent)
    let tight = rows.iter().find(|r| r["policy"] == "tight").unwrap();
    assert_eq!(tight["peak_sent_tokens"].as_u64(), Some(largest_sent));
    assert!(0 < largest_sent && largest_sent <= 60_000, "{largest_sent}");
    // the table says it under the rows, for the policy that has some
    let o = ctxfit(&args, None);
    let out = stdout(&o);
    let said: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("above its request budget"))
        .collect();
    assert_eq!(said.len(), 1, "{out}");
    assert!(
        said[0].starts_with(&format!(
            "tight: {over} of {turns} requests above its request budget"
        )),
        "{out}"
    );
    let sent = largest_sent
        .to_string()
        .as_bytes()
        .rchunks(3)
        .rev()
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect::<Vec<_>>()
        .join(",");
    assert!(
        said[0].ends_with(&format!("the largest sent {sent}")),
        "{out}"
    );
}
