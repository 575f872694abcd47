//! Lists of records: of a long JSON list of records, the first items whole and of each later one its first field.
//!
//! ## What
//! An API result (not a file read, a listing or shell output) that is one JSON value longer than `json_above`
//! characters (2,000) keeps, of each array of more than `json_items` (1) objects or arrays, the first `json_items`
//! — what every record holds, with the lists inside them cut the same way — and of every later one its first
//! field, the record's key as APIs write it first (`id`, `name`, `flight_number`), with ` …` where the rest was.
//! `json_items = 0` never cuts.
//!
//! Records are data — ids, names, numbers, dates, short fields. A list whose items hold prose (a string of more
//! than [`PROSE`] bytes: a comment's body, an issue's description, a search hit's text) is text the agent reads,
//! as it reads a file, and is left whole.
//!
//! The excerpt is cut from the result's own text — its spacing, its key order, its escapes — so what it keeps is
//! the original's bytes, in order, with ` …` where fields were left out. A value nested deeper than
//! [`MAX_DEPTH`], or text that is not one JSON value, has no excerpt.
//!
//! ## Why
//! The twenty flights an API offered, once the agent has answered about them, are needed as which there were and
//! what one holds: the first record shows the shape, the keys of the others say which.
//!
//! ## Example
//! ```text
//! [{"flight_number": "HAT083", "origin": "SFO", "destination": "JFK", "price": 412},
//!  {"flight_number": "HAT114" …}, {"flight_number": "HAT202" …}]
//! ```

use crate::{excerpt_body, found_in_order};

/// The trailer of an excerpt of lists of records says this.
pub(crate) const RECORDS_NOTE: &str = "of long lists of records, only the first field of ";

/// Is `cut` an excerpt of lists of records this rule wrote (`None` if not), and is it then the original's own
/// text, in order, with ` …` where fields were left out (`Some(true)`)?
pub fn keeps_records_of(original: &str, cut: &str) -> Option<bool> {
    let body = excerpt_body(cut, RECORDS_NOTE)?;
    Some(found_in_order(original, body.split(LEFT_OUT)))
}

/// How deep arrays and objects may nest before the text is not read as records (no recursion without a bound).
pub const MAX_DEPTH: usize = 64;

/// A string longer than this many bytes is prose, and the list that holds it is not one of records.
pub const PROSE: usize = 200;

/// What marks the fields left out of a record: `{"id": 7 …}`.
pub const LEFT_OUT: &str = " …";

/// A JSON value's byte range in the text and, for an array or an object, its items' or its members' values.
#[derive(Debug)]
struct Node {
    start: usize,
    end: usize,
    /// The longest string value in it, in bytes (escapes included).
    longest: usize,
    inner: Inner,
}

#[derive(Debug)]
enum Inner {
    Scalar,
    Array(Vec<Node>),
    /// The members' values; each member's name lies between the previous value (or the `{`) and its value.
    Object(Vec<Node>),
}

impl Node {
    fn is_record(&self) -> bool {
        !matches!(self.inner, Inner::Scalar) && self.longest <= PROSE
    }
}

struct Parser<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn space(&mut self) {
        while self
            .bytes
            .get(self.at)
            .is_some_and(|b| b" \t\r\n".contains(b))
        {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.space();
        let found = self.bytes.get(self.at) == Some(&byte);
        self.at += usize::from(found);
        found
    }

    fn string(&mut self) -> Option<()> {
        // at the opening quote
        self.at += 1;
        loop {
            match self.bytes.get(self.at)? {
                b'"' => {
                    self.at += 1;
                    return Some(());
                }
                b'\\' => self.at += 2,
                _ => self.at += 1,
            }
        }
    }

    /// The items of an array or the member values of an object, up to and including `close`.
    fn items(&mut self, close: u8, depth: usize, named: bool) -> Option<Vec<Node>> {
        let mut items = Vec::new();
        if self.eat(close) {
            return Some(items);
        }
        loop {
            if named {
                self.space();
                if self.bytes.get(self.at) != Some(&b'"') {
                    return None;
                }
                self.string()?;
                if !self.eat(b':') {
                    return None;
                }
            }
            items.push(self.value(depth + 1)?);
            if self.eat(close) {
                return Some(items);
            }
            if !self.eat(b',') {
                return None;
            }
        }
    }

    fn value(&mut self, depth: usize) -> Option<Node> {
        self.space();
        let start = self.at;
        let mut longest = 0;
        let inner = match *self.bytes.get(self.at)? {
            b'{' | b'[' if depth >= MAX_DEPTH => return None,
            open @ (b'{' | b'[') => {
                self.at += 1;
                let named = open == b'{';
                let items = self.items(if named { b'}' } else { b']' }, depth, named)?;
                longest = items.iter().map(|i| i.longest).max().unwrap_or(0);
                if named {
                    Inner::Object(items)
                } else {
                    Inner::Array(items)
                }
            }
            b'"' => {
                self.string()?;
                longest = self.at - start - 2;
                Inner::Scalar
            }
            _ => {
                let word = self.bytes[self.at..]
                    .iter()
                    .take_while(|b| b.is_ascii_alphanumeric() || b"+-.".contains(b))
                    .count();
                let scalar = &self.bytes[self.at..self.at + word];
                let number = scalar
                    .first()
                    .is_some_and(|b| *b == b'-' || b.is_ascii_digit());
                if !(number || matches!(scalar, b"true" | b"false" | b"null")) {
                    return None;
                }
                self.at += word;
                Inner::Scalar
            }
        };
        Some(Node {
            start,
            end: self.at,
            longest,
            inner,
        })
    }
}

