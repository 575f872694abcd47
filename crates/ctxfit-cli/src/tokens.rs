//! `ctxfit tokens`: the token count of a text file, or of each message of a conversation.

use anyhow::Result;
use ctxfit_import::SourceFormat;
use ctxfit_tokens::{count_conversation, count_message, estimator_names};
use serde_json::json;

use crate::input::{display_name, load, parse_format, problems, read_text, warn};
use crate::output::{emit, thousands};

#[derive(clap::Args)]
pub struct Args {
    /// Text file (`-` for standard input).
    file: std::path::PathBuf,
    /// Token estimator: chars4, fast, o200k, cl100k.
    #[arg(long, default_value = "fast", value_parser = parse_estimator)]
    estimator: String,
    /// Read FILE as a conversation (any importable format) and count each message.
    #[arg(long)]
    conversation: bool,
    /// With --conversation: read the input as this format instead of detecting it.
    #[arg(long, value_parser = parse_format, requires = "conversation")]
    format: Option<SourceFormat>,
    /// Print JSON with details instead of the bare count.
    #[arg(long)]
    json: bool,
}

/// Validate an `--estimator` value against what this build has.
pub fn parse_estimator(name: &str) -> Result<String, String> {
    if estimator_names().contains(&name) {
        Ok(name.to_owned())
    } else if matches!(name, "o200k" | "cl100k") {
        Err(format!(
            "estimator `{name}` needs ctxfit built with the `exact` feature"
        ))
    } else {
        Err(format!(
            "unknown estimator `{name}` (expected one of: {})",
            estimator_names().join(", ")
        ))
    }
}

pub fn run(args: Args) -> Result<()> {
    let est = ctxfit_tokens::estimator(&args.estimator)
        .ok_or_else(|| anyhow::anyhow!("estimator {} is not built in", args.estimator))?;
    if !args.conversation {
        let text = read_text(&args.file)?;
        let name = display_name(&args.file);
        let tokens = est.count_text(&text);
        let out = if args.json {
            let doc = json!({"file": name, "estimator": est.name(), "tokens": tokens,
                             "characters": text.chars().count(), "bytes": text.len()});
            format!("{}\n", serde_json::to_string_pretty(&doc)?)
        } else {
            format!("{tokens}\n")
        };
        return emit(None, &out);
    }
    // as every command reads a conversation: an empty input is refused, a folder of OpenHands events read
    let (name, sessions) = load(Some(&args.file), false, args.format)?;
    // what reads but is probably wrong (a last line cut short, an orphan result): said, as every command says it
    let problems = problems(&sessions);
    warn(&name, &problems);
    let mut total = 0;
    let mut docs = Vec::new();
    let mut table = String::new();
    for s in &sessions {
        let conv = &s.conversation;
        let per_message: Vec<usize> = conv
            .messages
            .iter()
            .map(|m| count_message(est.as_ref(), m))
            .collect();
        let session_total = count_conversation(est.as_ref(), conv);
        total += session_total;
        if !s.name.is_empty() {
            table.push_str(&format!("# {}\n", s.name));
        }
        for (i, (m, n)) in conv.messages.iter().zip(&per_message).enumerate() {
            table.push_str(&format!(
                "{i:>5}  {:<9}  {:>9}\n",
                m.role.as_str(),
                thousands(*n)
            ));
        }
        docs.push(json!({"session": s.name, "tokens": session_total, "messages": per_message}));
    }
    let out = if args.json {
        let doc = json!({"file": name, "estimator": est.name(), "tokens": total, "sessions": docs,
                         "warnings": problems});
        format!("{}\n", serde_json::to_string_pretty(&doc)?)
    } else {
        format!("{table}total  {}\n", thousands(total))
    };
    emit(None, &out)
}
