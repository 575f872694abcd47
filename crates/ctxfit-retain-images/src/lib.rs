//! Rule `images`: of the images that tool results hold — screenshots of a browser or a desktop, an image file
//! read — the newest `keep` stay; in an older stale result each image is written as one line saying what it was
//! and how to see it again, and the result's other blocks stay as they are.
//!
//! ## What it does
//! A stale tool result that holds images (Anthropic `image` blocks, OpenAI Chat `image_url` parts, Responses
//! `input_image` items) is kept while fewer than `keep` (default 3) later tool results hold images. Once `keep`
//! of them follow it, each of its images becomes a text block — `[image/png image left out of this stale result
//! to save context: call browser_take_screenshot again to see it]` — in its place; its text blocks are kept
//! whole, in order. A result without images is not this rule's: the next rule of the profile decides on it.
//!
//! ## Why
//! An image costs the same tokens (about 1,600 for a full screenshot) on every request that carries it, and an
//! agent that works through screenshots takes one per step, so a browser or computer-use session's input grows
//! by screenshots the model has long acted on. Anthropic's computer-use loop keeps the three newest screenshots
//! and drops the rest (`only_n_most_recent_images = 3`); this rule does the same, marking each one left out, and
//! the compactor makes the cut when its cache write pays (the payback rule and the regret bound). No text is
//! cut: the rule's decision never hides a line the agent read.
//!
//! ## Example
//! ```toml
//! [[profiles.mine.rules]]
//! rule = "images"
//! tools = ["*"]
//! params = { keep = 3 }
//! ```

use ctxfit_model::{Block, Content, Value};
use ctxfit_retention::{
    read_params, register_rule, Decision, RetentionRule, RuleConfigError, RuleContext,
};

/// Tool results holding images that stay whole, the newest first (Anthropic's computer-use loop keeps three).
pub const DEFAULT_KEEP: usize = 3;

/// Keeps the images of the newest `keep` results that hold any; its parameters are its fields.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NewestImages {
    pub keep: usize,
}

impl Default for NewestImages {
    fn default() -> Self {
        NewestImages { keep: DEFAULT_KEEP }
    }
}

/// Is `block` an image: Anthropic's `image` block, OpenAI Chat's `image_url` part (both [`Block::Image`]), or a
/// Responses `input_image` item?
pub fn is_image(block: &Block) -> bool {
    match block {
        Block::Image(_) => true,
        Block::Unknown(Value::Object(m)) => {
            m.get("type").and_then(Value::as_str) == Some("input_image")
        }
        _ => false,
    }
}

fn holds_images(content: &Content) -> bool {
    content.blocks.iter().any(is_image)
}

/// What stands for an image this rule left out: `[… left out of this stale result to save context: …]`.
const MARK: &str = " left out of this stale result to save context: ";

/// Each image this rule wrote as a line in `text`, as (start, end) byte offsets: `[image/png image left out of
/// this stale result to save context: call Read again to see it]`.
pub fn image_lines(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(MARK).map(|i| from + i) {
        let start = text[..at].rfind('[');
        let end = text[at..].find(']').map(|i| at + i + 1);
        match (start, end) {
            (Some(start), Some(end)) if start >= from => {
                out.push((start, end));
                from = end;
            }
            _ => from = at + MARK.len(),
        }
    }
    out
}

/// Did this rule cut `content` already (a compacted history compacted again)? A text block that begins with
/// such a line says so (it may end with the retrieval tool's line).
fn cut_already(content: &Content) -> bool {
    content.blocks.iter().filter_map(Block::as_text).any(|t| {
        // (only the block's start is read: a long result without images costs nothing more to pass on)
        let mut head = t.len().min(512);
        while !t.is_char_boundary(head) {
            head -= 1;
        }
        t.starts_with('[')
            && image_lines(&t[..head])
                .first()
                .is_some_and(|&(s, _)| s == 0)
    })
}

/// The string at `key` of `v`, when `v` is an object that has one.
fn str_at<'a>(v: Option<&'a Value>, key: &str) -> Option<&'a str> {
    v.and_then(|v| v.get(key)).and_then(Value::as_str)
}

/// What the image was, in a few words: its media type, else where it lives (a URL, a file id), else nothing —
/// never a bracket, so that the line it goes in reads back as one ([`image_lines`]).
fn what(block: &Block) -> String {
    let words = described(block);
    match words.contains(['[', ']']) {
        true => "image".to_owned(),
        false => words,
    }
}

