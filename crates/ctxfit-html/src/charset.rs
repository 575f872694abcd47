//! Character encodings: pages that are not UTF-8 are decoded before parsing, the way a browser picks the
//! encoding — byte-order mark, then the `charset` of the HTTP `Content-Type`, then (as XML's autodetection
//! does) a page that begins with `<` in UTF-16 without its byte-order mark, then a `<meta charset>` (or
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

/// UTF-16 without a byte-order mark, told by its first character, `<` (after white space), and the next one
/// being ASCII: `<\0h\0` little-endian, `\0<\0h` big-endian — XML's autodetection, which a saved page in
/// UTF-16 (an editor's, a Windows tool's) needs where it lost its mark.
fn utf16_without_bom(bytes: &[u8]) -> Option<&'static Encoding> {
    let pairs = bytes.chunks_exact(2).take(64);
    let mut chars = pairs.skip_while(|p| {
        matches!(
            p,
            [b' ' | b'\t' | b'\r' | b'\n', 0] | [0, b' ' | b'\t' | b'\r' | b'\n']
        )
    });
    let (first, next) = (chars.next()?, chars.next()?);
    match (first, next) {
        ([b'<', 0], [c, 0]) if c.is_ascii() && *c != 0 => Some(encoding_rs::UTF_16LE),
        ([0, b'<'], [0, c]) if c.is_ascii() && *c != 0 => Some(encoding_rs::UTF_16BE),
        _ => None,
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// What `bytes` are when they are no page and no text — `Some("a PDF document")`, `Some("binary data")` — as a
/// browser sniffs a response (the WHATWG MIME Sniffing rules): a known file signature, or a byte no text holds
/// (`0x00`–`0x08`, `0x0B`, `0x0E`–`0x1A`, `0x1C`–`0x1F`) in the first 1,445 bytes when no `Content-Type` says
/// what they are (a file, an untyped response). A byte-order mark, a `Content-Type` naming UTF-16, or a
/// beginning that is `<` in UTF-16, says text. Decoding such bytes as a page would
/// answer its bytes as mojibake.
pub fn binary_kind(bytes: &[u8], content_type: Option<&str>) -> Option<&'static str> {
    if Encoding::for_bom(bytes).is_some()
        || utf16_without_bom(bytes).is_some()
        || content_type
            .and_then(charset_from_content_type)
            .is_some_and(|c| c.to_ascii_lowercase().starts_with("utf-16"))
    {
        return None;
    }
    const SIGNATURES: &[(&[u8], &str)] = &[
        (b"\x1f\x8b\x08", "gzip-compressed data"),
        (b"%PDF-", "a PDF document"),
        (b"\x7fELF", "an executable (ELF)"),
        (b"PK\x03\x04", "a zip archive (or an Office document)"),
        (b"\x89PNG\r\n\x1a\n", "a PNG image"),
        (b"GIF87a", "a GIF image"),
        (b"GIF89a", "a GIF image"),
        (b"\xff\xd8\xff", "a JPEG image"),
        (b"\x00asm", "a WebAssembly module"),
    ];
    if let Some((_, kind)) = SIGNATURES
        .iter()
        .find(|(magic, _)| bytes.starts_with(magic))
    {
        return Some(kind);
    }
    if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        return Some("a WebP image");
    }
    // a response labelled as a page or as text is read as it says, stray control bytes and all (a terminal's
    // log served as text/plain may hold a backspace): only its signature can say otherwise
    if content_type.is_some_and(|c| !c.trim().is_empty()) {
        return None;
    }
    // untyped bytes that begin (after white space) as a page or an XML document does — the standard's HTML
    // patterns, `<!DOCTYPE HTML`, `<HTML`, `<P`, `<!--`, … and a space or `>` — are a page, whatever follows
    if starts_as_markup(bytes) {
        return None;
    }
    let binary = |b: &u8| matches!(b, 0x00..=0x08 | 0x0B | 0x0E..=0x1A | 0x1C..=0x1F);
    bytes[..bytes.len().min(1445)]
        .iter()
        .any(binary)
        .then_some("binary data")
}

