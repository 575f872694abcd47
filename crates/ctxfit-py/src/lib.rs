//! The Python package `ctxfit` (module `ctxfit._ctxfit`; the package's `__init__.py` re-exports it): the same
//! crates as the CLI, called from Python with the interpreter released while they work.
//!
//! Built with maturin (`pip install ./crates/ctxfit-py`); tested with pytest (`crates/ctxfit-py/tests`); the
//! Python side is documented in `docs/python.md` and the stubs in `python/ctxfit/_ctxfit.pyi`.

mod args;
mod compactor;
mod errors;
mod json;
mod page_tool;

use std::net::IpAddr;
use std::panic::AssertUnwindSafe;
use std::path::Path;

use ctxfit_compactor::{PolicyFile, Settings, BUILT_IN_PROFILES};
use ctxfit_html::{page_metadata, HtmlCleaner, StripLevel};
use ctxfit_import::{ImportError, Session, SourceFormat};
use ctxfit_model::{convert, detect, read_message, write_message, Conversation, Value};
use ctxfit_replay::{Policy, PriceModel};
use ctxfit_tokens::TokenEstimator;
use ctxfit_webfetch::{FetchOptions, Fetcher};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

use crate::args::{FilePath, Real, Whole};
use crate::compactor::{wire_format, Compactor};
use crate::errors::{bad_input, unknown, CtxfitError, InternalError, PromptTooLarge};
use crate::json::{to_py, to_value};

/// Run `f`, turning a panic into `InternalError` (a Rust panic never crosses into Python).
pub(crate) fn shielded<T>(what: &str, f: impl FnOnce() -> T) -> PyResult<T> {
    std::panic::catch_unwind(AssertUnwindSafe(f)).map_err(|panic| {
        let why = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_owned());
        InternalError::new_err(format!("ctxfit {what}: internal error: {why}"))
    })
}

/// The rules linked into this module.
pub(crate) fn registry() -> PyResult<ctxfit_compactor::Registry> {
    ctxfit_plugins::registry().map_err(|e| bad_input(e.to_string()))
}

/// A token estimator by name.
pub(crate) fn estimator(name: &str) -> PyResult<Box<dyn TokenEstimator>> {
    ctxfit_tokens::estimator(name)
        .ok_or_else(|| unknown("estimator", name, ctxfit_tokens::estimator_names()))
}

/// The environment's overrides (`CTXFIT_BUDGET`, ...), as the CLI reads them.
fn env(key: &str) -> Option<String> {
    std::env::var(key).ok()
}

/// Settings from a profile name and a policy (a file's path, or TOML/JSON text), as the CLI resolves them.
pub(crate) fn settings(
    profile: Option<&str>,
    policy: Option<&str>,
    agent: Option<&str>,
) -> PyResult<Settings> {
    let file = match policy {
        None => PolicyFile::default(),
        Some(p) if !p.contains('\n') && Path::new(p).exists() => PolicyFile::read(Path::new(p))
            .map_err(|e| match e {
                ctxfit_compactor::PolicyError::Read { kind, .. } => PyOSError::new_err((
                    errno_of(&std::io::Error::from(
                        kind.unwrap_or(std::io::ErrorKind::Other),
                    )),
                    e.to_string(),
                )),
                other => bad_input(other.to_string()),
            })?,
        Some(p) if p.contains('\n') || p.contains('=') || p.trim_start().starts_with('{') => {
            PolicyFile::parse(p, "<policy>").map_err(|e| bad_input(e.to_string()))?
        }
        Some(p) => {
            return Err(PyOSError::new_err(format!(
                "{p}: no such policy file (give a path, or the policy's TOML text)"
            )))
        }
    };
    // without a profile: the policy's default profile, else its only profile, else `smart`
    file.resolve(profile, agent, &env)
        .map_err(|e| bad_input(e.to_string()))
}

