//! `ctxfit proxy`: compaction for any agent that can point its API base URL elsewhere.

use std::time::Duration;

use anyhow::Result;
use ctxfit_compactor::PolicyFile;
use ctxfit_proxy::server::Uri;
use ctxfit_proxy::state::StoreLimits;
use ctxfit_proxy::{start, ProxyConfig, StartError};

use crate::BadInput;

#[derive(clap::Args)]
pub struct Args {
    /// Address to listen on: loopback unless told otherwise (`:0` picks a free port, printed at start).
    #[arg(long, default_value = "127.0.0.1:8788")]
    listen: String,
    /// Origin of the Anthropic API; requests' paths are appended.
    #[arg(long, default_value = "https://api.anthropic.com")]
    upstream_anthropic: String,
    /// Origin of the OpenAI API.
    #[arg(long, default_value = "https://api.openai.com")]
    upstream_openai: String,
    /// Origin of ChatGPT's backend, where requests under `/backend-api/` go (Codex CLI signed in with ChatGPT).
    #[arg(long, default_value = "https://chatgpt.com")]
    upstream_chatgpt: String,
    /// Serve HTTPS with this certificate chain (PEM) instead of plain HTTP: Codex CLI signed in with ChatGPT
    /// sends only to an `https://` base URL.
    #[arg(long, value_name = "PEM")]
    tls_cert: Option<std::path::PathBuf>,
    /// The private key of --tls-cert (PEM); without it, the key is read from the --tls-cert file.
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,
    /// Policy file (TOML or JSON).
    #[arg(long)]
    policy: Option<String>,
    /// Profile for requests that name none (`x-ctxfit-profile` names one); default: the policy's
    /// `default_profile`, else its only profile, else smart.
    #[arg(long)]
    profile: Option<String>,
    /// Bytes of request body accepted at most.
    #[arg(long, default_value_t = 64 << 20)]
    max_body: usize,
    /// Conversations kept in memory per profile; the least recently used is forgotten (and replayed to the
    /// same bytes if it comes back).
    #[arg(long, default_value_t = ctxfit_proxy::gateway::DEFAULT_MAX_CONVERSATIONS)]
    max_conversations: usize,
    /// Bytes of the conversations' last requests kept per profile (K, M, G: 16M; 0: none), so that a
    /// conversation's next request hashes only what it does not repeat byte for byte: the least recently used
    /// let go first.
    #[arg(long, value_name = "BYTES", default_value = "16M", value_parser = crate::input::parse_bytes)]
    identity_cache: usize,
    /// Seconds after which an idle conversation is forgotten (0: never); a returning one is replayed to the
    /// same bytes.
    #[arg(long, default_value_t = 24 * 3600)]
    idle_timeout: u64,
    /// Seconds a client has to send a request's headers; a slower one is disconnected.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    header_timeout: u64,
    /// Seconds a client may pause while sending a request's body; past them it gets a 408 and its connection is
    /// closed.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    body_timeout: u64,
    /// Seconds the upstream may be silent: before its answer begins (past them the client gets a 504 in the API's
    /// shape) and in the middle of it (past them the answer is cut off, and the client sees it cut short).
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    upstream_timeout: u64,
    /// Directory of the state kept across restarts (created if missing): each conversation's decisions and the
    /// usage its upstream reported last, in `ctxfit-proxy.redb`. Without it, a conversation met again after a
    /// restart is replayed from its history (the same bytes, unless the budget trigger fired on reported usage).
    #[arg(long, value_name = "DIR")]
    state: Option<std::path::PathBuf>,
    /// Seconds the provider keeps its prompt cache, whatever requests state (default: what each request states —
    /// five minutes, or an hour where it asks for one — else the profile's `cache_ttl`). After a pause longer
    /// than this the cache has expired, and every cut that was waiting for its cache write to pay is made.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    cache_ttl: Option<u64>,
    /// Heap the proxy may use (bytes, or with K, M, G: 512M, 2G; 0: no limit): above it the conversations used
    /// least recently are forgotten (a returning one is taken back or replayed), and a request that still does
    /// not fit is answered 503 with `retry-after`.
    #[arg(long, value_name = "BYTES", default_value = "2G", value_parser = crate::input::parse_bytes)]
    max_memory: usize,
    /// Conversations the state keeps at most; the least recently used go first.
    #[arg(long, default_value_t = StoreLimits::default().max_conversations, requires = "state")]
    state_max_conversations: usize,
    /// Seconds after which an unused conversation leaves the state (0: never).
    #[arg(long, default_value_t = 7 * 24 * 3600, requires = "state")]
    state_ttl: u64,
}

