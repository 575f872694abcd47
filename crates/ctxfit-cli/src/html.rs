//! `ctxfit html`: a web page (file, standard input or URL) as cleaned Markdown, or as the page tool's JSON.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use ctxfit_html::{HtmlCleaner, StripLevel};
use ctxfit_webfetch::{shape, FetchError, FetchOptions, FetchResult, Fetcher, DEFAULT_MAX_CHARS};

use crate::input::{display_name, read_bytes};
use crate::output::{emit, is_the_input, thousands};
use crate::BadInput;

#[derive(clap::Args)]
pub struct Args {
    /// An HTML file, `-` for standard input, or an http(s):// URL to fetch.
    source: PathBuf,
    /// What to strip: minimal (scripts, styles, media), moderate (+ navigation, footers, sidebars, hidden
    /// text), aggressive (+ forms, ads, banners, and everything outside the main content).
    #[arg(long, default_value = "moderate", value_parser = parse_level)]
    level: StripLevel,
    /// Characters of Markdown at most: a longer page is cut on a heading or paragraph boundary. Default: the
    /// whole page (5,000 with --chunk).
    #[arg(long, value_parser = parse_max_chars)]
    max_chars: Option<usize>,
    /// Print chunk K (from 1) of the page cut into chunks of --max-chars characters.
    #[arg(long, value_name = "K")]
    chunk: Option<usize>,
    /// Resolve relative links against this URL (a file's `<base href>` wins; a fetched page uses its own URL).
    #[arg(long, value_name = "URL", value_parser = parse_base_url)]
    base_url: Option<String>,
    /// Print the page tool's JSON result (success, data, tokens_used, was_truncated, original_size,
    /// is_chunked, chunk_number, total_chunks, message) instead of the Markdown.
    #[arg(long)]
    json: bool,
    /// Write the output to this file (replaced atomically; gzipped when its name ends in .gz; never the page
    /// itself) instead of standard output (`-`: standard output).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// For a URL: allow loopback, private and link-local addresses (refused by default). The cloud metadata
    /// services are not among them: see --allow-metadata.
    #[arg(long)]
    allow_private: bool,
    /// For a URL: allow the cloud metadata services (169.254.169.254 and the like), which hand out credentials.
    #[arg(long)]
    allow_metadata: bool,
    /// For a URL: allow this one non-public address (repeatable).
    #[arg(long, value_name = "IP")]
    allow_address: Vec<IpAddr>,
    /// For a URL: seconds the whole fetch may take.
    #[arg(long, default_value_t = 30)]
    timeout: u64,
    /// For a URL: bytes of page read at most.
    #[arg(long, default_value_t = 10 << 20)]
    max_bytes: u64,
    /// Instead of the Markdown, say what the aggressive level's extraction chose on the page (a file or standard
    /// input): the article's element, the lead written before it, and the blocks it left out — each as a
    /// selector, its size and the start of its text, to find it in the page's source.
    #[arg(long, conflicts_with_all = ["json", "chunk", "max_chars"])]
    explain: bool,
}

fn parse_level(name: &str) -> Result<StripLevel, String> {
    StripLevel::parse(name).ok_or_else(|| {
        format!("unknown strip level `{name}` (expected one of: minimal, moderate, aggressive)")
    })
}

fn parse_max_chars(text: &str) -> Result<usize, String> {
    match text.parse::<usize>().map_err(|e| e.to_string())? {
        0 => Err("0 characters would leave nothing of the page: give 1 or more".into()),
        n => Ok(n),
    }
}

/// A base URL must be absolute (`scheme://host…`): against anything else no relative link can be resolved, and
/// the page would come out with its links as written, without a word.
fn parse_base_url(text: &str) -> Result<String, String> {
    if ctxfit_html::is_absolute_url(text) {
        Ok(text.to_owned())
    } else {
        Err(ctxfit_html::NOT_AN_ABSOLUTE_URL.into())
    }
}

/// The source as a URL to fetch, if it is one (http or https; a file's name need not be text).
fn url(source: &Path) -> Option<&str> {
    let text = source.to_str()?;
    let lower = text.get(..8).unwrap_or(text).to_ascii_lowercase();
    (lower.starts_with("http://") || lower.starts_with("https://")).then_some(text)
}

/// `--explain`: the aggressive level's choices, a line each.
fn explanation(args: &Args) -> Result<String> {
    if url(&args.source).is_some() {
        return Err(BadInput(
            "--explain reads a file or standard input: save the page first (curl -o page.html URL)"
                .into(),
        )
        .into());
    }
    let bytes = read_page(&args.source)?;
    let (text, _) = ctxfit_html::decode_html(&bytes, None);
    let list = |out: &mut String, heading: &str, elements: &[ctxfit_html::Element]| {
        if elements.is_empty() {
            out.push_str(&format!("{heading}: none\n"));
            return;
        }
        out.push_str(&format!("{heading} ({}):\n", elements.len()));
        for e in elements {
            out.push_str(&format!(
                "  {} ({} characters)",
                e.selector(),
                thousands(e.chars)
            ));
            if !e.start.is_empty() {
                out.push_str(&format!(": \"{}\"", e.start));
            }
            out.push('\n');
        }
    };
    let mut out = String::new();
    match ctxfit_html::explain(&text) {
        ctxfit_html::Explanation::Article {
            lead,
            article,
            left_out,
        } => {
            list(&mut out, "article", &article);
            list(&mut out, "lead, written before it", &lead);
            list(&mut out, "left out of it", &left_out);
        }
        ctxfit_html::Explanation::NoArticle => out.push_str(
            "no article: no element holds enough prose to be sure (a recipe, a product, a listing), so the \
             aggressive level writes the page as the moderate level does\n",
        ),
        ctxfit_html::Explanation::TooDeep => out.push_str(
            "no article: the page's tree would cost too much to build (it nests too deep, or leaves thousands of \
             formatting elements open), so it is written by the tokenizer alone, as the moderate level would \
             write it\n",
        ),
    }
    Ok(out)
}

