//! The example rule registers itself next to the built-in ones and the compactor uses it by name.

// A custom rule crate must be referenced for its registration to be linked (like ctxfit-plugins does).
use retain_sql_query as _;

use ctxfit_compactor::{Compactor, PolicyFile};
use ctxfit_model::from_json_str;

#[test]
fn the_rule_is_in_the_registry() {
    let registry = ctxfit_plugins::registry().unwrap();
    let mut names = registry.names();
    names.retain(|n| *n == "sql-query" || ctxfit_plugins::BUILT_IN_RULES.contains(n));
    assert!(names.contains(&"sql-query"), "{names:?}");
    assert_eq!(registry.get("sql-query").unwrap().tools, ["sql_query"]);
}

#[test]
fn a_policy_names_it_and_stale_query_results_shrink() {
    let policy = PolicyFile::parse(
        r#"
[profiles.analyst]
extends = "seed-002"
[[profiles.analyst.rules]]
rule = "sql-query"
params = { rows = 2 }
[[profiles.analyst.rules]]
rule = "tiered"
"#,
        "analyst.toml",
    )
    .unwrap();
    let settings = policy.resolve(Some("analyst"), None, &|_| None).unwrap();
    let registry = ctxfit_plugins::registry().unwrap();
    let mut compactor =
        Compactor::new(settings, &registry, Box::new(ctxfit_tokens::FastEstimator)).unwrap();
    let rows: Vec<String> = (1..=30)
        .map(|i| format!("{i} | person number {i}"))
        .collect();
    let table = format!("id | name\n{}", rows.join("\n"));
    let conv = from_json_str(&serde_json::json!([
        {"role": "user", "content": "who is there?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "q", "name": "sql_query", "input": {"sql": "select * from people"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "q", "content": table}]},
        {"role": "assistant", "content": "four people"}
    ]).to_string())
    .unwrap();
    let report = compactor.compact(&conv, None);
    assert_eq!(report.new_blocks[0].rule, "sql-query");
    let out = compactor.project(&conv);
    let result = out.messages[2].tool_results().next().unwrap();
    assert_eq!(
        result.content.joined_text(),
        "id | name\n1 | person number 1\n2 | person number 2\n[… 28 more rows omitted]"
    );
}

#[test]
fn a_misspelt_parameter_is_an_error() {
    let registry = ctxfit_plugins::registry().unwrap();
    let build = registry.get("sql-query").unwrap().factory;
    let err = build(&serde_json::json!({"row": 2})).err().unwrap();
    assert_eq!(
        err.to_string(),
        "rule `sql-query`: unknown parameter `row` (expected: rows)"
    );
}
