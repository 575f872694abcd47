//! Binary payloads inside blocks — a PDF, an audio clip, a file sent as base64 — counted as the provider bills
//! them, not as the text of their base64.
//!
//! **What.** The fields the APIs define for a file's bytes: an Anthropic `source` of `"type": "base64"` (its
//! `data`), OpenAI's `file_data` (Chat's `file` part, Responses' `input_file`) and `input_audio.data`, and any
//! string that is a `data:…;base64,` URI. A PDF counts [`PDF_PAGE_TOKENS`] a page — its pages counted in its own
//! structure (`/Type /Page` objects), else one per [`PDF_BYTES_PER_PAGE`] bytes when they are compressed out of
//! sight — and any other payload as an image does ([`IMAGE_TOKENS`]). The rest of the block is counted
//! as its JSON text, as before.
//!
//! **Why.** Base64 reads as text at about two characters a token: a 300 KB PDF counted so is 180,000 tokens,
//! where the provider bills about 2,400 a page — a few pages' worth. Counted as text, one PDF a tool read (Claude
//! Code's `Read` sends a PDF as a `document` block) would put a request over its budget and have stale results
//! cut, or the request refused, for tokens that are not there.
//!
//! **Example.** `{"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data":
//! "JVBERi0…"}}` of a 3-page PDF counts 3 × 2,400 tokens plus its other fields.

use serde_json::{Map, Value};

/// An image is counted as Anthropic's cost of a ~1.15-megapixel image; its bytes are not text.
pub const IMAGE_TOKENS: usize = 1_600;
/// Tokens a PDF page costs: Anthropic bills a page as its text plus an image of it — a public measurement
/// (not ours) reports 2,100 to 2,500 tokens for a page of text or a table on Claude 4.5 and 5.5, 1,600 for a
/// scanned page; the upper end, so that a budget counted with it holds.
pub const PDF_PAGE_TOKENS: usize = 2_400;
/// Bytes of PDF taken for a page when its page objects cannot be seen (compressed into object streams).
pub const PDF_BYTES_PER_PAGE: usize = 50_000;
/// A base64 string shorter than this is counted as text whatever it holds (a tiny icon, a test's stand-in).
const MIN_PAYLOAD: usize = 1_024;

/// Whether `v` holds a payload (without allocating).
pub(crate) fn holds_payload(v: &Value) -> bool {
    match v {
        Value::String(s) => data_uri(s).is_some(),
        Value::Array(items) => items.iter().any(holds_payload),
        Value::Object(m) => map_holds_payload(m),
        _ => false,
    }
}

/// [`holds_payload`] of an object's members.
pub(crate) fn map_holds_payload(m: &Map<String, Value>) -> bool {
    m.iter()
        .any(|(k, v)| payload_field(m, k, v).is_some() || holds_payload(v))
}

/// The tokens of the payloads in `v`, and `v` with each payload string emptied (what is left to count as text).
pub(crate) fn take_payloads(v: &Value) -> (usize, Value) {
    match v {
        Value::String(s) => match data_uri(s) {
            Some(b64) => (payload_tokens(b64), Value::String(String::new())),
            None => (0, v.clone()),
        },
        Value::Array(items) => {
            let mut tokens = 0;
            let rest = items
                .iter()
                .map(|item| {
                    let (t, rest) = take_payloads(item);
                    tokens += t;
                    rest
                })
                .collect();
            (tokens, Value::Array(rest))
        }
        Value::Object(m) => {
            let (tokens, rest) = take_from_map(m);
            (tokens, Value::Object(rest))
        }
        other => (0, other.clone()),
    }
}

/// [`take_payloads`] of an object's members.
pub(crate) fn take_from_map(m: &Map<String, Value>) -> (usize, Map<String, Value>) {
    let mut tokens = 0;
    let mut rest = Map::new();
    for (k, v) in m {
        if let Some(b64) = payload_field(m, k, v) {
            tokens += payload_tokens(b64);
            rest.insert(k.clone(), Value::String(String::new()));
        } else {
            let (t, v) = take_payloads(v);
            tokens += t;
            rest.insert(k.clone(), v);
        }
    }
    (tokens, rest)
}

/// The base64 of member `k` of object `m` when the APIs define it as a file's bytes: a base64 `source`'s `data`,
/// `file_data`, `input_audio`'s `data` (a data URI's prefix taken off).
fn payload_field<'v>(m: &Map<String, Value>, k: &str, v: &'v Value) -> Option<&'v str> {
    let s = v.as_str()?;
    let named = match k {
        "file_data" => true,
        "data" => {
            m.get("type").and_then(Value::as_str) == Some("base64") || m.contains_key("format")
        }
        _ => false,
    };
    if !named {
        return None;
    }
    let b64 = data_uri(s).unwrap_or(s);
    (b64.len() >= MIN_PAYLOAD && is_base64(b64)).then_some(b64)
}

