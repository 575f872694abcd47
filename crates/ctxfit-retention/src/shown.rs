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
    // (compared as bytes: `i` follows ASCII digits, and `→` is three bytes no other character starts with)
    match &b[i..] {
        [b'\t', ..] => i + 1,
        [0xE2, 0x86, 0x92, ..] => i + '→'.len_utf8(),
        _ => 0,
    }
}

/// `line.trim()`: the same white space trimmed (Unicode's), found byte by byte where it is ASCII — the text of
/// lines is, nearly all of it — and decoded only where a line starts or ends with another character.
pub fn trim_line(line: &str) -> &str {
    let line = trim_line_start(line);
    let b = line.as_bytes();
    let mut end = b.len();
    while end > 0 {
        match b[end - 1] {
            b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r' => end -= 1,
            c if c.is_ascii() => break,
            _ => match line[..end].chars().next_back() {
                Some(c) if c.is_whitespace() => end -= c.len_utf8(),
                _ => break,
            },
        }
    }
    &line[..end]
}

/// `line.trim_start()`, found byte by byte where it is ASCII ([`trim_line`]'s first half).
pub fn trim_line_start(line: &str) -> &str {
    let b = line.as_bytes();
    let mut start = 0;
    while start < b.len() {
        match b[start] {
            b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r' => start += 1,
            c if c.is_ascii() => break,
            _ => match line[start..].chars().next() {
                Some(c) if c.is_whitespace() => start += c.len_utf8(),
                _ => break,
            },
        }
    }
    &line[start..]
}

/// Whether a line is blank: white space only (`line.trim().is_empty()`).
pub fn is_blank(line: &str) -> bool {
    trim_line(line).is_empty()
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
    let s = trim_line(&line[line_number_prefix(line)..]);
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

    #[test]
    fn lines_are_trimmed_as_str_trim_trims_them() {
        let pieces = [
            "",
            " ",
            "\t",
            "\r",
            "\n",
            "\u{0B}",
            "\u{0C}",
            "\u{A0}",
            "\u{85}",
            "\u{2028}",
            "\u{3000}",
            "\u{FEFF}",
            "\u{200B}",
            "a",
            "é",
            "→",
            "12",
            "x y",
            "\u{1F600}",
        ];
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    let line = format!("{a}{b}{c}{a}");
                    assert_eq!(trim_line(&line), line.trim(), "{line:?}");
                    assert_eq!(trim_line_start(&line), line.trim_start(), "{line:?}");
                    assert_eq!(is_blank(&line), line.trim().is_empty(), "{line:?}");
                }
            }
        }
        for (line, want) in [
            ("   12→x", 8),
            ("12\tx", 3),
            ("12→", 5),
            ("12", 0),
            ("12←x", 0),
            ("12:x", 0),
        ] {
            assert_eq!(line_number_prefix(line), want, "{line:?}");
        }
    }
}
