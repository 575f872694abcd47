//! `ctxfit stats`: what a session is made of, and where its tokens go.

use std::collections::BTreeMap;

use anyhow::Result;
use ctxfit_model::{Block, Content, ToolCallIndex};
use ctxfit_tokens::{conversation::count_block, count_message, TokenEstimator};
use serde_json::json;

use crate::input::{display_name, InputArgs};
use crate::output::{emit, thousands};
use crate::tokens::parse_estimator;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    input: InputArgs,
    /// Token estimator: chars4, fast, o200k, cl100k.
    #[arg(long, default_value = "fast", value_parser = parse_estimator)]
    estimator: String,
    /// How many of the largest tool results to list.
    #[arg(long, default_value_t = 5)]
    top: usize,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
}

#[derive(Default)]
struct PerTool {
    calls: usize,
    results: usize,
    chars: usize,
    tokens: usize,
}

struct Largest {
    session: String,
    message: usize,
    tool: String,
    tool_use_id: String,
    chars: usize,
    tokens: usize,
}

#[derive(Default)]
struct Stats {
    sessions: usize,
    messages: usize,
    by_role: BTreeMap<String, usize>,
    tool_calls: usize,
    tool_results: usize,
    chars: usize,
    tokens: usize,
    result_chars: usize,
    result_tokens: usize,
    tools: BTreeMap<String, PerTool>,
    largest: Vec<Largest>,
    /// What the logs say the provider billed as input (Claude Code's usage): requests that record it, their
    /// input summed, and the largest.
    billed: Option<Billed>,
}

#[derive(Default)]
struct Billed {
    requests: usize,
    input_tokens: usize,
    largest: usize,
}

fn content_chars(c: &Content) -> usize {
    c.blocks.iter().map(block_chars).sum()
}

fn block_chars(b: &Block) -> usize {
    match b {
        Block::Text(t) => t.text.chars().count(),
        Block::Thinking(t) => t.thinking.chars().count(),
        Block::ToolUse(u) => u.input.to_string().chars().count(),
        Block::ToolResult(r) => content_chars(&r.content),
        _ => 0,
    }
}

/// Adds `sessions` to `s`, keeping the `top` largest tool results seen so far (the largest of all the sessions
/// added, in the order one pass over all of them would give: a folder is read one file at a time).
fn add(s: &mut Stats, sessions: &[ctxfit_import::Session], est: &dyn TokenEstimator, top: usize) {
    s.sessions += sessions.len();
    for session in sessions {
        let conv = &session.conversation;
        for bill in session.billed.iter().flatten().map(|&b| b as usize) {
            let b = s.billed.get_or_insert_with(Billed::default);
            b.requests += 1;
            b.input_tokens += bill;
            b.largest = b.largest.max(bill);
        }
        let index = ToolCallIndex::build(conv);
        s.messages += conv.messages.len();
        if let Some(system) = &conv.system {
            s.chars += content_chars(system);
        }
        s.tokens += ctxfit_tokens::count_conversation(est, conv)
            - conv
                .messages
                .iter()
                .map(|m| count_message(est, m))
                .sum::<usize>();
        for (mi, msg) in conv.messages.iter().enumerate() {
            *s.by_role.entry(msg.role.as_str().to_owned()).or_default() += 1;
            s.tokens += count_message(est, msg);
            s.chars += content_chars(&msg.content);
            for (bi, block) in msg.content.blocks.iter().enumerate() {
                match block {
                    Block::ToolUse(u) => {
                        s.tool_calls += 1;
                        s.tools.entry(u.name.clone()).or_default().calls += 1;
                    }
                    Block::ToolResult(r) => {
                        let tool = index
                            .call_before(&r.tool_use_id, (mi, bi))
                            .map_or("(unknown)", |c| c.name.as_str())
                            .to_owned();
                        let chars = content_chars(&r.content);
                        let tokens = count_block(est, block);
                        s.tool_results += 1;
                        s.result_chars += chars;
                        s.result_tokens += tokens;
                        let t = s.tools.entry(tool.clone()).or_default();
                        t.results += 1;
                        t.chars += chars;
                        t.tokens += tokens;
                        s.largest.push(Largest {
                            session: session.name.clone(),
                            message: mi,
                            tool,
                            tool_use_id: r.tool_use_id.clone(),
                            chars,
                            tokens,
                        });
                    }
                    _ => {}
                }
            }
        }
    }
    // (a stable sort: of results alike, the one added first stays first, as over all sessions at once)
    s.largest
        .sort_by(|a, b| b.chars.cmp(&a.chars).then(a.message.cmp(&b.message)));
    s.largest.truncate(top);
}

