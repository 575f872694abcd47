//! The one error type of the model: malformed JSON (with line and column) or a document of the wrong shape.

/// Why a document could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// The text is not JSON. Line and column are 1-based, as editors show them.
    #[error("malformed JSON at line {line}, column {column}: {message}")]
    Json {
        line: usize,
        column: usize,
        message: String,
    },
    /// The JSON is valid but not a conversation; `path` names the offending value (`messages[3].role`).
    #[error("{path}: {message}")]
    Shape { path: String, message: String },
}

impl ModelError {
    pub(crate) fn shape(path: impl Into<String>, message: impl Into<String>) -> Self {
        ModelError::Shape {
            path: path.into(),
            message: message.into(),
        }
    }

    /// The error of a value read with an empty path, as met under `prefix` (`messages[3]`): a shape error's path
    /// is prefixed, so that `read_message(f, v, "").map_err(|e| e.under("messages[3]"))` says what
    /// `read_message(f, v, "messages[3]")` says — without writing the path of every message read.
    pub fn under(self, prefix: &str) -> Self {
        match self {
            ModelError::Shape { path, message } => ModelError::Shape {
                path: format!("{prefix}{path}"),
                message,
            },
            json => json,
        }
    }

    /// Turn a serde_json error into `Json` with its position.
    pub fn from_json(err: &serde_json::Error) -> Self {
        let full = err.to_string();
        // serde_json appends " at line L column C"; keep only the reason.
        let message = match full.rfind(" at line ") {
            Some(i) => full[..i].to_owned(),
            None => full,
        };
        ModelError::Json {
            line: err.line(),
            // (serde_json says column 0 for an error before the line's first character: a top-level value of
            // the wrong type, a text that ends after a line break; columns are counted from 1)
            column: err.column().max(1),
            message,
        }
    }

    /// [`ModelError::from_json`] for an error in `text`, in the words that fit it where serde_json's do not: a
    /// lone surrogate (`"\ud800"` with no low half after it, or a low half alone) is reported as such, not as an
    /// escape cut short.
    pub fn from_json_in(err: &serde_json::Error, text: &str) -> Self {
        let mut e = ModelError::from_json(err);
        if let ModelError::Json {
            line,
            column,
            message,
        } = &mut e
        {
            let escape_error = message == "unexpected end of hex escape"
                || message == "lone leading surrogate in hex escape";
            if let Some(surrogate) = escape_error
                .then(|| lone_surrogate_before(text, *line, *column))
                .flatten()
            {
                *message = format!(
                    "a lone surrogate \\u{surrogate}: half of a UTF-16 pair (\\ud800–\\udbff, then \
                     \\udc00–\\udfff) without the other half, which no JSON text can hold as a character"
                );
            }
        }
        e
    }
}

/// The hex digits of a surrogate escape (`\ud800`–`\udfff`) at or just before line `line`, column `column`
/// (1-based; serde_json's position of the error), if there is one.
fn lone_surrogate_before(text: &str, line: usize, column: usize) -> Option<String> {
    let line_text = text.split('\n').nth(line.checked_sub(1)?)?;
    let end = line_text
        .char_indices()
        .nth(column.saturating_sub(1))
        .map_or(line_text.len(), |(i, c)| i + c.len_utf8());
    // the escape the error is at, or the one before it (`\ud800\u0041`: a high half, then no low half)
    let mut before = &line_text[..end];
    for _ in 0..2 {
        let at = before.rfind("\\u")?;
        let hex = before.get(at + 2..at + 6)?;
        if u16::from_str_radix(hex, 16).is_ok_and(|v| (0xD800..=0xDFFF).contains(&v)) {
            return Some(hex.to_ascii_lowercase());
        }
        before = &before[..at];
    }
    None
}

/// Parse JSON text into a value, reporting line and column of a syntax error; numbers keep their spelling.
pub fn parse_json(text: &str) -> Result<serde_json::Value, ModelError> {
    // a byte-order mark some editors write is not part of the JSON
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut value = serde_json::from_str(text).map_err(|e| ModelError::from_json_in(&e, text))?;
    crate::keep_number_spelling(text, &mut value);
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_surrogate_is_named_and_a_short_escape_is_not_one() {
        for (text, surrogate) in [
            (r#"{"a": "x\ud800"}"#, Some("d800")),
            (r#"{"a": "x\uD83D y"}"#, Some("d83d")),
            (r#"{"a": "x\ud800\u0041"}"#, Some("d800")),
            ("{\n\"a\": \"\\udc00\"}", Some("dc00")),
            (r#"{"a": "x\u12"}"#, None),
            (r#"{"a": "x\ud83d\ude00"}"#, None),
        ] {
            match parse_json(text) {
                Err(ModelError::Json { message, line, .. }) => match surrogate {
                    Some(s) => {
                        assert!(
                            message.starts_with(&format!("a lone surrogate \\u{s}:")),
                            "{text}: {message}"
                        );
                        assert_eq!(line, 1 + text.matches('\n').count());
                    }
                    None => assert!(!message.contains("surrogate"), "{text}: {message}"),
                },
                Ok(_) => assert!(surrogate.is_none(), "{text} parsed"),
                Err(e) => panic!("{text}: {e}"),
            }
        }
    }
}
