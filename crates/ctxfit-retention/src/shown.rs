//! Lines the request already shows: what a rule may leave out of a stale result without hiding anything.
//!
//! The compactor keeps a count of every line that is *final* in the request — text and tool-call inputs of
//! messages, and tool results whose decision is made (kept for good, or replaced) — keyed by the line as
//! [`line_key`] normalises it (a leading line number as `cat -n`, Claude Code's `Read` or `grep -n` print it is
//! ignored, and so is surrounding white space). A rule asks [`ShownLines::is_shown`] about a line of the result it
//! decides on; a result still pending is never in the index, so two results can never each leave out a line on
//! the strength of the other's copy.

use std::hash::{Hash, Hasher};

/// Lines the request shows outside the result being decided.
pub trait ShownLines {
    /// Is this line (as [`line_key`] normalises it) shown elsewhere in the request? Never for a blank line (it has
    /// no key).
    fn is_shown(&self, line: &str) -> bool;
}

/// An index with nothing in it, for contexts built by hand (tests, tools).
pub struct NothingShown;

impl ShownLines for NothingShown {
    fn is_shown(&self, _line: &str) -> bool {
        false
    }
}

/// The length of a leading line number as file viewers print it (`   12→` in Claude Code's `Read`, `    12\t` from
/// `cat -n`), or 0. `grep -n`'s `12:` is not one: there the number is what the line says.
pub fn line_number_prefix(line: &str) -> usize {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() && b[i] == b' ' {
        i += 1;
    }
    let digits = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    if i == digits || i - digits > 9 {
        return 0;
    }
    match &line[i..] {
        s if s.starts_with('→') => i + '→'.len_utf8(),
        s if s.starts_with('\t') => i + 1,
        _ => 0,
    }
}

/// The lines of `text` as `text.split('\n')` gives them, the line breaks found in one vectorised pass (a search
/// per line, as `split` makes, costs more than the line on the short lines of logs and listings).
pub fn split_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::with_capacity(text.len() / 32 + 1);
    lines.extend(each_line(text));
    lines
}

/// [`split_lines`] as an iterator.
pub fn each_line(text: &str) -> impl Iterator<Item = &str> {
    let mut start = 0;
    memchr::memchr_iter(b'\n', text.as_bytes())
        .chain(std::iter::once(text.len()))
        .map(move |at| {
            let line = &text[start..at];
            start = at + 1;
            line
        })
}

/// The part of a line that identifies it: without a leading line number, trimmed. `None` for a blank line.
pub fn normalized_line(line: &str) -> Option<&str> {
    let s = line[line_number_prefix(line)..].trim();
    (!s.is_empty()).then_some(s)
}

/// The key of a line in a [`ShownLines`] index (`None` for a blank line).
pub fn line_key(line: &str) -> Option<u64> {
    let s = normalized_line(line)?;
    let mut h = rustc_hash::FxHasher::default();
    s.hash(&mut h);
    Some(h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_numbers_and_white_space_do_not_count() {
        for (line, want) in [
            ("   12→    let x = 1;", Some("let x = 1;")),
            ("12\tfoo()", Some("foo()")),
            ("src/a.rs:12:fn main()", Some("src/a.rs:12:fn main()")),
            ("  7:  return y", Some("7:  return y")),
            ("  ", None),
            ("", None),
            ("2024 was a year", Some("2024 was a year")),
            ("1234567890123→x", Some("1234567890123→x")),
        ] {
            assert_eq!(normalized_line(line), want, "{line:?}");
        }
        assert_eq!(line_key("  9→ a"), line_key("a"));
        for text in ["", "\n", "a", "a\n", "a\r\nb\n\nc", "é\nü\n\n"] {
            assert_eq!(split_lines(text), text.split('\n').collect::<Vec<_>>());
        }
        assert_ne!(line_key("a"), line_key("b"));
    }
}
