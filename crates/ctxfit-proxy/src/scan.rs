//! Skipping over JSON text without reading it: where a string or a value ends, past whitespace.
//!
//! What: byte positions in JSON text, found by looking only at its structure — a string's end by a vectorised
//! search for its closing quote (or a backslash), a container's by counting brackets outside strings.
//! Why: the proxy finds a body's messages and their `cache_control` markers on every request, most of it in text
//! the conversation has already read; telling where values end costs a fraction of parsing them.
//! Example: in `{"a":[1,"]"]}`, the value at 5 ends at 12 (`value_end`), the string at 8 at 11 (`string_end`).
//! Nothing here checks the text: on malformed input a position is still returned (at most the text's length),
//! and callers that need valid JSON check it elsewhere.

/// The index just past the string that starts at `start` (a `"`); the text's length when it does not end. It
/// looks for quotes alone (a vectorised search) and counts the backslashes before one: escapes such as `\n` are
/// common in tool output, quotes inside a string rare.
pub(crate) fn string_end(json: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < json.len() {
        let Some(k) = memchr::memchr(b'"', &json[i..]) else {
            break;
        };
        let at = i + k;
        // escaped when an odd number of backslashes stands right before it (the opening quote stops the count)
        let backslashes = json[start + 1..at]
            .iter()
            .rev()
            .take_while(|&&b| b == b'\\')
            .count();
        if backslashes % 2 == 0 {
            return at + 1;
        }
        i = at + 1;
    }
    json.len()
}

/// The first index at or after `i` that is not JSON whitespace.
pub(crate) fn skip_ws(json: &[u8], mut i: usize) -> usize {
    while i < json.len() && matches!(json[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// Whether the first byte at or after `i` that is not whitespace is a colon (the string before it is a key).
pub(crate) fn next_is_colon(json: &[u8], i: usize) -> bool {
    json.get(skip_ws(json, i)) == Some(&b':')
}

/// The index just past the JSON value that starts at `start` — for a number or a literal, the index of the
/// comma or bracket after it (whitespace before that included); the text's length when it does not end.
pub(crate) fn value_end(json: &[u8], start: usize) -> usize {
    let mut depth = 0usize;
    let mut i = start;
    while i < json.len() {
        match json[i] {
            b'"' => {
                i = string_end(json, i);
                if depth == 0 {
                    return i;
                }
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                if depth == 0 {
                    return i;
                }
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            b',' if depth == 0 => return i,
            _ => {}
        }
        i += 1;
    }
    json.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_of_strings_and_values() {
        let json = br#"{"a":[1,"]"],"b\"c":"x\\","d":  17 ,"e":true}"#;
        assert_eq!(value_end(json, 0), json.len());
        assert_eq!(value_end(json, 5), 12);
        assert_eq!(string_end(json, 8), 11);
        // a key with an escaped quote, a string ending in an escaped backslash
        assert_eq!(string_end(json, 13), 19);
        assert_eq!(string_end(json, 20), 25);
        // a number: up to the comma, its trailing spaces included
        assert_eq!(&json[value_end(json, 32)..value_end(json, 32) + 1], b",");
        assert_eq!(value_end(json, 32), 35);
        // unterminated: the text's length
        assert_eq!(string_end(b"\"abc\\", 0), 5);
        assert_eq!(string_end(b"\"abc", 0), 4);
        assert_eq!(value_end(b"[[1]", 0), 4);
        assert!(next_is_colon(b"\"k\" \n: 1", 3));
        assert_eq!(skip_ws(b" \t\r\nx", 0), 4);
    }
}
