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
            column: err.column(),
            message,
        }
    }
}

/// Parse JSON text into a value, reporting line and column of a syntax error.
pub fn parse_json(text: &str) -> Result<serde_json::Value, ModelError> {
    // a byte-order mark some editors write is not part of the JSON
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    serde_json::from_str(text).map_err(|e| ModelError::from_json(&e))
}
