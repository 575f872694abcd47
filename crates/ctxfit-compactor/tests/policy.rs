//! Policies: parsing, inheritance, per-agent overrides, environment overrides, and clear errors.

use ctxfit_compactor::{
    Compactor, CompactorError, PolicyFile, Settings, Trigger, MAX_POLICY_BYTES,
};

fn resolve(
    text: &str,
    profile: Option<&str>,
    agent: Option<&str>,
    env: &[(&str, &str)],
) -> Result<Settings, String> {
    let file = PolicyFile::parse(text, "policy.toml").map_err(|e| e.to_string())?;
    file.resolve(profile, agent, &|k| {
        env.iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| (*v).to_owned())
    })
    .map_err(|e| e.to_string())
}

fn check_error(text: &str, profile: Option<&str>, agent: Option<&str>, expected: &str) {
    let err = resolve(text, profile, agent, &[]).unwrap_err();
    assert_eq!(err, expected);
}

#[test]
fn built_in_profiles_are_the_seeds() {
    let s = resolve("", Some("seed-000"), None, &[]).unwrap();
    assert_eq!(
        (s.profile.as_str(), s.trigger, s.budget),
        ("seed-000", Trigger::Budget, 40_000)
    );
    assert_eq!(s.rules[0].rule, "truncate");
    let s = resolve("", Some("seed-002"), None, &[]).unwrap();
    assert_eq!(
        (s.trigger, s.rules[0].rule.as_str()),
        (Trigger::Always, "tiered")
    );
}

#[test]
fn a_policy_without_a_default_runs_its_only_profile_else_smart() {
    // no policy, or one that defines no profile: smart
    let smart = resolve("", Some("smart"), None, &[]).unwrap();
    assert_eq!(resolve("", None, None, &[]).unwrap(), smart);
    let aliases_only = resolve("[aliases]\nmy_reader = \"read_file\"\n", None, None, &[]).unwrap();
    assert_eq!(
        (&aliases_only.profile, &aliases_only.rules),
        (&smart.profile, &smart.rules)
    );
    // a file of one profile means that profile (the CLI, the replay, the proxy and Python alike), not smart
    let one = "[profiles.mine]\nextends = \"smart\"\nrequest_budget = 150000\n";
    let s = resolve(one, None, None, &[]).unwrap();
    assert_eq!((s.profile.as_str(), s.request_budget), ("mine", 150_000));
    assert_eq!(
        PolicyFile::parse(one, "p").unwrap().default_name().unwrap(),
        "mine"
    );
    // several and no default: which was meant cannot be guessed, so none runs
    let two = "[profiles.b]\nextends = \"seed-002\"\n[profiles.a]\nextends = \"smart\"\n";
    check_error(
        two,
        None,
        None,
        "profiles: several (a, b) and no `default_profile`: set it, or name the one to use",
    );
    // ... unless one is named: by the caller, the environment, or an agent's `extends`
    assert_eq!(resolve(two, Some("b"), None, &[]).unwrap().profile, "b");
    let env = resolve(two, None, None, &[("CTXFIT_PROFILE", "a")]).unwrap();
    assert_eq!(env.profile, "a");
    let agent = format!("{two}[agents.coder]\nextends = \"b\"\n");
    assert_eq!(
        resolve(&agent, None, Some("coder"), &[]).unwrap().profile,
        "b"
    );
    // the policy's own default wins, and the environment's profile over it
    let text = "default_profile = \"seed-002\"";
    assert_eq!(resolve(text, None, None, &[]).unwrap().profile, "seed-002");
    let env = resolve(text, None, None, &[("CTXFIT_PROFILE", "seed-000")]).unwrap();
    assert_eq!(env.profile, "seed-000");
    let text = format!("default_profile = \"b\"\n{two}");
    assert_eq!(resolve(&text, None, None, &[]).unwrap().profile, "b");
}

