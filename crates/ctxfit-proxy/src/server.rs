//! The HTTP side of `ctxfit proxy`: listen, compact the requests of the three APIs, forward them, and relay the
//! upstream's answer as it arrives.
//!
//! * `POST /v1/messages` (Anthropic), `POST /v1/chat/completions` (OpenAI Chat), `POST /v1/responses` (OpenAI
//!   Responses, when the client sends the whole conversation in `input` and no `previous_response_id`) — each
//!   also under a provider's own base path (`/api/v1/chat/completions`; by how the path ends) — are compacted
//!   by the [`Gateway`] of the request's profile; `POST /v1/messages/count_tokens` counts the request as it
//!   would be sent (compacted by a gateway of its own, so no conversation changes); every other request is
//!   forwarded untouched, to the Anthropic upstream when it carries `x-api-key`, `anthropic-version` or
//!   `anthropic-beta`, or it carries no credentials and is Claude Code's reachability check (`HEAD /api/hello`)
//!   or under `/api/` while the OpenAI upstream is the OpenAI API (a server of the user's own, such as Ollama,
//!   has an API of its own there), else to ChatGPT's backend when its path is under `/backend-api/` (where `POST /backend-api/codex/responses` is
//!   compacted as `/v1/responses` is), else to the OpenAI one.
//! * A body compressed with `zstd`, `gzip` or `deflate` is inflated (bounded by the body cap) and compacted, and
//!   goes on uncompressed; one in another coding goes through untouched (`coding`).
//! * The answer — server-sent events included — is relayed frame by frame as the upstream sends it, never
//!   buffered; an upstream error is passed through unchanged, but for a refusal of a compacted request as too long
//!   for the model's context window: the conversation learns the window from it ([`crate::window`]), and the
//!   request is compacted again within it and sent once more (`x-ctxfit-window` on the answer).
//! * `x-ctxfit-bypass: 1` forwards a request untouched; `x-ctxfit-profile: NAME` picks a profile;
//!   `x-ctxfit-session: ID` names the conversation. The answer carries `x-ctxfit-conversation`,
//!   `x-ctxfit-tokens-before`, `x-ctxfit-tokens-after` and `x-ctxfit-tokens-saved`, and
//!   `x-ctxfit-cache-expired: 1` when the request came after a pause longer than the provider's cache lives.
//! * A body that does not read for its lone surrogate escapes (`"\ud83d"`, half of an emoji a client cut in two:
//!   the Anthropic API refuses it, and every later request that repeats it) is forwarded with each written
//!   `\ufffd`; the answer says how many in `x-ctxfit-mended` ([`Gateway::forward_shared`]).
//! * `GET /ctxfit/stats` (JSON) and `GET /metrics` (Prometheus text): requests, tokens in and forwarded, tokens
//!   saved, conversations, per API.
//! * `HEAD /`, a client's reachability check that names no API (Claude Code sends one first), is answered by the
//!   proxy itself with 200.
//! * Credentials (`x-api-key`, `authorization`) are forwarded and never logged or stored; only the configured
//!   upstreams are ever called; a body over the size cap gets 413, a malformed one a 400 in the API's own error
//!   shape, an unreachable upstream a 502.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ctxfit_compactor::{PolicyFile, Settings};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::service::service_fn;
pub use hyper::Uri;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

use crate::body::{Api, BodyError, RequestBody};
use crate::gateway::Gateway;
use crate::idle::{BoxError, Idle};
use crate::state::{Store, StoreError, StoreLimits};
use crate::usage::{reported_usage, UsageTap};

mod coding;
use coding::Coding;
mod intake;
mod retry;
use retry::{within_window, Again};
mod tls;
use intake::{make_room, need_of_body, need_of_size};
mod stats;
use stats::{count, metrics_text, stats_json, ApiStats};

type Body = BoxBody<Bytes, BoxError>;

