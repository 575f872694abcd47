//! The model's context window, learned from the provider's own refusal.
//!
//! **Why.** A conversation that outgrows its model's context window is refused by the provider (HTTP 400), and
//! every later request of it too: the agent stops. No table of models and windows is kept here — it would be
//! out of date the day a model ships, and a window also depends on headers (a 1M-token beta) and on `max_tokens`.
//! The refusal itself says what the window is, in the provider's own tokens:
//!
//! * Anthropic: `prompt is too long: 208153 tokens > 200000 maximum`, or, when `max_tokens` does not fit beside
//!   the input, `input length and `max_tokens` exceed context limit: 189136 + 20000 > 204648, …`;
//! * OpenAI Chat: `This model's maximum context length is 128000 tokens. However, your messages resulted in
//!   130217 tokens.` (or `… you requested 133000 tokens (130000 in the messages, 3000 in the completion)`, or
//!   `Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 290000 tokens.`), code
//!   `context_length_exceeded`;
//! * OpenAI Responses: code `context_length_exceeded`, `Your input exceeds the context window of this model.` —
//!   no numbers, in a 400 or in the stream's `error` / `response.failed` event.
//!
//! [`Overflow::window`] turns it into a [`Window`]: what a request may hold in the provider's tokens — what the
//! refusal says, or, when it says no numbers, what the provider counted of the last request of the conversation
//! it accepted (a conversation grows request by request: the nearest size below the refused one its model took)
//! — and the request budget that comes to in the proxy's own count (the fast estimator's), at the rate the
//! provider's count and the proxy's stand in. That rate drifts as what the conversation holds changes (a
//! history of code, then of the pointers a budget leaves), so every answer's usage measures it again
//! ([`Window::at_rate`]). The gateway holds it from
//! then on, as a configured `request_budget` is held: the proxy for each conversation (`ctxfit_proxy::Gateway::
//! learn_window`), the Python `Compactor.learn_window` for its own.

use ctxfit_model::WireFormat;

/// A provider's refusal of a request as too long for its model's context window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overflow {
    /// What the refusal says, in the provider's tokens: the input it counted, and what the input may be at most
    /// (the window, less the output `max_tokens` reserves where the refusal counts it). `None` where it says no
    /// numbers.
    pub counted: Option<(u64, u64)>,
}

/// A model's context window as a conversation holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Window {
    /// What a request may hold, in the provider's tokens (`None`: not known, only the budget below).
    pub limit: Option<u64>,
    /// The budget that comes to in the proxy's count, at the rate of the request it was last measured on.
    pub budget: usize,
}

impl Window {
    /// The budget at the rate of a request the proxy counted `ours` and the provider `theirs` (its usage, as
    /// each answer reports it): the rate drifts as what a conversation holds changes (code, prose, the JSON
    /// of calls). `None` without a limit or a count.
    pub fn at_rate(&self, ours: usize, theirs: usize) -> Option<usize> {
        let limit = self.limit?;
        (ours > 0 && theirs > 0)
            .then(|| (limit as f64 * ours as f64 / theirs as f64).floor() as usize)
    }
}

impl Overflow {
    /// The window it implies: `sent` is the refused request as the proxy counted it, `accepted` the last
    /// request of the conversation the provider accepted, as the proxy counted it and (where the answer
    /// reported its usage) as the provider did. `None` when nothing can be said (no numbers and no request
    /// accepted yet).
    pub fn window(&self, sent: usize, accepted: Option<(usize, Option<usize>)>) -> Option<Window> {
        match self.counted {
            Some((input, limit)) if input > limit && limit > 0 => {
                // the provider's window in the proxy's own count, at the rate this very request was counted
                let budget = (limit as f64 * sent as f64 / input as f64).floor() as usize;
                Some(Window {
                    limit: Some(limit),
                    budget,
                })
            }
            _ => {
                let (ours, theirs) = accepted.filter(|&(a, _)| a > 0 && a < sent)?;
                Some(Window {
                    limit: theirs.map(|t| t as u64),
                    budget: ours,
                })
            }
        }
    }
}

/// The refusal an error answer's body holds, if it is one of a request too long for the model's window.
pub fn overflow(format: WireFormat, body: &[u8]) -> Option<Overflow> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    overflow_of(format, &value)
}

