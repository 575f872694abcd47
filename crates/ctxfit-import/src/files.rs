//! Session files as users have them: gzipped or not, with or without a byte-order mark, one by one or in
//! folders (`~/.claude/projects/<project>/`, `~/.codex/sessions/`).

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::{import_str, ImportError, Session, SourceFormat};

/// File names that may hold a recorded session, gzipped or not.
pub const SESSION_SUFFIXES: &[&str] = &[".jsonl", ".json", ".traj", ".af"];

/// May a file of this name hold a recorded session (`.jsonl`, `.json`, `.traj`, `.af`, gzipped or not)?
pub fn looks_like_a_session(name: &str) -> bool {
    let name = name.strip_suffix(".gz").unwrap_or(name);
    SESSION_SUFFIXES.iter().any(|s| name.ends_with(s))
}

/// Does this look like gzip (its magic bytes)?
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x1f, 0x8b])
}

/// The bytes a file holds: gzip (by its magic bytes, whatever the name) is inflated, anything else is as it is.
pub fn inflate(bytes: Vec<u8>) -> Result<Vec<u8>, ImportError> {
    if !is_gzip(&bytes) {
        return Ok(bytes);
    }
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes.as_slice())
        .read_to_end(&mut out)
        .map_err(|e| ImportError::Gzip {
            message: e.to_string(),
        })?;
    Ok(out)
}

/// The text a file's bytes hold: gzip is inflated (by its magic bytes, whatever the name), a leading
/// byte-order mark is dropped, and invalid UTF-8 is reported at its line and column.
pub fn decode_text(bytes: Vec<u8>) -> Result<String, ImportError> {
    let bytes = inflate(bytes)?;
    let mut text = String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let (line, column) = line_and_column(bytes, offset);
        ImportError::NotUtf8 {
            line,
            column,
            byte: bytes[offset],
            offset,
        }
    })?;
    if text.starts_with('\u{feff}') {
        text.drain(..'\u{feff}'.len_utf8());
    }
    Ok(text)
}

/// The 1-based line and column (in characters) of byte `at`, all of whose preceding bytes are valid UTF-8.
fn line_and_column(bytes: &[u8], at: usize) -> (usize, usize) {
    let before = &bytes[..at];
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let column = std::str::from_utf8(&before[line_start..])
        .map_or(at - line_start, |s| s.chars().count())
        + 1;
    (line, column)
}

/// Read a file as text ([`decode_text`]).
pub fn read_text_file(path: &Path) -> Result<String, ImportError> {
    let bytes = std::fs::read(path).map_err(|source| ImportError::Io {
        path: path.to_owned(),
        source,
    })?;
    decode_text(bytes)
}

/// Read and import a session file, gzipped or not; `format` forces a format instead of detecting it.
pub fn load_file(path: &Path, format: Option<SourceFormat>) -> Result<Vec<Session>, ImportError> {
    import_str(&read_text_file(path)?, format)
}

/// The session files below a folder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionFiles {
    /// Files whose names may hold a session ([`looks_like_a_session`]), sorted.
    pub files: Vec<PathBuf>,
    /// Files passed over for their names.
    pub passed_over: usize,
    /// Metadata files passed over because the session they describe lies beside them ([`is_sidecar`]).
    pub sidecars: usize,
}

/// Is `name` a metadata file of the session file beside it, rather than a session? Claude Code writes each
/// subagent's transcript as `subagents/agent-<id>.jsonl` and its type and task as `agent-<id>.meta.json`
/// next to it; `siblings` are the names in the same folder. A `.meta.json` with no session of its stem
/// beside it is not passed over.
pub fn is_sidecar(name: &str, siblings: &[String]) -> bool {
    let name = name.strip_suffix(".gz").unwrap_or(name);
    let Some(stem) = name.strip_suffix(".meta.json") else {
        return false;
    };
    siblings.iter().any(|s| {
        let s = s.strip_suffix(".gz").unwrap_or(s);
        s.strip_suffix(".jsonl") == Some(stem)
    })
}

