//! Reading inputs: a file, standard input (`-`), or the embedded sample session; gzipped input is inflated.

use std::path::{Path, PathBuf};

use anyhow::Result;
use ctxfit_import::files::{
    decode_text, inflate, read_capped, read_file, session_files, SessionFiles,
};
use ctxfit_import::{import_str, ImportError, Session, SourceFormat};

use crate::BadInput;

/// A real, typical long Claude Code session (53 model requests, from the entireio/cli project, MIT; see
/// `docs/sample.md`), gzipped as the corpus stores it, so the CLI can be tried on a fresh clone with no file at
/// hand.
pub const SAMPLE_GZ: &[u8] = include_bytes!("../sample/claude-code-session.jsonl.gz");
pub const SAMPLE_NAME: &str = "<sample: claude-code-session.jsonl>";

/// The embedded sample session's text.
pub fn sample_text() -> Result<String> {
    decode_text(SAMPLE_GZ.to_vec()).map_err(|e| anyhow::anyhow!("{SAMPLE_NAME}: {e}"))
}

/// Where a command's session comes from: a file, standard input, or the embedded sample.
#[derive(clap::Args)]
pub struct InputArgs {
    /// Session or conversation file (`-` for standard input).
    pub file: Option<PathBuf>,
    /// Use the embedded sample session instead of a file.
    #[arg(long, conflicts_with = "file")]
    pub sample: bool,
    /// Read the input as this format instead of detecting it.
    #[arg(long, value_parser = parse_format)]
    pub format: Option<SourceFormat>,
    /// Refuse input that reads but is probably wrong (several calls sharing a tool_use id, a result answering
    /// no earlier call, a role the format does not have, an OpenAI `tool` message without its `tool_call_id`, a
    /// tool call or result not of its format's shape) instead of warning about it.
    #[arg(long)]
    pub strict: bool,
}

impl InputArgs {
    /// The display name of the input and its sessions; problems are warned about on standard error (refused
    /// under `--strict`).
    pub fn load(&self) -> Result<(String, Vec<Session>)> {
        let (name, sessions, problems) = self.load_with_problems()?;
        warn(&name, &problems);
        Ok((name, sessions))
    }

    /// Is the input a folder (to walk) rather than one file?
    pub fn is_folder(&self) -> bool {
        !self.sample
            && self.file.as_deref().is_some_and(|f| {
                // (an OpenHands conversation's events, one a file, are one conversation)
                !is_stdin(f) && f.is_dir() && !ctxfit_import::files::is_event_folder(f)
            })
    }

    /// Every session file the input names — the file itself, or each one below a folder — with its sessions and
    /// problems, handed to `each` as it is read (a folder's sessions are never all in memory at once), leaving out
    /// the files below `except` — a command's output folder inside its input folder, whose files a second run
    /// would otherwise read as input. A file of a folder that cannot be read (or is refused under `--strict`) is
    /// reported on standard error and skipped; returns how many were.
    pub fn for_each_file(
        &self,
        except: Option<&Path>,
        mut each: impl FnMut(Loaded) -> Result<()>,
    ) -> Result<usize> {
        if !self.is_folder() {
            let (name, sessions, problems) = self.load_with_problems()?;
            each(Loaded {
                path: self.file.clone().unwrap_or_default(),
                name,
                sessions,
                problems,
            })?;
            return Ok(0);
        }
        // (compared as the file system resolves them: `-o ./d/out` and `d/out/` are one folder)
        let except = except.and_then(|e| std::fs::canonicalize(e).ok());
        let below_except = |file: &Path| {
            except.as_deref().is_some_and(|e| {
                file.parent()
                    .and_then(|p| std::fs::canonicalize(p).ok())
                    .is_some_and(|p| p.starts_with(e))
            })
        };
        let files = expand_inputs(&[self.file.clone().unwrap_or_default()])?;
        let mut skipped = 0;
        for file in files.into_iter().filter(|f| !below_except(f)) {
            let one = load(Some(&file), false, self.format).and_then(|(name, sessions)| {
                let problems = check(&name, &sessions, self.strict)?;
                Ok(Loaded {
                    path: file.clone(),
                    name,
                    sessions,
                    problems,
                })
            });
            match one {
                Ok(l) => each(l)?,
                Err(e) => {
                    crate::shown::say(&format!("skipped: {e:#}"));
                    skipped += 1;
                }
            }
        }
        Ok(skipped)
    }

    /// Like [`InputArgs::load`], handing the problems back instead of warning (refused under `--strict`).
    pub fn load_with_problems(&self) -> Result<(String, Vec<Session>, Vec<String>)> {
        let (name, sessions) = load(self.file.as_deref(), self.sample, self.format)?;
        let problems = check(&name, &sessions, self.strict)?;
        Ok((name, sessions, problems))
    }
}

