//! Character encodings: pages that are not UTF-8 are decoded before parsing, the way a browser picks the
//! encoding — byte-order mark, then the `charset` of the HTTP `Content-Type`, then a `<meta charset>` (or
//! `http-equiv` content type) near the top of the page, then UTF-8 if the bytes are valid UTF-8, else
//! windows-1252 (what browsers assume for unlabelled Western pages).

use std::borrow::Cow;

use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};

/// How far into the page to look for a `<meta>` charset. The HTML standard's prescan stops at 1,024 bytes;
/// real pages often put a long `<head>` of scripts first, so this looks further.
const PRESCAN_BYTES: usize = 8192;

/// The `charset` parameter of a `Content-Type` header value (`text/html; charset="ISO-8859-1"`).
pub fn charset_from_content_type(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches(['"', '\'']))
            .filter(|v| !v.is_empty())
    })
}

/// The charset a `<meta>` tag declares in the first bytes of a page, if any.
fn meta_charset(bytes: &[u8]) -> Option<&'static Encoding> {
    let head = &bytes[..bytes.len().min(PRESCAN_BYTES)];
    let lower = head.to_ascii_lowercase();
    let mut from = 0;
    while let Some(at) = find(&lower[from..], b"<meta") {
        let start = from + at + 5;
        let end = find(&lower[start..], b">").map_or(lower.len(), |e| start + e);
        let tag = &lower[start..end];
        if let Some(c) = find(tag, b"charset") {
            let rest = &tag[c + 7..];
            let rest = rest.trim_ascii_start();
            if let Some(rest) = rest.strip_prefix(b"=") {
                let rest = rest.trim_ascii_start();
                let rest = rest
                    .strip_prefix(b"\"")
                    .or_else(|| rest.strip_prefix(b"'"))
                    .unwrap_or(rest);
                let len = rest
                    .iter()
                    .position(|b| {
                        matches!(b, b'"' | b'\'' | b';' | b'/') || b.is_ascii_whitespace()
                    })
                    .unwrap_or(rest.len());
                if let Some(encoding) = Encoding::for_label(&rest[..len]) {
                    // a page cannot declare itself UTF-16 in ASCII bytes: the standard reads that as UTF-8
                    return Some(
                        if encoding == encoding_rs::UTF_16LE || encoding == encoding_rs::UTF_16BE {
                            UTF_8
                        } else {
                            encoding
                        },
                    );
                }
            }
        }
        from = end;
    }
    None
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Decode a page's bytes to text. `content_type` is the HTTP `Content-Type` header, if the page came over HTTP.
/// Returns the text and the name of the encoding used. Bytes that are invalid in that encoding become U+FFFD;
/// nothing fails.
pub fn decode_html<'a>(
    bytes: &'a [u8],
    content_type: Option<&str>,
) -> (Cow<'a, str>, &'static str) {
    let declared = Encoding::for_bom(bytes)
        .map(|(encoding, _)| encoding)
        .or_else(|| {
            content_type
                .and_then(charset_from_content_type)
                .and_then(|label| Encoding::for_label(label.as_bytes()))
        })
        .or_else(|| meta_charset(bytes));
    let encoding = declared.unwrap_or_else(|| {
        if std::str::from_utf8(bytes).is_ok() {
            UTF_8
        } else {
            WINDOWS_1252
        }
    });
    let (text, used, _had_errors) = encoding.decode(bytes);
    (text, used.name())
}