/// An iterator over a list of messages; anything that is not one is a `TypeError` that names what it got
/// ("compact() takes the list of messages, got NoneType"), not "'NoneType' object is not iterable".
pub(crate) fn message_list<'py>(
    function: &str,
    messages: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, pyo3::types::PyIterator>> {
    // iterable, but not a list of messages: a dict would give its keys, a string its characters
    if messages.is_instance_of::<pyo3::types::PyDict>() {
        return Err(errors::bad_input(format!(
            "{function}() takes the list of messages (request[\"messages\"] or request[\"input\"]), not the \
             request dict itself"
        )));
    }
    if messages.is_instance_of::<pyo3::types::PyString>()
        || messages.is_instance_of::<pyo3::types::PyBytes>()
    {
        return Err(errors::bad_input(format!(
            "{function}() takes the list of messages, not a string (parse the JSON first: json.loads)"
        )));
    }
    // a set has no order: its messages would be read in whatever order the set keeps them
    if messages.is_instance_of::<pyo3::types::PySet>()
        || messages.is_instance_of::<pyo3::types::PyFrozenSet>()
    {
        return Err(errors::bad_input(format!(
            "{function}() takes the list of messages, not a set (a set has no order; the conversation's is its \
             meaning)"
        )));
    }
    messages.try_iter().map_err(|_| {
        let got = messages.get_type().name().map_or_else(
            |_| "an object that is not a list".to_owned(),
            |n| n.to_string(),
        );
        pyo3::exceptions::PyTypeError::new_err(format!(
            "{function}() takes the list of messages, got {got}"
        ))
    })
}

/// A list of wire messages (and an optional Anthropic system prompt) as a conversation, its format detected.
fn conversation(
    function: &str,
    messages: &Bound<'_, PyAny>,
    system: Option<&Bound<'_, PyAny>>,
    format: Option<&str>,
) -> PyResult<Conversation> {
    let items = message_list(function, messages)?
        .enumerate()
        .map(|(i, m)| to_value(&m?, format_args!("messages[{i}]")))
        .collect::<PyResult<Vec<Value>>>()?;
    let value = Value::Array(items);
    let format = match format {
        Some(f) => {
            let named = wire_format(f)?;
            if let Some(told) = ctxfit_model::detect_decisive(&value).filter(|t| *t != named) {
                errors::warn(
                    messages.py(),
                    &format!(
                        "{function}(source=\"{f}\"): the messages read as {} — their tool calls and results will \
                         not be recognised; leave source out to detect it",
                        told.name()
                    ),
                )?;
            }
            named
        }
        None => detect(&value),
    };
    let Value::Array(items) = value else {
        unreachable!("built as an array")
    };
    let mut conv = Conversation::new(format);
    conv.messages = items
        .into_iter()
        .enumerate()
        .map(|(i, v)| read_message(format, v, "").map_err(|e| e.under(&format!("messages[{i}]"))))
        .collect::<Result<_, _>>()
        .map_err(|e| bad_input(e.to_string()))?;
    if let Some(s) = system {
        let prompt = to_value(s, "system")?;
        conv.system =
            Some(ctxfit_model::read_system(prompt).map_err(|e| bad_input(e.to_string()))?);
    }
    Ok(conv)
}

fn messages_to_py<'py>(py: Python<'py>, conv: &Conversation) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for m in &conv.messages {
        list.append(to_py(py, &write_message(conv.format, m))?)?;
    }
    Ok(list)
}

/// Estimated tokens of a text: `fast` (default), `chars4`, or the exact BPE counts `o200k` and `cl100k`.
///
/// >>> import ctxfit
/// >>> ctxfit.estimate_tokens("hello world", "o200k")
/// 2
#[pyfunction]
#[pyo3(signature = (text, estimator = "fast"))]
fn estimate_tokens(py: Python<'_>, text: String, estimator: &str) -> PyResult<usize> {
    let est = crate::estimator(estimator)?;
    py.detach(|| shielded("estimate_tokens", || est.count_text(&text)))
}