/// [`overflow`] of an error answer's body read as JSON.
pub fn overflow_of(format: WireFormat, body: &serde_json::Value) -> Option<Overflow> {
    let error = body.get("error")?;
    let message = error.get("message").and_then(|m| m.as_str()).unwrap_or("");
    match format {
        WireFormat::Anthropic => anthropic(message),
        WireFormat::OpenAi | WireFormat::Responses => {
            let code = error.get("code").and_then(|c| c.as_str());
            openai(code, message)
        }
    }
}

/// The refusal an error's message alone says, in either provider's words (an SDK's exception as text).
pub fn overflow_in_words(message: &str) -> Option<Overflow> {
    anthropic(message).or_else(|| openai(None, message))
}

/// The refusal a streamed answer holds in an `error` or `response.failed` event (OpenAI Responses says it
/// there once the stream has begun), if any: `answer` is the stream's bytes as kept.
pub fn overflow_in_stream(format: WireFormat, answer: &[u8]) -> Option<Overflow> {
    if format != WireFormat::Responses
        || !answer
            .windows(CONTEXT_CODE.len())
            .any(|w| w == CONTEXT_CODE.as_bytes())
    {
        return None;
    }
    let text = String::from_utf8_lossy(answer);
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<serde_json::Value>(data.trim()).ok())
        .find_map(|event| {
            let error = event
                .get("error")
                .or_else(|| event.get("response").and_then(|r| r.get("error")))?;
            let code = error.get("code").and_then(|c| c.as_str());
            let message = error.get("message").and_then(|m| m.as_str()).unwrap_or("");
            openai(code, message)
        })
}

/// OpenAI's error code for a request too long for the model.
const CONTEXT_CODE: &str = "context_length_exceeded";

fn anthropic(message: &str) -> Option<Overflow> {
    if let Some(rest) = after(message, "prompt is too long:") {
        // `208153 tokens > 200000 maximum`
        let input = number(rest)?;
        let limit = number(after(rest, ">")?)?;
        return Some(Overflow {
            counted: Some((input, limit)),
        });
    }
    let rest = after(message, "exceed context limit:")?;
    // `189136 + 20000 > 204648`: the input may be the window less the output reserved
    let input = number(rest)?;
    let reserved = number(after(rest, "+")?)?;
    let window = number(after(rest, ">")?)?;
    Some(Overflow {
        counted: Some((input, window.saturating_sub(reserved))),
    })
}

fn openai(code: Option<&str>, message: &str) -> Option<Overflow> {
    let limit = after(message, "maximum context length is")
        .or_else(|| after(message, "configured limit of"))
        .and_then(number);
    let says = code == Some(CONTEXT_CODE)
        || limit.is_some()
        || message.contains("exceeds the context window");
    if !says {
        return None;
    }
    // what the messages came to, and the completion reserved beside them where the message splits the two:
    // `(8000 in the messages, 1000 in the completion)`
    let parenthesis = after(message, "tokens (").and_then(|rest| rest.split(')').next());
    let split = |part: &str| {
        let p = parenthesis?;
        let at = p.find(part)?;
        number(p[..at].rsplit(',').next()?)
    };
    let input = after(message, "resulted in")
        .and_then(number)
        .or_else(|| split("in the messages"));
    let completion = split("in the completion").unwrap_or(0);
    let counted = limit
        .zip(input)
        .map(|(limit, input)| (input, limit.saturating_sub(completion)));
    Some(Overflow { counted })
}

/// The text after the first `needle` in `text`, case blind.
fn after<'t>(text: &'t str, needle: &str) -> Option<&'t str> {
    let at = text
        .to_ascii_lowercase()
        .find(&needle.to_ascii_lowercase())?;
    Some(&text[at + needle.len()..])
}

