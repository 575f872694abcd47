//! The page tool of seed 003: fetch a web page, clean it to Markdown, and tell the agent what it cost.
//!
//! [`fetch_webpage_markdown`] is the tool an agent calls: it returns a [`FetchResult`] — `success`, `data`,
//! `tokens_used`, `was_truncated`, `original_size`, `is_chunked`, `chunk_number`, `total_chunks`, `message` —
//! that serialises to the JSON the tool hands back to the model. Never an error or a panic: a page that cannot
//! be fetched is a result with `success: false` and a message saying why.
//!
//! The fetch is done by a [`Fetcher`], whose [`FetchOptions`] bound it: an overall timeout and a connect
//! timeout, a redirect limit, a response size cap, web pages and text only (HTML is cleaned; plain text, JSON,
//! XML, CSV, Markdown and source come back as they are; images, PDFs and other binaries are refused), the
//! charset from the headers (or the page), no proxy from the environment, and the SSRF guard of [`guard`]:
//! loopback, private, link-local, metadata and other non-public addresses are refused unless the caller allows
//! them.
//!
//! A page longer than `max_chars` is cut on a heading or paragraph boundary; the result says how many chunks of
//! `max_chars` the whole page takes, and `chunk = Some(k)` returns the k-th (1-based).

pub mod guard;
pub mod tool;

use std::net::IpAddr;
use std::time::{Duration, Instant};

use std::io::Read;

use ctxfit_html::{
    chunk_markdown, decode_html, page_metadata, resolve_url, CleanStats, HtmlCleaner, PageMetadata,
    StripLevel,
};
use ctxfit_tokens::{thousands, FastEstimator, TokenEstimator};
use serde::Serialize;
use ureq::unversioned::transport::DefaultConnector;
use ureq::{Agent, ResponseExt};

pub use guard::{AddressPolicy, Refused};
pub use tool::{PageTool, ToolFormat, SYSTEM_PROMPT_HINT, TOOL_NAME};

/// Seed 003's default for `max_chars`.
pub const DEFAULT_MAX_CHARS: usize = 5000;

/// What the page tool returns (seed 003's contract).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FetchResult {
    pub success: bool,
    /// The page's Markdown: all of it, its first `max_chars` (`was_truncated`), or one chunk (`is_chunked`).
    pub data: String,
    /// Tokens of `data`, by the fast estimator of `ctxfit-tokens`.
    pub tokens_used: usize,
    pub was_truncated: bool,
    /// Bytes of the page as fetched.
    pub original_size: usize,
    pub is_chunked: bool,
    /// The chunk returned (1-based), when `is_chunked`.
    pub chunk_number: Option<usize>,
    /// How many chunks of `max_chars` the whole page takes (1 if it fits).
    pub total_chunks: usize,
    /// What happened, in a sentence for the agent: sizes, cut, how to read on, or why it failed.
    pub message: String,
    /// What the page states about itself, when it does (left out of the JSON otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub canonical_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
}

impl FetchResult {
    /// A failed fetch: nothing in `data`, the reason in `message`.
    pub fn failure(message: impl Into<String>) -> FetchResult {
        FetchResult {
            success: false,
            data: String::new(),
            tokens_used: 0,
            was_truncated: false,
            original_size: 0,
            is_chunked: false,
            chunk_number: None,
            total_chunks: 0,
            message: message.into(),
            title: None,
            canonical_url: None,
            published: None,
            author: None,
        }
    }
}

/// How a page is fetched, cleaned and cut.
#[derive(Debug, Clone)]
pub struct FetchOptions {
    pub strip_level: StripLevel,
    /// Characters of Markdown returned at most (and the size of a chunk).
    pub max_chars: usize,
    /// Return this chunk (1-based) of the page instead of its beginning.
    pub chunk: Option<usize>,
    /// The whole request, from resolving the name to the last byte of the body.
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub max_redirects: u32,
    /// Bytes of body read at most; a larger page is refused.
    pub max_bytes: u64,
    pub addresses: AddressPolicy,
    pub user_agent: String,
}

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions {
            strip_level: StripLevel::Moderate,
            max_chars: DEFAULT_MAX_CHARS,
            chunk: None,
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            max_redirects: 5,
            max_bytes: 10 << 20,
            addresses: AddressPolicy::default(),
            user_agent: concat!("ctxfit-webfetch/", env!("CARGO_PKG_VERSION")).to_owned(),
        }
    }
}