/// One file's sessions and problems.
pub struct Loaded {
    /// The file, as the folder walk found it (its name need not be UTF-8).
    pub path: PathBuf,
    /// Its name as messages show it.
    pub name: String,
    pub sessions: Vec<Session>,
    pub problems: Vec<String>,
}

/// The error a batch command ends with when some of its files could not be read (exit code 2).
pub fn skipped_error(skipped: usize, total: usize) -> anyhow::Error {
    BadInput(format!(
        "{skipped} of {total} files could not be read (named above); the output is of the rest"
    ))
    .into()
}

/// The problems of `sessions`, or under `strict` an error naming them.
pub fn check(name: &str, sessions: &[Session], strict: bool) -> Result<Vec<String>> {
    let problems = problems(sessions);
    if strict && !problems.is_empty() {
        return Err(BadInput(format!(
            "{name}: refused under --strict: {}",
            listed(&problems)
        ))
        .into());
    }
    Ok(problems)
}

/// The problems of every session — what its file held that reads but is probably wrong (a last line cut short),
/// then its conversation's (`ctxfit_model::problems`) — prefixed with the session's name when it has one. A
/// problem of the file that every session shares is said once.
pub fn problems(sessions: &[Session]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in sessions {
        for p in &s.problems {
            if !out.contains(p) {
                out.push(p.clone());
            }
        }
    }
    out.extend(sessions.iter().flat_map(|s| {
        ctxfit_model::problems(&s.conversation)
            .into_iter()
            .map(move |p| match s.name.as_str() {
                "" => p.to_string(),
                name => format!("{name}: {p}"),
            })
    }));
    out
}

/// The first few problems, and how many more.
fn listed(problems: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut text = problems[..problems.len().min(SHOWN)].join("; ");
    if problems.len() > SHOWN {
        text.push_str(&format!("; and {} more", problems.len() - SHOWN));
    }
    text
}

/// Say on standard error what reads but is probably wrong.
pub fn warn(name: &str, problems: &[String]) {
    if !problems.is_empty() {
        crate::shown::say(&format!("warning: {name}: {}", listed(problems)));
    }
}

/// The inputs named on the command line, folders replaced by the session files below them (sorted; hidden
/// entries left out). Says on standard error how many files of a folder were passed over for their names, and
/// how many as the metadata of a session beside them, and names each link to a folder, FIFO, socket, device
/// and unreadable sub-folder it passed over.
pub fn expand_inputs(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for path in inputs {
        if is_stdin(path) || !path.is_dir() {
            out.push(path.clone());
            continue;
        }
        let input = path.display();
        let SessionFiles {
            files,
            passed_over,
            sidecars,
            skipped,
        } = session_files(path)
            .map_err(|e| BadInput(format!("{input}: cannot read the folder: {e}")))?;
        for (p, why) in skipped {
            crate::shown::say(&format!("{}: passed over: {why}", p.display()));
        }
        if passed_over > 0 {
            crate::shown::say(&format!(
                "{input}: {passed_over} file(s) passed over (not .jsonl, .json, .traj or .af, gzipped or not)"
            ));
        }
        if sidecars > 0 {
            crate::shown::say(&format!(
                "{input}: {sidecars} metadata file(s) passed over, each beside the session it describes (Claude Code's `NAME.meta.json` beside a subagent's `NAME.jsonl`, OpenHands' `metadata.json` or `base_state.json` beside a conversation's `events/`)"
            ));
        }
        if files.is_empty() {
            return Err(BadInput(format!("{input}: no session files in the folder")).into());
        }
        out.extend(files);
    }
    Ok(out)
}

/// Is this input standard input (`-`)?
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Read a file, or standard input for `-`.
fn read_raw(path: &Path) -> Result<Vec<u8>> {
    let read = if is_stdin(path) {
        read_capped(std::io::stdin().lock(), Path::new("<stdin>"))
    } else {
        read_file(path)
    };
    read.map_err(|e| match e {
        ImportError::Io { source, .. } => {
            BadInput(format!("{}: cannot read: {source}", display_name(path))).into()
        }
        e => BadInput(format!("{}: {e}", display_name(path))).into(),
    })
}

/// Read a file, or standard input for `-`; gzip is inflated.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    inflate(read_raw(path)?).map_err(|e| BadInput(format!("{}: {e}", display_name(path))).into())
}

/// Read a file, or standard input for `-`, as UTF-8 text: gzip is inflated, a leading byte-order mark dropped,
/// and invalid UTF-8 reported at its line and column, like malformed JSON.
pub fn read_text(path: &Path) -> Result<String> {
    let name = display_name(path);
    decode_text(read_raw(path)?).map_err(|e| match e {
        ImportError::NotUtf8 { .. } => BadInput(format!("{name}:{e}")).into(),
        e => BadInput(format!("{name}: {e}")).into(),
    })
}