/// The base64 of a `data:…;base64,` URI long enough to be a payload.
fn data_uri(s: &str) -> Option<&str> {
    let rest = s.strip_prefix("data:")?;
    let head = rest.get(..rest.len().min(200))?;
    let comma = head.find(',')?;
    if !head[..comma].ends_with(";base64") {
        return None;
    }
    let b64 = &rest[comma + 1..];
    (b64.len() >= MIN_PAYLOAD && is_base64(b64)).then_some(b64)
}

fn is_base64(s: &str) -> bool {
    s.bytes().all(|b| {
        b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_' | b'\n' | b'\r')
    })
}

/// Tokens of one payload: a PDF's pages, anything else an image.
fn payload_tokens(b64: &str) -> usize {
    // "%PDF" is "JVBER" in base64
    if !b64.starts_with("JVBER") {
        return IMAGE_TOKENS;
    }
    let bytes = decode(b64);
    let pages = page_objects(&bytes);
    let pages = if pages > 0 {
        pages
    } else {
        bytes.len().div_ceil(PDF_BYTES_PER_PAGE).max(1)
    };
    pages * PDF_PAGE_TOKENS
}

/// The `/Type /Page` objects of a PDF's bytes (not `/Pages`, the tree over them).
fn page_objects(pdf: &[u8]) -> usize {
    let mut count = 0;
    let mut i = 0;
    while let Some(k) = find(&pdf[i..], b"/Type") {
        let mut j = i + k + 5;
        while pdf.get(j).is_some_and(u8::is_ascii_whitespace) {
            j += 1;
        }
        if pdf[j..].starts_with(b"/Page") {
            let after = pdf.get(j + 5);
            if !after.is_some_and(|b| b.is_ascii_alphanumeric()) {
                count += 1;
            }
        }
        i = j;
    }
    count
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Standard or URL-safe base64, whitespace and padding passed over; what is not base64 ends it.
fn decode(b64: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(b64.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for b in b64.bytes() {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' | b'\n' | b'\r' => continue,
            _ => break,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn b64(bytes: &[u8]) -> String {
        const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    pub(crate) fn pdf(pages: usize, padding: usize) -> Vec<u8> {
        let mut doc = b"%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Count 3 >> endobj\n".to_vec();
        for p in 0..pages {
            doc.extend(format!("{} 0 obj << /Type/Page /Parent 2 0 R >> endobj\n", 3 + p).bytes());
        }
        doc.extend(std::iter::repeat_n(b'x', padding));
        doc
    }

    #[test]
    fn base64_round_trips_through_the_decoder() {
        let bytes: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        assert_eq!(decode(&b64(&bytes)), bytes);
    }

    #[test]
    fn a_pdf_counts_its_pages_and_another_payload_an_image() {
        let three = b64(&pdf(3, 2_000));
        assert_eq!(payload_tokens(&three), 3 * PDF_PAGE_TOKENS);
        // pages compressed out of sight: one per 50 KB
        let hidden = b64(&[b"%PDF-1.5\n".to_vec(), vec![b'x'; 120_000]].concat());
        assert_eq!(payload_tokens(&hidden), 3 * PDF_PAGE_TOKENS);
        assert_eq!(payload_tokens(&b64(&[7u8; 5_000])), IMAGE_TOKENS);
    }

    #[test]
    fn payloads_are_found_by_the_apis_own_fields_and_data_uris_only() {
        let pdf = b64(&pdf(2, 3_000));
        let block = serde_json::json!({"type": "document", "title": "spec",
            "source": {"type": "base64", "media_type": "application/pdf", "data": pdf}});
        assert!(holds_payload(&block));
        let (tokens, rest) = take_payloads(&block);
        assert_eq!(tokens, 2 * PDF_PAGE_TOKENS);
        assert_eq!(rest["source"]["data"], "");
        assert_eq!(rest["title"], "spec");
        let chat = serde_json::json!({"type": "file", "file": {"filename": "a.pdf",
            "file_data": format!("data:application/pdf;base64,{pdf}")}});
        assert_eq!(take_payloads(&chat).0, 2 * PDF_PAGE_TOKENS);
        let audio = serde_json::json!({"type": "input_audio", "input_audio": {"data": b64(&[1u8; 3_000]), "format": "wav"}});
        assert_eq!(take_payloads(&audio).0, IMAGE_TOKENS);
        // base64 in a field the APIs do not give a file's bytes (an encrypted reasoning item) is text, as are a
        // short data URI and prose
        let opaque =
            serde_json::json!({"type": "reasoning", "encrypted_content": b64(&[3u8; 3_000])});
        assert!(!holds_payload(&opaque));
        assert!(!holds_payload(
            &serde_json::json!({"data": "data:image/png;base64,iVBORw0KGgo="})
        ));
        assert!(!holds_payload(
            &serde_json::json!({"type": "base64", "data": "not base64 at all, ".repeat(100)})
        ));
    }
}