/// The text read as one JSON value (space around it allowed).
fn parse(text: &str) -> Option<Node> {
    let mut parser = Parser {
        bytes: text.as_bytes(),
        at: 0,
    };
    let node = parser.value(0)?;
    parser.space();
    (parser.at == text.len()).then_some(node)
}

/// The excerpt of a JSON value whose lists of records (arrays whose items are all objects or arrays, and hold no
/// prose) are longer than `keep` items: their first `keep` items stay, with the lists inside them cut the same
/// way, and each later one keeps only its first field (`brief`) — at any depth. Returns the excerpt and how
/// many records were cut, or `None` when the text is not one JSON value or has no such list.
pub fn records_excerpt(text: &str, keep: usize) -> Option<(String, usize)> {
    let node = parse(text)?;
    let mut out = String::with_capacity(text.len() / 2);
    let mut cut = 0;
    whole(text, &node, keep, &mut out, &mut cut);
    (cut > 0).then_some((out, cut))
}

/// `node` as it is, but for its long lists of records.
fn whole(text: &str, node: &Node, keep: usize, out: &mut String, cut: &mut usize) {
    let (items, list) = match &node.inner {
        Inner::Scalar => {
            out.push_str(&text[node.start..node.end]);
            return;
        }
        Inner::Array(items) => (
            items,
            items.len() > keep && items.iter().all(Node::is_record),
        ),
        Inner::Object(items) => (items, false),
    };
    let mut cursor = node.start;
    for (i, item) in items.iter().enumerate() {
        out.push_str(&text[cursor..item.start]);
        if list && i >= keep {
            *cut += usize::from(brief(text, item, out));
        } else {
            whole(text, item, keep, out, cut);
        }
        cursor = item.end;
    }
    out.push_str(&text[cursor..node.end]);
}

