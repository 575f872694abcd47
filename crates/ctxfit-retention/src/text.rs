//! Character-exact text helpers for rules: counting and cutting on Unicode scalar values, never mid-character.

use ctxfit_model::{Block, Content, Shape, TextBlock};

/// Unicode scalar values in `s` (Python's `len`).
pub fn char_count(s: &str) -> usize {
    s.chars().count()
}

/// The first `n` characters of `s`.
pub fn truncate_str(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((byte, _)) => &s[..byte],
        None => s,
    }
}

/// Characters of the text blocks of a content, in order.
pub fn content_chars(content: &Content) -> usize {
    content
        .blocks
        .iter()
        .filter_map(Block::as_text)
        .map(char_count)
        .sum()
}

/// Does `content` hold more than text — an image, a document, a block ctxfit does not model — whose cost
/// [`content_chars`] does not count?
pub fn holds_media(content: &Content) -> bool {
    content.blocks.iter().any(|b| b.as_text().is_none())
}

/// Does the last text block of `content` end with `marker` (it was cut by the rule that writes that marker)?
pub fn ends_with_marker(content: &Content, marker: &str) -> bool {
    content
        .blocks
        .iter()
        .rev()
        .find_map(Block::as_text)
        .is_some_and(|t| t.ends_with(marker))
}

/// `45231` → `45,231`, as markers and reports print counts.
pub use ctxfit_tokens::thousands;

/// Does the text of `content` have more than `limit` characters? Reads at most `limit + 1` characters.
pub fn text_exceeds(content: &Content, limit: usize) -> bool {
    let mut left = limit;
    for text in content.blocks.iter().filter_map(Block::as_text) {
        if text.len() <= left {
            // bytes bound characters: no need to count
            left -= char_count(text);
            continue;
        }
        match text.char_indices().nth(left) {
            Some(_) => return true,
            None => left -= char_count(text),
        }
    }
    false
}

/// Cut a content to `limit` characters of text and append `marker` where it was cut.
///
/// The limit counts the characters of the text blocks in order; the block where it falls is cut and gets the
/// marker; later text blocks are dropped; non-text blocks are kept. `None` when the text is within the limit.
pub fn truncate_content(content: &Content, limit: usize, marker: &str) -> Option<Content> {
    if !text_exceeds(content, limit) {
        return None;
    }
    let mut left = limit;
    let mut cut = false;
    let mut blocks = Vec::with_capacity(content.blocks.len());
    for block in &content.blocks {
        match block {
            // later text blocks are dropped
            Block::Text(_) if cut => {}
            Block::Text(t) => {
                let n = char_count(&t.text);
                if n <= left {
                    left -= n;
                    blocks.push(block.clone());
                } else {
                    let mut text = truncate_str(&t.text, left).to_owned();
                    text.push_str(marker);
                    blocks.push(Block::Text(TextBlock {
                        text,
                        extra: t.extra.clone(),
                    }));
                    cut = true;
                }
            }
            other => blocks.push(other.clone()),
        }
    }
    let shape = if content.shape == Shape::String && blocks.len() == 1 {
        Shape::String
    } else {
        Shape::List
    };
    Some(Content { blocks, shape })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_on_characters() {
        let check = |s: &str, n: usize, expected: &str| assert_eq!(truncate_str(s, n), expected);
        check("hello", 3, "hel");
        check("hello", 10, "hello");
        check("日本語テキスト", 2, "日本");
        check("a😀b", 2, "a😀");
        check("", 0, "");
    }

    #[test]
    fn truncates_list_content_in_order() {
        let image =
            Block::Image(serde_json::from_value(serde_json::json!({"type": "image"})).unwrap());
        let content = Content::list(vec![
            Block::Text(TextBlock::new("abcdef")),
            image.clone(),
            Block::Text(TextBlock::new("ghijkl")),
            Block::Text(TextBlock::new("mnop")),
        ]);
        let cut = truncate_content(&content, 8, "[cut]").unwrap();
        let texts: Vec<Option<&str>> = cut.blocks.iter().map(Block::as_text).collect();
        assert_eq!(texts, [Some("abcdef"), None, Some("gh[cut]")]);
        assert!(truncate_content(&content, 16, "[cut]").is_none());
        let plain = Content::text("héllo wörld");
        let cut = truncate_content(&plain, 4, "…").unwrap();
        assert_eq!(cut, Content::text("héll…"));
    }
}
