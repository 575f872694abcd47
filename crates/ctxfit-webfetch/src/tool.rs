//! The page tool as an agent registers it: its definition in the Anthropic and OpenAI formats (name, a
//! description that carries seed 003's guidance on strip levels and token costs, the input schema), a
//! system-prompt hint, and a handler that takes the model's tool input and returns the tool's result.
//!
//! ```no_run
//! use ctxfit_webfetch::tool::{PageTool, ToolFormat};
//! use ctxfit_webfetch::FetchOptions;
//!
//! let tool = PageTool::new(FetchOptions::default());
//! let definition = tool.definition(ToolFormat::Anthropic); // into the request's `tools`
//! // ... the model answers with a `tool_use` block named `fetch_webpage_markdown`:
//! let input = serde_json::json!({"url": "https://example.com/post", "strip_level": "aggressive"});
//! let result = tool.call(&input); // never an error: bad input is a result with `success: false`
//! let content = serde_json::to_string(&result).unwrap(); // the `tool_result`'s content
//! ```
//!
//! The model chooses, per call, the URL, the strip level, `max_chars` (up to the tool's
//! [`PageTool::max_chars_limit`]) and the chunk; everything else (timeouts, size cap, which addresses may be
//! reached) is the [`FetchOptions`] the program gave the tool, out of the model's reach. Reading a long page
//! chunk by chunk fetches it once: the last pages fetched are kept for a while ([`PageTool::with_page_cache`]).

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ctxfit_html::StripLevel;
use serde_json::{json, Map, Value};

use crate::{brief, cut, failed, FetchOptions, FetchResult, Fetcher, Page};

/// The tool's name, as the model calls it.
pub const TOOL_NAME: &str = "fetch_webpage_markdown";

/// The smallest `max_chars` the model may ask for: less is no page.
pub const MIN_MAX_CHARS: usize = 500;

/// A few sentences for the system prompt of an agent that has the page tool: when to use which strip level,
/// what a page costs at each, and how to read a long page. The costs are the median tokens (fast estimator) of
/// the corpus's 616 pages at each level (docs/html.md, "The page tool as an agent registers it").
pub const SYSTEM_PROMPT_HINT: &str = "\
To read a web page, call fetch_webpage_markdown. It returns the page as Markdown with its cost in tokens \
(tokens_used). Choose the strip level for what you need: \"aggressive\" keeps only the main article (a median \
page: about 830 tokens); \"moderate\" (the default) drops navigation, headers, footers, sidebars, hidden text and \
link lists but keeps comments, forms and listings (about 1,200 tokens); \"minimal\" drops only scripts, styles \
and media and keeps every menu and link (about 3,400 tokens). Start with aggressive for articles and \
documentation, moderate for listings, search results and product pages, minimal only when what you need is in \
the page's navigation. A page longer than max_chars comes back cut at a heading or paragraph; total_chunks says \
how many parts it has: pass chunk=2, 3, ... to read on rather than a larger max_chars.";

/// Which API the definition is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolFormat {
    /// Anthropic Messages: `{name, description, input_schema}`.
    Anthropic,
    /// OpenAI Chat Completions: `{type: "function", function: {name, description, parameters}}`.
    OpenAiChat,
    /// OpenAI Responses: `{type: "function", name, description, parameters, strict: false}`.
    OpenAiResponses,
}

impl ToolFormat {
    pub const ALL: [ToolFormat; 3] = [
        ToolFormat::Anthropic,
        ToolFormat::OpenAiChat,
        ToolFormat::OpenAiResponses,
    ];

    pub fn parse(name: &str) -> Option<ToolFormat> {
        ToolFormat::ALL.into_iter().find(|f| f.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            ToolFormat::Anthropic => "anthropic",
            ToolFormat::OpenAiChat => "openai-chat",
            ToolFormat::OpenAiResponses => "openai-responses",
        }
    }
}

