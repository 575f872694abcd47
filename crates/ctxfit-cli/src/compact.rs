//! `ctxfit compact`: compact the stale tool results of a conversation and write it back in its own format.

use std::path::PathBuf;

use anyhow::Result;
use ctxfit_compactor::HoldReason;
use ctxfit_compactor::{Compactor, Report};
use ctxfit_import::SourceFormat;
use ctxfit_model::to_value;
use ctxfit_tokens::BudgetStatus;

use crate::input::{select, InputArgs};
use crate::output::{documents_json, emit, is_the_input, thousands};
use crate::policy::PolicyArgs;
use crate::tokens::parse_estimator;
use crate::BadInput;

#[derive(Clone, Copy, clap::ValueEnum)]
enum ReportFormat {
    Text,
    Json,
}

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    input: InputArgs,
    #[command(flatten)]
    policy: PolicyArgs,
    /// Override the profile's budget (tokens): compact when the input is above it.
    #[arg(long)]
    budget: Option<usize>,
    /// Override the profile's token guard: refuse (exit 2, nothing written) when the compacted request is
    /// estimated above this many tokens.
    #[arg(long)]
    request_budget: Option<usize>,
    /// Override the profile's warning threshold: warn when the compacted request is above it.
    #[arg(long)]
    warning_threshold: Option<usize>,
    /// The input tokens the provider reported for the last call (the seeds' trigger); else estimated.
    #[arg(long)]
    input_tokens: Option<usize>,
    /// Token estimator: chars4, fast, o200k, cl100k.
    #[arg(long, default_value = "fast", value_parser = parse_estimator)]
    estimator: String,
    /// For files holding several sessions: compact only session N (0-based). Without it such files give a JSON
    /// list with one document per session, which every command reads back.
    #[arg(long)]
    session: Option<usize>,
    /// Write to this file (atomically; gzipped when its name ends in .gz) instead of standard output (`-`:
    /// standard output); naming the input itself is --in-place.
    #[arg(short, long, conflicts_with = "in_place")]
    output: Option<PathBuf>,
    /// Replace FILE itself (atomically); only for plain Anthropic or OpenAI JSON files.
    #[arg(long)]
    in_place: bool,
    /// Print the report as text or JSON (to stderr when the conversation goes to stdout, else to stdout).
    #[arg(long)]
    report: Option<ReportFormat>,
    /// One line of JSON instead of indented JSON.
    #[arg(long)]
    compact: bool,
}

fn report_text(r: &Report) -> String {
    let mut out = format!(
        "profile {}: {} → {} tokens ({} tool result(s) compacted, {} new; trigger {}: input tokens {}{})\n",
        r.profile,
        thousands(r.tokens_before),
        thousands(r.tokens_after),
        r.compacted_total,
        r.new_blocks.len(),
        if r.triggered { "fired" } else { "did not fire" },
        thousands(r.input_tokens),
        if r.budget > 0 { format!(", budget {}", thousands(r.budget)) } else { String::new() },
    );
    if let Some(m) = r.first_changed_message {
        out.push_str(&format!(
            "first changed message: {m} (the prompt cache breaks here)\n"
        ));
    }
    if r.dropped_messages > 0 {
        out.push_str(&format!(
            "dropped {} message(s) from the front\n",
            r.dropped_messages
        ));
    }
    if let Some(h) = &r.held_back {
        let why = match h.reason {
            HoldReason::MinReclaimTokens => "fewer than min_reclaim_tokens",
            HoldReason::MinReclaimRatio => {
                "less than min_reclaim_ratio of the cache it would break"
            }
            HoldReason::CacheWritePremium => {
                "would not pay back the cache write yet: they wait (cache_write_premium = 0 in a policy file makes every cut at once)"
            }
            HoldReason::RegretBound => {
                "their cache write would cost more than the savings so far plus max_regret allow: they wait"
            }
        };
        out.push_str(&format!(
            "held back: {} cut(s) reclaiming {} tokens — {why}\n",
            h.results,
            thousands(h.tokens)
        ));
    }
    if !r.new_blocks.is_empty() {
        out.push_str(&format!(
            "{:>7} {:>5}  {:<16} {:<10} {:<13} {:>15} {:>13}\n",
            "message", "block", "tool", "rule", "action", "chars", "tokens"
        ));
        for b in &r.new_blocks {
            out.push_str(&format!(
                "{:>7} {:>5}  {:<16} {:<10} {:<13} {:>15} {:>13}\n",
                b.message,
                b.block,
                b.tool,
                b.rule,
                format!("{:?}", b.action).to_lowercase(),
                format!(
                    "{} → {}",
                    thousands(b.chars_before),
                    thousands(b.chars_after)
                ),
                format!(
                    "{} → {}",
                    thousands(b.tokens_before),
                    thousands(b.tokens_after)
                ),
            ));
        }
    }
    out
}