#[test]
fn profiles_extend_and_agents_override() {
    let text = r#"
default_profile = "mine"

[profiles.mine]
extends = "seed-002"
keep_last_tool_uses = 3
exclude_tools = ["memory_*", "TodoWrite"]

[profiles.mine.rules.0]
"#;
    // a table where a list is expected is an error with its position
    let err = resolve(text, None, None, &[]).unwrap_err();
    assert!(err.starts_with("policy.toml:9:"), "{err}");

    let text = r#"
default_profile = "mine"

[profiles.mine]
extends = "seed-002"
keep_last_tool_uses = 3
exclude_tools = ["TodoWrite"]

[agents.trader]
budget = 90000
trigger = "budget"

[agents.coder]
extends = "seed-000"
budget = 120000

[aliases]
my_reader = "read_file"
"#;
    let s = resolve(text, None, None, &[]).unwrap();
    assert_eq!(
        (s.profile.as_str(), s.trigger, s.keep_last_tool_uses),
        ("mine", Trigger::Always, 3)
    );
    assert_eq!(s.rules[0].rule, "tiered");
    assert_eq!(
        s.aliases.get("my_reader").map(String::as_str),
        Some("read_file")
    );
    let trader = resolve(text, None, Some("trader"), &[]).unwrap();
    assert_eq!(
        (trader.profile.as_str(), trader.trigger, trader.budget),
        ("mine", Trigger::Budget, 90_000)
    );
    assert_eq!(
        trader.keep_last_tool_uses, 3,
        "an agent overrides only what it sets"
    );
    let coder = resolve(text, None, Some("coder"), &[]).unwrap();
    assert_eq!(
        (
            coder.profile.as_str(),
            coder.budget,
            coder.rules[0].rule.as_str()
        ),
        ("seed-000", 120_000, "truncate")
    );
    let env = resolve(
        text,
        None,
        Some("coder"),
        &[("CTXFIT_BUDGET", "5000"), ("CTXFIT_TARGET", "2500")],
    )
    .unwrap();
    assert_eq!((env.budget, env.target), (5_000, 2_500));
    let env = resolve(text, None, None, &[("CTXFIT_PROFILE", "seed-000")]).unwrap();
    assert_eq!(env.profile, "seed-000");
    let json = resolve(
        r#"{"default_profile": "seed-002", "profiles": {"seed-002": {"keep_last_tool_uses": 2}}}"#,
        None,
        None,
        &[],
    )
    .unwrap();
    assert_eq!(
        (
            json.profile.as_str(),
            json.keep_last_tool_uses,
            json.trigger
        ),
        ("seed-002", 2, Trigger::Always)
    );
}

