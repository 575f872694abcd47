//! A file's text read as JSON: one document, or JSON Lines (several values to a line where two writers raced, a
//! last line cut short as a log still being written ends), within a bound on the values it may hold, a key
//! written twice in one object noticed.

use ctxfit_model::ModelError;
use serde_json::Value;

use crate::{keys, ImportError};

/// A parsed file: one JSON document, or JSON Lines (one value per non-empty line, with its line number).
pub(crate) enum Parsed {
    Document(Value),
    Lines(Vec<(usize, Value)>),
}

/// Bytes of input per JSON value an input may hold beyond its first million ([`value_limit`]).
pub const VALUE_BYTES: usize = 8;

/// The JSON values (object keys counted) an input of `bytes` bytes may hold: a million, and one per
/// [`VALUE_BYTES`] bytes beyond. A value read costs about 80 bytes of memory however small its text, so 30 MB of
/// `{}` lines took 817 MB to read, and the 1 GiB an input may hold would take 27 GB; the densest session of the
/// corpus holds one value per 24 bytes, three times under the limit.
pub fn value_limit(bytes: usize) -> usize {
    1_000_000 + bytes / VALUE_BYTES
}

/// About how many JSON values `text` holds, counted by its structure alone: each `{`, `[`, `,`, `:` and line
/// break outside strings (a value begins at each, or a key, or a line of JSON Lines). Counting stops past `stop`.
/// Also how many object members the text writes (each `:` outside strings), which says whether a key was
/// written twice in one object once the text is parsed ([`keys`]).
pub(crate) fn count_values(text: &str, stop: usize) -> (usize, usize) {
    let bytes = text.as_bytes();
    let (mut count, mut members, mut i) = (0, 0, 0);
    while i < bytes.len() && count <= stop {
        match bytes[i] {
            b'"' => {
                i = past_string(bytes, i);
                continue;
            }
            b':' => {
                count += 1;
                members += 1;
            }
            b'{' | b'[' | b',' | b'\n' => count += 1,
            _ => {}
        }
        i += 1;
    }
    (count, members)
}

/// Where the JSON string opening at `bytes[open]` (a `"`) ends: just past its closing quote, escapes skipped — or
/// the end of `bytes`, for a text that ends inside a string or right after a backslash.
pub(crate) fn past_string(bytes: &[u8], open: usize) -> usize {
    let mut i = open + 1;
    while let Some(at) = bytes
        .get(i..)
        .and_then(|rest| memchr::memchr2(b'"', b'\\', rest))
    {
        i += at + 1;
        if bytes[i - 1] == b'"' {
            return i;
        }
        i += 1;
    }
    bytes.len()
}

pub(crate) fn parse(text: &str) -> Result<Parsed, ImportError> {
    parse_checked(text).map(|(parsed, _)| parsed)
}

/// [`parse`], and the first key an object of the text writes twice, whose earlier value the parse left out
/// (`serde_json` keeps a repeated key's last value).
pub(crate) fn parse_checked(
    text: &str,
) -> Result<(Parsed, Option<keys::RepeatedKey>), ImportError> {
    let limit = value_limit(text.len());
    let (values, written) = count_values(text, limit);
    if values > limit {
        return Err(ImportError::TooManyValues {
            values: count_values(text, usize::MAX).0,
            bytes: text.len(),
            limit,
        });
    }
    let parsed = match serde_json::from_str::<Value>(text) {
        Ok(mut v) => {
            ctxfit_model::keep_number_spelling(text, &mut v);
            Parsed::Document(v)
        }
        Err(whole_err) => {
            // JSON Lines: values one per line — or several on one line, as real Claude Code logs have when two
            // writers raced. Only worth trying when the first line holds values of its own.
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            if line_values(first).is_err() {
                return Err(ModelError::from_json_in(&whole_err, text).into());
            }
            Parsed::Lines(parse_lines(text)?)
        }
    };
    let read = match &parsed {
        Parsed::Document(v) => keys::members(v),
        Parsed::Lines(lines) => lines.iter().map(|(_, v)| keys::members(v)).sum(),
    };
    let repeated = (read < written)
        .then(|| keys::first_repeated_key(text))
        .flatten();
    Ok((parsed, repeated))
}

/// The values of a JSON Lines text, each with its line number; a line that does not parse is an error naming
/// its line and column.
fn parse_lines(text: &str) -> Result<Vec<(usize, Value)>, ImportError> {
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match line_values(line) {
            Ok(values) => lines.extend(values.into_iter().map(|v| (i + 1, v))),
            Err(e) => {
                // placed and worded as every other JSON error, on the file's line
                return Err(ImportError::Model(
                    match ModelError::from_json_in(&e, line) {
                        ModelError::Json {
                            column, message, ..
                        } => ModelError::Json {
                            line: i + 1,
                            column,
                            message,
                        },
                        other => other,
                    },
                ));
            }
        }
    }
    Ok(lines)
}

/// A JSON Lines log whose last line is cut short — no line break after it, and the text ends inside its last
/// value, as a log still being written (or cut off by a crash) ends: its values before the cut, each with its line
/// number, and the number of the line cut short. `None` for any other text, or when nothing comes before the cut.
pub(crate) fn cut_short_last_line(text: &str) -> Option<(Vec<(usize, Value)>, usize)> {
    let body = text.trim_end_matches([' ', '\t', '\r']);
    if body.ends_with('\n') {
        return None;
    }
    let start = body.rfind('\n')? + 1;
    let line = text[..start].matches('\n').count() + 1;
    // the values the line completes before the cut (two writers' records can share a line)
    let last = &body[start..];
    let mut whole = Vec::new();
    for value in serde_json::Deserializer::from_str(last).into_iter::<Value>() {
        match value {
            Ok(v) => whole.push(v),
            Err(e) if e.is_eof() => {
                let mut lines = parse_lines(&text[..start]).ok()?;
                ctxfit_model::keep_number_spelling_in(last, &mut whole);
                lines.extend(whole.into_iter().map(|v| (line, v)));
                return (!lines.is_empty()).then_some((lines, line));
            }
            Err(_) => return None,
        }
    }
    None
}

/// The JSON values of one line: one, or several written back to back.
fn line_values(line: &str) -> Result<Vec<Value>, serde_json::Error> {
    let mut values: Vec<Value> = serde_json::Deserializer::from_str(line)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()?;
    ctxfit_model::keep_number_spelling_in(line, &mut values);
    Ok(values)
}
