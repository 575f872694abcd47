//! Lone surrogate escapes: half of a UTF-16 pair written `\ud83d` with no other half, which JSON's grammar lets
//! through but no string of characters can hold.

/// The code unit of the `\uXXXX` escape whose backslash is at `at`, if one is there.
fn escape_at(json: &[u8], at: usize) -> Option<u16> {
    let hex = json.get(at + 2..at + 6)?;
    if json.get(at + 1) != Some(&b'u') || !hex.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u16::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
}

/// A JSON text whose lone surrogate escapes were written `\ufffd`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mended<T> {
    pub text: T,
    /// How many escapes were written anew.
    pub count: usize,
    /// The byte offset of the first (its backslash).
    pub first: usize,
}

/// The text with every lone surrogate escape — half of a UTF-16 pair, `\ud83d` without its `\ude00` after it,
/// or a low half alone — written `\ufffd` (U+FFFD, what a decoder puts for what is no character), how many there
/// were and where the first was; `None` when there are none. Escapes are found by walking backslashes, so `\\ud800` (a backslash,
/// then the letters `ud800`) is no escape. The replacement is as long as what it replaces: nothing else moves.
///
/// Why: a client that cuts text by UTF-16 code units (JavaScript's `slice`) can cut an emoji in two, and
/// `JSON.stringify` writes the half that is left as such an escape — into the request, which the Anthropic API
/// refuses ("no low surrogate in string"), and into the agent's log. No JSON reader here takes it (a Rust string
/// holds characters), so the proxy forwards, and the importers read, the text this returns, and say so.
pub fn mend_lone_surrogates(json: &[u8]) -> Option<Mended<Vec<u8>>> {
    let mut out: Option<Mended<Vec<u8>>> = None;
    let mut i = 0;
    while let Some(k) = json
        .get(i..)
        .and_then(|rest| rest.iter().position(|&b| b == b'\\'))
    {
        let at = i + k;
        i = at + 2;
        let Some(unit) = escape_at(json, at) else {
            continue;
        };
        i = at + 6;
        let lone = match unit {
            0xD800..=0xDBFF => match escape_at(json, at + 6) {
                Some(0xDC00..=0xDFFF) => {
                    i = at + 12;
                    false
                }
                _ => true,
            },
            0xDC00..=0xDFFF => true,
            _ => false,
        };
        if lone {
            let m = out.get_or_insert_with(|| Mended {
                text: json.to_vec(),
                count: 0,
                first: at,
            });
            m.text[at..at + 6].copy_from_slice(b"\\ufffd");
            m.count += 1;
        }
    }
    out
}

/// [`mend_lone_surrogates`] of a text: what it returns is text too (an escape is replaced by an escape).
pub fn mend_lone_surrogates_in(text: &str) -> Option<Mended<String>> {
    let m = mend_lone_surrogates(text.as_bytes())?;
    Some(Mended {
        text: String::from_utf8(m.text).ok()?,
        count: m.count,
        first: m.first,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogate_escapes_are_mended_and_nothing_else() {
        let mend = |t: &str| mend_lone_surrogates_in(t).map(|m| (m.text, m.count));
        // a pair, in either case, is a character: left as it is
        assert_eq!(mend(r#"{"t":"\ud83d\ude00 \uD83D\uDE00"}"#), None);
        // a high half cut off (JavaScript's slice), at the end or before other text; a low half alone
        assert_eq!(
            mend(r#"{"t":"ab\ud83d","u":"\ud83dx\ude00"}"#),
            Some((r#"{"t":"ab\ufffd","u":"\ufffdx\ufffd"}"#.to_owned(), 3))
        );
        // two high halves in a row: both lone
        assert_eq!(
            mend(r#""\ud800\ud800""#),
            Some((r#""\ufffd\ufffd""#.to_owned(), 2))
        );
        // an escaped backslash before the letters is no escape; other escapes pass
        assert_eq!(mend(r#""C:\\ud800\n\u00e9\"""#), None);
        // a high half whose low half follows an escaped backslash: lone
        assert_eq!(
            mend(r#""\ud800\\udc00""#),
            Some((r#""\ufffd\\udc00""#.to_owned(), 1))
        );
        // where the first one is: its backslash
        assert_eq!(mend_lone_surrogates(br#""ok \ud800""#).unwrap().first, 4);
        // cut short at the end of the text: nothing read past it
        assert_eq!(mend(r#""\ud8"#), None);
        assert_eq!(mend("\\"), None);
    }

    #[test]
    fn every_string_of_escapes_reads_once_mended_and_no_input_panics() {
        // strings built of valid escapes and surrogate halves in every order: once mended, each reads as JSON
        const PARTS: [&str; 7] = [
            r"\ud83d", r"\ude00", r"\\", "a", r"\u00e9", r"\n", r"\uDBFF",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..5_000 {
            let len = (next() % 8) as usize;
            let text: String = (0..len).map(|_| PARTS[(next() % 7) as usize]).collect();
            let json = format!("\"{text}\"");
            let read = match mend_lone_surrogates_in(&json) {
                Some(m) => m.text,
                None => json.clone(),
            };
            assert!(
                serde_json::from_str::<String>(&read).is_ok(),
                "{json} → {read}"
            );
            // and any prefix of it (cut anywhere, a byte at a time): no panic
            for cut in 0..json.len() {
                let _ = mend_lone_surrogates(&json.as_bytes()[..cut]);
            }
        }
    }
}