#[test]
fn bad_policies_say_what_and_where() {
    check_error("[profiles.a]\nbudgett = 3\n", Some("a"), None, "policy.toml:2:1: unknown field `budgett`, expected one of `extends`, `trigger`, `budget`, `target`, `keep_latest_result_message`, `keep_last_tool_uses`, `exclude_tools`, `clear_tool_inputs`, `min_reclaim_tokens`, `min_reclaim_ratio`, `cache_write_premium`, `horizon`, `min_horizon`, `max_regret`, `cache_ttl`, `cold_read_age`, `max_tool_result_chars`, `max_conversation_messages`, `request_budget`, `warning_threshold`, `retrieval_tool`, `rules`, `add_rules`");
    check_error(
        "[profiles.a]\nextends = \"seed-000\"\nbudget = -5\n",
        Some("a"),
        None,
        "profiles.a.budget: must be 0 or more, got -5",
    );
    check_error(
        "[profiles.a]\nextends = \"smart\"\nhorizon = -0.5\n",
        Some("a"),
        None,
        "profiles.a.horizon: must be a finite number of 0 or more, got -0.5",
    );
    // a value of the wrong type is named in a policy author's words, not the parser's (`i64`), TOML and JSON alike
    check_error(
        "[profiles.a]\nextends = \"smart\"\nrequest_budget = 1e30\n",
        Some("a"),
        None,
        "policy.toml:3:18: invalid type: floating point `1000000000000000000000000000000.0`, expected an integer",
    );
    check_error(
        "{\"profiles\": {\"a\": {\"budget\": \"lots\"}}}",
        Some("a"),
        None,
        "policy.toml:1:36: invalid type: string \"lots\", expected an integer",
    );
    // (TOML spells infinity and NaN; neither is a bound)
    check_error(
        "[profiles.a]\nextends = \"smart\"\nmax_regret = inf\n",
        Some("a"),
        None,
        "profiles.a.max_regret: must be a finite number of 0 or more, got inf",
    );
    check_error(
        "[profiles.a]\nextends = \"smart\"\nmin_horizon = -1\n",
        Some("a"),
        None,
        "profiles.a.min_horizon: must be 0 or more, got -1",
    );
    check_error(
        "[profiles.a]\nextends = \"b\"\n[profiles.b]\nextends = \"a\"\n",
        Some("a"),
        None,
        "profiles.a: `extends` loops: a → b → a",
    );
    check_error(
        "",
        Some("nope"),
        None,
        "profile `nope`: no such profile (known: anthropic-clear, keep-last-30, mask-last-10, seed-000, seed-002, seed-004, smart)",
    );
    check_error(
        "",
        None,
        Some("bob"),
        "agents.bob: no such agent in the policy",
    );
    check_error(
        "[profiles.a]\nbudget = 10\n",
        Some("a"),
        None,
        "profiles.a.rules: a profile needs at least one rule",
    );
    check_error(
        "[profiles.a]\nextends = \"seed-000\"\nbudget = 10\ntarget = 20\n",
        Some("a"),
        None,
        "profiles.a.target: must not exceed the budget (20 > 10)",
    );
    check_error("trigger = \"always\"\n", None, None, "policy.toml:1:1: unknown field `trigger`, expected one of `default_profile`, `profiles`, `agents`, `aliases`");
    let err = resolve("", None, None, &[("CTXFIT_BUDGET", "lots")]).unwrap_err();
    assert_eq!(
        err,
        "CTXFIT_BUDGET: expected a whole number of 0 or more, got `lots`"
    );
    let err = resolve("{\"profiles\": 3", None, None, &[]).unwrap_err();
    assert!(err.starts_with("policy.toml:1:14: "), "{err}");
    // nesting 100,000 deep is refused by the parsers' recursion limits, named at its place or by the file alone
    let n = 100_000;
    for deep in [
        format!("a = {}{}\n", "[".repeat(n), "]".repeat(n)),
        format!("a = {}1{}\n", "{b=".repeat(n), "}".repeat(n)),
        format!("[{}]\nx = 1\n", vec!["a"; n].join(".")),
        format!("{{\"a\": {}{}}}", "[".repeat(n), "]".repeat(n)),
    ] {
        let err = resolve(&deep, None, None, &[]).unwrap_err();
        assert!(err.starts_with("policy.toml"), "{err}");
        assert!(!err.contains(":0:0"), "{err}");
    }
}

#[test]
fn unknown_rules_and_bad_params_fail_when_the_compactor_is_built() {
    let registry = ctxfit_plugins::registry().unwrap();
    let s = resolve(
        "[profiles.a]\n[[profiles.a.rules]]\nrule = \"shrink\"\n",
        Some("a"),
        None,
        &[],
    )
    .unwrap();
    let err = Compactor::new(s, &registry, Box::new(ctxfit_tokens::FastEstimator))
        .err()
        .unwrap();
    assert_eq!(
        err,
        CompactorError::UnknownRule {
            name: "shrink".into(),
            profile: "a".into(),
            known: "bash, edit-file, excerpt, images, read-file, recent, tiered, truncate".into()
        }
    );
    let s = resolve(
        "[profiles.a]\n[[profiles.a.rules]]\nrule = \"truncate\"\nparams = { chars = \"many\" }\n",
        Some("a"),
        None,
        &[],
    )
    .unwrap();
    let err = Compactor::new(s, &registry, Box::new(ctxfit_tokens::FastEstimator))
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "rule `truncate`: `chars` must be a non-negative integer"
    );
}

#[test]
fn settings_print_as_a_policy_that_reads_back() {
    for profile in ctxfit_compactor::BUILT_IN_PROFILES {
        let s = resolve("", Some(profile), None, &[]).unwrap();
        let printed = s.to_string();
        assert!(
            printed.contains(&format!("[profiles.{profile}]")),
            "{printed}"
        );
        // numbers as numbers (a rule's parameters are JSON numbers of arbitrary precision)
        assert!(!printed.contains("serde_json"), "{printed}");
        let again = resolve(&printed, Some(profile), None, &[]).unwrap();
        assert_eq!(again, s, "{printed}");
    }
    let s = resolve("", Some("seed-000"), None, &[])
        .unwrap()
        .to_string();
    assert!(
        s.contains("[profiles.seed-000.rules.params]\nchars = 500\n"),
        "{s}"
    );
    let s = resolve(
        "[aliases]\nmy_reader = \"read_file\"\n[profiles.mine]\nextends = \"smart\"\nmin_reclaim_ratio = 0.25\n",
        Some("mine"),
        None,
        &[],
    )
    .unwrap();
    let printed = s.to_string();
    assert!(printed.contains("min_reclaim_ratio = 0.25\n"), "{printed}");
    assert!(
        printed.contains("[aliases]\nmy_reader = \"read_file\"\n"),
        "{printed}"
    );
    assert_eq!(resolve(&printed, Some("mine"), None, &[]).unwrap(), s);
}

