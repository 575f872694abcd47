//! The registry holds exactly the built-in rules, found by name and by tool.

#[test]
fn exactly_the_built_in_rules_are_registered() {
    let registry = ctxfit_plugins::registry().expect("no duplicate rule names");
    assert_eq!(registry.names(), ctxfit_plugins::BUILT_IN_RULES);
}

#[test]
fn rules_are_found_by_name_and_tool() {
    let registry = ctxfit_plugins::registry().unwrap();
    let tiered = registry.get("tiered").expect("tiered");
    assert_eq!(tiered.name, "tiered");
    assert!(tiered.origin.starts_with("ctxfit_retain_tiered"));
    assert!(registry.get("nope").is_none());
    let names = |kind: &str, tool: &str| -> Vec<&str> {
        registry
            .for_tool(kind, tool)
            .iter()
            .map(|d| d.name)
            .collect()
    };
    assert_eq!(
        names("bash", "Bash"),
        [
            "bash",
            "excerpt",
            "images",
            "read-file",
            "tiered",
            "truncate"
        ]
    );
    assert_eq!(
        names("listing", "Glob"),
        ["excerpt", "images", "recent", "tiered", "truncate"]
    );
    assert_eq!(
        names("edit_file", "Edit"),
        ["edit-file", "excerpt", "images", "tiered", "truncate"]
    );
    assert!((tiered.factory)(&serde_json::json!({"default": "x"})).is_err());
    assert!((tiered.factory)(&serde_json::json!({"colour": 1})).is_err());
}
