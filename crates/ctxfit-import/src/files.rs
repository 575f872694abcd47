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

/// Bytes a gzipped file may inflate to by default: 1 GiB, far above any recorded session (the corpus's largest
/// is a few megabytes), far below what a small file crafted to inflate without end would take.
pub const DEFAULT_MAX_INFLATED: u64 = 1 << 30;

static MAX_INFLATED: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(DEFAULT_MAX_INFLATED);

/// Set the bytes an input may hold — a gzipped file once inflated (`ctxfit --max-inflated`) — for the whole
/// process.
pub fn set_max_inflated(bytes: u64) {
    MAX_INFLATED.store(bytes, std::sync::atomic::Ordering::Relaxed);
}

/// The limit [`set_max_inflated`] set.
fn max_input() -> u64 {
    MAX_INFLATED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Everything `reader` holds, at most [`set_max_inflated`]'s bytes ([`DEFAULT_MAX_INFLATED`]): a device or a
/// stream without end (`/dev/zero`, a pipe that never closes) is refused once it passes them, in bounded memory,
/// rather than read until memory runs out. `path` names the input in the error.
pub fn read_capped(reader: impl Read, path: &Path) -> Result<Vec<u8>, ImportError> {
    read_up_to(reader, path, max_input(), 0)
}

/// `size`: the bytes expected (a file's length), read into one allocation.
fn read_up_to(
    reader: impl Read,
    path: &Path,
    max: u64,
    size: usize,
) -> Result<Vec<u8>, ImportError> {
    let mut out = Vec::with_capacity(size.saturating_add(1));
    reader
        .take(max.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|source| ImportError::Io {
            path: path.to_owned(),
            source,
        })?;
    if out.len() as u64 > max {
        return Err(ImportError::TooLarge { max });
    }
    Ok(out)
}

/// A file's bytes ([`read_capped`]): a regular file larger than the limit is refused before it is read.
pub fn read_file(path: &Path) -> Result<Vec<u8>, ImportError> {
    let io = |source| ImportError::Io {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let max = max_input();
    let size = match file.metadata() {
        Ok(m) if m.is_file() && m.len() > max => return Err(ImportError::TooLarge { max }),
        Ok(m) if m.is_file() => m.len() as usize,
        _ => 0,
    };
    read_up_to(file, path, max, size)
}

/// What a file compressed otherwise than with gzip, or an archive, is — by its magic bytes, whatever its name
/// — and how to get at what it holds: `None` for anything else.
pub fn packed(bytes: &[u8]) -> Option<ImportError> {
    let (what, how) = if bytes.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        (
            "zstd-compressed",
            "ctxfit reads text, gzipped or not; decompress it first (zstd -d FILE)",
        )
    } else if bytes.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        (
            "xz-compressed",
            "ctxfit reads text, gzipped or not; decompress it first (xz -d FILE)",
        )
    } else if bytes.starts_with(b"BZh")
        && bytes.get(3).is_some_and(|b| (b'1'..=b'9').contains(b))
        // (a block's magic, or the stream's end: no text begins so)
        && matches!(bytes.get(4..10), Some([0x31, 0x41, 0x59, 0x26, 0x53, 0x59] | [0x17, 0x72, 0x45, 0x38, 0x50, 0x90]))
    {
        (
            "bzip2-compressed",
            "ctxfit reads text, gzipped or not; decompress it first (bunzip2 FILE)",
        )
    } else if bytes.starts_with(&[0x04, 0x22, 0x4d, 0x18]) {
        (
            "lz4-compressed",
            "ctxfit reads text, gzipped or not; decompress it first (lz4 -d FILE)",
        )
    } else if bytes.starts_with(b"PK\x03\x04") || bytes.starts_with(b"PK\x05\x06") {
        (
            "a zip archive",
            "ctxfit reads one file, or a folder of sessions; unzip it first",
        )
    } else if bytes.starts_with(&[b'7', b'z', 0xbc, 0xaf, 0x27, 0x1c]) {
        (
            "a 7z archive",
            "ctxfit reads one file, or a folder of sessions; extract it first",
        )
    } else if bytes.get(257..263) == Some(b"ustar\0") || bytes.get(257..265) == Some(b"ustar  \0") {
        (
            "a tar archive",
            "ctxfit reads one file, or a folder of sessions; unpack it first (tar xf FILE)",
        )
    } else {
        return None;
    };
    Some(ImportError::Packed { what, how })
}