fn described(block: &Block) -> String {
    let (Block::Image(m) | Block::Unknown(Value::Object(m))) = block else {
        return String::new();
    };
    let source = m.get("source");
    // a data URI's media type (OpenAI's `image_url.url`, Responses' `image_url`)
    let url = str_at(m.get("image_url"), "url")
        .or_else(|| m.get("image_url").and_then(Value::as_str))
        .or_else(|| str_at(source, "url"));
    let media = str_at(source, "media_type").or_else(|| {
        url.and_then(|u| u.strip_prefix("data:"))
            .and_then(|u| u.split([';', ',']).next())
            .filter(|t| !t.is_empty())
    });
    match (media, url) {
        (Some(media), _) => format!("{media} image"),
        (None, Some(url)) if url.chars().count() <= 200 => format!("image {url}"),
        _ => match str_at(source, "file_id").or_else(|| m.get("file_id").and_then(Value::as_str)) {
            Some(id) => format!("image (file {id})"),
            None => "image".to_owned(),
        },
    }
}

impl NewestImages {
    /// How many tool results after this one hold images, counting up to `keep`.
    fn newer_with_images(&self, ctx: &RuleContext<'_>) -> usize {
        let mut found = 0;
        for (mi, message) in ctx
            .conversation
            .messages
            .iter()
            .enumerate()
            .skip(ctx.message_index)
        {
            for (bi, block) in message.content.blocks.iter().enumerate() {
                if (mi, bi) <= (ctx.message_index, ctx.block_index) {
                    continue;
                }
                if let Block::ToolResult(r) = block {
                    if holds_images(&r.content) {
                        found += 1;
                        if found >= self.keep {
                            return found;
                        }
                    }
                }
            }
        }
        found
    }
}

impl RetentionRule for NewestImages {
    fn name(&self) -> &'static str {
        "images"
    }

    fn decide(&self, ctx: &RuleContext<'_>) -> Decision {
        if !holds_images(ctx.content) {
            // a result this rule cut in an earlier pass over the history stays as it was cut, for good: the
            // rules after it never saw it then, so they do not now (compacting twice changes nothing)
            return match cut_already(ctx.content) {
                true => Decision::Keep,
                false => Decision::Defer,
            };
        }
        if self.newer_with_images(ctx) < self.keep {
            return Decision::Keep;
        }
        let again = match ctx.tool_name {
            "" => "call the tool again to see it".to_owned(),
            tool => format!("call {tool} again to see it"),
        };
        let blocks = (ctx.content.blocks.iter())
            .map(|b| match is_image(b) {
                true => Block::text(format!(
                    "[{} left out of this stale result to save context: {again}]",
                    what(b)
                )),
                false => b.clone(),
            })
            .collect();
        Decision::Replace(Content {
            blocks,
            shape: ctx.content.shape,
        })
    }

    fn depends_on_history(&self) -> bool {
        true
    }

    /// It defers on a result without images (and not cut by it before), which no later message changes: that
    /// result is the next rule's for good.
    fn defer_depends_on_history(&self) -> bool {
        false
    }

    /// A result it cut in an earlier pass is kept as it was cut, whatever comes later.
    fn keep_is_final(&self, ctx: &RuleContext<'_>) -> bool {
        !holds_images(ctx.content) && cut_already(ctx.content)
    }

    fn reconsider_after(&self, ctx: &RuleContext<'_>) -> usize {
        self.keep.saturating_sub(self.newer_with_images(ctx)).max(1)
    }
}

fn build(params: &Value) -> Result<Box<dyn RetentionRule>, RuleConfigError> {
    Ok(Box::new(read_params::<NewestImages>("images", params)?))
}

register_rule!(
    name: "images",
    tools: &["*"],
    summary: "of the images in tool results, keep the newest N results' (3); older ones' each written as a line saying what it was",
    factory: build,
);

#[cfg(test)]
mod tests {
    use super::*;
    use ctxfit_model::{from_json_str, ToolCallIndex};
    use ctxfit_retention::{NoResults, NothingShown, SameTool};
    use serde_json::json;

    fn screenshot(n: usize) -> Value {
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": format!("iVBOR{n}")}})
    }