/// How the proxy runs.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// Origin of the Anthropic API (`https://api.anthropic.com`); the request's path is appended.
    pub anthropic: Uri,
    /// Origin of the OpenAI API (`https://api.openai.com`).
    pub openai: Uri,
    /// Origin of ChatGPT's backend (`https://chatgpt.com`), where requests under `/backend-api/` go: Codex CLI
    /// signed in with ChatGPT sends its Responses requests to `/backend-api/codex/responses`.
    pub chatgpt: Uri,
    /// The policy (profiles) and the profile used when a request names none (`None`: the policy's
    /// `default_profile`, else its only profile, else `smart`: [`PolicyFile::default_name`]).
    pub policy: PolicyFile,
    pub profile: Option<String>,
    /// Bytes of request body accepted at most.
    pub max_body: usize,
    /// Conversations kept per profile.
    pub max_conversations: usize,
    /// Bytes of the conversations' last requests kept per profile, to spare their next requests' identity the
    /// hashing of what they repeat ([`Gateway::max_known_bytes`]; 0: none kept).
    pub max_known_bytes: usize,
    /// Conversations idle this long are forgotten (a returning one is replayed to the same bytes).
    pub max_idle: Option<Duration>,
    /// Time allowed to connect to the upstream.
    pub connect_timeout: Duration,
    /// Time a client has to send a request's headers; a slower one is disconnected.
    pub header_timeout: Duration,
    /// The longest pause a client may make while sending a request's body (past it: 408, connection closed).
    pub body_timeout: Duration,
    /// Time the upstream may be silent: before its answer begins (the client gets a 504 in the API's shape), and
    /// in the middle of it (the answer is cut off: the client sees it cut short, never complete).
    pub upstream_timeout: Duration,
    /// Directory of the state kept across restarts (`--state`); `None`: memory only.
    pub state: Option<std::path::PathBuf>,
    /// What the state keeps at most.
    pub state_limits: StoreLimits,
    /// How long the provider keeps its prompt cache, overriding what requests state (`None`: what each request
    /// states, else the profile's `cache_ttl`).
    pub cache_ttl: Option<Duration>,
    /// Bytes of heap the proxy may use, as `memory_in_use` counts them: above them the conversations used least
    /// recently are forgotten, and a request that still does not fit is answered 503 with `retry-after`.
    pub max_memory: Option<usize>,
    /// The bytes of heap in use (the binary's counting allocator); without it no memory cap applies.
    pub memory_in_use: Option<fn() -> usize>,
    /// Serve HTTPS with this certificate and key (`--tls-cert`, `--tls-key`) instead of plain HTTP: Codex CLI
    /// signed in with ChatGPT sends only to an `https://` base URL.
    pub tls: Option<TlsFiles>,
}

/// A certificate chain and its private key, PEM files, for the proxy's own HTTPS: the key in a file of its own, or
/// (`key: None`) in the certificate's file, after or before the chain.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub cert: std::path::PathBuf,
    pub key: Option<std::path::PathBuf>,
}

impl Default for ProxyConfig {
    fn default() -> Self {
        ProxyConfig {
            anthropic: Uri::from_static("https://api.anthropic.com"),
            openai: Uri::from_static("https://api.openai.com"),
            chatgpt: Uri::from_static("https://chatgpt.com"),
            policy: PolicyFile::default(),
            profile: None,
            max_body: 64 << 20,
            max_conversations: crate::gateway::DEFAULT_MAX_CONVERSATIONS,
            max_known_bytes: crate::gateway::DEFAULT_MAX_KNOWN_BYTES,
            max_idle: Some(Duration::from_secs(24 * 3600)),
            connect_timeout: Duration::from_secs(10),
            header_timeout: Duration::from_secs(30),
            body_timeout: Duration::from_secs(30),
            upstream_timeout: Duration::from_secs(600),
            state: None,
            cache_ttl: None,
            max_memory: None,
            memory_in_use: None,
            state_limits: StoreLimits::default(),
            tls: None,
        }
    }
}

struct Shared {
    config: ProxyConfig,
    store: Option<Arc<Store>>,
    /// Each profile's gateway: the map's lock is held only to find one, never while a request is compacted.
    gateways: Mutex<HashMap<String, Arc<Gateway>>>,
    stats: Mutex<BTreeMap<&'static str, ApiStats>>,
    client: Client<hyper_rustls::HttpsConnector<HttpConnector>, Body>,
    /// The heap in use once started, before any request: what a request can never have for itself under
    /// `--max-memory`.
    memory_floor: usize,
}

/// A running proxy's address, and the task serving it.
pub struct Running {
    pub addr: SocketAddr,
    pub task: tokio::task::JoinHandle<()>,
    /// The state kept across restarts, if any: [`Running::stop`] writes out what is queued.
    pub store: Option<Arc<Store>>,
}

impl Running {
    /// Stop serving, and wait until the state (if any) holds every request answered so far.
    pub fn stop(self) {
        self.task.abort();
        if let Some(store) = &self.store {
            store.flush();
        }
    }
}

/// Why the proxy cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Policy(String),
    #[error(transparent)]
    State(#[from] StoreError),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Tls(String),
}

fn settings(config: &ProxyConfig, profile: Option<&str>) -> Result<Settings, String> {
    config
        .policy
        .resolve(profile.or(config.profile.as_deref()), None, &|k| {
            std::env::var(k).ok()
        })
        .map_err(|e| e.to_string())
}

