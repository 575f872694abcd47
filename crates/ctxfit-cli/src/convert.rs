//! `ctxfit convert`: write a conversation (or an imported session) in the Anthropic or OpenAI format.

use std::path::PathBuf;

use anyhow::Result;
use ctxfit_model::{convert, to_value, WireFormat};

use crate::input::{select, InputArgs};
use crate::output::{documents_json, emit};

#[derive(Clone, Copy, clap::ValueEnum)]
enum Target {
    Anthropic,
    Openai,
}

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    input: InputArgs,
    /// The format to write.
    #[arg(long)]
    to: Target,
    /// For files holding several sessions (tau-bench, Letta): write only session N (0-based). Without it such
    /// files give a JSON list with one document per session.
    #[arg(long)]
    session: Option<usize>,
    /// Write to this file (atomically) instead of standard output.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// One line of JSON instead of indented JSON.
    #[arg(long)]
    compact: bool,
}

pub fn run(args: Args) -> Result<()> {
    let (name, sessions) = args.input.load()?;
    let to = match args.to {
        Target::Anthropic => WireFormat::Anthropic,
        Target::Openai => WireFormat::OpenAi,
    };
    let sessions = select(&name, sessions, args.session)?;
    let mut docs = Vec::with_capacity(sessions.len());
    for s in &sessions {
        let (converted, report) = convert(&s.conversation, to);
        if !report.is_lossless() {
            let which = if s.name.is_empty() {
                String::new()
            } else {
                format!(" ({})", s.name)
            };
            eprintln!(
                "note: {name}{which}: {report} (no counterpart in the {} format)",
                to.name()
            );
        }
        docs.push(to_value(&converted));
    }
    let text = documents_json(docs, args.compact)?;
    emit(args.output.as_deref(), &text)
}