    /// A browser session: `shots` screenshots, each a result of `browser_take_screenshot` with a caption.
    fn session(shots: usize) -> ctxfit_model::Conversation {
        let mut messages = vec![json!({"role": "user", "content": "check the page"})];
        for n in 0..shots {
            messages.push(json!({"role": "assistant", "content": [
                {"type": "tool_use", "id": format!("s{n}"), "name": "browser_take_screenshot", "input": {}}]}));
            messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("s{n}"),
                "content": [{"type": "text", "text": format!("Took the screenshot of step {n}")}, screenshot(n)]}]}));
        }
        messages.push(json!({"role": "assistant", "content": "done"}));
        from_json_str(&json!({"messages": messages}).to_string()).unwrap()
    }

    fn decide(rule: &NewestImages, conv: &ctxfit_model::Conversation, message: usize) -> Decision {
        let Block::ToolResult(result) = &conv.messages[message].content.blocks[0] else {
            panic!("no result at {message}")
        };
        let index = ToolCallIndex::build(conv);
        let call = index.call_before(&result.tool_use_id, (message, 0));
        let ctx = RuleContext {
            tool_name: call.map_or("", |c| c.name.as_str()),
            tool_kind: "browser_take_screenshot",
            tool_use_id: &result.tool_use_id,
            input: &Value::Null,
            content: &result.content,
            is_error: false,
            message_index: message,
            block_index: 0,
            turns_ago: 1,
            chars: 0,
            tokens: 1_600,
            newer_results: 0,
            same_tool: SameTool::new(&[], conv),
            group: SameTool::new(&[], conv),
            conversation: conv,
            results: &NoResults,
            shown: &NothingShown,
        };
        rule.decide(&ctx)
    }

    #[test]
    fn the_newest_three_keep_their_images_and_older_ones_say_what_they_were() {
        let conv = session(5);
        let rule = NewestImages::default();
        // results at messages 2, 4, 6, 8, 10: the first two have three later screenshots
        for message in [2, 4] {
            let Decision::Replace(cut) = decide(&rule, &conv, message) else {
                panic!("message {message} keeps its image")
            };
            assert_eq!(cut.blocks.len(), 2);
            assert_eq!(
                cut.blocks[0].as_text(),
                Some(format!("Took the screenshot of step {}", message / 2 - 1).as_str())
            );
            assert_eq!(
                cut.blocks[1].as_text(),
                Some("[image/png image left out of this stale result to save context: call browser_take_screenshot again to see it]")
            );
        }
        for message in [6, 8, 10] {
            assert_eq!(
                decide(&rule, &conv, message),
                Decision::Keep,
                "message {message}"
            );
        }
        // `keep` says only when: with one, the result before the newest is cut already
        let one = NewestImages { keep: 1 };
        assert!(matches!(decide(&one, &conv, 8), Decision::Replace(_)));
        assert_eq!(decide(&one, &conv, 10), Decision::Keep);
    }

    #[test]
    fn a_result_cut_before_stays_as_it_was_cut() {
        let conv = session(5);
        let Decision::Replace(cut) = decide(&NewestImages::default(), &conv, 2) else {
            panic!("not cut")
        };
        let text = cut.blocks[1].as_text().unwrap();
        assert_eq!(image_lines(text), [(0, text.len())]);
        assert!(cut_already(&cut));
        assert!(image_lines("a [b] [not one] c").is_empty());
        let two = format!("x{text}y{text}");
        assert_eq!(
            image_lines(&two),
            [(1, 1 + text.len()), (2 + text.len(), 2 + 2 * text.len())]
        );
    }

    #[test]
    fn a_result_without_images_is_the_next_rules() {
        let conv = from_json_str(
            &json!({"messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "Bash", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "ok"}]},
                {"role": "assistant", "content": "done"}
            ]})
            .to_string(),
        )
        .unwrap();
        assert_eq!(decide(&NewestImages::default(), &conv, 2), Decision::Defer);
    }

    #[test]
    fn each_kind_of_image_says_what_it_was() {
        let cases = [
            (
                json!({"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}),
                "image https://example.com/a.png",
            ),
            (
                json!({"type": "image", "source": {"type": "file", "file_id": "file_1"}}),
                "image (file file_1)",
            ),
            (
                json!({"type": "input_image", "image_url": "data:image/jpeg;base64,/9j/4AAQ"}),
                "image/jpeg image",
            ),
            (
                json!({"type": "image_url", "image_url": {"url": "data:image/webp;base64,UklGR"}}),
                "image/webp image",
            ),
            (json!({"type": "image"}), "image"),
        ];
        for (value, words) in cases {
            let block = match value["type"].as_str() {
                Some("input_image") => Block::Unknown(value),
                _ => Block::Image(value.as_object().unwrap().clone()),
            };
            assert!(is_image(&block));
            assert_eq!(what(&block), words);
        }
        // a bracket in what it was would make the line unreadable as one: then only "image"
        let odd = json!({"type": "image", "source": {"type": "url", "url": "https://example.com/a[1].png"}});
        assert_eq!(
            what(&Block::Image(odd.as_object().unwrap().clone())),
            "image"
        );
        assert!(!is_image(&Block::text("x")));
        assert!(!is_image(&Block::Unknown(json!({"type": "input_file"}))));
    }
}