/// The gateway of one profile, with the configured bounds and the state, if any.
fn gateway(
    config: &ProxyConfig,
    store: Option<&Arc<Store>>,
    settings: Settings,
) -> Result<Gateway, String> {
    let mut g = Gateway::new(settings).map_err(|e| e.to_string())?;
    g.max_conversations = config.max_conversations;
    g.max_known_bytes = config.max_known_bytes;
    g.max_idle = config.max_idle;
    g.cache_ttl = config.cache_ttl.map(|d| d.as_secs());
    if let Some(store) = store {
        g.set_store(Arc::clone(store));
    }
    Ok(g)
}

/// Listen on `addr` and serve until the task is dropped or aborted.
pub async fn start(config: ProxyConfig, addr: &str) -> Result<Running, StartError> {
    // the default profile must resolve and its rules build before anything is accepted
    let default = settings(&config, None).map_err(StartError::Policy)?;
    let store = match &config.state {
        Some(dir) => Some(Arc::new(Store::open(dir, config.state_limits)?)),
        None => None,
    };
    let gateway = gateway(&config, store.as_ref(), default.clone()).map_err(StartError::Policy)?;
    let tls = match &config.tls {
        Some(files) => Some(tls::acceptor(files).map_err(StartError::Tls)?),
        None => None,
    };
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| StartError::Listen {
            addr: addr.to_owned(),
            source,
        })?;
    let local = listener.local_addr().map_err(|source| StartError::Listen {
        addr: addr.to_owned(),
        source,
    })?;
    let mut http = HttpConnector::new();
    http.set_connect_timeout(Some(config.connect_timeout));
    // a request is written in a few pieces: without this, delayed acknowledgements add tens of milliseconds
    http.set_nodelay(true);
    http.enforce_http(false);
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_webpki_roots()
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    let client = Client::builder(TokioExecutor::new()).build(https);
    let memory_floor = config.memory_in_use.map_or(0, |in_use| in_use());
    let shared = Arc::new(Shared {
        gateways: Mutex::new(HashMap::from([(
            default.profile.clone(),
            Arc::new(gateway),
        )])),
        stats: Mutex::new(BTreeMap::new()),
        config,
        store: store.clone(),
        client,
        memory_floor,
    });
    let header_timeout = shared.config.header_timeout;
    let task = tokio::spawn(async move {
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                // out of file descriptors (or another passing fault): wait before accepting again, rather than
                // spinning on the error while the connections already open finish
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            let shared = Arc::clone(&shared);
            let tls = tls.clone();
            tokio::spawn(async move {
                match tls {
                    None => serve(stream, shared, header_timeout).await,
                    // the handshake has the time the headers have: a client that stalls in it holds nothing
                    Some(acceptor) => {
                        let started = tokio::time::Instant::now();
                        // plain HTTP sent to the HTTPS port is told so, rather than cut off without a word
                        if let Ok(false) =
                            tokio::time::timeout(header_timeout, tls::begins_handshake(&stream))
                                .await
                        {
                            tls::refuse_plain_http(stream, header_timeout).await;
                            return;
                        }
                        let handshake = acceptor.accept(stream);
                        let left = header_timeout.saturating_sub(started.elapsed());
                        if let Ok(Ok(stream)) = tokio::time::timeout(left, handshake).await {
                            serve(stream, shared, header_timeout).await;
                        }
                    }
                }
            });
        }
    });
    Ok(Running {
        addr: local,
        task,
        store,
    })
}

/// Serve the requests of one connection, plain or over TLS.
async fn serve<IO>(io: IO, shared: Arc<Shared>, header_timeout: Duration)
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req| {
        let shared = Arc::clone(&shared);
        async move { Ok::<_, Infallible>(handle(shared, req).await) }
    });
    // a connection that fails (the client went away) ends alone
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(header_timeout)
        .serve_connection(TokioIo::new(io), service)
        .await;
}

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}

