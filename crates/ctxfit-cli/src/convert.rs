//! `ctxfit convert`: write a conversation (or an imported session) in the Anthropic, OpenAI Chat or OpenAI
//! Responses format.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use ctxfit_model::{convert, to_value, WireFormat};

use crate::input::{select, skipped_error, warn, InputArgs};
use crate::output::{documents_json, emit, is_the_input, write_atomically};
use crate::BadInput;

#[derive(Clone, Copy, clap::ValueEnum)]
enum Target {
    Anthropic,
    /// OpenAI Chat Completions
    Openai,
    /// OpenAI Responses (`input` items)
    Responses,
}

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    input: InputArgs,
    /// The format to write.
    #[arg(long)]
    to: Target,
    /// For files holding several sessions (tau-bench, Letta): write only session N (0-based). Without it such
    /// files give a JSON list with one document per session, which every command reads back.
    #[arg(long)]
    session: Option<usize>,
    /// Write to this file (atomically; gzipped when its name ends in .gz; never the input itself) instead of
    /// standard output (`-`: standard output). For a folder: the folder to write into, one
    /// file per session file (`a/b.jsonl.gz` → `OUT/a/b.FORMAT.json`), created if missing.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// One line of JSON instead of indented JSON.
    #[arg(long)]
    compact: bool,
}

pub fn run(args: Args) -> Result<()> {
    let to = match args.to {
        Target::Anthropic => WireFormat::Anthropic,
        Target::Openai => WireFormat::OpenAi,
        Target::Responses => WireFormat::Responses,
    };
    if args.input.is_folder() {
        return convert_folder(&args, to);
    }
    if let Some(out) =
        (args.output.as_deref()).filter(|o| is_the_input(args.input.file.as_deref(), o))
    {
        return Err(BadInput(format!(
            "{}: -o names the input itself: its conversion would replace it (and what has no counterpart in the \
             other format would be gone); write elsewhere",
            out.display()
        ))
        .into());
    }
    let (name, sessions) = args.input.load()?;
    let sessions = select(&name, sessions, args.session)?;
    let text = converted_json(&name, &sessions, to, args.compact)?;
    emit(args.output.as_deref(), &text)
}

/// Every session file below the input folder, each written to its own file under `-o`.
fn convert_folder(args: &Args, to: WireFormat) -> Result<()> {
    let folder = args.input.file.clone().unwrap_or_default();
    let Some(out_dir) = &args.output else {
        return Err(BadInput(format!(
            "{}: a folder is converted into a folder: give it with -o",
            folder.display()
        ))
        .into());
    };
    if crate::output::is_stdout(out_dir) {
        return Err(BadInput(format!(
            "{}: a folder is converted into a folder, one file per session: -o - (standard output) cannot hold them",
            folder.display()
        ))
        .into());
    }
    // the input folder itself as the output would mix the converted files with the sessions, each run converting
    // the last one's again
    let same = |a: &Path, b: &Path| matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(a), Ok(b)) if a == b);
    if same(&folder, out_dir) {
        return Err(BadInput(format!(
            "{}: the output folder is the input folder: the converted files would be read as sessions by the \
             next run; write them into another folder (one inside it is not read as input)",
            folder.display()
        ))
        .into());
    }
    // (an output folder inside the input folder is not read as input: a second run would convert the first's
    // files again, into a folder below it)
    let mut converted = 0;
    let skipped = args.input.for_each_file(Some(out_dir), |l| {
        warn(&l.name, &l.problems);
        let sessions = select(&l.name, l.sessions, args.session)?;
        let text = converted_json(&l.name, &sessions, to, args.compact)?;
        let relative = l.path.strip_prefix(&folder).unwrap_or(&l.path);
        // its name without `.gz` and a session's extension, byte for byte (a name need not be UTF-8)
        let mut stem = relative.to_path_buf();
        for extensions in [&["gz"][..], &["jsonl", "json", "traj", "af"]] {
            if (stem.extension().and_then(|e| e.to_str())).is_some_and(|e| extensions.contains(&e))
            {
                stem.set_extension("");
            }
        }
        let mut name = stem.into_os_string();
        name.push(format!(".{}.json", to.name()));
        let target = out_dir.join(name);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        write_atomically(&target, text.as_bytes())?;
        converted += 1;
        Ok(())
    })?;
    crate::shown::say(&format!(
        "converted {converted} file(s) into {}",
        out_dir.display()
    ));
    if skipped > 0 {
        return Err(skipped_error(skipped, skipped + converted));
    }
    Ok(())
}

/// The sessions converted to `to`, as JSON text; what has no counterpart is noted on standard error.
fn converted_json(
    name: &str,
    sessions: &[ctxfit_import::Session],
    to: WireFormat,
    compact: bool,
) -> Result<String> {
    let mut docs = Vec::with_capacity(sessions.len());
    for s in sessions {
        let (converted, report) = convert(&s.conversation, to);
        if !report.is_lossless() {
            let which = if s.name.is_empty() {
                String::new()
            } else {
                format!(" ({})", s.name)
            };
            crate::shown::say(&format!(
                "note: {name}{which}: {report} (no counterpart in the {} format)",
                to.name()
            ));
        }
        docs.push((to_value(&converted), converted.envelope));
    }
    documents_json(docs, compact)
}