impl FetchOptions {
    /// Allow one non-public address (a local test server, say).
    pub fn allow_address(mut self, ip: IpAddr) -> Self {
        self.addresses.allowed.push(ip);
        self
    }
}

/// Why a page could not be fetched.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("invalid URL {:?}: {reason}", brief(url))]
    InvalidUrl { url: String, reason: String },
    #[error(transparent)]
    Refused(#[from] Refused),
    #[error("HTTP {status}{}", reason.map(|r| format!(" {r}")).unwrap_or_default())]
    Status {
        status: u16,
        reason: Option<&'static str>,
    },
    #[error(
        "not a web page: content type {:?} (web pages and text are fetched: HTML, plain text, JSON, XML)",
        brief(.0)
    )]
    ContentType(String),
    #[error("not a web page: the body is {0}, not text")]
    Binary(&'static str),
    #[error("the page is larger than the limit of {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("more than {0} redirects")]
    TooManyRedirects(u32),
    #[error("refused a redirect to {}: {reason}", brief(to))]
    Redirect { to: String, reason: String },
    #[error("timed out ({0})")]
    Timeout(String),
    #[error("host not found")]
    HostNotFound,
    #[error("{}", brief(.0))]
    Network(String),
}

/// A fetched and cleaned page.
#[derive(Debug, Clone)]
pub struct Page {
    /// Where the page was fetched from, after redirects.
    pub final_url: String,
    pub content_type: Option<String>,
    /// The encoding the page was decoded from.
    pub encoding: &'static str,
    pub markdown: String,
    pub stats: CleanStats,
    /// Title, canonical URL, publication date and author, as the page states them.
    pub metadata: PageMetadata,
}

/// Fetches pages under one set of [`FetchOptions`], reusing connections.
#[derive(Debug)]
pub struct Fetcher {
    options: FetchOptions,
    agent: Agent,
}

impl Fetcher {
    pub fn new(options: FetchOptions) -> Fetcher {
        let config = Agent::config_builder()
            .timeout_global(Some(options.timeout))
            .timeout_connect(Some(options.connect_timeout))
            // redirects are followed here, where each target is checked (`fetch`)
            .max_redirects(0)
            .max_redirects_will_error(false)
            .http_status_as_error(false)
            // a proxy would be the only address the guard sees
            .proxy(None)
            .user_agent(options.user_agent.as_str())
            .build();
        let resolver = guard::GuardedResolver {
            policy: options.addresses.clone(),
        };
        let agent = Agent::with_parts(config, DefaultConnector::default(), resolver);
        Fetcher { options, agent }
    }

    pub fn options(&self) -> &FetchOptions {
        &self.options
    }

    /// Fetch a page and clean it. Redirects are followed up to `max_redirects`, each target checked like the
    /// first URL (http or https, a host) and then by the address guard.
    pub fn fetch(&self, url: &str) -> Result<Page, FetchError> {
        self.fetch_at(url, self.options.strip_level)
    }