/// The page tool: its definition for the model, and the handler of its calls.
#[derive(Debug)]
pub struct PageTool {
    fetcher: Fetcher,
    max_chars_limit: usize,
    cache: Mutex<PageCache>,
}

/// The last pages fetched, by URL and strip level, for a while: reading chunk after chunk fetches once.
#[derive(Debug)]
struct PageCache {
    capacity: usize,
    ttl: Duration,
    pages: VecDeque<(String, StripLevel, Instant, Page)>,
}

impl PageCache {
    fn get(&mut self, url: &str, level: StripLevel) -> Option<Page> {
        let ttl = self.ttl;
        self.pages.retain(|(_, _, at, _)| at.elapsed() < ttl);
        self.pages
            .iter()
            .find(|(u, l, _, _)| u == url && *l == level)
            .map(|(_, _, _, page)| page.clone())
    }

    fn put(&mut self, url: &str, level: StripLevel, page: &Page) {
        if self.capacity == 0 {
            return;
        }
        self.pages.retain(|(u, l, _, _)| !(u == url && *l == level));
        while self.pages.len() >= self.capacity {
            self.pages.pop_front();
        }
        self.pages
            .push_back((url.to_owned(), level, Instant::now(), page.clone()));
    }
}

/// A call's input, checked.
struct Call {
    url: String,
    strip_level: StripLevel,
    max_chars: usize,
    chunk: Option<usize>,
}

impl PageTool {
    /// The tool over `options`: its strip level and `max_chars` are the defaults the model may override per call
    /// (`max_chars` up to four times the default, at least 20,000); its limits and address policy hold for
    /// every call. The last 4 pages fetched are kept for 5 minutes.
    pub fn new(options: FetchOptions) -> PageTool {
        let max_chars_limit = (options.max_chars.saturating_mul(4)).max(20_000);
        PageTool {
            fetcher: Fetcher::new(options),
            max_chars_limit,
            cache: Mutex::new(PageCache {
                capacity: 4,
                ttl: Duration::from_secs(300),
                pages: VecDeque::new(),
            }),
        }
    }

    /// The largest `max_chars` a call may ask for.
    pub fn with_max_chars_limit(mut self, limit: usize) -> PageTool {
        self.max_chars_limit = limit.max(MIN_MAX_CHARS);
        self
    }

    /// Keep the last `pages` pages fetched for `ttl` (0 pages: fetch on every call).
    pub fn with_page_cache(self, pages: usize, ttl: Duration) -> PageTool {
        let mut cache = self.cache.into_inner().unwrap_or_else(|e| e.into_inner());
        cache.capacity = pages;
        cache.ttl = ttl;
        cache.pages.clear();
        PageTool {
            cache: Mutex::new(cache),
            ..self
        }
    }

    pub fn max_chars_limit(&self) -> usize {
        self.max_chars_limit
    }

    pub fn options(&self) -> &FetchOptions {
        self.fetcher.options()
    }

    /// The tool's description for the model: what it does, the strip levels and what they cost, chunks.
    pub fn description(&self) -> String {
        let o = self.options();
        format!(
            "Fetch a web page (http or https) and return it as clean Markdown, with what it cost in tokens \
             (tokens_used). strip_level \"aggressive\" keeps only the main article (a median page: about 830 \
             tokens; best for articles, posts and documentation); \"moderate\" drops navigation, headers, footers, \
             sidebars, hidden text and link lists, keeping comments, forms and listings (about 1,200 tokens); \
             \"minimal\" drops only scripts, styles and media (the whole page's text: about 3,400 tokens). \
             Default: {}. A page longer than max_chars characters (default {}, at most {}) is cut at a heading or \
             paragraph: the result's total_chunks says how many parts it has, and chunk=2, 3, ... reads on. On \
             failure success is false and message says why.",
            o.strip_level.name(),
            o.max_chars,
            self.max_chars_limit
        )
    }