pub fn run(args: Args) -> Result<()> {
    if args.in_place && args.input.file.as_deref().is_none_or(|f| f == "-") {
        return Err(BadInput("--in-place needs a FILE".into()).into());
    }
    let mut settings = args.policy.settings()?;
    if let Some(b) = args.budget {
        settings.budget = b;
    }
    if let Some(b) = args.request_budget {
        settings.request_budget = b;
    }
    if let Some(t) = args.warning_threshold {
        settings.warning_threshold = t;
    }
    let (name, sessions) = args.input.load()?;
    // `-o` naming the input itself rewrites it in place: the same rule as `--in-place`, or a recorded log would
    // be replaced by its messages
    let onto_input =
        (args.output.as_deref()).is_some_and(|o| is_the_input(args.input.file.as_deref(), o));
    if (args.in_place || onto_input)
        && !matches!(
            sessions.first().map(|s| s.source),
            Some(SourceFormat::Anthropic | SourceFormat::OpenAi | SourceFormat::Responses)
        )
    {
        let how = if args.in_place {
            "--in-place"
        } else {
            "-o naming the input itself"
        };
        return Err(BadInput(format!(
            "{name}: {how} only rewrites plain Anthropic, OpenAI Chat or OpenAI Responses JSON (this is {}): \
             write elsewhere with -o",
            sessions.first().map_or("empty", |s| s.source.name())
        ))
        .into());
    }
    let sessions = select(&name, sessions, args.session)?;
    let registry = ctxfit_plugins::registry()?;
    let mut docs = Vec::new();
    let mut reports = Vec::new();
    for s in &sessions {
        let estimator = ctxfit_tokens::estimator(&args.estimator)
            .ok_or_else(|| anyhow::anyhow!("estimator {} is not built in", args.estimator))?;
        let mut compactor = Compactor::new(settings.clone(), &registry, estimator)
            .map_err(|e| BadInput(e.to_string()))?;
        // as a live agent would have compacted it, request by request, at the times its log recorded, with the
        // cache lifetime its requests asked for
        if let Some(ttl) = s.cache_ttl {
            compactor.set_cache_ttl(ttl);
        }
        let report = compactor.compact_history_at(&s.conversation, args.input_tokens, &s.times);
        let session = if s.name.is_empty() {
            name.clone()
        } else {
            format!("{name} ({})", s.name)
        };
        if let Some(note) = report.note() {
            // (of a file of several sessions, each note says whose it is)
            match sessions.len() {
                1 => crate::shown::say(&note),
                _ => crate::shown::say(&format!("{session}: {note}")),
            }
        }
        // the token guard, before anything is written
        match compactor.check_request(&report) {
            Err(e) => return Err(BadInput(format!("{session}: {e}")).into()),
            Ok(BudgetStatus::Warning { tokens, threshold }) => crate::shown::say(&format!(
                "warning: {session}: the request is {} tokens, above the warning threshold of {}",
                thousands(tokens),
                thousands(threshold)
            )),
            Ok(BudgetStatus::Ok) => {}
        }
        docs.push((
            to_value(&compactor.project(&s.conversation)),
            s.conversation.envelope,
        ));
        reports.push((s.name.clone(), report));
    }
    let text = documents_json(docs, args.compact)?;
    let target = if args.in_place {
        args.input.file.as_deref().map(PathBuf::from)
    } else {
        args.output.clone()
    };
    emit(target.as_deref(), &text)?;
    if let Some(format) = args.report {
        let rendered = match format {
            ReportFormat::Json => {
                let all: Vec<_> = reports
                    .iter()
                    .map(|(n, r)| serde_json::json!({"session": n, "report": r}))
                    .collect();
                format!("{}\n", serde_json::to_string_pretty(&all)?)
            }
            ReportFormat::Text => reports
                .iter()
                .map(|(n, r)| {
                    if n.is_empty() {
                        report_text(r)
                    } else {
                        format!("# {n}\n{}", report_text(r))
                    }
                })
                .collect(),
        };
        if target.is_some() {
            crate::output::emit_table(&rendered)?;
        } else {
            eprint!("{}", crate::shown::shown(&rendered));
        }
    }
    Ok(())
}