    /// [`Fetcher::fetch`] at another strip level than the options'.
    pub fn fetch_at(&self, url: &str, level: StripLevel) -> Result<Page, FetchError> {
        let started = Instant::now();
        check_url(url)?;
        let mut current = url.to_owned();
        let mut redirects = 0;
        let mut response = loop {
            let response = self
                .agent
                .get(&current)
                .header(
                    "Accept",
                    "text/html,application/xhtml+xml,text/plain;q=0.8,application/json;q=0.7,text/*;q=0.6",
                )
                .call()
                .map_err(|e| self.error(e, &current))?;
            let location = response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok());
            match location {
                Some(to) if response.status().is_redirection() => {
                    if redirects == self.options.max_redirects {
                        return Err(FetchError::TooManyRedirects(self.options.max_redirects));
                    }
                    redirects += 1;
                    let next = resolve_url(Some(&current), to);
                    check_url(&next).map_err(|e| FetchError::Redirect {
                        to: redact_credentials(&next),
                        reason: match e {
                            FetchError::InvalidUrl { reason, .. } => reason,
                            other => other.to_string(),
                        },
                    })?;
                    current = next;
                }
                _ => break response,
            }
        };
        let status = response.status();
        if !status.is_success() {
            return Err(FetchError::Status {
                status: status.as_u16(),
                reason: status.canonical_reason(),
            });
        }
        let final_url = redact_credentials(&response.get_uri().to_string());
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let mime = content_type.as_deref().map(|c| {
            c.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        });
        let plain = match mime.as_deref() {
            None | Some("text/html" | "application/xhtml+xml") => false,
            Some(text) if is_text(text) => true,
            Some(other) => return Err(FetchError::ContentType(other.to_owned())),
        };
        // the cap holds on the decoded body: a small compressed response must not inflate past it
        let mut bytes = Vec::new();
        response
            .body_mut()
            .with_config()
            .limit(self.options.max_bytes)
            .reader()
            .take(self.options.max_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| self.read_error(e, &current))?;
        if bytes.len() as u64 > self.options.max_bytes {
            return Err(FetchError::TooLarge {
                limit: self.options.max_bytes,
            });
        }
        // a PDF served as a page, an image as text: said, not answered as mojibake
        if let Some(kind) = ctxfit_html::binary_kind(&bytes, content_type.as_deref()) {
            return Err(FetchError::Binary(kind));
        }
        // the timeout covers decoding and cleaning too: they run on a worker, given what is left of it
        let left = self.options.timeout.saturating_sub(started.elapsed());
        let (base, header) = (final_url.clone(), content_type.clone());
        let (send, receive) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let (text, encoding) = decode_html(&bytes, header.as_deref());
            let cleaned = if plain {
                (text.clone().into_owned(), PageMetadata::default())
            } else {
                let markdown = HtmlCleaner::new(level)
                    .with_base_url(base.clone())
                    .clean(&text)
                    .0;
                (markdown, page_metadata(&text, Some(&base)))
            };
            // the receiver may have given up: then the work is dropped
            let _ = send.send((cleaned, encoding, bytes.len()));
        });
        let ((markdown, metadata), encoding, size) = receive.recv_timeout(left).map_err(|_| {
            FetchError::Timeout(format!(
                "the page was not cleaned within {:?}",
                self.options.timeout
            ))
        })?;
        Ok(Page {
            metadata,
            stats: CleanStats::new(size, markdown.len()),
            final_url,
            content_type,
            encoding,
            markdown,
        })
    }

    /// The page tool: fetch, clean, cut to `max_chars` or return the chosen chunk. Never fails; a failure is a
    /// result with `success: false`.
    pub fn fetch_markdown(&self, url: &str) -> FetchResult {
        let o = &self.options;
        match self.fetch(url) {
            Ok(page) => cut(&page, o.strip_level, o.max_chars, o.chunk),
            Err(e) => failed(url, &e),
        }
    }

    /// The page tool's result for a fetched page: cut to `max_chars`, or the chosen chunk.
    pub fn result(&self, page: &Page) -> FetchResult {
        let o = &self.options;
        cut(page, o.strip_level, o.max_chars, o.chunk)
    }

    /// An error while reading the body: ureq's own errors come wrapped in `io::Error`.
    fn read_error(&self, e: std::io::Error, url: &str) -> FetchError {
        match e.downcast::<ureq::Error>() {
            Ok(inner) => self.error(inner, url),
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                FetchError::Timeout(e.to_string())
            }
            Err(e) => FetchError::Network(e.to_string()),
        }
    }

    fn error(&self, e: ureq::Error, url: &str) -> FetchError {
        match e {
            ureq::Error::Other(inner) => match inner.downcast::<Refused>() {
                Ok(refused) => FetchError::Refused(*refused),
                Err(other) => FetchError::Network(other.to_string()),
            },
            ureq::Error::Timeout(t) => FetchError::Timeout(t.to_string()),
            ureq::Error::BodyExceedsLimit(_) => FetchError::TooLarge {
                limit: self.options.max_bytes,
            },
            ureq::Error::TooManyRedirects => {
                FetchError::TooManyRedirects(self.options.max_redirects)
            }
            ureq::Error::HostNotFound => FetchError::HostNotFound,
            ureq::Error::BadUri(reason) => FetchError::InvalidUrl {
                url: redact_credentials(url),
                reason,
            },
            other => FetchError::Network(other.to_string()),
        }
    }
}