/// Do `bytes` begin, after white space, with one of the WHATWG MIME Sniffing standard's HTML patterns (a tag
/// name it lists, any case, then a space or `>`) or with `<?xml`?
fn starts_as_markup(bytes: &[u8]) -> bool {
    const HTML: &[&[u8]] = &[
        b"<!DOCTYPE HTML",
        b"<HTML",
        b"<HEAD",
        b"<SCRIPT",
        b"<IFRAME",
        b"<H1",
        b"<DIV",
        b"<FONT",
        b"<TABLE",
        b"<A",
        b"<STYLE",
        b"<TITLE",
        b"<B",
        b"<BODY",
        b"<BR",
        b"<P",
        b"<!--",
    ];
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    let rest = &bytes[start..];
    rest.starts_with(b"<?xml")
        || HTML.iter().any(|p| {
            rest.get(..p.len())
                .is_some_and(|h| h.eq_ignore_ascii_case(p))
                && matches!(rest.get(p.len()), Some(b' ' | b'>'))
        })
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
        .or_else(|| utf16_without_bom(bytes))
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

#[cfg(test)]
mod tests {
    use super::{binary_kind, decode_html};

    #[test]
    fn utf16_without_its_byte_order_mark_is_told_by_its_first_tag() {
        let page = "<html><body><p>日本語 und Grüße</p></body></html>";
        let le: Vec<u8> = page.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let be: Vec<u8> = format!("\r\n{page}")
            .encode_utf16()
            .flat_map(u16::to_be_bytes)
            .collect();
        assert_eq!(decode_html(&le, None), (page.into(), "UTF-16LE"));
        assert_eq!(decode_html(&be, None).1, "UTF-16BE");
        assert!(decode_html(&be, None).0.ends_with(page));
        // a charset the server states still wins; a `<` then a NUL then nothing more is not enough to tell
        assert_eq!(
            decode_html(&le, Some("text/html; charset=windows-1252")).1,
            "windows-1252"
        );
        assert_eq!(decode_html(b"<\x00", None).1, "UTF-8");
        assert_eq!(decode_html(b"<p>\x00</p>", None).1, "UTF-8");
    }

    #[test]
    fn bytes_that_are_no_page_are_named_by_what_they_are() {
        for (bytes, kind) in [
            (&b"%PDF-1.7\n%\xe2\xe3\xcf\xd3"[..], "a PDF document"),
            (b"\x7fELF\x02\x01\x01", "an executable (ELF)"),
            (b"\x89PNG\r\n\x1a\n\x00\x00", "a PNG image"),
            (b"\x1f\x8b\x08\x00", "gzip-compressed data"),
            (b"RIFF\x10\x00\x00\x00WEBPVP8 ", "a WebP image"),
            (b"<meta charset=x>a\x00b", "binary data"),
            (b"text\x07", "binary data"),
            (b"<pre>\x00", "binary data"),
        ] {
            assert_eq!(binary_kind(bytes, None), Some(kind), "{bytes:?}");
        }
        // text, whatever its encoding: tabs, form feeds, line breaks, a terminal's colour escapes, UTF-16 with its
        // byte-order mark or its charset, windows-1252, and a control byte past the sniffed start
        let late = format!("{}\u{1}", "x".repeat(1445));
        for (bytes, content_type) in [
            (&b"<!doctype html><p>caf\xe9\t\x0c\r\n</p>"[..], None),
            (b"\x1b[31merror\x1b[0m: failed", None),
            (b"\xff\xfe<\x00p\x00>\x00", None),
            (b"<\x00p\x00>\x00", Some("text/html; charset=UTF-16LE")),
            (b"<\x00p\x00>\x00", Some("text/plain; charset=utf-16le")),
            (b"<\x00p\x00>\x00", None),
            (b"\x00\n\x00<\x00p", None),
            (late.as_bytes(), None),
            (b"", None),
            // the standard's HTML patterns (and `<?xml`) make untyped bytes a page, a NUL after them and all
            (b"<p>a\x00b</p>", None),
            (b" \r\n<!DOCTYPE html>\x00", None),
            (b"<HTML >\x01", None),
            (b"<!-- x -->\x00", None),
            (b"<?xml version=\"1.0\"?>\x00", None),
        ] {
            assert_eq!(binary_kind(bytes, content_type), None, "{bytes:?}");
        }
        // a response labelled as a page or as text is read as it says, a stray control byte and all; its
        // signature still counts
        assert_eq!(binary_kind(b"<p>a\x00b</p>", Some("text/html")), None);
        assert_eq!(
            binary_kind(b"50%\x08\x08\x08100%", Some("text/plain")),
            None
        );
        assert_eq!(binary_kind(b"<meta>a\x00b", Some(" ")), Some("binary data"));
        assert_eq!(
            binary_kind(b"%PDF-1.4", Some("text/html")),
            Some("a PDF document")
        );
    }
}