/// A record by its first field: an object keeps its first member (that member's value again by its first field)
/// and ` …` for the rest; an array keeps each of its items so; a scalar stays. Did it leave anything out?
fn brief(text: &str, node: &Node, out: &mut String) -> bool {
    match &node.inner {
        Inner::Scalar => {
            out.push_str(&text[node.start..node.end]);
            false
        }
        Inner::Object(members) => match members.first() {
            None => {
                out.push_str(&text[node.start..node.end]);
                false
            }
            Some(first) => {
                out.push_str(&text[node.start..first.start]);
                let left_out = brief(text, first, out);
                if members.len() > 1 {
                    out.push_str(LEFT_OUT);
                    out.push('}');
                    true
                } else {
                    out.push_str(&text[first.end..node.end]);
                    left_out
                }
            }
        },
        Inner::Array(items) => {
            let mut cursor = node.start;
            let mut left_out = false;
            for item in items {
                out.push_str(&text[cursor..item.start]);
                left_out |= brief(text, item, out);
                cursor = item.end;
            }
            out.push_str(&text[cursor..node.end]);
            left_out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{parse, records_excerpt, MAX_DEPTH};

    fn check(text: &str, keep: usize, expect: Option<&str>) {
        let got = records_excerpt(text, keep);
        assert_eq!(got.as_ref().map(|(s, _)| s.as_str()), expect, "{text}");
    }

    #[test]
    fn a_long_list_keeps_its_first_records_and_the_first_field_of_the_rest() {
        check(
            r#"[{"id": 1, "a": 2}, {"id": 3, "a": 4}, {"id": 5, "a": {"b": 6}}]"#,
            1,
            Some(r#"[{"id": 1, "a": 2}, {"id": 3 …}, {"id": 5 …}]"#),
        );
        // nested lists too, and a record's first field by its own first field
        check(
            r#"{"total": 3, "data": [[{"n": "A1", "x": 0}, {"n": "B2"}], [{"n": "C3", "x": 1}], [{"n": "D4"}]]}"#,
            1,
            Some(
                r#"{"total": 3, "data": [[{"n": "A1", "x": 0}, {"n": "B2"}], [{"n": "C3" …}], [{"n": "D4"}]]}"#,
            ),
        );
        check(
            "[\n  {\n    \"user\": {\"login\": \"ann\", \"id\": 9},\n    \"body\": \"hi\"\n  },\n  {\n    \"user\": {\"login\": \"bob\", \"id\": 8},\n    \"body\": \"yo\"\n  }\n]",
            1,
            Some("[\n  {\n    \"user\": {\"login\": \"ann\", \"id\": 9},\n    \"body\": \"hi\"\n  },\n  {\n    \"user\": {\"login\": \"bob\" …} …}\n]"),
        );
    }

    #[test]
    fn short_lists_scalar_lists_and_other_text_have_no_excerpt() {
        check(r#"[{"id": 1}, {"id": 2}]"#, 2, None);
        check(r#"{"ids": ["a", "b", "c", "d"]}"#, 1, None);
        check(r#"[{"id": 1}, 2, {"id": 3}]"#, 1, None);
        // comments, issues, search hits: prose to read, not records
        let body = "word ".repeat(41);
        let comments = format!(r#"[{{"id": 1, "body": "{body}"}}, {{"id": 2, "body": "short"}}]"#);
        check(&comments, 1, None);
        let nested = format!(r#"[{{"id": 1}}, {{"id": 2, "replies": [{{"body": "{body}"}}]}}]"#);
        check(&nested, 1, None);
        // ... but a list beside the prose is still one of records
        let beside =
            format!(r#"{{"body": "{body}", "ids": [{{"id": 1, "a": 1}}, {{"id": 2, "a": 2}}]}}"#);
        let kept = format!(r#"{{"body": "{body}", "ids": [{{"id": 1, "a": 1}}, {{"id": 2 …}}]}}"#);
        check(&beside, 1, Some(&kept));
        for text in [
            "",
            "plain text",
            r#"[{"id": 1}, {"id": 2}] trailing"#,
            r#"[{"id": 1}, {"id": 2}"#,
            r#"[{"id": 1}, {"id" 2}]"#,
            r#"[{"id": "unterminated}, {"id": 2}]"#,
            r#"[{"id": nope}, {"id": 2}]"#,
            r#"[{"id": 1},, {"id": 2}]"#,
            r#"[{"id": "\"#,
            "[{\"id\": \"é\"}, é]",
        ] {
            check(text, 1, None);
        }
    }

    #[test]
    fn escapes_and_spacing_are_the_originals() {
        check(
            "[ {\"k\\\"\": \"a\\\\\" , \"x\": 1} ,\t{ \"k\\\"\" : \"ü\\u00e9\", \"x\": 2 } ]",
            1,
            Some("[ {\"k\\\"\": \"a\\\\\" , \"x\": 1} ,\t{ \"k\\\"\" : \"ü\\u00e9\" …} ]"),
        );
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert!(parse(&deep).is_none());
        let ok = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(parse(&ok).is_some());
        // far deeper than any stack allows, without overflowing it
        let abyss = "[".repeat(1_000_000);
        assert!(records_excerpt(&abyss, 1).is_none());
    }

    /// JSON values: scalars, arrays and objects nested a few deep, in one line or spread over lines.
    fn value() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let leaf =
            proptest::sample::select(vec!["1", "-2.5e3", "\"é😀\"", "\"a\\\"b\"", "null", "true"])
                .prop_map(str::to_owned);
        leaf.prop_recursive(4, 64, 8, |inner| {
            (
                proptest::collection::vec(inner, 0..8),
                any::<bool>(),
                any::<bool>(),
            )
                .prop_map(|(items, object, spread)| {
                    let sep = if spread { ",\n  " } else { ", " };
                    if object {
                        let members: Vec<String> = items
                            .iter()
                            .enumerate()
                            .map(|(i, v)| format!("\"k{i}\": {v}"))
                            .collect();
                        format!("{{{}}}", members.join(sep))
                    } else {
                        format!("[{}]", items.join(sep))
                    }
                })
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config { cases: 10_000, failure_persistence: None, ..Default::default() })]

        /// On any JSON value, whole or cut short, and on any text made of JSON's pieces, the scanner neither
        /// panics nor keeps anything but the original's text, in order, with ` …` where fields went.
        #[test]
        fn any_text_gives_no_excerpt_or_the_originals_pieces_in_order(
            json in value(),
            cut_at in proptest::option::of(0..1000usize),
            pieces in proptest::collection::vec(0..PIECES.len(), 0..100),
            keep in 0..3usize,
        ) {
            let mut json = json;
            if let Some(at) = cut_at.filter(|&at| at < json.len() && json.is_char_boundary(at)) {
                json.truncate(at);
            }
            let noise: String = pieces.into_iter().map(|i| PIECES[i]).collect();
            for text in [json, noise] {
                if let Some((out, cut)) = records_excerpt(&text, keep) {
                    proptest::prop_assert!(cut > 0 && out.len() < text.len() + cut * super::LEFT_OUT.len());
                    let mut rest = text.as_str();
                    for piece in out.split(super::LEFT_OUT) {
                        let at = rest.find(piece);
                        proptest::prop_assert!(at.is_some(), "{:?} / {:?}", text, out);
                        rest = &rest[at.unwrap_or(0) + piece.len()..];
                    }
                }
            }
        }
    }

    const PIECES: &[&str] = &[
        "[",
        "]",
        "{",
        "}",
        ",",
        ":",
        " ",
        "\n",
        "\"id\"",
        "\"é😀\"",
        "\"a\\\"b\"",
        "1",
        "-2.5e3",
        "true",
        "null",
        "\"",
        "\\",
        "x",
        " …",
    ];
}