    /// The JSON schema of the tool's input.
    pub fn input_schema(&self) -> Value {
        let o = self.options();
        json!({
            "type": "object",
            "properties": {
                "url": {
                    "type": "string",
                    "description": "The page's address, http:// or https://."
                },
                "strip_level": {
                    "type": "string",
                    "enum": ["minimal", "moderate", "aggressive"],
                    "description": format!("How much of the page to strip (default {}).", o.strip_level.name())
                },
                "max_chars": {
                    "type": "integer",
                    "minimum": MIN_MAX_CHARS,
                    "maximum": self.max_chars_limit,
                    "description": format!("Characters of Markdown returned at most, and the size of a chunk (default {}).", o.max_chars)
                },
                "chunk": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Return this part (from 1) of a page longer than max_chars, instead of its beginning."
                }
            },
            "required": ["url"],
            "additionalProperties": false
        })
    }

    /// The definition to put in a request's `tools`, in `format`.
    pub fn definition(&self, format: ToolFormat) -> Value {
        let (description, schema) = (self.description(), self.input_schema());
        match format {
            ToolFormat::Anthropic => json!({
                "name": TOOL_NAME,
                "description": description,
                "input_schema": schema,
            }),
            ToolFormat::OpenAiChat => json!({
                "type": "function",
                "function": {
                    "name": TOOL_NAME,
                    "description": description,
                    "parameters": schema,
                },
            }),
            ToolFormat::OpenAiResponses => json!({
                "type": "function",
                "name": TOOL_NAME,
                "description": description,
                "parameters": schema,
                "strict": false,
            }),
        }
    }

    /// Handle a call: the model's input (an Anthropic `tool_use` block's `input`, or the parsed `arguments` of
    /// an OpenAI function call). Never an error and never a panic: input that does not fit the schema is a
    /// result with `success: false` whose message says what to fix.
    pub fn call(&self, input: &Value) -> FetchResult {
        match self.check(input) {
            Ok(call) => self.run(&call),
            Err(message) => FetchResult::failure(format!("{TOOL_NAME}: {message}")),
        }
    }

    /// Handle a call whose input is JSON text (an OpenAI function call's `arguments`). Text that is not JSON
    /// is a failed result naming the line and column.
    pub fn call_json(&self, arguments: &str) -> FetchResult {
        let arguments = if arguments.trim().is_empty() {
            "{}"
        } else {
            arguments
        };
        match serde_json::from_str::<Value>(arguments) {
            Ok(input) => self.call(&input),
            // serde_json's message names the line and column
            Err(e) => FetchResult::failure(format!("{TOOL_NAME}: the arguments are not JSON: {e}")),
        }
    }

    fn check(&self, input: &Value) -> Result<Call, String> {
        let Some(fields) = input.as_object() else {
            return Err(format!(
                "the input must be an object with a \"url\", not {}",
                kind(input)
            ));
        };
        let known = ["url", "strip_level", "max_chars", "chunk"];
        if let Some(unknown) = fields.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(format!(
                "unknown field \"{}\" (the fields are url, strip_level, max_chars, chunk)",
                brief(unknown)
            ));
        }
        let o = self.options();
        let url = match present(fields, "url") {
            Some(Value::String(url)) if !url.trim().is_empty() => url.trim().to_owned(),
            Some(Value::String(_)) | None => return Err("\"url\" is required".to_owned()),
            Some(other) => return Err(format!("\"url\" must be a string, not {}", kind(other))),
        };
        let strip_level = match present(fields, "strip_level") {
            None => o.strip_level,
            Some(Value::String(name)) => StripLevel::parse(name.trim()).ok_or_else(|| {
                format!(
                    "\"strip_level\" is \"{}\": it is one of minimal, moderate, aggressive",
                    brief(name)
                )
            })?,
            Some(other) => {
                return Err(format!(
                    "\"strip_level\" must be a string, not {}",
                    kind(other)
                ))
            }
        };
        let max_chars = match present(fields, "max_chars") {
            None => o.max_chars,
            Some(v) => match whole(v, "max_chars")? {
                Some(n) if (MIN_MAX_CHARS..=self.max_chars_limit).contains(&n) => n,
                _ => {
                    return Err(format!(
                        "\"max_chars\" is {}: it is between {MIN_MAX_CHARS} and {} (read a long page by chunk)",
                        brief(&v.to_string()),
                        self.max_chars_limit
                    ))
                }
            },
        };
        let chunk = match present(fields, "chunk") {
            None => None,
            Some(v) => match whole(v, "chunk")? {
                Some(0) => return Err("\"chunk\" counts from 1".to_owned()),
                Some(k) => Some(k),
                // beyond any page's chunks: said as the caller wrote it
                None => {
                    return Err(format!(
                        "\"chunk\" is {}: no page has that many chunks",
                        brief(&v.to_string())
                    ))
                }
            },
        };
        Ok(Call {
            url,
            strip_level,
            max_chars,
            chunk,
        })
    }

    fn run(&self, call: &Call) -> FetchResult {
        let cached = self
            .cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&call.url, call.strip_level);
        let page = match cached {
            Some(page) => page,
            None => match self.fetcher.fetch_at(&call.url, call.strip_level) {
                Ok(page) => {
                    self.cache.lock().unwrap_or_else(|e| e.into_inner()).put(
                        &call.url,
                        call.strip_level,
                        &page,
                    );
                    page
                }
                Err(e) => return failed(&call.url, &e),
            },
        };
        cut(&page, call.strip_level, call.max_chars, call.chunk)
    }
}