fn json_response(status: StatusCode, body: String) -> Response<Body> {
    let mut r = Response::new(full(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/json"));
    r
}

/// An error in the API's own shape.
fn api_error(api: Option<Api>, status: StatusCode, message: &str) -> Response<Body> {
    json_response(status, error_body(api, status, message))
}

/// The body of an error in the API's own shape (Anthropic's when no API is known).
fn error_body(api: Option<Api>, status: StatusCode, message: &str) -> String {
    let kind = match status {
        StatusCode::PAYLOAD_TOO_LARGE => "request_too_large",
        StatusCode::BAD_GATEWAY | StatusCode::GATEWAY_TIMEOUT => "api_error",
        StatusCode::SERVICE_UNAVAILABLE => "overloaded_error",
        _ => "invalid_request_error",
    };
    let body = match api {
        Some(Api::AnthropicMessages) | None => serde_json::json!({
            "type": "error",
            "error": {"type": kind, "message": message},
        }),
        Some(Api::OpenAiChat | Api::OpenAiResponses) => serde_json::json!({
            "error": {"message": message, "type": kind, "param": null, "code": null},
        }),
    };
    body.to_string()
}

/// Headers that belong to one connection, not to the request.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
];

fn forwarded_headers(from: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::with_capacity(from.len());
    for (k, v) in from {
        let name = k.as_str();
        if HOP_BY_HOP.contains(&name) || name.starts_with("x-ctxfit-") {
            continue;
        }
        out.append(k.clone(), v.clone());
    }
    out
}

/// The first transfer coding of a request other than `chunked` (the one hyper removes), if it names one.
fn unsupported_transfer_coding(headers: &HeaderMap) -> Option<String> {
    for value in headers.get_all(hyper::header::TRANSFER_ENCODING) {
        let value = String::from_utf8_lossy(value.as_bytes());
        let other = value
            .split(',')
            .map(str::trim)
            .find(|c| !c.is_empty() && !c.eq_ignore_ascii_case("chunked"));
        if let Some(coding) = other {
            return Some(coding.to_owned());
        }
    }
    None
}

/// Where ChatGPT's backend answers: requests under it go to [`ProxyConfig::chatgpt`].
const CHATGPT_PATHS: &str = "/backend-api/";

/// Anthropic's endpoints beside its versioned API (Claude Code's settings, metrics, profile) are under `/api/`;
/// the OpenAI API has none there.
const ANTHROPIC_PATHS: &str = "/api/";
/// Claude Code's reachability check, sent before it starts with no header that names Anthropic.
const ANTHROPIC_HELLO: &str = "/api/hello";
/// The OpenAI API's own host. A server that speaks the OpenAI API beside an API of its own may have that one under
/// `/api/` too (Ollama's `/api/chat`, `/api/tags`; Open WebUI's `/api/…`).
const OPENAI_API_HOST: &str = "api.openai.com";

/// Whether a request whose headers name no API, and that carries no credentials, is Anthropic's by its path:
/// Claude Code's reachability check always; anything else under `/api/` only when the OpenAI upstream is the
/// OpenAI API itself, which has nothing there — sent to a server of the user's own (Ollama), a request of its
/// native API goes there, never to a third party.
fn anthropic_by_path(path: &str, openai: &Uri) -> bool {
    path == ANTHROPIC_HELLO
        || (path.starts_with(ANTHROPIC_PATHS)
            && openai
                .host()
                .is_some_and(|h| h.eq_ignore_ascii_case(OPENAI_API_HOST)))
}

/// The API a request speaks, by the end of its path: what the official SDKs append to a base URL
/// (`/v1/messages`, `/chat/completions`, `/responses`), whatever the base URL's own path — `/v1` at the OpenAI
/// API, `/api/v1` at OpenRouter, `/openai/v1` at Groq, `/openai/deployments/NAME` at Azure, `/api/anthropic` at
/// a provider's Anthropic-compatible endpoint, `/backend-api/codex` at ChatGPT's backend (Codex CLI signed in
/// with ChatGPT). Only `POST` creates a message; the other endpoints under these (`/v1/messages/batches`,
/// `/v1/responses/ID/cancel`, an Assistants thread's `/messages`) end otherwise and go through untouched.
fn api_of(method: &Method, path: &str) -> Option<Api> {
    if method != Method::POST {
        return None;
    }
    if path.ends_with("/v1/messages") || path.ends_with("/v1/messages/count_tokens") {
        Some(Api::AnthropicMessages)
    } else if path.ends_with("/chat/completions") {
        Some(Api::OpenAiChat)
    } else if path.ends_with("/responses") {
        Some(Api::OpenAiResponses)
    } else {
        None
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().to_owned();
    if req.method() == Method::GET && path == "/ctxfit/stats" {
        return json_response(StatusCode::OK, stats_json(&shared));
    }
    if req.method() == Method::GET && path == "/metrics" {
        let mut r = Response::new(full(metrics_text(&shared)));
        r.headers_mut().insert(
            "content-type",
            HeaderValue::from_static("text/plain; version=0.0.4"),
        );
        return r;
    }
    if req.method() == Method::HEAD && path == "/" {
        // a client's reachability check (Claude Code sends one before its first request, with nothing that says
        // which API it is for): the proxy is what it reaches, and answers itself
        return Response::new(full(String::new()));
    }
    if req.headers().contains_key(hyper::header::UPGRADE) {
        // a protocol switch (Codex CLI opens the Responses API as a WebSocket first) is not relayed: refused at
        // once with 426, which the client takes as "no WebSocket here" and uses HTTPS instead — forwarding it
        // as a plain request would leave it retrying
        return api_error(
            Some(Api::OpenAiResponses),
            StatusCode::UPGRADE_REQUIRED,
            "ctxfit proxy relays the API over HTTP only, not over a WebSocket: send the request over HTTP(S)",
        );
    }
    let api = api_of(req.method(), &path);
    if let Some(coding) = unsupported_transfer_coding(req.headers()) {
        // a transfer coding besides chunked (`gzip, chunked`: no client sends one) belongs to the hop that ends
        // here: the proxy neither reads it nor can relay it (it would forward the coded bytes as the body), so it
        // refuses it, as HTTP says of a coding a server does not understand (501)
        return api_error(
            api,
            StatusCode::NOT_IMPLEMENTED,
            &format!(
                "ctxfit proxy: transfer coding `{coding}` is not supported: send the body as it is (or with \
                 Content-Encoding, which is relayed untouched)"
            ),
        );
    }
    let anthropic = matches!(api, Some(Api::AnthropicMessages))
        || (api.is_none()
            && (["x-api-key", "anthropic-version", "anthropic-beta"]
                .iter()
                .any(|h| req.headers().contains_key(*h))
                || (!req.headers().contains_key(hyper::header::AUTHORIZATION)
                    && anthropic_by_path(&path, &shared.config.openai))));
    let origin = if anthropic {
        &shared.config.anthropic
    } else if path.starts_with(CHATGPT_PATHS) {
        &shared.config.chatgpt
    } else {
        &shared.config.openai
    };
    let target = match upstream_uri(origin, req.uri()) {
        Ok(u) => u,
        Err(e) => return api_error(api, StatusCode::BAD_REQUEST, &e),
    };
    let (parts, body) = req.into_parts();
    let mut headers = forwarded_headers(&parts.headers);
    let bypass = header(&parts.headers, "x-ctxfit-bypass").is_some_and(|v| v.trim() == "1");
    // a body the client compressed is read when its coding is one the proxy knows (Codex CLI signed in with
    // ChatGPT sends zstd); in another (`br`, a list of codings) it goes through untouched, and the answer says why
    let encoding = header(&parts.headers, "content-encoding")
        .map(str::trim)
        .filter(|e| !e.is_empty() && !e.eq_ignore_ascii_case("identity"));
    let coding = encoding.and_then(Coding::parse);
    let unreadable = encoding.is_some() && coding.is_none();
    let mut extra = HeaderMap::new();

    let Some(api) = api.filter(|_| !bypass && !unreadable) else {
        // untouched: streamed through as it comes
        if let Some(api) = api {
            count(&shared, api, |s| {
                s.requests += 1;
                s.bypassed += 1;
            });
            if let Some(e) = encoding
                .filter(|_| unreadable)
                .and_then(|e| HeaderValue::from_str(&format!("content-encoding {e}")).ok())
            {
                extra.insert("x-ctxfit-untouched", e);
            }
        }
        let mut up = Request::new(body.map_err(BoxError::from).boxed());
        *up.method_mut() = parts.method;
        *up.uri_mut() = target;
        *up.headers_mut() = headers;
        return relay(&shared, None, up, extra, None).await;
    };

    let stated =
        header(&parts.headers, "content-length").and_then(|v| v.trim().parse::<u64>().ok());
    let room_for = |n: usize| {
        let gateways = shared.gateways.lock().unwrap_or_else(|p| p.into_inner());
        make_room(
            &shared.config,
            &gateways,
            shared.memory_floor,
            need_of_size(n),
        )
    };
    let over_memory = || {
        let (max, in_use) = (shared.config.max_memory, shared.config.memory_in_use);
        max.zip(in_use).is_some_and(|(max, in_use)| in_use() > max)
    };
    let bounds = intake::Bounds {
        max_body: shared.config.max_body,
        silence: shared.config.body_timeout,
        room_for: &room_for,
        over_memory: &over_memory,
    };
    let bytes = match intake::read_body(body, stated, bounds).await {
        Ok(b) => b,
        Err(unread) => {
            let mut r = refused(&shared, api, unread.status(), &unread.message());
            if unread.status() == StatusCode::REQUEST_TIMEOUT {
                // the rest of the body may still come: the connection cannot carry another request
                r.headers_mut()
                    .insert("connection", HeaderValue::from_static("close"));
            }
            return r;
        }
    };
    // a compressed body is inflated; the compressed bytes stay, to go as they came if it is not compacted
    let raw = bytes;
    let bytes = match coding {
        None => raw.clone(),
        Some(c) => match inflate(c, &raw, shared.config.max_body, &room_for) {
            Ok(b) => {
                count(&shared, api, |s| s.inflated += 1);
                b
            }
            Err((status, message)) => return refused(&shared, api, status, &message),
        },
    };
    // a Responses request that continues a stored response, or whose input is one string, is not ours
    let compactable = api != Api::OpenAiResponses || responses_compactable(&bytes);
    let profile = header(&parts.headers, "x-ctxfit-profile").map(str::to_owned);
    let session = header(&parts.headers, "x-ctxfit-session").map(str::to_owned);
    // a token count is of the request as it would be sent, and changes no conversation
    let preview = path.ends_with("/count_tokens");
    let forwarded = if compactable {
        match compact(
            &shared,
            api,
            &bytes,
            profile.as_deref(),
            session.as_deref(),
            preview,
        ) {
            Ok(f) => match f.over_budget {
                // the token guard: above the profile's own budget even with every stale result cut
                Some(over) if !preview => return too_long(&shared, api, over),
                _ => Some(f),
            },
            Err(refusal) => {
                let (status, message) = refusal.answer();
                return refused(&shared, api, status, &format!("ctxfit proxy: {message}"));
            }
        }
    } else {
        None
    };
    let mut usage_of = None;
    let mut forwarded_tokens = 0;
    let body = match forwarded {
        Some(f) => {
            if !preview {
                usage_of = Some(UsageOf {
                    profile: f.profile.clone(),
                    conversation: f.conversation.clone(),
                });
            }
            let (before, after) = (f.report.tokens_before as u64, f.report.tokens_after as u64);
            forwarded_tokens = after;
            count(&shared, api, |s| {
                s.requests += 1;
                s.compacted += 1;
                s.mended += u64::from(f.mended > 0);
                s.tokens_in += before;
                s.tokens_forwarded += after;
            });
            if f.mended > 0 {
                extra.insert(
                    HeaderName::from_static("x-ctxfit-mended"),
                    HeaderValue::from(f.mended),
                );
            }
            for (k, v) in [
                ("x-ctxfit-conversation", f.conversation.clone()),
                ("x-ctxfit-tokens-before", before.to_string()),
                ("x-ctxfit-tokens-after", after.to_string()),
                (
                    "x-ctxfit-tokens-saved",
                    before.saturating_sub(after).to_string(),
                ),
            ] {
                if let Ok(v) = HeaderValue::from_str(&v) {
                    extra.insert(HeaderName::from_static(k), v);
                }
            }
            if f.report.cache_expired {
                extra.insert(
                    HeaderName::from_static("x-ctxfit-cache-expired"),
                    HeaderValue::from_static("1"),
                );
            }
            // what was compacted goes uncompressed
            headers.remove("content-encoding");
            Bytes::from(f.body)
        }
        None => {
            count(&shared, api, |s| {
                s.requests += 1;
                s.bypassed += 1;
            });
            raw
        }
    };
    headers.insert("content-length", HeaderValue::from(body.len()));
    // the usage is read from the answer as it passes: ask for it uncompressed
    if usage_of.is_some() {
        headers.insert("accept-encoding", HeaderValue::from_static("identity"));
    }
    // a compacted request the provider refuses as too long for its model is compacted again under the budget
    // its refusal implies and sent once more
    let again = usage_of.as_ref().map(|_| Again {
        method: parts.method.clone(),
        target: target.clone(),
        headers: headers.clone(),
        request: bytes.clone(),
        profile: profile.clone(),
        session: session.clone(),
        sent: forwarded_tokens,
    });
    let mut up = Request::new(full(body));
    *up.method_mut() = parts.method;
    *up.uri_mut() = target;
    *up.headers_mut() = headers;
    match (usage_of, again) {
        (Some(of), Some(again)) => within_window(&shared, api, up, extra, of, again).await,
        _ => relay(&shared, Some(api), up, extra, None).await,
    }
}

/// The gateway of a profile, if the proxy has one.
fn gateway_of(shared: &Shared, profile: &str) -> Option<Arc<Gateway>> {
    (shared.gateways.lock().unwrap_or_else(|p| p.into_inner()))
        .get(profile)
        .cloned()
}

fn boxed(answer: Response<Incoming>) -> Response<Body> {
    answer.map(|b| b.map_err(BoxError::from).boxed())
}

/// A request of `api` refused before the upstream hears of it: counted, and answered in the API's shape (a 503
/// says when to retry).
fn refused(shared: &Shared, api: Api, status: StatusCode, message: &str) -> Response<Body> {
    count(shared, api, |s| {
        s.requests += 1;
        s.refused += 1;
    });
    let mut r = api_error(Some(api), status, message);
    if status == StatusCode::SERVICE_UNAVAILABLE {
        r.headers_mut()
            .insert("retry-after", HeaderValue::from_static("5"));
    }
    r
}

/// The token guard's refusal of a request above the profile's `request_budget` after escalation, in the words and
/// shape the provider refuses a request too long for its model with (Anthropic's `prompt is too long: N tokens > M
/// maximum`, OpenAI's code `context_length_exceeded`), so that the client does what it does with the provider's.
fn too_long(shared: &Shared, api: Api, over: ctxfit_tokens::BudgetError) -> Response<Body> {
    count(shared, api, |s| {
        s.requests += 1;
        s.refused += 1;
    });
    let why = "ctxfit proxy: the profile's request_budget; what no step may cut — edits, the newest tool results \
               — is above it";
    let (tokens, budget) = (over.tokens, over.budget);
    let body = match api {
        Api::AnthropicMessages => serde_json::json!({
            "type": "error",
            "error": {"type": "invalid_request_error",
                      "message": format!("prompt is too long: {tokens} tokens > {budget} maximum ({why})")},
        }),
        Api::OpenAiChat | Api::OpenAiResponses => serde_json::json!({
            "error": {"message": format!("This model's maximum context length is {budget} tokens. However, your \
                                          messages resulted in {tokens} tokens ({why})."),
                      "type": "invalid_request_error", "param": api.messages_key(),
                      "code": "context_length_exceeded"},
        }),
    };
    json_response(StatusCode::BAD_REQUEST, body.to_string())
}

/// A body compressed in `coding`, inflated within `max_body` bytes and with room made for its compaction under
/// `--max-memory`; else the status and message to refuse it with.
fn inflate(
    coding: Coding,
    raw: &[u8],
    max_body: usize,
    room_for: &dyn Fn(usize) -> Result<(), Refusal>,
) -> Result<Bytes, (StatusCode, String)> {
    let inflated = coding::decode(coding, raw, max_body).map_err(|e| {
        let status = match e {
            coding::Undecoded::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            coding::Undecoded::Corrupt(_) => StatusCode::BAD_REQUEST,
        };
        (status, e.message(coding))
    })?;
    room_for(inflated.len()).map_err(|refusal| {
        let (status, message) = refusal.answer();
        (status, format!("ctxfit proxy: {message}"))
    })?;
    Ok(Bytes::from(inflated))
}

fn upstream_uri(origin: &Uri, request: &Uri) -> Result<Uri, String> {
    let path = request.path_and_query().map_or("/", |p| p.as_str());
    let base = origin.to_string();
    format!("{}{path}", base.trim_end_matches('/'))
        .parse()
        .map_err(|e| format!("cannot address the upstream: {e}"))
}

/// Why a request was not compacted: the client's (400), the proxy's memory (503, retry later), or a request
/// that would need more memory than the proxy may use at all (413).
enum Refusal {
    Bad(String),
    Busy(String),
    TooLarge(String),
}

impl Refusal {
    /// The status it is answered with, and its words.
    fn answer(self) -> (StatusCode, String) {
        match self {
            Refusal::Busy(m) => (StatusCode::SERVICE_UNAVAILABLE, m),
            Refusal::Bad(m) => (StatusCode::BAD_REQUEST, m),
            Refusal::TooLarge(m) => (StatusCode::PAYLOAD_TOO_LARGE, m),
        }
    }
}

impl From<String> for Refusal {
    fn from(message: String) -> Refusal {
        Refusal::Bad(message)
    }
}

/// Whether a Responses body is one the gateway compacts: its whole conversation in `input` (a list), no
/// `previous_response_id` — told from its structure alone, not a parse of the whole body. A malformed body, one
/// that is no JSON object, or one with `input` twice, is the gateway's too, which names it.
fn responses_compactable(bytes: &[u8]) -> bool {
    match RequestBody::split(Api::OpenAiResponses, bytes) {
        Ok(body) => body
            .field("previous_response_id")
            .is_none_or(|id| id == "null"),
        Err(BodyError::Json { .. } | BodyError::Twice(_) | BodyError::NotAnObject(_)) => true,
        Err(_) => false,
    }
}

fn compact(
    shared: &Shared,
    api: Api,
    bytes: &Bytes,
    profile: Option<&str>,
    session: Option<&str>,
    preview: bool,
) -> Result<crate::gateway::Forwarded, Refusal> {
    let settings = settings(&shared.config, profile)?;
    let mut gateways = shared.gateways.lock().unwrap_or_else(|p| p.into_inner());
    make_room(
        &shared.config,
        &gateways,
        shared.memory_floor,
        need_of_body(bytes),
    )?;
    if preview {
        drop(gateways);
        // what the conversation would send: a gateway of its own replays it (live equals replayed)
        let g = Gateway::new(settings).map_err(|e| e.to_string())?;
        return Ok(g
            .forward_shared(api, bytes.clone(), None)
            .map_err(|e| e.to_string())?);
    }
    if !gateways.contains_key(&settings.profile) {
        let g = gateway(&shared.config, shared.store.as_ref(), settings.clone())?;
        gateways.insert(settings.profile.clone(), Arc::new(g));
    }
    let gateway = Arc::clone(&gateways[&settings.profile]);
    // compacted with the map let go: other profiles and other conversations go on meanwhile
    drop(gateways);
    Ok(gateway
        .forward_shared(api, bytes.clone(), session)
        .map_err(|e| e.to_string())?)
}

/// Whose usage an answer reports: the profile's gateway and the conversation.
struct UsageOf {
    profile: String,
    conversation: String,
}

/// Send a request upstream and relay its answer ([`pass`]).
async fn relay(
    shared: &Arc<Shared>,
    api: Option<Api>,
    up: Request<Body>,
    extra: HeaderMap,
    usage_of: Option<(UsageOf, Bytes)>,
) -> Response<Body> {
    match send(shared, api, up).await {
        Ok(answer) => pass(shared, api, boxed(answer), extra, usage_of),
        Err(refused) => refused,
    }
}

/// Send a request upstream: its answer as it begins, or the error the client gets in its place.
async fn send(
    shared: &Shared,
    api: Option<Api>,
    up: Request<Body>,
) -> Result<Response<Incoming>, Response<Body>> {
    let answer = tokio::time::timeout(shared.config.upstream_timeout, shared.client.request(up));
    let Ok(answer) = answer.await else {
        return Err(api_error(
            api,
            StatusCode::GATEWAY_TIMEOUT,
            &format!(
                "ctxfit proxy: the upstream did not begin its answer within {} s",
                shared.config.upstream_timeout.as_secs()
            ),
        ));
    };
    answer.map_err(|e| {
        let why = if e.is_connect() {
            "cannot connect to the upstream"
        } else {
            "the upstream request failed"
        };
        api_error(
            api,
            StatusCode::BAD_GATEWAY,
            &format!("ctxfit proxy: {why}"),
        )
    })
}

/// Relay an answer to the client frame by frame, as the upstream sends it, with the proxy's headers added. A
/// successful answer to a compacted request (`usage_of`: whose it is, and the request as it came) tells the
/// conversation it was accepted and what usage the provider reported — its next request's budget trigger uses
/// it — and, where a Responses stream fails as too long for the model, the budget its refusal implies (the
/// client has seen the stream begin: nothing is sent again). An upstream silent for as long as it may take to
/// begin is cut off, and the client sees an error.
fn pass(
    shared: &Arc<Shared>,
    api: Option<Api>,
    answer: Response<Body>,
    extra: HeaderMap,
    usage_of: Option<(UsageOf, Bytes)>,
) -> Response<Body> {
    let (mut parts, body) = answer.into_parts();
    for name in ["connection", "keep-alive", "transfer-encoding", "upgrade"] {
        parts.headers.remove(name);
    }
    parts.headers.extend(extra);
    let silence = shared.config.upstream_timeout;
    let Some((of, request)) = usage_of.filter(|_| parts.status.is_success()) else {
        return Response::from_parts(parts, Idle::new(body, silence).boxed());
    };
    let shared = Arc::clone(shared);
    let tap = UsageTap::new(body, move |answer| {
        let gateway = gateway_of(&shared, &of.profile);
        let overflow =
            api.and_then(|api| crate::window::overflow_in_stream(api.wire_format(), answer));
        match (&gateway, overflow) {
            (Some(g), Some(overflow)) => {
                let learned =
                    api.and_then(|api| g.learn_window(&of.conversation, &overflow, api, &request));
                if let (Some(api), Some(_)) = (api, learned) {
                    count(&shared, api, |s| s.windows_learned += 1);
                }
            }
            // (before its usage, which measures the rate of this request)
            (Some(g), None) => g.accepted(&of.conversation),
            (None, _) => {}
        }
        if let Some(usage) = reported_usage(answer) {
            if let Some(api) = api {
                count(&shared, api, |s| {
                    s.reported += 1;
                    s.reported_input += usage.input_tokens as u64;
                    s.reported_cache_read += usage.cache_read_tokens as u64;
                    s.reported_cache_write += usage.cache_write_tokens as u64;
                });
            }
            if let Some(g) = gateway {
                g.report_usage(&of.conversation, usage.input_tokens);
            }
        }
    });
    Response::from_parts(parts, Idle::new(tap, silence).boxed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unkeyed_request_under_api_is_anthropics_only_where_the_openai_upstream_has_nothing_there()
    {
        let official: Uri = "https://api.openai.com".parse().unwrap();
        let ollama: Uri = "http://127.0.0.1:11434".parse().unwrap();
        // Claude Code's reachability check, whatever the OpenAI upstream
        assert!(anthropic_by_path("/api/hello", &official));
        assert!(anthropic_by_path("/api/hello", &ollama));
        // Claude Code's other endpoints, when the OpenAI upstream is the OpenAI API (nothing under /api/ there)
        assert!(anthropic_by_path("/api/claude_code/settings", &official));
        // a server of the user's own that serves an API of its own under /api/: its requests stay with it
        assert!(!anthropic_by_path("/api/tags", &ollama));
        assert!(!anthropic_by_path("/api/chat", &ollama));
        assert!(!anthropic_by_path("/v1/models", &official));
        assert!(!anthropic_by_path("/api/hello/x", &ollama));
    }
}