/// Estimated input tokens of a message list (either wire format), with its system prompt if given.
///
/// >>> import ctxfit
/// >>> ctxfit.count_tokens([{"role": "user", "content": "hi"}], system="Be terse.") > 0
/// True
#[pyfunction]
#[pyo3(signature = (messages, *, system = None, estimator = "fast"))]
fn count_tokens(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    system: Option<&Bound<'_, PyAny>>,
    estimator: &str,
) -> PyResult<usize> {
    let est = crate::estimator(estimator)?;
    let conv = conversation("count_tokens", messages, system, None)?;
    py.detach(|| {
        shielded("count_tokens", || {
            ctxfit_tokens::count_conversation(est.as_ref(), &conv)
        })
    })
}

/// A message list in another wire format (`anthropic`, `openai`, `responses`); what the target cannot carry is
/// named in a `UserWarning`.
///
/// >>> import ctxfit
/// >>> call = {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}}
/// >>> ctxfit.convert_messages([{"role": "assistant", "content": [call]}], "openai")[0]["tool_calls"][0]["id"]
/// 't1'
#[pyfunction]
#[pyo3(signature = (messages, to, *, source = None))]
fn convert_messages<'py>(
    messages: &Bound<'py, PyAny>,
    to: &str,
    source: Option<&str>,
) -> PyResult<Bound<'py, PyList>> {
    let py = messages.py();
    let target = wire_format(to)?;
    let conv = conversation("convert_messages", messages, None, source)?;
    let (converted, report) = shielded("convert_messages", || convert(&conv, target))?;
    if !report.is_lossless() {
        let lost: Vec<String> = report
            .dropped
            .iter()
            .map(|(what, n)| format!("{n} × {what}"))
            .collect();
        errors::warn(
            py,
            &format!(
                "converting to {to} left out what it cannot carry: {}",
                lost.join(", ")
            ),
        )?;
    }
    messages_to_py(py, &converted)
}

fn strip_level(name: &str) -> PyResult<StripLevel> {
    StripLevel::parse(name).ok_or_else(|| {
        unknown(
            "strip level",
            name,
            &[
                StripLevel::Minimal.name(),
                StripLevel::Moderate.name(),
                StripLevel::Aggressive.name(),
            ],
        )
    })
}

