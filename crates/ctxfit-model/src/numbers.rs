//! Numbers as they were written. `serde_json` (with `arbitrary_precision`) keeps a number's digits but writes its
//! exponent one way — `1E+2`, `1e2` and `1e+2` all become `1e+2` — so a model that must give back the bytes it
//! read puts the written spelling back after parsing.

use std::collections::{HashMap, VecDeque};

use serde_json::{Number, Value};

/// Put back, in `value` parsed from `text`, the spelling of every number whose exponent `serde_json` rewrote
/// (`1E+2`, `1e2`, `2E-3`). A value without a number in exponent form costs a walk over its nodes.
pub fn keep_number_spelling(text: &str, value: &mut Value) {
    keep_number_spelling_in(text, std::slice::from_mut(value));
}

/// [`keep_number_spelling`] for the values of `text` written one after the other (JSON Lines, or values back to
/// back on one line), in that order.
pub fn keep_number_spelling_in(text: &str, values: &mut [Value]) {
    // nearly always none: a walk over the values' nodes (not their strings' bytes) says so
    if !values.iter().any(has_exponent) {
        return;
    }
    let written = exponent_numbers(text);
    if written.iter().all(|w| normalized(w) == *w) {
        return;
    }
    // per number as serde_json writes it, its spellings in the order written
    let mut spellings: HashMap<String, VecDeque<&str>> = HashMap::new();
    for w in written {
        spellings.entry(normalized(w)).or_default().push_back(w);
    }
    for value in values {
        restore(value, &mut spellings);
    }
}

fn has_exponent(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.as_str().contains('e'),
        Value::Array(items) => items.iter().any(has_exponent),
        Value::Object(members) => members.values().any(has_exponent),
        _ => false,
    }
}

/// The numbers with an exponent in JSON text `text`, as written, in the order they appear (strings skipped).
fn exponent_numbers(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len()
                    && matches!(bytes[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
                {
                    i += 1;
                }
                let number = &text[start..i];
                if number.contains(['e', 'E']) {
                    out.push(number);
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// How `serde_json` writes a number it read as `written`: a lower-case `e`, and a `+` where the exponent had no
/// sign.
fn normalized(written: &str) -> String {
    let mut out = String::with_capacity(written.len() + 1);
    let mut after_e = false;
    for c in written.chars() {
        if after_e && c != '+' && c != '-' {
            out.push('+');
        }
        after_e = matches!(c, 'e' | 'E');
        out.push(if after_e { 'e' } else { c });
    }
    out
}

/// Walk `value` in document order; each number with an exponent takes the next spelling written of it (a
/// duplicate key, whose earlier value `serde_json` dropped, may leave a spelling unused).
fn restore(value: &mut Value, spellings: &mut HashMap<String, VecDeque<&str>>) {
    match value {
        Value::Number(n) if n.as_str().contains('e') => {
            let Some(spelling) = spellings.get_mut(n.as_str()).and_then(VecDeque::pop_front) else {
                return;
            };
            if spelling != n.as_str() {
                // the only way to give a `Number` its text: `arbitrary_precision` keeps it as a string, which
                // `serde_json` has just checked is this number
                *n = Number::from_string_unchecked(spelling.to_owned());
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| restore(v, spellings)),
        Value::Object(members) => members.values_mut().for_each(|v| restore(v, spellings)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str) -> String {
        let mut v: Value = serde_json::from_str(text).unwrap();
        keep_number_spelling(text, &mut v);
        serde_json::to_string(&v).unwrap()
    }

    #[test]
    fn exponents_keep_their_spelling() {
        for text in [
            r#"{"a":1e400,"b":1E+2,"c":2E-3,"d":1e+2,"e":-1.5E10,"f":[1e2,1e+2,1E2]}"#,
            r#"[0,-0.0,1.50,12345678901234567890123,1e-7]"#,
            r#"{"s":"1E2 in a string \" 3E4","n":3E4}"#,
        ] {
            assert_eq!(round_trip(text), text);
        }
    }

    #[test]
    fn a_duplicate_key_takes_the_spelling_of_the_value_kept() {
        // serde_json keeps the last value of a duplicate key at the first one's place
        let text = r#"{"a":1E2,"b":5E1,"a":7E0}"#;
        assert_eq!(round_trip(text), r#"{"a":7E0,"b":5E1}"#);
    }

    #[test]
    fn normalized_is_what_serde_json_writes() {
        for w in ["1E2", "1e2", "1E+2", "1e-2", "-0.5E-10", "7E0"] {
            let v: Value = serde_json::from_str(w).unwrap();
            assert_eq!(v.to_string(), normalized(w), "{w}");
        }
    }
}
