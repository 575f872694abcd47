//! Keys written twice in one JSON object. `serde_json` keeps a repeated key's last value, as Python's and
//! JavaScript's parsers do, and the earlier value is gone without a word. The structural count an import makes
//! anyway ([`crate::parse::parse`]) says whether any key was repeated — the text's members (one `:` outside strings
//! each) outnumber its values' — and only then is the text scanned again, for the first repeat, named by line,
//! column and key.

use std::collections::HashSet;

use serde_json::Value;

/// The members (key and value) of every object in `value`, nested ones included.
pub(crate) fn members(value: &Value) -> usize {
    match value {
        Value::Object(map) => map.len() + map.values().map(members).sum::<usize>(),
        Value::Array(items) => items.iter().map(members).sum(),
        _ => 0,
    }
}

/// A key an object of the text holds twice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RepeatedKey {
    /// Where its second writing starts: line and column, 1-based, the column in characters.
    pub line: usize,
    pub column: usize,
    pub key: String,
}

impl RepeatedKey {
    /// The problem in words, as [`crate::Session::problems`] says it.
    pub fn problem(&self) -> String {
        format!(
            "line {}, column {}: the key {} is written twice in one object; read with its last value, the \
             earlier one left out",
            self.line,
            self.column,
            serde_json::to_string(&self.key).unwrap_or_else(|_| self.key.clone())
        )
    }
}