/// Walk `folder` (hidden entries left out) for session files; the metadata files of sessions beside them
/// ([`is_sidecar`]) are passed over.
pub fn session_files(folder: &Path) -> Result<SessionFiles, ImportError> {
    let mut found = SessionFiles::default();
    let mut folders = vec![folder.to_path_buf()];
    while let Some(dir) = folders.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|source| ImportError::Io {
            path: dir.clone(),
            source,
        })?;
        let mut files = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let p = entry.path();
            if p.is_dir() {
                folders.push(p);
            } else {
                files.push((name, p));
            }
        }
        let names: Vec<String> = files.iter().map(|(n, _)| n.clone()).collect();
        for (name, p) in files {
            if !looks_like_a_session(&name) {
                found.passed_over += 1;
            } else if is_sidecar(&name, &names) {
                found.sidecars += 1;
            } else {
                found.files.push(p);
            }
        }
    }
    found.files.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_and_byte_order_mark_are_undone() {
        let text = "\u{feff}[{\"role\":\"user\",\"content\":\"hi\"}]";
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, text.as_bytes()).unwrap();
        let gz = gz.finish().unwrap();
        assert_eq!(decode_text(gz).unwrap(), &text[3..]);
        assert_eq!(decode_text(text.as_bytes().to_vec()).unwrap(), &text[3..]);
    }

    #[test]
    fn invalid_utf8_is_named_by_line_and_column() {
        let err = decode_text(b"{\n  \"a\": \"\xc3\xa9\xff\"}".to_vec()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "2:10: not UTF-8 text (byte 0xff at offset 12)"
        );
    }

    #[test]
    fn a_broken_gzip_stream_is_an_error() {
        let err = decode_text(vec![0x1f, 0x8b, 8, 0, 1, 2, 3]).unwrap_err();
        assert!(matches!(err, ImportError::Gzip { .. }), "{err}");
    }

    #[test]
    fn folders_are_walked_for_session_names() {
        let dir = std::env::temp_dir().join(format!("ctxfit-files-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::create_dir_all(dir.join(".hidden")).unwrap();
        for f in ["b.jsonl", "sub/a.json.gz", "notes.txt", ".hidden/c.jsonl"] {
            std::fs::write(dir.join(f), "[]").unwrap();
        }
        let found = session_files(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            found.files,
            vec![dir.join("b.jsonl"), dir.join("sub/a.json.gz")]
        );
        assert_eq!(found.passed_over, 1);
        assert_eq!(found.sidecars, 0);
    }

    #[test]
    fn a_subagents_metadata_beside_its_transcript_is_passed_over() {
        let dir = std::env::temp_dir().join(format!("ctxfit-sidecars-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("subagents")).unwrap();
        for f in [
            "subagents/agent-a1.jsonl",
            "subagents/agent-a1.meta.json",
            "subagents/agent-b2.jsonl.gz",
            "subagents/agent-b2.meta.json",
            "subagents/orphan.meta.json",
        ] {
            std::fs::write(dir.join(f), "{}").unwrap();
        }
        let found = session_files(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            found.files,
            vec![
                dir.join("subagents/agent-a1.jsonl"),
                dir.join("subagents/agent-b2.jsonl.gz"),
                dir.join("subagents/orphan.meta.json"),
            ]
        );
        assert_eq!((found.passed_over, found.sidecars), (0, 2));
    }

    #[test]
    fn a_sidecar_is_named_by_its_sessions_stem() {
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(is_sidecar("x.meta.json", &names(&["x.jsonl"])));
        assert!(is_sidecar("x.meta.json.gz", &names(&["x.jsonl.gz"])));
        assert!(!is_sidecar("x.meta.json", &names(&["y.jsonl", "x.json"])));
        assert!(!is_sidecar("x.json", &names(&["x.jsonl"])));
    }
}
