//! `ctxfit`: the command line. The only crate that parses arguments, prints and touches files.
//!
//! Exit codes: 0 success, 2 bad input (unreadable or malformed file, wrong arguments), 1 internal error.
//! Every output file is written to a temporary file beside it and renamed into place, so a failure never
//! leaves a half-written file.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod compact;
mod convert;
mod files;
mod html;
mod input;
mod output;
mod policy;
mod proxy;
mod replay;
mod shown;
mod stats;
mod tokens;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The system allocator, counting the bytes in use: `ctxfit proxy --max-memory` holds the proxy's heap by it.
#[global_allocator]
static ALLOCATOR: cap::Cap<std::alloc::System> = cap::Cap::new(std::alloc::System, usize::MAX);

/// Keep a tool-using agent's conversation inside its token budget.
#[derive(Parser)]
#[command(name = "ctxfit", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Bytes an input may hold, a gzipped one once inflated (or with K, M, G: 2G); past them it is refused (a gzip bomb, a device or a stream without end).
    #[arg(long, global = true, value_name = "BYTES", default_value = "1G", value_parser = input::parse_bytes)]
    max_inflated: usize,
}

#[derive(Subcommand)]
enum Command {
    /// Messages, tool calls and results per tool, characters and tokens of a session.
    Stats(stats::Args),
    /// Convert a conversation (or an imported session) to the Anthropic, OpenAI Chat or OpenAI Responses format.
    Convert(convert::Args),
    /// Count the tokens of a text file, or of a conversation with --conversation.
    Tokens(tokens::Args),
    /// Compact stale tool results of a conversation under a profile; writes it in its own format.
    Compact(compact::Args),
    /// Replay recorded sessions turn by turn under policies: tokens, cache-aware cost, reference recall.
    Replay(replay::Args),
    /// The edits of a session, per file, with their intents.
    Changelog(files::ChangelogArgs),
    /// The content of a file at a turn, rebuilt from the reads and edits of a session.
    FileState(files::FileStateArgs),
    /// A web page (file, `-` or URL) as cleaned Markdown at a strip level, or as the page tool's JSON.
    Html(html::Args),
    /// A local proxy that compacts each Anthropic or OpenAI request before forwarding it (point the agent's
    /// ANTHROPIC_BASE_URL / OPENAI_BASE_URL at it).
    Proxy(proxy::Args),
    /// Policies: `policy show` prints the effective profile and the registered rules.
    #[command(subcommand)]
    Policy(policy::Command),
}

/// An error caused by the input, not by ctxfit: exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    ctxfit_import::files::set_max_inflated(cli.max_inflated as u64);
    let result = match cli.command {
        Command::Stats(args) => stats::run(args),
        Command::Convert(args) => convert::run(args),
        Command::Tokens(args) => tokens::run(args),
        Command::Compact(args) => compact::run(args),
        Command::Replay(args) => replay::run(args),
        Command::Changelog(args) => files::changelog(args),
        Command::FileState(args) => files::file_state(args),
        Command::Html(args) => html::run(args),
        Command::Proxy(args) => proxy::run(args),
        Command::Policy(cmd) => policy::run(cmd),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            crate::shown::say(&format!("error: {e:#}"));
            if e.downcast_ref::<BadInput>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}