/// A page's bytes from a file or standard input (gzip inflated); a PDF, an image or other binary data is refused
/// by name rather than written out as mojibake.
fn read_page(source: &Path) -> Result<Vec<u8>> {
    // a file:// URL is no file's name: said, rather than "no such file"
    let file_url = source.to_str().and_then(|t| {
        t.get(..7)
            .filter(|p| p.eq_ignore_ascii_case("file://"))
            .map(|_| &t[7..])
    });
    if let Some(path) = file_url.filter(|_| !source.exists()) {
        return Err(BadInput(format!(
            "{}: file:// URLs are not fetched: give the file's path ({path})",
            display_name(source)
        ))
        .into());
    }
    let bytes = read_bytes(source)?;
    // a file named as a page is one, as a browser opens it by its name; any other is sniffed
    let named_a_page = source
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| {
            ["html", "htm", "xhtml"]
                .iter()
                .any(|x| e.eq_ignore_ascii_case(x))
        });
    match ctxfit_html::binary_kind(&bytes, named_a_page.then_some("text/html")) {
        Some(kind) => Err(BadInput(format!(
            "{}: not a web page: the bytes are {kind}, not text",
            display_name(source)
        ))
        .into()),
        None => Ok(bytes),
    }
}

pub fn run(args: Args) -> Result<()> {
    if let Some(out) = (args.output.as_deref()).filter(|o| is_the_input(Some(&args.source), o)) {
        return Err(BadInput(format!(
            "{}: -o names the page itself: its Markdown would replace it; write elsewhere",
            out.display()
        ))
        .into());
    }
    if args.explain {
        let text = explanation(&args)?;
        return emit(args.output.as_deref(), &text);
    }
    let max_chars = args.max_chars.unwrap_or(if args.chunk.is_some() {
        DEFAULT_MAX_CHARS
    } else {
        usize::MAX
    });
    let result = if let Some(url) = url(&args.source) {
        let mut options = FetchOptions {
            strip_level: args.level,
            max_chars,
            chunk: args.chunk,
            timeout: Duration::from_secs(args.timeout.max(1)),
            max_bytes: args.max_bytes,
            ..FetchOptions::default()
        };
        options.addresses.allow_private = args.allow_private;
        options.addresses.allow_metadata = args.allow_metadata;
        options.addresses.allowed = args.allow_address.clone();
        let fetcher = Fetcher::new(options);
        match fetcher.fetch(url) {
            Ok(page) => fetcher.result(&page),
            Err(e) => {
                let message = format!(
                    "could not fetch {}: {e}",
                    ctxfit_webfetch::redact_credentials(url)
                );
                if args.json {
                    emit(
                        args.output.as_deref(),
                        &json_text(&FetchResult::failure(message.clone()))?,
                    )?;
                }
                return Err(match e {
                    FetchError::Network(_) | FetchError::Timeout(_) | FetchError::HostNotFound => {
                        anyhow::anyhow!(message)
                    }
                    _ => BadInput(message).into(),
                });
            }
        }
    } else {
        let bytes = read_page(&args.source)?;
        let mut cleaner = HtmlCleaner::new(args.level);
        if let Some(base) = &args.base_url {
            cleaner = cleaner.with_base_url(base.clone());
        }
        let (markdown, stats) = cleaner.clean_bytes(&bytes, None);
        let (text, _) = ctxfit_html::decode_html(&bytes, None);
        let m = ctxfit_html::page_metadata(&text, args.base_url.as_deref());
        FetchResult {
            title: m.title,
            canonical_url: m.canonical_url,
            published: m.published,
            author: m.author,
            ..shape(
                &markdown,
                stats.original_size,
                max_chars,
                args.chunk,
                &format!("{} ({})", display_name(&args.source), args.level.name()),
            )
        }
    };
    if args.json {
        emit(args.output.as_deref(), &json_text(&result)?)?;
        return if result.success {
            Ok(())
        } else {
            Err(BadInput(result.message).into())
        };
    }
    if !result.success {
        return Err(BadInput(result.message).into());
    }
    emit(args.output.as_deref(), &result.data)?;
    crate::shown::say(&format!(
        "{}; ~{} tokens",
        result.message,
        thousands(result.tokens_used)
    ));
    Ok(())
}

fn json_text(result: &FetchResult) -> Result<String> {
    let mut text = serde_json::to_string_pretty(result)?;
    text.push('\n');
    Ok(text)
}