/// The upstream `url` of `--flag`: an origin. A provider's base URL with a path is refused with the two settings
/// that take its place (the proxy, at `listen` — `http://127.0.0.1:8788` — keeps the client's path as it
/// forwards).
fn origin(flag: &str, url: &str, listen: &str) -> Result<Uri> {
    let uri: Uri = url
        .parse()
        .map_err(|e| BadInput(format!("--{flag} {url}: {e}")))?;
    match (uri.scheme_str(), uri.host(), uri.path()) {
        (Some("http" | "https"), Some(_), "" | "/") => Ok(uri),
        (Some("http" | "https"), Some(host), path) => {
            // a provider's base URL (OpenRouter's `https://openrouter.ai/api/v1`): its path belongs in the
            // client's base URL, which the proxy keeps as it forwards
            let origin = match uri.port_u16() {
                Some(port) => format!("{}://{host}:{port}", uri.scheme_str().unwrap_or("https")),
                None => format!("{}://{host}", uri.scheme_str().unwrap_or("https")),
            };
            let path = path.trim_end_matches('/');
            Err(BadInput(format!(
                "--{flag} {url}: give an origin, http(s)://host[:port], without a path: the path goes in the \
                 client's base URL, which the proxy keeps as it forwards (--{flag} {origin}, and the client's \
                 base URL {listen}{path})"
            ))
            .into())
        }
        _ => Err(BadInput(format!(
            "--{flag} {url}: give an origin, http(s)://host[:port], without a path"
        ))
        .into()),
    }
}

/// Ctrl-C, or (on Unix) the SIGTERM a service manager or `kill` sends.
async fn stopped() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

pub fn run(args: Args) -> Result<()> {
    let policy = match &args.policy {
        Some(path) => {
            PolicyFile::read(std::path::Path::new(path)).map_err(|e| BadInput(e.to_string()))?
        }
        None => PolicyFile::default(),
    };
    let profile = args.profile.clone();
    // what runs when a request names no profile (a policy that cannot tell is refused by `start`, named)
    let runs = profile.clone().or_else(|| policy.default_name().ok());
    let scheme = if args.tls_cert.is_some() {
        "https"
    } else {
        "http"
    };
    let listen = format!("{scheme}://{}", args.listen);
    let config = ProxyConfig {
        anthropic: origin("upstream-anthropic", &args.upstream_anthropic, &listen)?,
        openai: origin("upstream-openai", &args.upstream_openai, &listen)?,
        chatgpt: origin("upstream-chatgpt", &args.upstream_chatgpt, &listen)?,
        policy,
        profile,
        max_body: args.max_body,
        max_conversations: args.max_conversations,
        max_known_bytes: args.identity_cache,
        max_idle: (args.idle_timeout > 0).then(|| Duration::from_secs(args.idle_timeout)),
        connect_timeout: Duration::from_secs(10),
        header_timeout: Duration::from_secs(args.header_timeout),
        body_timeout: Duration::from_secs(args.body_timeout),
        upstream_timeout: Duration::from_secs(args.upstream_timeout),
        state: args.state.clone(),
        cache_ttl: args.cache_ttl.map(Duration::from_secs),
        max_memory: (args.max_memory > 0).then_some(args.max_memory),
        memory_in_use: Some(|| crate::ALLOCATOR.allocated()),
        tls: (args.tls_cert.clone()).map(|cert| ctxfit_proxy::server::TlsFiles {
            cert,
            key: args.tls_key.clone(),
        }),
        state_limits: StoreLimits {
            max_conversations: args.state_max_conversations,
            ttl: (args.state_ttl > 0).then(|| Duration::from_secs(args.state_ttl)),
        },
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let running = start(config, &args.listen)
            .await
            .map_err(|e| match (&e, &args.policy) {
                // the file's own mistakes are named with the file
                (StartError::Policy(_), Some(path)) => BadInput(format!("policy {path}: {e}")),
                _ => BadInput(e.to_string()),
            })?;
        crate::shown::say(&format!(
            "ctxfit proxy: listening on {}://{}, profile {} (Anthropic → {}, OpenAI → {}, ChatGPT → {})",
            if args.tls_cert.is_some() { "https" } else { "http" },
            running.addr,
            runs.as_deref().unwrap_or("smart"),
            args.upstream_anthropic,
            args.upstream_openai,
            args.upstream_chatgpt
        ));
        if let Some(warning) = exposure_warning(running.addr.ip()) {
            crate::shown::say(&warning);
        }
        if let Some(store) = &running.store {
            crate::shown::say(&format!(
                "ctxfit proxy: state in {} ({} conversations)",
                store.path().display(),
                store.conversations()
            ));
        }
        stopped().await;
        // what was answered is on disk before the process ends
        running.stop();
        crate::shown::say("ctxfit proxy: stopped");
        Ok(())
    })
}

/// What listening on `ip` opens, when it is not a loopback address: the proxy asks nothing of its clients, so
/// whatever can reach the address can use it.
fn exposure_warning(ip: std::net::IpAddr) -> Option<String> {
    (!ip.is_loopback()).then(|| {
        format!(
            "ctxfit proxy: warning: {ip} is not a loopback address — anyone who can reach it can send requests \
             through this proxy to the upstreams and read /metrics and /ctxfit/stats; listen on 127.0.0.1 \
             unless a firewall or a network of your own stands in front"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_others_can_reach_is_said_to_be_one() {
        for loopback in ["127.0.0.1", "127.0.0.2", "::1"] {
            assert_eq!(
                exposure_warning(loopback.parse().unwrap()),
                None,
                "{loopback}"
            );
        }
        for open in ["0.0.0.0", "::", "192.168.1.20"] {
            let warning = exposure_warning(open.parse().unwrap()).unwrap();
            assert!(
                warning.starts_with(&format!(
                    "ctxfit proxy: warning: {open} is not a loopback address"
                )),
                "{warning}"
            );
        }
    }
}
