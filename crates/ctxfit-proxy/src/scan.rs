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

/// The code unit of the `\uXXXX` escape whose backslash is at `at`, if one is there.
fn escape_at(json: &[u8], at: usize) -> Option<u16> {
    let hex = json.get(at + 2..at + 6)?;
    if json.get(at + 1) != Some(&b'u') || !hex.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u16::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
}

/// The text with every lone surrogate escape — half of a UTF-16 pair, `\ud83d` without its `\ude00` after it,
/// or a low half alone — written `\ufffd` (U+FFFD, what a decoder puts for what is no character), and how many
/// there were; `None` when there are none. Escapes are found by walking backslashes, so `\\ud800` (a backslash,
/// then the letters `ud800`) is no escape. The replacement is as long as what it replaces: nothing else moves.
///
/// Why: a client that cuts text by UTF-16 code units (JavaScript's `slice`) can cut an emoji in two, and
/// `JSON.stringify` writes the half that is left as such an escape. The Anthropic API refuses the request ("no
/// low surrogate in string"), and every later request of the conversation, which repeats it.
pub(crate) fn mend_lone_surrogates(json: &[u8]) -> Option<(Vec<u8>, usize)> {
    let mut out: Option<Vec<u8>> = None;
    let mut mended = 0;
    let mut i = 0;
    while let Some(k) = json.get(i..).and_then(|rest| memchr::memchr(b'\\', rest)) {
        let at = i + k;
        i = at + 2;
        let Some(unit) = escape_at(json, at) else {
            continue;
        };
        i = at + 6;
        let lone = match unit {
            0xD800..=0xDBFF => match escape_at(json, at + 6) {
                Some(0xDC00..=0xDFFF) => {
                    i = at + 12;
                    false
                }
                _ => true,
            },
            0xDC00..=0xDFFF => true,
            _ => false,
        };
        if lone {
            out.get_or_insert_with(|| json.to_vec())[at..at + 6].copy_from_slice(b"\\ufffd");
            mended += 1;
        }
    }
    out.map(|text| (text, mended))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogate_escapes_are_mended_and_nothing_else() {
        let mend = |t: &str| {
            mend_lone_surrogates(t.as_bytes()).map(|(b, n)| (String::from_utf8(b).unwrap(), n))
        };
        // a pair, in either case, is a character: left as it is
        assert_eq!(mend(r#"{"t":"\ud83d\ude00 \uD83D\uDE00"}"#), None);
        // a high half cut off (JavaScript's slice), at the end or before other text; a low half alone
        assert_eq!(
            mend(r#"{"t":"ab\ud83d","u":"\ud83dx\ude00"}"#),
            Some((r#"{"t":"ab\ufffd","u":"\ufffdx\ufffd"}"#.to_owned(), 3))
        );
        // two high halves in a row: both lone
        assert_eq!(
            mend(r#""\ud800\ud800""#),
            Some((r#""\ufffd\ufffd""#.to_owned(), 2))
        );
        // an escaped backslash before the letters is no escape; other escapes pass
        assert_eq!(mend(r#""C:\\ud800\n\u00e9\"""#), None);
        // a high half whose low half follows an escaped backslash: lone
        assert_eq!(
            mend(r#""\ud800\\udc00""#),
            Some((r#""\ufffd\\udc00""#.to_owned(), 1))
        );
        // cut short at the end of the text: nothing read past it
        assert_eq!(mend(r#""\ud8"#), None);
        assert_eq!(mend("\\"), None);
    }

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
