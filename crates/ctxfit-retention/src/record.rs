//! A record on one line: a tool result that is one JSON object written on a single line — what most
//! function-calling tools return (`json.dumps(reservation)`) — read as its members, so that a record fetched again
//! (the reservation after an update, the user's profile read twice) keeps only the fields that changed, as a
//! re-read of a file keeps only its lines that changed ([`ShownLines`](crate::ShownLines)).
//!
//! A record is known by its first member (`"reservation_id": "JG7FMM"`: APIs write the key first). A member is
//! shown elsewhere when the request shows, for good, a record on one line with the same first member and that
//! member, byte for byte; [`record_member_line`] is the key under which both sides look it up. A pretty-printed
//! record needs none of this: its lines are compared one by one.

use std::ops::Range;

/// How deep a record's values may nest before the text is not read as one.
const MAX_DEPTH: usize = 64;

/// The byte ranges in `text` of the members (`"name": value`, surrounding white space left out) of the JSON
/// object it holds on one line; `None` for anything else — text that, white space aside, is not `{…}`, spans
/// lines, leaves a string or a bracket open, has a member that does not start with its name, or holds fewer than
/// two members. The text is scanned, not validated: what a member is matters only byte for byte.
pub fn record_members(text: &str) -> Option<Vec<Range<usize>>> {
    let start = text.len() - text.trim_start().len();
    let end = text.trim_end().len();
    let b = text.as_bytes();
    if end < start + 2 || b[start] != b'{' || b[end - 1] != b'}' || text[start..end].contains('\n')
    {
        return None;
    }
    let mut members = Vec::new();
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    let mut member: Option<usize> = None;
    let close = |from: Option<usize>, at: usize, members: &mut Vec<Range<usize>>| -> Option<()> {
        members.push(from?..text[..at].trim_end().len());
        Some(())
    };
    for (i, &c) in b.iter().enumerate().take(end).skip(start) {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => {
                in_string = true;
                if depth == 1 && member.is_none() {
                    member = Some(i);
                }
            }
            b'{' | b'[' => {
                if depth == 1 && member.is_none() {
                    return None;
                }
                depth += 1;
                if depth > MAX_DEPTH {
                    return None;
                }
            }
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    if i != end - 1 {
                        return None;
                    }
                    close(member.take(), i, &mut members)?;
                }
            }
            b',' if depth == 1 => close(member.take(), i, &mut members)?,
            b' ' | b'\t' | b'\r' => {}
            _ if depth == 1 && member.is_none() => return None,
            _ => {}
        }
    }
    (depth == 0 && !in_string && members.len() >= 2).then_some(members)
}

/// The key of member `member` of the record whose first member is `first`, as a line for
/// [`ShownLines`](crate::ShownLines) and [`line_key`](crate::line_key): both members' text joined by a control
/// character that JSON text never holds unescaped.
pub fn record_member_line(first: &str, member: &str) -> String {
    format!("{first}\u{1f}{member}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(text: &str) -> Option<Vec<&str>> {
        record_members(text).map(|m| m.into_iter().map(|r| &text[r]).collect())
    }

    #[test]
    fn a_record_is_read_as_its_members() {
        assert_eq!(
            members(
                r#" {"id": "A1", "seats": [1, 2], "who": {"name": "a, b"}, "note": "say \"}\""}  "#
            ),
            Some(vec![
                r#""id": "A1""#,
                r#""seats": [1, 2]"#,
                r#""who": {"name": "a, b"}"#,
                r#""note": "say \"}\"""#
            ])
        );
        assert_eq!(
            members(r#"{"a":1,"b":2}"#),
            Some(vec![r#""a":1"#, r#""b":2"#])
        );
    }

    #[test]
    fn anything_else_is_not_a_record() {
        for text in [
            "",
            "{}",
            r#"{"id": 1}"#,
            "[1, 2]",
            "{\"a\": 1,\n\"b\": 2}",
            r#"{"a": 1, "b": "open}"#,
            r#"{"a": [1, "b": 2}"#,
            r#"{"a": 1} {"b": 2}"#,
            r#"{1: 2, 3: 4}"#,
            r#"{"a": 1, {"b": 2}}"#,
            "plain text",
            "{",
            "}",
        ] {
            assert_eq!(members(text), None, "{text:?}");
        }
        let deep = format!(
            "{{\"a\": {}1{}, \"b\": 2}}",
            "[".repeat(100),
            "]".repeat(100)
        );
        assert_eq!(members(&deep), None);
    }

    #[test]
    fn any_cut_of_a_record_reads_without_a_panic() {
        // every prefix and suffix of a record with escapes, nesting and multi-byte text: read or refused, and what
        // is read is members of the text
        let text = r#" {"id": "é😀\"", "a": [{"b": "}, ]"}, 2], "c": null, "d": "日本"} "#;
        assert!(serde_json::from_str::<serde_json::Value>(text).is_ok());
        let cuts = (0..=text.len()).filter(|&i| text.is_char_boundary(i));
        for i in cuts {
            for part in [&text[..i], &text[i..]] {
                if let Some(members) = record_members(part) {
                    assert!(members.len() >= 2, "{part:?}");
                    for m in members {
                        assert!(part[m].starts_with('"'), "{part:?}");
                    }
                }
            }
        }
        assert_eq!(members(text).map(|m| m.len()), Some(4));
    }
}