/// HTML (text, or bytes whose charset is sniffed) to Markdown at a strip level (`minimal`, `moderate`,
/// `aggressive`): `(markdown, stats)`, the stats with the sizes and the page's title, canonical URL, published
/// date and author when it states them (else `None`).
///
/// >>> import ctxfit
/// >>> markdown, stats = ctxfit.clean_html("<title>T</title><nav>menu</nav><p>Text</p>", "aggressive")
/// >>> markdown, stats["title"]
/// ('Text\n', 'T')
#[pyfunction]
#[pyo3(signature = (html, level = "moderate", base_url = None))]
fn clean_html<'py>(
    html: &Bound<'py, PyAny>,
    level: &str,
    base_url: Option<String>,
) -> PyResult<(String, Bound<'py, PyDict>)> {
    let py = html.py();
    let mut cleaner = HtmlCleaner::new(strip_level(level)?);
    if let Some(base) = &base_url {
        if !ctxfit_html::is_absolute_url(base) {
            return Err(errors::bad_input(format!(
                "base_url {base:?}: {}",
                ctxfit_html::NOT_AN_ABSOLUTE_URL
            )));
        }
        cleaner = cleaner.with_base_url(base.clone());
    }
    enum Source {
        Text(String),
        Bytes(Vec<u8>),
    }
    let source = if let Ok(s) = html.cast::<PyString>() {
        Source::Text(s.to_cow()?.into_owned())
    } else if let Ok(b) = html.cast::<PyBytes>() {
        Source::Bytes(b.as_bytes().to_vec())
    } else {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "clean_html takes the page as str or bytes",
        ));
    };
    if matches!(&source, Source::Bytes(b) if ctxfit_import::files::is_gzip(b)) {
        return Err(errors::bad_input(
            "clean_html: the page is gzipped: inflate it first (gzip.decompress), as an HTTP client does for \
             Content-Encoding: gzip",
        ));
    }
    if let Source::Bytes(b) = &source {
        if let Some(kind) = ctxfit_html::binary_kind(b, None) {
            return Err(errors::bad_input(format!(
                "clean_html: not a web page: the bytes are {kind}, not text"
            )));
        }
    }
    let (markdown, stats, meta) = py.detach(|| {
        shielded("clean_html", || {
            // bytes are decoded as a browser would (byte-order mark, <meta charset>, UTF-8, windows-1252)
            let (text, original_size) = match &source {
                Source::Text(t) => (std::borrow::Cow::Borrowed(t.as_str()), t.len()),
                Source::Bytes(b) => (ctxfit_html::decode_html(b, None).0, b.len()),
            };
            let (markdown, _) = cleaner.clean(&text);
            let stats = ctxfit_html::CleanStats::new(original_size, markdown.len());
            (markdown, stats, page_metadata(&text, base_url.as_deref()))
        })
    })?;
    let d = PyDict::new(py);
    d.set_item("original_size", stats.original_size)?;
    d.set_item("cleaned_size", stats.cleaned_size)?;
    d.set_item("reduction_percent", stats.reduction_percent)?;
    d.set_item("title", meta.title)?;
    d.set_item("canonical_url", meta.canonical_url)?;
    d.set_item("published", meta.published)?;
    d.set_item("author", meta.author)?;
    Ok((markdown, d))
}

/// Fetch a page and return seed 003's result dict (`success`, `data`, `tokens_used`, `was_truncated`,
/// `original_size`, `is_chunked`, `chunk_number`, `total_chunks`, `message`, and the page's metadata).
#[pyfunction]
#[pyo3(signature = (
    url,
    strip_level = "moderate",
    max_chars = Whole::of(ctxfit_webfetch::DEFAULT_MAX_CHARS as u64),
    chunk = None,
    *,
    timeout = Real::of(30.0),
    max_bytes = Whole::of(10 << 20),
    allow_private = false,
    allow_addresses = None,
))]
#[allow(clippy::too_many_arguments)]
fn fetch_webpage_markdown<'py>(
    py: Python<'py>,
    url: &str,
    strip_level: &str,
    max_chars: Whole,
    chunk: Option<Whole>,
    timeout: Real,
    max_bytes: Whole,
    allow_private: bool,
    allow_addresses: Option<Vec<String>>,
) -> PyResult<Bound<'py, PyAny>> {
    let max_chars = max_chars.at_least_usize("max_chars", 1)?;
    let chunk = chunk.map(|c| c.get_usize("chunk")).transpose()?;
    let net = Net {
        timeout,
        max_bytes: max_bytes.get("max_bytes")?,
        allow_private,
        allow_addresses,
    };
    let options = fetch_options(strip_level, max_chars, chunk, net)?;
    let url = url.to_owned();
    let result = py.detach(|| {
        shielded("fetch_webpage_markdown", || {
            Fetcher::new(options).fetch_markdown(&url)
        })
    })?;
    let v = serde_json::to_value(&result).map_err(|e| PyValueError::new_err(e.to_string()))?;
    to_py(py, &v)
}

/// The network arguments of the page tool, as Python gives them.
pub(crate) struct Net {
    /// Seconds the whole fetch may take.
    pub timeout: Real,
    /// Bytes of page read at most.
    pub max_bytes: u64,
    /// Allow loopback, private and link-local addresses.
    pub allow_private: bool,
    /// Non-public addresses allowed one by one.
    pub allow_addresses: Option<Vec<String>>,
}

