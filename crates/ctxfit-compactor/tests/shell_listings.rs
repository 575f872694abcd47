//! `recent` with `shell_listings`: an agent with only a shell searches and lists with `grep` and `find`; those
//! results compete per program, as `Grep` and `Glob` results compete per tool, and the rest is left alone.

use ctxfit_compactor::{Compactor, PolicyFile};
use serde_json::json;

const POLICY: &str = r#"
[profiles.shell]
trigger = "always"
keep_latest_result_message = false
rules = [{ rule = "recent", tools = ["bash"], params = { keep = 1, shell_listings = true } }]
"#;

/// Shell calls and their results, then an answer.
fn session(calls: &[(&str, &str)]) -> ctxfit_model::Conversation {
    let mut messages = vec![json!({"role": "user", "content": "find the bug"})];
    for (i, (command, result)) in calls.iter().enumerate() {
        let id = format!("call_{i}");
        messages.push(json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": id, "name": "bash", "input": {"command": command}}]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": result}]}));
    }
    messages.push(json!({"role": "assistant", "content": "Found it."}));
    ctxfit_model::from_value(json!({"model": "m", "messages": messages})).unwrap()
}

fn results_after(policy: &str, conv: &ctxfit_model::Conversation) -> Vec<String> {
    let settings = PolicyFile::parse(policy, "p.toml")
        .unwrap()
        .resolve(Some("shell"), None, &|_| None)
        .unwrap();
    let registry = ctxfit_plugins::registry().unwrap();
    let mut c =
        Compactor::new(settings, &registry, Box::new(ctxfit_tokens::FastEstimator)).unwrap();
    c.compact(conv, None);
    c.project(conv)
        .messages
        .iter()
        .flat_map(|m| m.tool_results())
        .map(|r| r.content.joined_text())
        .collect()
}

#[test]
fn an_older_search_of_the_same_program_becomes_a_pointer_and_the_rest_stays() {
    let hits = |name: &str| {
        (1..=6)
            .map(|i| format!("src/m{i}.py:{}:    value = {name}(data, {i})", 10 * i))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let conv = session(&[
        ("grep -rn parse_header src", &hits("parse_header")),
        (
            "python reproduce.py",
            "Traceback (most recent call last):\nValueError: bad header",
        ),
        ("find . -name '*.cfg'", "./setup.cfg\n./tox.cfg"),
        (
            "cd /repo && grep -rn read_header src | head -20",
            &hits("read_header"),
        ),
        ("cat src/a.py", "def parse_header(x):\n    return x"),
    ]);
    let out = results_after(POLICY, &conv);
    assert_eq!(
        out[0], r#"[Old bash result omitted — input: {"command":"grep -rn parse_header src"}]"#,
        "a newer grep supersedes it"
    );
    // a script's output and a file read are not listings; the only `find` and the latest `grep` stay
    assert_eq!(
        out[1],
        "Traceback (most recent call last):\nValueError: bad header"
    );
    assert_eq!(out[2], "./setup.cfg\n./tox.cfg");
    assert_eq!(out[3], hits("read_header"));
    assert_eq!(out[4], "def parse_header(x):\n    return x");
    // without the parameter every bash result competes with every other: the latest search gives way to the
    // file read after it
    let all = POLICY.replace(", shell_listings = true", "");
    let out = results_after(&all, &conv);
    assert!(
        out[3].starts_with("[Old bash result omitted — input: "),
        "{out:#?}"
    );
}

#[test]
fn shell_listings_across_every_tool_is_refused() {
    let policy = POLICY.replace("keep = 1,", "keep = 1, scope = \"all\",");
    let settings =
        PolicyFile::parse(&policy, "p.toml")
            .unwrap()
            .resolve(Some("shell"), None, &|_| None);
    let registry = ctxfit_plugins::registry().unwrap();
    let err = match settings {
        Err(e) => e.to_string(),
        Ok(s) => Compactor::new(s, &registry, Box::new(ctxfit_tokens::FastEstimator))
            .err()
            .expect("refused")
            .to_string(),
    };
    assert!(
        err.contains("`shell_listings`") && err.contains("scope = \"tool\""),
        "{err}"
    );
}

#[test]
fn a_pointers_fields_are_filled_in_one_pass_so_an_input_naming_one_stays_as_written() {
    // `{lines}` is the result's line count; a command that itself spells `{lines}` or `{tool}` is not rewritten
    let policy = POLICY.replace(
        "shell_listings = true }",
        "shell_listings = true, pointer = \"[{tool} {input}: {lines} lines; {other}]\" }",
    );
    let hits = (1..=30)
        .map(|i| format!("src/m{i}.py:{i}:    width = {{lines}} * {i}"))
        .collect::<Vec<_>>()
        .join("\n");
    let conv = session(&[
        ("grep -rn '{lines}{tool}' src", &hits),
        ("grep -rn y src", "src/c.py:3: y"),
    ]);
    let results = results_after(&policy, &conv);
    assert_eq!(
        results[0],
        r#"[bash {"command":"grep -rn '{lines}{tool}' src"}: 30 lines; {other}]"#
    );
    assert_eq!(results[1], "src/c.py:3: y");
}