/// The first key written twice in one object of `text` — JSON that parses (one document, or values one after
/// another); `None` when every object's keys differ. Keys are compared as the strings they stand for
/// (`"a\u0062"` repeats `"ab"`).
pub(crate) fn first_repeated_key(text: &str) -> Option<RepeatedKey> {
    let bytes = text.as_bytes();
    // the keys of each object open around the position, innermost last (depth is bounded: the text parsed); a
    // set each, so that an object of a million keys is scanned in linear time
    let mut open: Vec<HashSet<String>> = Vec::new();
    let (mut line, mut line_start, mut i) = (1, 0, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let start = i;
                i = crate::past_string(bytes, i);
                let string = text.get(start..i)?;
                let after = bytes[i..].iter().find(|b| !b.is_ascii_whitespace());
                if after == Some(&b':') {
                    let key: String =
                        serde_json::from_str(string).unwrap_or_else(|_| string.to_owned());
                    let keys = open.last_mut()?;
                    if keys.contains(&key) {
                        let column = text[line_start..start].chars().count() + 1;
                        return Some(RepeatedKey { line, column, key });
                    }
                    keys.insert(key);
                }
                continue;
            }
            b'{' => open.push(HashSet::new()),
            b'}' => {
                open.pop();
            }
            b'\n' => {
                line += 1;
                line_start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_repeat_is_named_where_it_is_written() {
        let text = "{\"a\": 1,\n \"b\": {\"a\": 2, \"c\": [{\"a\": 3}, {\"a\": 4}]},\n  \"é\": 5, \"é\": 6}";
        assert_eq!(
            first_repeated_key(text),
            Some(RepeatedKey {
                line: 3,
                column: 11,
                key: "é".to_owned()
            })
        );
        // a key's escapes are read: the same key written two ways is one key
        let escaped = r#"{"ab": 1, "a\u0062": 2}"#;
        assert_eq!(
            first_repeated_key(escaped).map(|r| r.key),
            Some("ab".into())
        );
        // values one after another: each object its own keys; a string value followed by `:` in a string is
        // not a key
        assert_eq!(
            first_repeated_key("{\"a\": 1}\n{\"a\": \"x:\", \"b\": \"\\\":\"}\n"),
            None
        );
    }

    /// A JSON text of nested objects and arrays written by hand, keys drawn from a few (so that objects repeat
    /// some), strings holding what the scan must skip; and where its first repeated key is, found as it is written.
    #[derive(Default)]
    struct Writer {
        text: String,
        line: usize,
        line_start: usize,
        first: Option<RepeatedKey>,
        /// JSON Lines: a line break only between values (`push` writes the others as spaces)
        lines: bool,
    }

    const KEYS: [&str; 4] = ["a", "b", "é:\\\"{", "a\\u0062"];
    const STRINGS: [&str; 4] = ["x", "\\\": {", "}]:,", "line\\nbreak"];

    impl Writer {
        fn push(&mut self, s: &str) {
            if self.lines {
                return self.text.push_str(&s.replace('\n', " "));
            }
            self.push_lines(s);
        }

        fn push_lines(&mut self, s: &str) {
            for (i, part) in s.split('\n').enumerate() {
                if i > 0 {
                    self.text.push('\n');
                    self.line += 1;
                    self.line_start = self.text.len();
                }
                self.text.push_str(part);
            }
        }

        /// One value from `draws`: 0–3 a string, 4–5 an array, 6–9 an object (of up to 4 members).
        fn value(&mut self, draws: &mut impl Iterator<Item = u8>, depth: usize) {
            let d = draws.next().unwrap_or(0);
            if depth > 4 || d % 10 < 4 {
                self.push(&format!("\"{}\"", STRINGS[d as usize % 4]));
            } else if d % 10 < 6 {
                self.push("[");
                for i in 0..d as usize % 3 {
                    self.push(if i > 0 { ",\n " } else { "" });
                    self.value(draws, depth + 1);
                }
                self.push("]");
            } else {
                self.push("{");
                let mut seen: Vec<String> = Vec::new();
                for i in 0..d as usize % 5 {
                    self.push(if i > 0 { ", " } else { "" });
                    let k = draws.next().unwrap_or(0);
                    if k % 3 == 0 {
                        self.push("\n");
                    }
                    let written = KEYS[k as usize % 4];
                    let key: String = serde_json::from_str(&format!("\"{written}\"")).unwrap();
                    if seen.contains(&key) && self.first.is_none() {
                        self.first = Some(RepeatedKey {
                            line: self.line + 1,
                            column: self.text[self.line_start..].chars().count() + 1,
                            key: key.clone(),
                        });
                    }
                    seen.push(key);
                    self.push(&format!("\"{written}\" :"));
                    self.value(draws, depth + 1);
                }
                self.push("}");
            }
        }
    }

    proptest::proptest! {
        /// Whatever a document or JSON Lines hold, the repeat is found exactly when there is one, named
        /// where it is first written; and a text without one costs no scan (its members all read).
        #[test]
        fn a_repeat_is_found_where_it_is_and_only_then(draws: Vec<u8>, values in 1..4usize) {
            let mut w = Writer { lines: values > 1, ..Writer::default() };
            let mut draws = draws.into_iter();
            for i in 0..values {
                w.push_lines(if i > 0 { "\n" } else { "" });
                w.push("{\"k\": ");
                w.value(&mut draws, 0);
                w.push("}");
            }
            let (_, repeated) = crate::parse_checked(&w.text).unwrap();
            proptest::prop_assert_eq!(&repeated, &w.first, "{}", w.text);
            proptest::prop_assert_eq!(first_repeated_key(&w.text), w.first, "{}", w.text);
        }
    }

    #[test]
    fn an_object_of_many_keys_is_scanned_in_linear_time() {
        // 100,000 keys and the first again at the end: with a list per object, 5·10⁹ comparisons
        let mut text: String = (0..100_000).map(|k| format!("\"k{k}\": 0, ")).collect();
        text = format!("{{{text}\"k0\": 1}}");
        let (parsed, repeated) = crate::parse_checked(&text).unwrap();
        assert!(matches!(parsed, crate::Parsed::Document(_)));
        assert_eq!(
            repeated.map(|r| (r.key, r.line)),
            Some(("k0".to_owned(), 1))
        );
    }

    #[test]
    fn members_are_counted_in_nested_objects_and_arrays() {
        let v: Value =
            serde_json::from_str(r#"{"a": [{"b": 1, "c": {}}, 2], "d": {"e": null}}"#).unwrap();
        assert_eq!(members(&v), 5);
    }
}