#[test]
fn a_negative_reclaim_ratio_is_refused() {
    check_error(
        "[profiles.a]\nextends = \"smart\"\nmin_reclaim_ratio = -0.5\n",
        Some("a"),
        None,
        "profiles.a.min_reclaim_ratio: must be a finite number of 0 or more, got -0.5",
    );
}

#[test]
fn the_token_guard_comes_from_the_profile_the_agent_and_the_environment() {
    use ctxfit_tokens::{BudgetStatus, FastEstimator};
    let text = r#"
default_profile = "guarded"

[profiles.guarded]
extends = "seed-002"
request_budget = 150000
warning_threshold = 100000

[agents.small-model]
request_budget = 30000
warning_threshold = 20000

[agents.unguarded]
request_budget = 0
"#;
    let guard =
        |agent, env: &[(&str, &str)]| resolve(text, None, agent, env).unwrap().token_guard();
    assert_eq!(
        (guard(None, &[]).budget, guard(None, &[]).warning_threshold),
        (150_000, 100_000)
    );
    let small = guard(Some("small-model"), &[]);
    assert_eq!((small.budget, small.warning_threshold), (30_000, 20_000));
    assert_eq!(guard(Some("unguarded"), &[]).budget, 0);
    assert_eq!(
        guard(Some("unguarded"), &[]).warning_threshold,
        100_000,
        "inherited"
    );
    let env = guard(Some("small-model"), &[("CTXFIT_REQUEST_BUDGET", "9")]);
    assert_eq!(env.budget, 9);
    check_error(
        "[profiles.x]\nextends = \"seed-000\"\nrequest_budget = -1\n",
        Some("x"),
        None,
        "profiles.x.request_budget: must be 0 or more, got -1",
    );

    // the compactor checks the request as compacted: a conversation of about 3,000 tokens
    use ctxfit_model::{Content, Conversation, Message, Role, WireFormat};
    let mut conv = Conversation::new(WireFormat::Anthropic);
    conv.messages.push(Message::new(
        Role::User,
        Content::text("The quick brown fox jumps over the lazy dog. ".repeat(300)),
    ));
    let registry = ctxfit_plugins::registry().unwrap();
    let check = |budget: usize, warning: usize| {
        let mut settings = resolve(text, None, None, &[]).unwrap();
        settings.request_budget = budget;
        settings.warning_threshold = warning;
        let mut compactor = Compactor::new(settings, &registry, Box::new(FastEstimator)).unwrap();
        let report = compactor.compact(&conv, None);
        (report.tokens_after, compactor.check_request(&report))
    };
    let (tokens, ok) = check(0, 0);
    assert!(tokens > 1000 && tokens < 5000, "{tokens}");
    assert_eq!(ok, Ok(BudgetStatus::Ok));
    assert_eq!(
        check(tokens + 1, tokens - 1).1,
        Ok(BudgetStatus::Warning {
            tokens,
            threshold: tokens - 1
        })
    );
    let err = check(tokens - 1, 0).1.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "Prompt too large: {tokens} tokens exceeds budget of {}",
            tokens - 1
        )
    );
}

#[test]
fn a_profile_adds_a_rule_in_front_of_what_it_extends() {
    let text = "[profiles.mine]\nextends = \"smart\"\nadd_rules = [{ rule = \"truncate\", tools = [\"sql_query\"], params = { max_chars = 200 } }]\n[profiles.more]\nextends = \"mine\"\nadd_rules = [{ rule = \"recent\", tools = [\"status\"] }]\n";
    let smart: Vec<String> = resolve("", Some("smart"), None, &[])
        .unwrap()
        .rules
        .iter()
        .map(|r| r.rule.clone())
        .collect();
    let names = |profile| -> Vec<String> {
        resolve(text, Some(profile), None, &[])
            .unwrap()
            .rules
            .iter()
            .map(|r| r.rule.clone())
            .collect()
    };
    let mut expected = vec!["truncate".to_owned()];
    expected.extend(smart.iter().cloned());
    assert_eq!(names("mine"), expected);
    expected.insert(0, "recent".to_owned());
    assert_eq!(
        names("more"),
        expected,
        "each level adds in front of the one below"
    );
}