/// The bytes a file holds: gzip (by its magic bytes, whatever the name) is inflated — to at most
/// [`set_max_inflated`]'s bytes ([`DEFAULT_MAX_INFLATED`]), past which reading stops with an error — and
/// anything else is as it is.
pub fn inflate(bytes: Vec<u8>) -> Result<Vec<u8>, ImportError> {
    if !is_gzip(&bytes) {
        return match packed(&bytes) {
            Some(e) => Err(e),
            None => Ok(bytes),
        };
    }
    let max = max_input();
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes.as_slice())
        .take(max.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| ImportError::Gzip {
            message: e.to_string(),
        })?;
    if out.len() as u64 > max {
        return Err(ImportError::Gzip {
            message: format!(
                "it inflates to more than {max} bytes, the limit (a gzip bomb, or a log larger than any \
                 session: --max-inflated raises the limit)"
            ),
        });
    }
    // no tool writes a session gzipped twice: said as such, rather than as bytes that are not text
    if is_gzip(&out) {
        return Err(ImportError::Gzip {
            message: "it inflates to gzip again (compressed twice: gunzip it once first)"
                .to_owned(),
        });
    }
    // a `.tar.gz` of sessions: a tar archive once inflated
    match packed(&out) {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// The text a file's bytes hold: gzip is inflated (by its magic bytes, whatever the name), UTF-16 with its
/// byte-order mark decoded, a leading byte-order mark is dropped, and invalid UTF-8 is reported at its line and
/// column.
pub fn decode_text(bytes: Vec<u8>) -> Result<String, ImportError> {
    let bytes = inflate(bytes)?;
    // UTF-16 with its byte-order mark (what Windows PowerShell 5's `>` writes): read as the text it is
    if let Some(big_endian) = match bytes.get(..2) {
        Some([0xFF, 0xFE]) => Some(false),
        Some([0xFE, 0xFF]) => Some(true),
        _ => None,
    } {
        return utf16(&bytes[2..], big_endian);
    }
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

/// UTF-16 text after its byte-order mark, as UTF-8 (an odd last byte is refused as half a unit).
fn utf16(bytes: &[u8], big_endian: bool) -> Result<String, ImportError> {
    if bytes.len() % 2 == 1 {
        // (the byte-order mark's two bytes came before these)
        return Err(ImportError::OddUtf16 {
            length: bytes.len() + 2,
        });
    }
    let units = bytes.chunks_exact(2).map(|pair| match big_endian {
        false => u16::from_le_bytes([pair[0], pair[1]]),
        true => u16::from_be_bytes([pair[0], pair[1]]),
    });
    let mut text = String::with_capacity(bytes.len() / 2);
    let mut offset = 2;
    for c in char::decode_utf16(units) {
        match c {
            Ok(c) => {
                text.push(c);
                offset += 2 * c.len_utf16();
            }
            Err(e) => {
                return Err(ImportError::BadUtf16 {
                    unit: e.unpaired_surrogate(),
                    offset,
                })
            }
        }
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
    decode_text(read_file(path)?)
}

/// Read and import a session file, gzipped or not — or a folder of OpenHands events ([`event_file_index`]), as
/// [`session_files`] lists one; `format` forces a format instead of detecting it.
pub fn load_file(path: &Path, format: Option<SourceFormat>) -> Result<Vec<Session>, ImportError> {
    if path.is_dir() {
        return load_event_folder(path, format);
    }
    import_str(&read_text_file(path)?, format)
}

/// Is `name` the name of one event of an OpenHands conversation's `events/` folder — `12.json` (0.x) or
/// `event-00012-<id>.json` (1.x)? Its place in the conversation's stream.
pub fn event_file_index(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(".json")?;
    let digits = match stem.strip_prefix("event-") {
        Some(rest) => match rest.split_once('-') {
            Some((n, id)) if !id.is_empty() => n,
            _ => return None,
        },
        None => stem,
    };
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// Is `dir` an OpenHands conversation's `events/` folder — every file in it an event file
/// ([`event_file_index`]) — which reads as one session?
pub fn is_event_folder(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    let names: Vec<String> = (entries.flatten())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    holds_events(dir, names.iter().map(String::as_str))
}

/// Is a folder of these (non-hidden) file names an `events/` folder: named so, and every file an event?
fn holds_events<'a>(dir: &Path, mut names: impl Iterator<Item = &'a str>) -> bool {
    let mut any = false;
    dir.file_name().is_some_and(|n| n == "events")
        && names.all(|n| {
            any = true;
            event_file_index(n).is_some()
        })
        && any
}

/// An OpenHands conversation kept one event a file (`events/12.json`, `events/event-00012-<id>.json`): the
/// events in their order, as the list an export of the conversation holds. Together they may hold at most
/// [`set_max_inflated`]'s bytes, as one file may.
fn load_event_folder(
    dir: &Path,
    format: Option<SourceFormat>,
) -> Result<Vec<Session>, ImportError> {
    let io = |source| ImportError::Io {
        path: dir.to_owned(),
        source,
    };
    let mut events: Vec<(u64, String, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(index) = event_file_index(&name) {
            let path = entry.path();
            // (a FIFO or a device named like an event could block the read for ever)
            if !std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
                return Err(ImportError::Io {
                    path,
                    source: std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        "not a regular file (a FIFO, a socket or a device)",
                    ),
                });
            }
            events.push((index, name, path));
        }
    }
    if events.is_empty() {
        return Err(ImportError::Io {
            path: dir.to_owned(),
            source: std::io::Error::new(
                std::io::ErrorKind::IsADirectory,
                "a folder, not a session file (and not a folder of OpenHands events)",
            ),
        });
    }
    events.sort();
    let max = max_input();
    let mut total = 0u64;
    let mut values = Vec::with_capacity(events.len());
    let mut problems = Vec::new();
    for (_, name, path) in events {
        let text = read_text_file(&path)?;
        total += text.len() as u64;
        if total > max {
            return Err(ImportError::TooLarge { max });
        }
        match crate::parse_checked(&text) {
            Ok((crate::Parsed::Document(v), repeated)) => {
                values.push(v);
                problems.extend(repeated.map(|r| format!("{name}: {}", r.problem())));
            }
            Ok((crate::Parsed::Lines(_), _)) => {
                return Err(ImportError::shape(name, "an event file holds one event"))
            }
            Err(e) => return Err(ImportError::shape(name, e.to_string())),
        }
    }
    let mut sessions = crate::import_parsed(
        crate::Parsed::Document(serde_json::Value::Array(values)),
        format,
    )?;
    for s in &mut sessions {
        s.problems.extend(problems.iter().cloned());
    }
    Ok(sessions)
}

/// The session files below a folder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionFiles {
    /// Files whose names may hold a session ([`looks_like_a_session`]), sorted.
    pub files: Vec<PathBuf>,
    /// Files passed over for their names.
    pub passed_over: usize,
    /// Metadata files passed over because the session they describe lies beside them ([`is_sidecar`]; an
    /// OpenHands conversation's `metadata.json` or `base_state.json` beside its `events/`).
    pub sidecars: usize,
    /// Entries passed over whatever their names, each with why: a link to a folder (a walk follows none, so it
    /// visits each file once), what is not a regular file (a FIFO, a socket, a device: reading one could block
    /// for ever), a sub-folder that cannot be read.
    pub skipped: Vec<(PathBuf, String)>,
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
/// ([`is_sidecar`]) are passed over. Links to files are followed, links to folders are not (each file is visited
/// once, and a link back up cannot loop); FIFOs, sockets and devices, and sub-folders that cannot be read, are
/// named in [`SessionFiles::skipped`]. Only `folder` itself unreadable is an error.
pub fn session_files(folder: &Path) -> Result<SessionFiles, ImportError> {
    let mut found = SessionFiles::default();
    let mut folders = vec![folder.to_path_buf()];
    while let Some(dir) = folders.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(source) if dir == folder => {
                return Err(ImportError::Io {
                    path: dir.clone(),
                    source,
                })
            }
            Err(e) => {
                found
                    .skipped
                    .push((dir.clone(), format!("cannot read the folder: {e}")));
                continue;
            }
        };
        let mut files = Vec::new();
        let mut subfolders: Vec<(String, PathBuf)> = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let p = entry.path();
            // the entry itself (a link is not followed), then what a link points to
            let Ok(own) = entry.file_type() else {
                found.skipped.push((p, "cannot be examined".to_owned()));
                continue;
            };
            if own.is_dir() {
                subfolders.push((name, p));
                continue;
            }
            let kind = if own.is_symlink() {
                match std::fs::metadata(&p) {
                    Ok(m) if m.is_dir() => {
                        let why = "a link to a folder: folder walks do not follow them".to_owned();
                        found.skipped.push((p, why));
                        continue;
                    }
                    Ok(m) => m.file_type(),
                    Err(e) => {
                        found
                            .skipped
                            .push((p, format!("a link that leads nowhere: {e}")));
                        continue;
                    }
                }
            } else {
                own
            };
            if !kind.is_file() {
                let why = "not a regular file (a FIFO, a socket or a device)".to_owned();
                found.skipped.push((p, why));
                continue;
            }
            files.push((name, p));
        }
        // OpenHands keeps a conversation one event a file, in `events/`: the folder is the session (and a
        // 0.x conversation's `event_cache/` beside it holds the same events again, in pages)
        let events_beside = subfolders.iter().any(|(n, _)| n == "events");
        for (name, p) in subfolders {
            if name == "event_cache" && events_beside {
                let why =
                    "OpenHands' cache of the events beside it, read from `events/`".to_owned();
                found.skipped.push((p, why));
            } else {
                folders.push(p);
            }
        }
        if holds_events(&dir, files.iter().map(|(n, _)| n.as_str())) {
            found.files.push(dir.clone());
            continue;
        }
        let names: Vec<String> = files.iter().map(|(n, _)| n.clone()).collect();
        for (name, p) in files {
            if !looks_like_a_session(&name) {
                found.passed_over += 1;
            } else if is_sidecar(&name, &names)
                || events_beside && matches!(name.as_str(), "metadata.json" | "base_state.json")
            {
                // (an OpenHands conversation's metadata, 0.x and 1.x, beside its events)
                found.sidecars += 1;
            } else {
                found.files.push(p);
            }
        }
    }
    found.files.sort();
    found.skipped.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openhands_event_files_are_known_by_name_and_ordered_by_number() {
        for (name, index) in [
            ("0.json", Some(0)),
            ("12.json", Some(12)),
            ("event-00012-1f2e3d.json", Some(12)),
            ("event-00003-a1b2-c3d4.json", Some(3)),
            ("event-00012-.json", None),
            ("event-x-1.json", None),
            ("12.jsonl", None),
            (".json", None),
            ("1a.json", None),
            ("metadata.json", None),
            ("99999999999999999999999.json", None),
        ] {
            assert_eq!(event_file_index(name), index, "{name}");
        }
    }

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
    fn every_short_utf16_body_is_read_back_exactly_or_refused() {
        // every body of up to five bytes from units that make pairs, halves and plain text, after either mark:
        // what reads is the same UTF-16 again, and nothing panics
        let alphabet = [0x00u8, 0x41, 0xD8, 0xDC, 0xFF];
        for (bom, big_endian) in [([0xFFu8, 0xFE], false), ([0xFE, 0xFF], true)] {
            for len in 0..=5u32 {
                for n in 0..alphabet.len().pow(len) {
                    let body: Vec<u8> = (0..len)
                        .map(|k| alphabet[n / alphabet.len().pow(k) % alphabet.len()])
                        .collect();
                    let bytes = [&bom[..], &body].concat();
                    match decode_text(bytes) {
                        Ok(text) => {
                            let again: Vec<u8> = text
                                .encode_utf16()
                                .flat_map(|u| match big_endian {
                                    false => u.to_le_bytes(),
                                    true => u.to_be_bytes(),
                                })
                                .collect();
                            assert_eq!(again, body, "{bom:?} {body:?}");
                        }
                        // an odd length is named as such; an even one refused holds half a pair alone
                        Err(ImportError::OddUtf16 { length }) => {
                            assert_eq!((length, body.len() % 2), (body.len() + 2, 1))
                        }
                        Err(ImportError::BadUtf16 { .. }) => assert_eq!(body.len() % 2, 0),
                        Err(e) => panic!("{body:?}: {e}"),
                    }
                }
            }
        }
    }

    #[test]
    fn utf16_with_its_byte_order_mark_is_read_as_the_text_it_is() {
        let text = "[{\"role\":\"user\",\"content\":\"h\u{e9} \u{1f600}\"}]";
        let le: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain(text.encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        let be: Vec<u8> = [0xFE, 0xFF]
            .into_iter()
            .chain(text.encode_utf16().flat_map(u16::to_be_bytes))
            .collect();
        assert_eq!(decode_text(le.clone()).unwrap(), text);
        assert_eq!(decode_text(be).unwrap(), text);
        // half a pair alone, and an odd byte at the end: named, nothing guessed
        let lone = [0xFF, 0xFE, b'[', 0, 0x00, 0xD8, b']', 0];
        assert_eq!(
            decode_text(lone.to_vec()).unwrap_err().to_string(),
            "UTF-16 text with half of a surrogate pair alone (0xd800 at byte offset 4)"
        );
        let odd = [&le[..], b"x"].concat();
        assert_eq!(
            decode_text(odd.clone()).unwrap_err().to_string(),
            format!(
                "UTF-16 text of an odd number of bytes ({}): the last one, at byte offset {}, is half a character",
                odd.len(),
                odd.len() - 1
            )
        );
    }

    #[test]
    fn a_reader_without_end_stops_at_the_limit() {
        let at = std::path::Path::new("/dev/zero");
        let err = read_up_to(std::io::repeat(0), at, 4096, 0).unwrap_err();
        assert!(matches!(err, ImportError::TooLarge { max: 4096 }), "{err}");
        assert_eq!(
            read_up_to(&[7u8; 4096][..], at, 4096, 4096).unwrap().len(),
            4096
        );
        assert_eq!(read_capped(&b"{}"[..], at).unwrap(), b"{}");
    }

    #[test]
    fn a_broken_gzip_stream_is_an_error() {
        let err = decode_text(vec![0x1f, 0x8b, 8, 0, 1, 2, 3]).unwrap_err();
        assert!(matches!(err, ImportError::Gzip { .. }), "{err}");
    }

    #[test]
    fn other_compressions_and_archives_are_named_by_their_magic_bytes() {
        use std::io::Write;
        let mut tar = vec![0u8; 1024];
        tar[..10].copy_from_slice(b"s.jsonl\0\0\0");
        tar[257..265].copy_from_slice(b"ustar\x0000");
        let mut gnu_tar = tar.clone();
        gnu_tar[257..265].copy_from_slice(b"ustar  \0");
        let mut tgz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        tgz.write_all(&tar).unwrap();
        let cases: [(Vec<u8>, &str); 9] = [
            (vec![0x28, 0xb5, 0x2f, 0xfd, 0x24, 0], "zstd-compressed: ctxfit reads text, gzipped or not; decompress it first (zstd -d FILE)"),
            (b"\xfd7zXZ\0\0\x04".to_vec(), "xz-compressed: ctxfit reads text, gzipped or not; decompress it first (xz -d FILE)"),
            (b"BZh91AY&SY\x01".to_vec(), "bzip2-compressed: ctxfit reads text, gzipped or not; decompress it first (bunzip2 FILE)"),
            (vec![0x04, 0x22, 0x4d, 0x18, 0x64], "lz4-compressed: ctxfit reads text, gzipped or not; decompress it first (lz4 -d FILE)"),
            (b"PK\x03\x04\x14\0".to_vec(), "a zip archive: ctxfit reads one file, or a folder of sessions; unzip it first"),
            (b"7z\xbc\xaf\x27\x1c\0\x04".to_vec(), "a 7z archive: ctxfit reads one file, or a folder of sessions; extract it first"),
            (tar, "a tar archive: ctxfit reads one file, or a folder of sessions; unpack it first (tar xf FILE)"),
            (gnu_tar, "a tar archive: ctxfit reads one file, or a folder of sessions; unpack it first (tar xf FILE)"),
            // a `.tar.gz`: a tar archive once inflated
            (tgz.finish().unwrap(), "a tar archive: ctxfit reads one file, or a folder of sessions; unpack it first (tar xf FILE)"),
        ];
        for (bytes, words) in cases {
            assert_eq!(decode_text(bytes).unwrap_err().to_string(), words);
        }
        // text that merely begins like one of them is text
        for text in [
            "BZh9 is not bzip2",
            "PK said hi",
            &format!("{}ustar of the show", " ".repeat(257)),
        ] {
            assert_eq!(decode_text(text.as_bytes().to_vec()).unwrap(), text);
        }
    }

    #[test]
    fn gzip_inside_gzip_is_named() {
        use std::io::Write;
        let gzip = |bytes: &[u8]| {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(bytes).unwrap();
            e.finish().unwrap()
        };
        let text = br#"[{"role":"user","content":"hi"}]"#;
        assert_eq!(decode_text(gzip(text)).unwrap().as_bytes(), text);
        let err = decode_text(gzip(&gzip(text))).unwrap_err().to_string();
        assert!(err.contains("compressed twice"), "{err}");
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

    #[cfg(unix)]
    #[test]
    fn a_walk_visits_each_file_once_and_names_what_it_passes_over() {
        use std::os::unix::fs::{symlink, PermissionsExt};
        let dir = std::env::temp_dir().join(format!("ctxfit-walk-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::create_dir_all(dir.join("locked")).unwrap();
        std::fs::write(dir.join("good.json"), "[]").unwrap();
        std::fs::write(dir.join("locked/x.jsonl"), "[]").unwrap();
        // a link back up (a loop), a link to a file, a link to nothing, a FIFO
        symlink("..", dir.join("sub/up")).unwrap();
        symlink(dir.join("good.json"), dir.join("sub/alias.json")).unwrap();
        symlink(dir.join("gone.json"), dir.join("sub/dangling.json")).unwrap();
        let fifo = std::process::Command::new("mkfifo")
            .arg(dir.join("pipe.jsonl"))
            .status()
            .is_ok_and(|s| s.success());
        std::fs::set_permissions(dir.join("locked"), std::fs::Permissions::from_mode(0o000))
            .unwrap();
        // (as root the locked folder reads all the same)
        let locked = std::fs::read_dir(dir.join("locked")).is_err();
        let found = session_files(&dir);
        std::fs::set_permissions(dir.join("locked"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let found = found.unwrap();
        let mut files = vec![dir.join("good.json"), dir.join("sub/alias.json")];
        if !locked {
            files.insert(1, dir.join("locked/x.jsonl"));
        }
        assert_eq!(found.files, files);
        let skipped: Vec<(PathBuf, &str)> = (found.skipped.iter())
            .map(|(p, why)| (p.clone(), why.split(':').next().unwrap()))
            .collect();
        let mut want = vec![
            (dir.join("sub/dangling.json"), "a link that leads nowhere"),
            (dir.join("sub/up"), "a link to a folder"),
        ];
        if fifo {
            want.insert(
                0,
                (
                    dir.join("pipe.jsonl"),
                    "not a regular file (a FIFO, a socket or a device)",
                ),
            );
        }
        if locked {
            want.insert(0, (dir.join("locked"), "cannot read the folder"));
        }
        want.sort();
        assert_eq!(skipped, want);
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