/// The page tool's options from the Python arguments (shared by `fetch_webpage_markdown` and `PageTool`).
pub(crate) fn fetch_options(
    strip_level: &str,
    max_chars: usize,
    chunk: Option<usize>,
    net: Net,
) -> PyResult<FetchOptions> {
    let Net {
        timeout,
        max_bytes,
        allow_private,
        allow_addresses,
    } = net;
    let timeout = timeout
        .seconds("timeout")?
        .filter(|t| !t.is_zero())
        .ok_or_else(|| PyValueError::new_err("timeout must be a positive number of seconds"))?;
    let mut options = FetchOptions {
        strip_level: crate::strip_level(strip_level)?,
        max_chars,
        chunk,
        timeout,
        max_bytes,
        ..FetchOptions::default()
    };
    options.addresses.allow_private = allow_private;
    for a in allow_addresses.unwrap_or_default() {
        let ip: IpAddr = a.parse().map_err(|_| {
            PyValueError::new_err(format!("allow_addresses: `{a}` is not an IP address"))
        })?;
        options.addresses.allowed.push(ip);
    }
    Ok(options)
}

fn source_format(name: Option<&str>) -> PyResult<Option<SourceFormat>> {
    name.map(|n| {
        SourceFormat::from_name(n).ok_or_else(|| {
            let names: Vec<&str> = SourceFormat::ALL.iter().map(|f| f.name()).collect();
            unknown("format", n, &names)
        })
    })
    .transpose()
}

/// The errno Python picks an `OSError` subclass by: the system's own, else the one its kind stands for (a
/// folder given for a file is `IsADirectoryError`, not `[Errno 0]`).
fn errno_of(e: &std::io::Error) -> i32 {
    use std::io::ErrorKind as K;
    e.raw_os_error().unwrap_or(match e.kind() {
        K::NotFound => 2,          // ENOENT: FileNotFoundError
        K::PermissionDenied => 13, // EACCES: PermissionError
        K::IsADirectory => 21,     // EISDIR: IsADirectoryError
        K::NotADirectory => 20,    // ENOTDIR: NotADirectoryError
        K::FileTooLarge => 27,     // EFBIG
        K::InvalidInput => 22,     // EINVAL
        _ => 5,                    // EIO
    })
}

/// An import error as a Python exception, named by its file (malformed JSON by line and column).
fn import_error(path: &str, e: ImportError) -> PyErr {
    match e {
        ImportError::Io { source, .. } => {
            PyOSError::new_err((errno_of(&source), format!("{path}: cannot read: {source}")))
        }
        ImportError::Model(ctxfit_model::ModelError::Json {
            line,
            column,
            message,
        }) => bad_input(format!("{path}:{line}:{column}: malformed JSON: {message}")),
        ImportError::NotUtf8 { .. } => bad_input(format!("{path}:{e}")),
        other => bad_input(format!("{path}: {other}")),
    }
}

/// The sessions of the file at `file` (a name need not be UTF-8: it is read by its own bytes, and named in
/// messages as `Path::display` shows it).
fn load(py: Python<'_>, file: &Path, format: Option<&str>) -> PyResult<Vec<Session>> {
    let format = source_format(format)?;
    let path = file.display().to_string();
    let path = path.as_str();
    py.detach(|| shielded("load_session", || ctxfit_import::files::load_file(file, format)))?
    .map_err(|e| import_error(path, e))
    .and_then(|sessions| {
        // a format forced on a file of another finds nothing: say so rather than answer an empty session
        if sessions.iter().all(|s| s.conversation.messages.is_empty()) {
            if let Some(forced) = format {
                let found = ctxfit_import::files::read_file(file)
                    .ok()
                    .and_then(|b| ctxfit_import::files::decode_text(b).ok())
                    .and_then(|t| ctxfit_import::detect(&t));
                if let Some(found) = found.filter(|f| *f != forced) {
                    return Err(errors::bad_input(format!(
                        "{path}: no {forced} session in the file; it reads as {found} (leave format out to detect it)"
                    )));
                }
            }
        }
        // what the file held that reads but is probably wrong (a last line cut short): a warning, once
        let mut said: Vec<&str> = Vec::new();
        for p in sessions.iter().flat_map(|s| &s.problems) {
            if !said.contains(&p.as_str()) {
                said.push(p);
                errors::warn(py, &format!("{path}: {p}"))?;
            }
        }
        Ok(sessions)
    })
}