fn percent(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

pub fn run(args: Args) -> Result<()> {
    let est = ctxfit_tokens::estimator(&args.estimator)
        .ok_or_else(|| anyhow::anyhow!("estimator {} is not built in", args.estimator))?;
    let folder = args.input.is_folder();
    let mut s = Stats::default();
    let (mut files, mut first_name) = (0, None);
    let mut problems = Vec::new();
    let mut formats = std::collections::BTreeSet::new();
    // one file at a time: a folder's sessions are never all in memory
    let skipped = args.input.for_each_file(None, |l| {
        files += 1;
        first_name.get_or_insert_with(|| l.name.clone());
        problems.extend(l.problems.into_iter().map(|p| {
            if folder {
                format!("{}: {p}", l.name)
            } else {
                p
            }
        }));
        let mut sessions = l.sessions;
        for s in &mut sessions {
            formats.insert(s.source.name());
            if folder {
                s.name = match s.name.as_str() {
                    "" => l.name.clone(),
                    session => format!("{} — {session}", l.name),
                };
            }
        }
        add(&mut s, &sessions, est.as_ref(), args.top);
        Ok(())
    })?;
    let name = if folder {
        args.input
            .file
            .as_deref()
            .map(display_name)
            .unwrap_or_default()
    } else {
        first_name.unwrap_or_default()
    };
    let format = match formats.len() {
        0 => "-".to_owned(),
        1 => formats.first().copied().unwrap_or("-").to_owned(),
        _ => formats.into_iter().collect::<Vec<_>>().join("+"),
    };
    if args.json {
        let tools: serde_json::Map<String, serde_json::Value> = s
            .tools
            .iter()
            .map(|(k, t)| {
                (k.clone(), json!({"calls": t.calls, "results": t.results, "chars": t.chars, "tokens": t.tokens}))
            })
            .collect();
        let largest: Vec<_> = s
            .largest
            .iter()
            .map(|l| {
                json!({"session": l.session, "message": l.message, "tool": l.tool,
                            "tool_use_id": l.tool_use_id, "chars": l.chars, "tokens": l.tokens})
            })
            .collect();
        let doc = json!({
            "file": name, "files": files, "files_skipped": skipped, "format": format,
            "estimator": est.name(), "sessions": s.sessions,
            "messages": s.messages, "messages_by_role": s.by_role, "tool_calls": s.tool_calls,
            "tool_results": s.tool_results, "chars": s.chars, "tokens": s.tokens,
            "tool_result_chars": s.result_chars, "tool_result_tokens": s.result_tokens,
            "tools": tools, "largest_tool_results": largest, "warnings": problems,
            "billed": s.billed.as_ref().map(|b| json!({"requests": b.requests,
                "input_tokens": b.input_tokens, "largest_request": b.largest})),
        });
        emit(None, &format!("{}\n", serde_json::to_string_pretty(&doc)?))?;
        return finish(skipped, files);
    }
    let mut out = String::new();
    let roles: Vec<String> = s.by_role.iter().map(|(r, n)| format!("{r} {n}")).collect();
    if args.input.is_folder() {
        out.push_str(&format!(
            "{name}: {} file(s), {format}, {} session(s)\n",
            files, s.sessions
        ));
    } else {
        out.push_str(&format!("{name}: {format}, {} session(s)\n", s.sessions));
    }
    // (no roles to list for a conversation not begun)
    let roles = if roles.is_empty() {
        String::new()
    } else {
        format!(" ({})", roles.join(", "))
    };
    out.push_str(&format!(
        "messages      {}{roles}\ntool calls    {}\ntool results  {}\ncharacters    {}\ntokens        {} ({} estimator)\n",
        thousands(s.messages),
        thousands(s.tool_calls),
        thousands(s.tool_results),
        thousands(s.chars),
        thousands(s.tokens),
        est.name()
    ));
    out.push_str(&format!(
        "tool results  {} characters, {} tokens ({:.0}% of all tokens)\n",
        thousands(s.result_chars),
        thousands(s.result_tokens),
        percent(s.result_tokens, s.tokens)
    ));
    if let Some(b) = &s.billed {
        // what the provider counted, which the messages above leave out part of (system prompt, tools, reminders)
        out.push_str(&format!(
            "billed        {} input tokens over {} requests, the largest {} (the log's usage: system prompt and \
             tools included)\n",
            thousands(b.input_tokens),
            thousands(b.requests),
            thousands(b.largest)
        ));
    }
    out.push('\n');
    let width = s.tools.keys().map(String::len).max().unwrap_or(4).max(4);
    out.push_str(&format!(
        "{:<width$}  {:>6}  {:>7}  {:>10}  {:>9}  {:>6}\n",
        "tool", "calls", "results", "chars", "tokens", "share"
    ));
    let mut tools: Vec<_> = s.tools.iter().collect();
    tools.sort_by(|a, b| b.1.tokens.cmp(&a.1.tokens).then(a.0.cmp(b.0)));
    for (tool, t) in tools {
        out.push_str(&format!(
            "{:<width$}  {:>6}  {:>7}  {:>10}  {:>9}  {:>5.1}%\n",
            tool,
            t.calls,
            t.results,
            thousands(t.chars),
            thousands(t.tokens),
            percent(t.tokens, s.tokens)
        ));
    }
    if !s.largest.is_empty() {
        let places: Vec<String> = s
            .largest
            .iter()
            .map(|l| match l.session.as_str() {
                "" => l.message.to_string(),
                session => format!("{session}:{}", l.message),
            })
            .collect();
        let at_width = places.iter().map(String::len).max().unwrap_or(0).max(7);
        out.push_str(&format!(
            "\nlargest tool results\n{:>at_width$}  {:<width$}  {:>10}  {:>9}  tool_use_id\n",
            "message", "tool", "chars", "tokens"
        ));
        for (l, at) in s.largest.iter().zip(&places) {
            out.push_str(&format!(
                "{:>at_width$}  {:<width$}  {:>10}  {:>9}  {}\n",
                at,
                l.tool,
                thousands(l.chars),
                thousands(l.tokens),
                l.tool_use_id
            ));
        }
    }
    if !problems.is_empty() {
        out.push_str(&format!("\nwarnings ({})\n", problems.len()));
        for p in &problems {
            out.push_str(&format!("  {p}\n"));
        }
    }
    crate::output::emit_table(&out)?;
    finish(skipped, files)
}

/// Exit 2 when files of a folder were skipped (named on standard error), after printing the rest.
fn finish(skipped: usize, read: usize) -> Result<()> {
    if skipped > 0 {
        return Err(crate::input::skipped_error(skipped, skipped + read));
    }
    Ok(())
}