/// Is `url` one the page tool fetches: http or https, with a host?
fn check_url(url: &str) -> Result<(), FetchError> {
    let invalid = |reason: &str| FetchError::InvalidUrl {
        url: redact_credentials(url),
        reason: reason.to_owned(),
    };
    match url
        .split_once(':')
        .map(|(scheme, _)| scheme.to_ascii_lowercase())
    {
        Some(scheme) if scheme == "http" || scheme == "https" => {}
        Some(scheme)
            if !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
        {
            return Err(invalid(&format!("scheme {scheme:?} is not http or https")))
        }
        _ => return Err(invalid("no scheme (http:// or https://)")),
    }
    // (in the parser's own words: an address past its length limit is a URL too long, not no URL)
    let uri: ureq::http::Uri = url
        .parse()
        .map_err(|e| invalid(&format!("not a URL ({e})")))?;
    if uri.host().is_none_or(str::is_empty) {
        return Err(invalid("no host"));
    }
    Ok(())
}

/// `url` with the user name and password of its authority (`http://user:pass@host/`) replaced by `***`: what
/// the tool says goes to the model, and credentials must not.
pub fn redact_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://***@{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}

/// Fetch `url` and return its Markdown the way seed 003's tool does, with the default [`FetchOptions`] (only
/// public addresses, 30 s, 5 redirects, 10 MiB).
pub fn fetch_webpage_markdown(
    url: &str,
    strip_level: StripLevel,
    max_chars: usize,
    chunk: Option<usize>,
) -> FetchResult {
    Fetcher::new(FetchOptions {
        strip_level,
        max_chars,
        chunk,
        ..FetchOptions::default()
    })
    .fetch_markdown(url)
}

/// The result of a fetch that failed, the URL's credentials hidden.
pub(crate) fn failed(url: &str, e: &FetchError) -> FetchResult {
    FetchResult::failure(format!(
        "could not fetch {}: {e}",
        brief(&redact_credentials(url))
    ))
}

/// Characters of a value that a message quotes — a URL, a field's name, a content type, a server's words.
const QUOTED_CHARS: usize = 200;

/// `text` as a message quotes it: whole, or its first [`QUOTED_CHARS`] characters and how long it is. The tool's
/// message goes back into the model's context, where a 100,000-character URL, quoted twice, would cost what the
/// tool is there to save.
pub(crate) fn brief(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(QUOTED_CHARS) {
        None => text.into(),
        Some((at, _)) => format!(
            "{}… ({} characters)",
            &text[..at],
            thousands(text.chars().count())
        )
        .into(),
    }
}

/// A fetched page (cleaned at `level`) as the tool's result: cut to `max_chars`, or chunk `chunk`.
pub(crate) fn cut(
    page: &Page,
    level: StripLevel,
    max_chars: usize,
    chunk: Option<usize>,
) -> FetchResult {
    let m = page.metadata.clone();
    FetchResult {
        title: m.title,
        canonical_url: m.canonical_url.as_deref().map(redact_credentials),
        published: m.published,
        author: m.author,
        ..shape(
            &page.markdown,
            page.stats.original_size,
            max_chars,
            chunk,
            &format!("{} ({})", page.final_url, level.name()),
        )
    }
}

