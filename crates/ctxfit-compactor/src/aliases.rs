//! Tool kinds: the many names agents give the same kind of tool, mapped to one name a rule can handle.

use std::collections::BTreeMap;

use ctxfit_model::Value;

/// Built-in aliases: (tool name, kind). Claude Code, Codex CLI, Gemini CLI, Copilot CLI, OpenHands, SWE-agent and
/// the seeds' own names.
pub const DEFAULT_ALIASES: &[(&str, &str)] = &[
    // reads
    ("read_file", "read_file"),
    ("Read", "read_file"),
    ("open", "read_file"),
    ("view_file", "read_file"),
    ("cat", "read_file"),
    // Copilot CLI (a file, or a directory's listing)
    ("view", "read_file"),
    // edits
    ("edit_file", "edit_file"),
    ("write_file", "edit_file"),
    ("Edit", "edit_file"),
    ("MultiEdit", "edit_file"),
    ("Write", "edit_file"),
    ("NotebookEdit", "edit_file"),
    ("edit", "edit_file"),
    ("create", "edit_file"),
    ("insert", "edit_file"),
    ("apply_patch", "edit_file"),
    // Gemini CLI
    ("replace", "edit_file"),
    // shells
    ("bash", "bash"),
    ("Bash", "bash"),
    ("execute_bash", "bash"),
    ("shell", "bash"),
    ("run", "bash"),
    // Gemini CLI
    ("run_shell_command", "bash"),
    ("execute_ipython_cell", "bash"),
    // Codex CLI: a command, and what a still-running one printed since
    ("exec_command", "bash"),
    ("write_stdin", "bash"),
    // the Responses API's `local_shell` tool (older Codex CLI rollouts)
    ("local_shell", "bash"),
    // navigation and listings
    ("ls", "listing"),
    ("LS", "listing"),
    ("Glob", "listing"),
    ("Grep", "listing"),
    ("find_file", "listing"),
    ("search_dir", "listing"),
    ("search_file", "listing"),
    ("focus", "listing"),
    ("unfocus", "listing"),
    ("filemap", "listing"),
    // Gemini CLI, Copilot CLI, opencode
    ("list_directory", "listing"),
    ("glob", "listing"),
    ("grep", "listing"),
    ("search_file_content", "listing"),
];

/// Maps a tool call to its kind.
#[derive(Debug, Clone)]
pub(crate) struct ToolKinds {
    aliases: BTreeMap<String, String>,
}

impl Default for ToolKinds {
    fn default() -> Self {
        ToolKinds {
            aliases: DEFAULT_ALIASES
                .iter()
                .map(|(n, k)| ((*n).to_owned(), (*k).to_owned()))
                .collect(),
        }
    }
}

impl ToolKinds {
    /// The built-in aliases plus `extra` (which wins).
    pub fn with(extra: &BTreeMap<String, String>) -> Self {
        let mut kinds = ToolKinds::default();
        for (k, v) in extra {
            kinds.aliases.insert(k.clone(), v.clone());
        }
        kinds
    }

    /// The kind of a call. OpenHands' `str_replace_editor` is a read with `command: "view"` and an edit otherwise.
    pub fn kind_of<'a>(&'a self, name: &'a str, input: &Value) -> &'a str {
        if name == "str_replace_editor" {
            return match input.get("command").and_then(Value::as_str) {
                Some("view") => "read_file",
                _ => "edit_file",
            };
        }
        self.aliases.get(name).map_or(name, String::as_str)
    }
}
