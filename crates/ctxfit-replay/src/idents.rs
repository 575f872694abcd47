//! Identifiers for reference recall: runs of `[A-Za-z0-9_./:-]` of at least 6 characters.

/// The shortest run that counts as an identifier.
pub const MIN_IDENTIFIER_LEN: usize = 6;

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b':' | b'-')
}

/// Every identifier in `text`, in order (with repeats).
pub fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() {
            while i < bytes.len() && !is_ident_byte(bytes[i]) {
                i += 1;
            }
            let start = i;
            while i < bytes.len() && is_ident_byte(bytes[i]) {
                i += 1;
            }
            if i - start >= MIN_IDENTIFIER_LEN {
                // ASCII bytes only: always a char boundary
                return Some(&text[start..i]);
            }
        }
        None
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_six_or_more() {
        let found: Vec<&str> =
            identifiers("open src/fields.py at line 1474: TimeDelta(precision=\"ms\") é_abcdef")
                .collect();
        assert_eq!(
            found,
            ["src/fields.py", "TimeDelta", "precision", "_abcdef"]
        );
        assert_eq!(identifiers("").count(), 0);
        assert_eq!(identifiers("abcde").count(), 0);
        assert_eq!(
            identifiers("http://x.io/a-b_c").collect::<Vec<_>>(),
            ["http://x.io/a-b_c"]
        );
    }
}
