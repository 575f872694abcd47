//! Tags flooded with attributes: what the tokenizer is given of a tag with thousands of them.
//!
//! html5ever compares each attribute of a tag with every one before it (a repeated name is dropped, as the
//! standard says), so a tag's cost grows with the square of its attributes: one `<p>` of 300,000 (a 3.5 MB page)
//! took 95 s to parse, twice over (the page and its head). No page needs more than [`MAX_ATTRIBUTES`] on a tag;
//! past them [`defused`] leaves the rest of the tag's attributes out before the parser sees the page, in one pass
//! over its bytes, and gives the page back untouched (not copied) when no tag has that many.
//!
//! The scan follows the tokenizer where it matters: a tag's name, its attributes' names and values (quoted or
//! not), comments, and the text of the elements whose content is not markup (`script`, `style`, `textarea`,
//! `title`, ...), which it passes over to their end tag, so that no quote in them can hide a flood behind it.
//! [`raw_end`], where such a text ends as the tokenizer sees it, also tells `dom.rs` how far to feed the parser past
//! a script.

use std::borrow::Cow;

/// Attributes of one tag given to the parser; the ones after are left out.
pub(crate) const MAX_ATTRIBUTES: usize = 256;

/// Elements whose text is not markup: the tokenizer reads no tag in it until its end tag.
const RAW: &[&[u8]] = &[
    b"script",
    b"style",
    b"textarea",
    b"title",
    b"xmp",
    b"iframe",
    b"noembed",
    b"noframes",
    b"noscript",
];

/// The page with every tag past [`MAX_ATTRIBUTES`] attributes cut to its first ones (the tag closed as it was),
/// or the page itself when none is.
pub(crate) fn defused(html: &str) -> Cow<'_, str> {
    let bytes = html.as_bytes();
    let (mut out, mut copied) = (None::<String>, 0);
    let mut i = 0;
    while let Some(at) = memchr::memchr(b'<', &bytes[i..]) {
        let lt = i + at;
        i = lt + 1;
        if bytes[i..].starts_with(b"!--") {
            i = comment_end(bytes, lt + 4);
            continue;
        }
        // a start or end tag: `<` or `</` and a letter
        let name_at = if bytes.get(i) == Some(&b'/') {
            i + 1
        } else {
            i
        };
        if !bytes.get(name_at).is_some_and(u8::is_ascii_alphabetic) {
            continue;
        }
        let mut k = name_at;
        while k < bytes.len()
            && !(bytes[k].is_ascii_whitespace() || matches!(bytes[k], b'/' | b'>'))
        {
            k += 1;
        }
        let name = &bytes[name_at..k];
        let (end, cut) = attributes(bytes, k);
        if let Some(cut) = cut {
            let o = out.get_or_insert_with(|| String::with_capacity(html.len()));
            // (both ASCII positions: a character boundary)
            o.push_str(&html[copied..cut]);
            copied = end;
        }
        i = end;
        // the text of a raw element: passed over to its end tag
        if name_at == lt + 1 {
            if let Some(raw) = RAW.iter().find(|r| name.eq_ignore_ascii_case(r)) {
                i = raw_end(bytes, i, raw).unwrap_or(bytes.len());
            }
        }
    }
    match out {
        None => Cow::Borrowed(html),
        Some(mut o) => {
            o.push_str(&html[copied..]);
            Cow::Owned(o)
        }
    }
}

/// Where a comment whose text starts at `from` ends: after `-->` or `--!>` (`<!-->` and `<!--->` are empty
/// comments), or at the end of the page.
fn comment_end(bytes: &[u8], from: usize) -> usize {
    if bytes[from..].starts_with(b">") {
        return from + 1;
    }
    if bytes[from..].starts_with(b"->") {
        return from + 2;
    }
    let mut i = from;
    while let Some(at) = memchr::memmem::find(&bytes[i..], b"--") {
        let dashes = i + at;
        match &bytes[dashes + 2..] {
            [b'>', ..] => return dashes + 3,
            [b'!', b'>', ..] => return dashes + 4,
            _ => i = dashes + 1,
        }
    }
    bytes.len()
}