/// The first number in `text` (its digits, thousands separators skipped), within its first few characters.
fn number(text: &str) -> Option<u64> {
    let start = text.find(|c: char| c.is_ascii_digit())?;
    if start > 4 {
        return None;
    }
    let digits: String = text[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn anthropic_body(message: &str) -> Vec<u8> {
        serde_json::json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}})
            .to_string()
            .into_bytes()
    }

    fn openai_body(message: &str, code: Option<&str>) -> Vec<u8> {
        serde_json::json!({"error": {"message": message, "type": "invalid_request_error", "param": "messages", "code": code}})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn anthropics_two_refusals_say_the_input_and_what_it_may_be() {
        let o = overflow(
            WireFormat::Anthropic,
            &anthropic_body("prompt is too long: 208153 tokens > 200000 maximum"),
        );
        assert_eq!(o.unwrap().counted, Some((208_153, 200_000)));
        let o = overflow(
            WireFormat::Anthropic,
            &anthropic_body(
                "input length and `max_tokens` exceed context limit: 189136 + 20000 > 204648, decrease input \
                 length or `max_tokens` and try again",
            ),
        );
        assert_eq!(o.unwrap().counted, Some((189_136, 184_648)));
        // another error is none of its business
        assert_eq!(
            overflow(
                WireFormat::Anthropic,
                &anthropic_body("messages.1.content: Input should be a valid list")
            ),
            None
        );
        assert_eq!(
            overflow(WireFormat::Anthropic, b"<html>bad gateway</html>"),
            None
        );
    }

    #[test]
    fn openais_refusals_with_and_without_numbers() {
        let chat =
            |m: &str, code| overflow(WireFormat::OpenAi, &openai_body(m, code)).map(|o| o.counted);
        assert_eq!(
            chat(
                "This model's maximum context length is 128000 tokens. However, your messages resulted in \
                 130217 tokens. Please reduce the length of the messages.",
                Some("context_length_exceeded"),
            ),
            Some(Some((130_217, 128_000)))
        );
        assert_eq!(
            chat(
                "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (8000 \
                 in the messages, 1000 in the completion). Please reduce the length of the messages or \
                 completion.",
                None,
            ),
            Some(Some((8_000, 7_192)))
        );
        assert_eq!(
            chat(
                "Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 290000 \
                 tokens. Please reduce the length of the messages.",
                Some("context_length_exceeded"),
            ),
            Some(Some((290_000, 272_000)))
        );
        assert_eq!(
            chat(
                "Your input exceeds the context window of this model. Please adjust your input and try again.",
                Some("context_length_exceeded"),
            ),
            Some(None)
        );
        assert_eq!(
            chat("Rate limit reached for gpt-4o", Some("rate_limit_exceeded")),
            None
        );
    }

    #[test]
    fn a_responses_stream_says_it_in_an_event() {
        let stream = b"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{}}\n\n\
            event: error\ndata: {\"type\":\"error\",\"sequence_number\":2,\"error\":{\"type\":\"invalid_request_error\",\
            \"code\":\"context_length_exceeded\",\"message\":\"Your input exceeds the context window of this model. \
            Please adjust your input and try again.\",\"param\":\"input\"}}\n\n";
        assert_eq!(
            overflow_in_stream(WireFormat::Responses, stream),
            Some(Overflow { counted: None })
        );
        let failed = b"data: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\
            \"context_length_exceeded\",\"message\":\"Your input exceeds the context window of this model.\"}}}\n\n";
        assert!(overflow_in_stream(WireFormat::Responses, failed).is_some());
        assert_eq!(
            overflow_in_stream(
                WireFormat::Responses,
                b"data: {\"type\":\"response.completed\"}\n\n"
            ),
            None
        );
    }

    #[test]
    fn the_budget_is_the_window_at_the_rate_the_request_was_counted() {
        let o = Overflow {
            counted: Some((200_000, 180_000)),
        };
        // the proxy counted the refused request at 150,000: the window is 135,000 of its tokens
        let w = o.window(150_000, None).unwrap();
        assert_eq!(
            w,
            Window {
                limit: Some(180_000),
                budget: 135_000
            }
        );
        // and later, at the rate of a request counted 100,000 here and 125,000 by the provider: 144,000
        assert_eq!(w.at_rate(100_000, 125_000), Some(144_000));
        // no numbers: the last request accepted, when it is below the refused one, and its count as the limit
        let bare = Overflow { counted: None };
        assert_eq!(
            bare.window(150_000, Some((140_000, Some(170_000)))),
            Some(Window {
                limit: Some(170_000),
                budget: 140_000
            })
        );
        let unreported = bare.window(150_000, Some((140_000, None))).unwrap();
        assert_eq!(unreported.at_rate(1, 1), None);
        assert_eq!(bare.window(150_000, None), None);
        assert_eq!(bare.window(150_000, Some((160_000, None))), None);
        // numbers that say no overflow say nothing more than the fallback
        let odd = Overflow {
            counted: Some((100, 200)),
        };
        assert_eq!(
            odd.window(150_000, Some((120_000, None))).unwrap().budget,
            120_000
        );
    }
}