/// Cut cleaned Markdown into the tool's result: all of it if it fits in `max_chars`, else its first chunk
/// (`was_truncated`), or chunk `chunk` (1-based) of the chunks of at most `max_chars` characters, cut on
/// heading and paragraph boundaries. `source` names the page in the message.
pub fn shape(
    markdown: &str,
    original_size: usize,
    max_chars: usize,
    chunk: Option<usize>,
    source: &str,
) -> FetchResult {
    let max_chars = max_chars.max(1);
    let chars = |s: &str| s.chars().count();
    let total = chars(markdown);
    let chunks = if total <= max_chars {
        vec![markdown.to_owned()]
    } else {
        // a single word longer than a chunk (a data URL, a minified blob) is split inside, never dropped
        chunk_markdown(markdown, max_chars, &chars)
            .into_iter()
            .flat_map(|c| split_chars(c, max_chars))
            .collect()
    };
    let total_chunks = chunks.len();
    let sizes = format!(
        "{source}: {} bytes of page, {} characters of Markdown",
        thousands(original_size),
        thousands(total)
    );
    let estimator = FastEstimator;
    let (data, was_truncated, is_chunked, chunk_number, message) = match chunk {
        Some(k) if k == 0 || k > total_chunks => {
            let mut failed = FetchResult::failure(format!(
                "{sizes}, in {total_chunks} chunk{} of at most {} characters: there is no chunk {k} (chunks are numbered from 1)",
                plural(total_chunks),
                thousands(max_chars)
            ));
            failed.original_size = original_size;
            failed.total_chunks = total_chunks;
            return failed;
        }
        Some(k) => {
            let next = if k < total_chunks {
                format!("; chunk={} reads on", k + 1)
            } else {
                "; this is the last".to_owned()
            };
            let message = format!(
                "{sizes}: chunk {k} of {total_chunks} (at most {} characters each){next}",
                thousands(max_chars)
            );
            (chunks[k - 1].clone(), false, true, Some(k), message)
        }
        None if total_chunks > 1 => {
            let message = format!(
                "{sizes}: truncated to the first {} characters (chunk 1 of {total_chunks}); pass chunk=2 to read on",
                thousands(chars(&chunks[0]))
            );
            (chunks[0].clone(), true, false, None, message)
        }
        None => (markdown.to_owned(), false, false, None, sizes),
    };
    FetchResult {
        success: true,
        tokens_used: estimator.count_text(&data),
        data,
        was_truncated,
        original_size,
        is_chunked,
        chunk_number,
        total_chunks,
        message,
        title: None,
        canonical_url: None,
        published: None,
        author: None,
    }
}

/// `text` in pieces of at most `max` characters (itself if it fits).
fn split_chars(text: String, max: usize) -> Vec<String> {
    if text.chars().count() <= max {
        return vec![text];
    }
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(max).map(|c| c.iter().collect()).collect()
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Is a response of this media type (lowercase, without parameters) text an agent can read as it is? `text/*`
/// (plain, CSV, Markdown, source), JSON and XML (`application/json`, `application/problem+json`,
/// `application/rss+xml`, ...), JavaScript, YAML and TOML. HTML and XHTML are pages, to be cleaned, and are
/// matched before this.
fn is_text(mime: &str) -> bool {
    let Some((kind, sub)) = mime.split_once('/') else {
        return false;
    };
    kind == "text"
        || (kind == "application"
            && (matches!(
                sub,
                "json"
                    | "xml"
                    | "javascript"
                    | "x-javascript"
                    | "ecmascript"
                    | "x-ndjson"
                    | "ndjson"
                    | "yaml"
                    | "x-yaml"
                    | "toml"
            ) || sub.ends_with("+json")
                || sub.ends_with("+xml")))
}