/// The attributes of a tag from `from` (after its name): where the tag ends (its `>`, or the end of the page)
/// and, when it has more than [`MAX_ATTRIBUTES`], where the first one past them begins.
fn attributes(bytes: &[u8], from: usize) -> (usize, Option<usize>) {
    let (mut k, mut count, mut cut) = (from, 0, None);
    loop {
        while k < bytes.len() && (bytes[k].is_ascii_whitespace() || bytes[k] == b'/') {
            k += 1;
        }
        if k >= bytes.len() || bytes[k] == b'>' {
            return (k, cut);
        }
        count += 1;
        if count == MAX_ATTRIBUTES + 1 {
            cut = Some(k);
        }
        // its name (which may begin with `=`), then `=` and a value, if any
        k += 1;
        while k < bytes.len()
            && !(bytes[k].is_ascii_whitespace() || matches!(bytes[k], b'/' | b'>' | b'='))
        {
            k += 1;
        }
        let mut v = k;
        while v < bytes.len() && bytes[v].is_ascii_whitespace() {
            v += 1;
        }
        if bytes.get(v) != Some(&b'=') {
            continue;
        }
        v += 1;
        while v < bytes.len() && bytes[v].is_ascii_whitespace() {
            v += 1;
        }
        k = match bytes.get(v) {
            Some(&q @ (b'"' | b'\'')) => {
                memchr::memchr(q, &bytes[v + 1..]).map_or(bytes.len(), |e| v + 1 + e + 1)
            }
            _ => {
                while v < bytes.len() && !(bytes[v].is_ascii_whitespace() || bytes[v] == b'>') {
                    v += 1;
                }
                v
            }
        };
    }
}

/// Where the raw text that starts at `from` ends: the first `</name` (any case) followed by white space, `/` or
/// `>` — the only end tag the tokenizer's raw-text states take for one.
pub(crate) fn raw_end(bytes: &[u8], from: usize, name: &[u8]) -> Option<usize> {
    let mut i = from;
    while let Some(at) = memchr::memmem::find(&bytes[i..], b"</") {
        let lt = i + at;
        let after = lt + 2 + name.len();
        if bytes
            .get(lt + 2..after)
            .is_some_and(|n| n.eq_ignore_ascii_case(name))
            && bytes
                .get(after)
                .is_some_and(|&b| matches!(b, b'\t' | b'\n' | b'\x0c' | b'\r' | b' ' | b'/' | b'>'))
        {
            return Some(lt);
        }
        i = lt + 2;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flood(n: usize) -> String {
        (0..n).map(|i| format!(" a{i}=\"v\"")).collect()
    }

    #[test]
    fn pages_without_a_flood_are_given_back_as_they_are() {
        for page in [
            "",
            "<p class=\"a\" id=b>text</p>",
            "<script>if (a<b && c > d) { x = '<p a b c>' }</script><p>x",
            "<!-- <p a b c> --><!--><p>after",
            "a < b and <3 and <!doctype html><br/><img src=x alt='a > b'>",
        ] {
            assert!(matches!(defused(page), Cow::Borrowed(_)), "{page}");
        }
        let most = format!("<p{}>text</p>", flood(MAX_ATTRIBUTES));
        assert!(matches!(defused(&most), Cow::Borrowed(_)));
    }

    #[test]
    fn a_flooded_tag_keeps_its_first_attributes_and_its_end() {
        let page = format!(
            "<div><p{}>text</p><b x=1>bold</b></div>",
            flood(MAX_ATTRIBUTES + 500)
        );
        let cut = defused(&page);
        let expected = format!(
            "<div><p{} >text</p><b x=1>bold</b></div>",
            flood(MAX_ATTRIBUTES)
        );
        assert_eq!(cut, expected);
        // quoted values holding `>` and unquoted ones, an end tag's attributes
        let page = format!(
            "<p{} title='a > b'>x</p{}>y",
            " k=v".repeat(MAX_ATTRIBUTES),
            " z".repeat(2000)
        );
        let cut = defused(&page);
        assert_eq!(
            cut,
            format!(
                "<p{} >x</p{} >y",
                " k=v".repeat(MAX_ATTRIBUTES),
                " z".repeat(MAX_ATTRIBUTES)
            )
        );
    }

    #[test]
    fn no_quote_in_raw_text_or_a_comment_hides_a_flood() {
        for hiding in [
            "<textarea><a x='</textarea>",
            "<script>'<a x=\"'</script>",
            "<!-- <a x=' -->",
            "<!-- <a x=' --!>",
            "<title><a x=\"</TITLE >",
        ] {
            let page = format!("{hiding}<p{}>text</p>'\"", flood(MAX_ATTRIBUTES + 1));
            let cut = defused(&page);
            assert!(cut.len() < page.len(), "{hiding}");
            assert!(cut.ends_with(" >text</p>'\""), "{hiding}");
        }
    }
}