/// The messages of a recorded session (any importer's format, gzipped or not) in its wire format: session
/// `index` of a file that holds several (tau-bench episodes, Letta agents), counted from the end when negative
/// as a list's index is.
#[pyfunction]
#[pyo3(signature = (path, index = 0, *, format = None))]
fn load_session<'py>(
    py: Python<'py>,
    path: FilePath,
    index: isize,
    format: Option<&str>,
) -> PyResult<Bound<'py, PyList>> {
    let FilePath(path) = path;
    let name = path.display().to_string();
    let sessions = load(py, &path, format)?;
    let count = sessions.len();
    if count > 1 && index == 0 {
        let names: Vec<&str> = (sessions.iter().skip(1))
            .map(|s| s.name.as_str())
            .take(3)
            .collect();
        errors::warn(
            py,
            &format!(
                "{name} holds {count} sessions (after the first: {}{}): load_session reads the first; \
                 load_sessions reads them all",
                names.join(", "),
                if count > 4 { ", …" } else { "" }
            ),
        )?;
    }
    let at = if index < 0 {
        count.checked_sub(index.unsigned_abs())
    } else {
        Some(index.unsigned_abs())
    };
    let s = at
        .and_then(|at| sessions.into_iter().nth(at))
        .ok_or_else(|| {
            pyo3::exceptions::PyIndexError::new_err(if count == 0 {
                // (an empty file: `load_sessions` gives `[]`, as a folder of none would)
                format!("{name}: session {index} asked for, the file holds none (it is empty)")
            } else {
                format!("{name}: session {index} asked for, the file holds {count}")
            })
        })?;
    messages_to_py(py, &s.conversation)
}

/// Every session of a file: dicts with `name`, `source` (the importer's format), `format` (the wire format of
/// `messages`), `messages`, `system` and `tools` (None when the log has none).
#[pyfunction]
#[pyo3(signature = (path, *, format = None))]
fn load_sessions<'py>(
    py: Python<'py>,
    path: FilePath,
    format: Option<&str>,
) -> PyResult<Bound<'py, PyList>> {
    let FilePath(path) = path;
    let out = PyList::empty(py);
    for s in load(py, &path, format)? {
        let d = PyDict::new(py);
        d.set_item("name", &s.name)?;
        d.set_item("source", s.source.name())?;
        d.set_item("format", s.conversation.format.name())?;
        d.set_item("messages", messages_to_py(py, &s.conversation)?)?;
        let doc = ctxfit_model::to_value(&Conversation {
            messages: Vec::new(),
            envelope: ctxfit_model::Envelope::Object,
            ..s.conversation.clone()
        });
        let field = |k: &str| doc.get(k).filter(|v| !v.is_null());
        d.set_item("system", field("system").map(|v| to_py(py, v)).transpose()?)?;
        d.set_item("tools", field("tools").map(|v| to_py(py, v)).transpose()?)?;
        out.append(d)?;
    }
    Ok(out)
}