/// A field that is there and not null.
fn present<'a>(fields: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    fields.get(name).filter(|v| !v.is_null())
}

/// A whole number: an integer, a float with no fraction (some models write `2.0`) or a string of digits;
/// `Ok(None)` for one beyond any count (`1e40`, `10**40` from Python), which the caller names as it was given, not
/// as the largest number a machine word holds.
fn whole(v: &Value, name: &str) -> Result<Option<usize>, String> {
    let not_whole = || {
        format!(
            "\"{name}\" must be a whole number, not {}",
            brief(&v.to_string())
        )
    };
    match v {
        Value::Number(n) => match (n.as_u64(), n.as_f64()) {
            (Some(n), _) => Ok(usize::try_from(n).ok()),
            // (2⁶⁴ as a float is exact: below it, the conversion is too)
            (None, Some(f)) if f.fract() == 0.0 && f >= 0.0 => Ok((f < u64::MAX as f64)
                .then_some(f as u64)
                .and_then(|n| usize::try_from(n).ok())),
            _ => Err(not_whole()),
        },
        Value::String(s) => {
            let digits = s.trim().strip_prefix('+').unwrap_or(s.trim());
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return Err(not_whole());
            }
            Ok(digits.parse::<usize>().ok())
        }
        _ => Err(not_whole()),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool() -> PageTool {
        PageTool::new(FetchOptions::default())
    }

    #[test]
    fn each_format_names_the_tool_and_carries_the_schema_where_its_api_reads_it() {
        let tool = tool();
        let a = tool.definition(ToolFormat::Anthropic);
        assert_eq!(a["name"], TOOL_NAME);
        assert_eq!(a["input_schema"]["required"], json!(["url"]));
        let c = tool.definition(ToolFormat::OpenAiChat);
        assert_eq!(c["type"], "function");
        assert_eq!(c["function"]["name"], TOOL_NAME);
        assert_eq!(c["function"]["parameters"], a["input_schema"]);
        let r = tool.definition(ToolFormat::OpenAiResponses);
        assert_eq!(r["name"], TOOL_NAME);
        assert_eq!(r["parameters"], a["input_schema"]);
        for d in [
            &a["description"],
            &c["function"]["description"],
            &r["description"],
        ] {
            let d = d.as_str().unwrap();
            for word in [
                "aggressive",
                "moderate",
                "minimal",
                "tokens_used",
                "chunk=2",
                "Default: moderate",
            ] {
                assert!(d.contains(word), "{word} missing from {d}");
            }
        }
        assert_eq!(
            a["input_schema"]["properties"]["max_chars"]["maximum"],
            20_000
        );
        for f in ToolFormat::ALL {
            assert_eq!(ToolFormat::parse(f.name()), Some(f));
        }
    }

    #[test]
    fn input_that_does_not_fit_the_schema_is_a_failed_result_saying_what_to_fix() {
        let tool = tool();
        let cases = [
            (json!("https://example.com"), "must be an object"),
            (json!({}), "\"url\" is required"),
            (json!({"url": 7}), "\"url\" must be a string, not a number"),
            (
                json!({"url": "https://example.com", "strip_level": "max"}),
                "one of minimal, moderate, aggressive",
            ),
            (
                json!({"url": "https://example.com", "max_chars": 10}),
                "between 500 and 20000",
            ),
            (
                json!({"url": "https://example.com", "max_chars": 2.5}),
                "whole number",
            ),
            (
                json!({"url": "https://example.com", "chunk": 0}),
                "counts from 1",
            ),
            (
                json!({"url": "https://example.com", "page": 2}),
                "unknown field \"page\"",
            ),
        ];
        for (input, expected) in cases {
            let result = tool.call(&input);
            assert!(!result.success, "{input}");
            assert!(
                result.message.contains(expected),
                "{input}: {}",
                result.message
            );
            assert!(result.message.starts_with(TOOL_NAME));
        }
        let bad = tool.call_json("{\"url\": ");
        assert!(!bad.success);
        assert!(bad.message.contains("line 1 column 8"), "{}", bad.message);
    }

    #[test]
    fn what_a_message_quotes_is_brief_and_numbers_are_named_as_written() {
        // a failed result goes back into the model's context: a long value is quoted by its start and length
        let tool = tool();
        let long = "x".repeat(100_000);
        let cases = [
            json!({"url": long}),
            json!({"url": format!("https://example.invalid/{long}")}),
            json!({"url": "https://example.com", "strip_level": long}),
            json!({"url": "https://example.com", long.clone(): 1}),
            json!({"url": "https://example.com", "max_chars": long}),
            json!({"url": "https://example.com", "chunk": [long]}),
        ];
        for input in cases {
            let result = tool.call(&input);
            assert!(!result.success);
            assert!(
                result.message.len() < 700 && result.message.contains("(100,0"),
                "{}",
                &result.message[..result.message.len().min(700)]
            );
        }
        // a whole number beyond a machine word is said as it was given, not as 18446744073709551615
        let huge: Value = serde_json::from_str("1e40").unwrap();
        let result = tool.call(&json!({"url": "https://example.com", "max_chars": huge}));
        assert!(
            result.message.contains("\"max_chars\" is 1e")
                && result.message.contains("it is between 500 and 20000")
                && !result.message.contains("18446744073709551615"),
            "{}",
            result.message
        );
        let result =
            tool.call(&json!({"url": "https://example.com", "chunk": "99999999999999999999999"}));
        assert!(
            result
                .message
                .contains("\"chunk\" is \"99999999999999999999999\": no page has that many"),
            "{}",
            result.message
        );
        assert_eq!(whole(&json!("+7"), "n"), Ok(Some(7)));
        assert_eq!(whole(&json!(7.0), "n"), Ok(Some(7)));
        assert!(whole(&json!(-1), "n").is_err());
        assert!(whole(&json!("7 pages"), "n").is_err());
    }

    #[test]
    fn a_private_address_is_refused_by_the_programs_policy_whatever_the_model_asks() {
        let result = tool().call(&json!({"url": "http://127.0.0.1:1/", "strip_level": "minimal"}));
        assert!(!result.success);
        assert!(result.message.contains("127.0.0.1"), "{}", result.message);
    }
}