/// An input's name as messages show it: `<stdin>` for `-`, else its path (a name that is not UTF-8 shown with
/// U+FFFD where its bytes are not; the file is still read by its own name).
pub fn display_name(path: &Path) -> String {
    if is_stdin(path) {
        "<stdin>".to_owned()
    } else {
        path.display().to_string()
    }
}

/// Parse a `--format` value.
pub fn parse_format(name: &str) -> Result<SourceFormat, String> {
    SourceFormat::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = SourceFormat::ALL.iter().map(|f| f.name()).collect();
        format!(
            "unknown format `{name}` (expected one of: {})",
            names.join(", ")
        )
    })
}

/// Import every session of `text`; errors name the file, and the line and column of malformed JSON.
pub fn import(name: &str, text: &str, format: Option<SourceFormat>) -> Result<Vec<Session>> {
    import_str(text, format).map_err(|e| match e {
        ImportError::Model(ctxfit_model::ModelError::Json {
            line,
            column,
            message,
        }) => BadInput(format!("{name}:{line}:{column}: malformed JSON: {message}")).into(),
        other if other.is_bad_input() => BadInput(format!("{name}: {other}")).into(),
        other => anyhow::Error::new(other).context(name.to_owned()),
    })
}

/// The sessions of FILE, or of the embedded sample when `sample` is set.
pub fn load(
    file: Option<&Path>,
    sample: bool,
    format: Option<SourceFormat>,
) -> Result<(String, Vec<Session>)> {
    match (file, sample) {
        (_, true) => Ok((
            SAMPLE_NAME.to_owned(),
            import(SAMPLE_NAME, &sample_text()?, format)?,
        )),
        (Some(path), false) if path.is_dir() => {
            // a folder of OpenHands events, one a file, as a folder walk lists one: one conversation
            let sessions = ctxfit_import::files::load_file(path, format).map_err(|e| {
                let message = match e {
                    // (the event file, or the folder itself)
                    ImportError::Io { path: at, source } => {
                        format!("{}: cannot read: {source}", at.display())
                    }
                    e => format!("{}: {e}", path.display()),
                };
                BadInput(message)
            })?;
            Ok((display_name(path), sessions))
        }
        (Some(path), false) => {
            let text = read_text(path)?;
            let name = display_name(path);
            // an empty input is a mistake upstream (a failed pipe, a file not yet written), not a conversation
            if text.trim().is_empty() {
                return Err(BadInput(format!("{name}: empty: no conversation to read")).into());
            }
            let sessions = import(&name, &text, format)?;
            Ok((name, sessions))
        }
        (None, false) => Err(BadInput(
            "no input: give a FILE, `-` for standard input, or --sample".into(),
        )
        .into()),
    }
}

/// Keep only session `n` (0-based) when one is asked for.
pub fn select(name: &str, mut sessions: Vec<Session>, n: Option<usize>) -> Result<Vec<Session>> {
    let Some(n) = n else { return Ok(sessions) };
    if n >= sessions.len() {
        return Err(BadInput(format!(
            "{name}: --session {n}, but the file holds {} session(s)",
            sessions.len()
        ))
        .into());
    }
    Ok(vec![sessions.swap_remove(n)])
}

/// A size in bytes: `1048576`, `512K`, `64M`, `2G`.
pub fn parse_bytes(text: &str) -> Result<usize, String> {
    let (digits, unit) = match text.trim().to_ascii_uppercase() {
        t if t.ends_with('K') => (t[..t.len() - 1].to_owned(), 1usize << 10),
        t if t.ends_with('M') => (t[..t.len() - 1].to_owned(), 1 << 20),
        t if t.ends_with('G') => (t[..t.len() - 1].to_owned(), 1 << 30),
        t => (t, 1),
    };
    digits
        .trim()
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .ok_or_else(|| {
            format!("{text:?} is not a size: give bytes, or a number with K, M or G (512M, 2G)")
        })
}

#[cfg(test)]
mod tests {
    use super::parse_bytes;

    #[test]
    fn sizes_are_bytes_or_a_number_with_its_unit() {
        assert_eq!(parse_bytes("1048576"), Ok(1 << 20));
        assert_eq!(parse_bytes("512K"), Ok(512 << 10));
        assert_eq!(parse_bytes("64m"), Ok(64 << 20));
        assert_eq!(parse_bytes("2G"), Ok(2 << 30));
        assert_eq!(parse_bytes("0"), Ok(0));
        for bad in ["", "G", "2X", "-1M", "1.5G", "99999999999999999999G"] {
            assert!(
                parse_bytes(bad).unwrap_err().contains("is not a size"),
                "{bad}"
            );
        }
    }
}