/// Replay recorded sessions (files or folders) request by request under each policy: `ctxfit replay --json`'s
/// document (`prices`, a row per policy in `policies`, every replay in `sessions`). Policies: `none`, `oracle`
/// (evaluation only: it reads the future), built-in profiles, policy files (`FILE:PROFILE` for one of a file's
/// profiles); one name or a list; default: all of those built in (an empty list is refused). `prices`: `anthropic`
/// (the default), `openai`, `uncached`, `all`, or several, as a list or comma-separated. `cache_ttl`: seconds the
/// provider keeps a cached prefix (0: forever), for logs that record times.
///
/// >>> report = ctxfit.replay(["sessions/"], ["none", "oracle", "smart"], prices="all")  # doctest: +SKIP
/// >>> [(row["policy"], row["tokens_saved"], row["recall"]) for row in report["policies"]]  # doctest: +SKIP
#[pyfunction]
#[pyo3(signature = (paths, policies = None, *, prices = None, estimator = "fast", cache_ttl = Whole::of(ctxfit_compactor::DEFAULT_CACHE_TTL)))]
fn replay<'py>(
    py: Python<'py>,
    paths: &Bound<'py, PyAny>,
    policies: Option<&Bound<'py, PyAny>>,
    prices: Option<&Bound<'py, PyAny>>,
    estimator: &str,
    cache_ttl: Whole,
) -> PyResult<Bound<'py, PyAny>> {
    let cache_ttl = cache_ttl.get("cache_ttl")?;
    // one policy, or price model, may be given as a string, several as a list
    let names = |arg: Option<&Bound<'py, PyAny>>, what: &str| -> PyResult<Option<Vec<String>>> {
        let Some(arg) = arg.filter(|a| !a.is_none()) else {
            return Ok(None);
        };
        match arg.extract::<String>() {
            Ok(one) => Ok(Some(vec![one])),
            Err(_) => arg.extract::<Vec<String>>().map(Some).map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err(format!(
                    "{what}: expected a name or a list of names, got {}",
                    arg.get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default()
                ))
            }),
        }
    };
    let policies = names(policies, "policies")?;
    let prices = names(prices, "prices")?.unwrap_or_else(|| vec!["anthropic".to_owned()]);
    if prices.is_empty() {
        return Err(bad_input(
            "replay() was given no price models: pass one's name or a list of them (None: anthropic)",
        ));
    }
    // a str, bytes or os.PathLike is one path; any other iterable a list of them (bytes are one path, not a
    // list of numbers)
    let paths: Vec<std::path::PathBuf> = if let Ok(FilePath(s)) = paths.extract::<FilePath>() {
        vec![s]
    } else {
        let got = || {
            paths
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        };
        paths
            .try_iter()
            .map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err(format!(
                    "replay() takes a path or a list of paths, got {}",
                    got()
                ))
            })?
            .map(|p| p?.extract::<FilePath>().map(|FilePath(p)| p))
            .collect::<PyResult<_>>()?
    };
    if paths.is_empty() {
        // (the CLI says the same of a folder without sessions: an empty replay is a mistake, not a result)
        return Err(bad_input(
            "replay() was given no paths: pass a session file, a folder, or a list of them",
        ));
    }
    if policies.as_ref().is_some_and(Vec::is_empty) {
        return Err(bad_input(
            "replay() was given no policies: pass a policy's name or a list of them (None: every one built in)",
        ));
    }
    let mut models = Vec::new();
    for name in prices.iter().flat_map(|p| p.split(',')).map(str::trim) {
        let add: Vec<PriceModel> = if name == "all" {
            PriceModel::ALL.to_vec()
        } else {
            vec![PriceModel::parse(name).ok_or_else(|| {
                unknown(
                    "price model",
                    name,
                    &["anthropic", "openai", "uncached", "all"],
                )
            })?]
        };
        for m in add {
            if !models.contains(&m) {
                models.push(m);
            }
        }
    }
    let policies = Policy::resolve_all(
        &policies.unwrap_or_else(ctxfit_replay::default_policies),
        &env,
    )
    .map_err(bad_input)?;
    crate::estimator(estimator)?;
    let mut files = Vec::new();
    for path in paths {
        let p = path.display().to_string();
        if path.is_dir() {
            let found =
                ctxfit_import::files::session_files(&path).map_err(|e| import_error(&p, e))?;
            // what the walk could not read (a socket, a FIFO, an unreadable folder) is named, as the CLI does
            for (entry, why) in &found.skipped {
                errors::warn(py, &format!("{}: passed over: {why}", entry.display()))?;
            }
            if found.files.is_empty() {
                return Err(bad_input(format!("{p}: no session files in the folder")));
            }
            files.extend(found.files);
        } else {
            files.push(path);
        }
    }
    let registry = registry()?;
    let estimator_name = estimator.to_owned();
    let make_estimator = move || {
        ctxfit_tokens::estimator(&estimator_name)
            .unwrap_or_else(|| Box::new(ctxfit_tokens::FastEstimator))
    };
    // every (session, policy) pair of a batch in parallel, collected in job order: the same as a serial run
    let replay_batch = |py: Python<'_>, batch: &[(String, Session)]| {
        py.detach(|| {
            shielded("replay", || {
                let inputs: Vec<ctxfit_replay::SessionInput<'_>> = batch
                    .iter()
                    .map(|(label, session)| ctxfit_replay::SessionInput {
                        label,
                        conversation: &session.conversation,
                        timing: ctxfit_replay::Timing {
                            times: &session.times,
                            cache_ttl,
                            stated_ttl: session.cache_ttl,
                            billed: &session.billed,
                        },
                    })
                    .collect();
                ctxfit_replay::replay_batch(
                    &inputs,
                    &policies,
                    &registry,
                    &make_estimator,
                    models[0].prices(),
                )
                .map_err(|e| e.to_string())
            })
        })?
        .map_err(bad_input)
    };
    // the files' sessions replayed a batch at a time, as the CLI does: a folder of any size is never all in memory
    let mut replays = Vec::new();
    let mut batch: Vec<(String, Session)> = Vec::new();
    for (k, file) in files.iter().enumerate() {
        let f = file.display();
        for s in load(py, file, None)? {
            let label = if s.name.is_empty() {
                f.to_string()
            } else {
                format!("{f} — {}", s.name)
            };
            batch.push((label, s));
        }
        if batch.len() >= ctxfit_replay::REPLAY_BATCH || k + 1 == files.len() {
            replays.extend(replay_batch(py, &batch)?);
            batch.clear();
        }
    }
    let doc = py.detach(|| {
        shielded("replay", || {
            let rows = ctxfit_replay::policy_rows(&replays, &models);
            ctxfit_replay::document(&rows, &replays, &models)
        })
    })?;
    to_py(py, &doc)
}