#[test]
fn an_unknown_rule_says_how_to_link_one() {
    let settings = resolve(
        "[profiles.x]\nrules = [{ rule = \"my-sql-rule\" }]\n",
        Some("x"),
        None,
        &[],
    )
    .unwrap();
    let registry = ctxfit_compactor::Registry::collect().unwrap();
    let err = Compactor::new(settings, &registry, Box::new(ctxfit_tokens::FastEstimator))
        .err()
        .unwrap();
    assert!(matches!(err, CompactorError::UnknownRule { .. }));
    assert!(err.to_string().contains("use my_rule_crate as _;"), "{err}");
}

#[test]
fn a_batch_held_back_by_the_reclaim_check_is_in_the_report() {
    let settings = resolve(
        "[profiles.a]\nextends = \"seed-002\"\nmin_reclaim_tokens = 1000000\n",
        Some("a"),
        None,
        &[],
    )
    .unwrap();
    let registry = ctxfit_compactor::Registry::collect().unwrap();
    let mut c =
        Compactor::new(settings, &registry, Box::new(ctxfit_tokens::FastEstimator)).unwrap();
    let long = "line of output\n".repeat(400);
    let conv = ctxfit_model::from_value(serde_json::json!({"messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "bash", "input": {"command": "make"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": long}]},
        {"role": "assistant", "content": "built"},
        {"role": "user", "content": "next"}
    ]}))
    .unwrap();
    let report = c.compact(&conv, None);
    assert!(report.new_blocks.is_empty());
    let held = report.held_back.expect("the cut is reported as held back");
    assert_eq!(
        (held.results, held.reason),
        (1, ctxfit_compactor::HoldReason::MinReclaimTokens)
    );
    assert!(held.tokens > 500, "{}", held.tokens);
}

#[test]
fn every_built_in_alias_is_in_the_docs_table_under_its_kind() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/config.md"))
        .unwrap();
    for (name, kind) in ctxfit_compactor::DEFAULT_ALIASES {
        let row = doc
            .lines()
            .find(|l| l.starts_with(&format!("| `{kind}` |")))
            .unwrap_or_else(|| panic!("docs/config.md has no row for the kind `{kind}`"));
        assert!(
            row.contains(&format!("`{name}`")),
            "docs/config.md's `{kind}` row does not name `{name}`"
        );
    }
}

#[test]
fn a_policy_file_is_read_within_bounds_and_named_when_it_cannot_be() {
    let dir = std::env::temp_dir().join(format!("ctxfit-policy-read-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // a byte-order mark is read past
    let file = dir.join("p.toml");
    std::fs::write(
        &file,
        "\u{feff}default_profile = \"x\"\n[profiles.x]\nextends = \"smart\"\n",
    )
    .unwrap();
    let policy = PolicyFile::read(&file).unwrap();
    assert_eq!(policy.default_profile.as_deref(), Some("x"));
    let said = |path: &std::path::Path| PolicyFile::read(path).unwrap_err().to_string();
    assert_eq!(
        said(&dir),
        format!(
            "{}: cannot read: a folder, not a policy file",
            dir.display()
        )
    );
    assert!(said(&dir.join("missing.toml")).contains("missing.toml: cannot read: No such file"));
    std::fs::write(&file, b"budget = \"caf\xe9\"").unwrap();
    assert!(
        said(&file).ends_with("cannot read: not UTF-8 text (byte at offset 13)"),
        "{}",
        said(&file)
    );
    // a device without end is refused once it has sent more than any policy holds
    if std::path::Path::new("/dev/zero").exists() {
        assert_eq!(
            said(std::path::Path::new("/dev/zero")),
            format!("/dev/zero: cannot read: more than {MAX_POLICY_BYTES} bytes: no policy is this large (a device or a stream without end?)")
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