/// The built-in profiles.
#[pyfunction]
fn profiles() -> Vec<&'static str> {
    BUILT_IN_PROFILES.to_vec()
}

/// The token estimators.
#[pyfunction]
fn estimators() -> Vec<&'static str> {
    ctxfit_tokens::estimator_names().to_vec()
}

#[pymodule]
fn _ctxfit(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("CtxfitError", py.get_type::<CtxfitError>())?;
    m.add("PromptTooLarge", py.get_type::<PromptTooLarge>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    m.add_class::<Compactor>()?;
    m.add_function(wrap_pyfunction!(compactor::_compactor_from_pickle, m)?)?;
    m.add_class::<page_tool::PageTool>()?;
    m.add("PAGE_TOOL_HINT", ctxfit_webfetch::SYSTEM_PROMPT_HINT)?;
    m.add_function(wrap_pyfunction!(estimate_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(count_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(convert_messages, m)?)?;
    m.add_function(wrap_pyfunction!(clean_html, m)?)?;
    m.add_function(wrap_pyfunction!(fetch_webpage_markdown, m)?)?;
    m.add_function(wrap_pyfunction!(load_session, m)?)?;
    m.add_function(wrap_pyfunction!(load_sessions, m)?)?;
    m.add_function(wrap_pyfunction!(replay, m)?)?;
    m.add_function(wrap_pyfunction!(profiles, m)?)?;
    m.add_function(wrap_pyfunction!(estimators, m)?)?;
    Ok(())
}
