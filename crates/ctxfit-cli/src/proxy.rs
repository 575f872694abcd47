//! `ctxfit proxy`: compaction for any agent that can point its API base URL elsewhere.

use std::time::Duration;

use anyhow::Result;
use ctxfit_compactor::PolicyFile;
use ctxfit_proxy::server::Uri;
use ctxfit_proxy::{start, ProxyConfig};

use crate::input::read_text;
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
    /// Policy file (TOML or JSON).
    #[arg(long)]
    policy: Option<String>,
    /// Profile for requests that name none (`x-ctxfit-profile` names one); default: the policy's, else smart.
    #[arg(long)]
    profile: Option<String>,
    /// Bytes of request body accepted at most.
    #[arg(long, default_value_t = 64 << 20)]
    max_body: usize,
    /// Conversations kept in memory per profile; the least recently used is forgotten (and replayed to the
    /// same bytes if it comes back).
    #[arg(long, default_value_t = ctxfit_proxy::gateway::DEFAULT_MAX_CONVERSATIONS)]
    max_conversations: usize,
    /// Seconds after which an idle conversation is forgotten (0: never); a returning one is replayed to the
    /// same bytes.
    #[arg(long, default_value_t = 24 * 3600)]
    idle_timeout: u64,
}

fn origin(flag: &str, url: &str) -> Result<Uri> {
    let uri: Uri = url
        .parse()
        .map_err(|e| BadInput(format!("--{flag} {url}: {e}")))?;
    match (uri.scheme_str(), uri.host(), uri.path()) {
        (Some("http" | "https"), Some(_), "" | "/") => Ok(uri),
        _ => Err(BadInput(format!(
            "--{flag} {url}: give an origin, http(s)://host[:port], without a path"
        ))
        .into()),
    }
}

pub fn run(args: Args) -> Result<()> {
    let policy = match &args.policy {
        Some(path) => {
            PolicyFile::parse(&read_text(path)?, path).map_err(|e| BadInput(e.to_string()))?
        }
        None => PolicyFile::default(),
    };
    let profile = args
        .profile
        .clone()
        .or_else(|| policy.default_profile.is_none().then(|| "smart".to_owned()));
    let config = ProxyConfig {
        anthropic: origin("upstream-anthropic", &args.upstream_anthropic)?,
        openai: origin("upstream-openai", &args.upstream_openai)?,
        policy,
        profile,
        max_body: args.max_body,
        max_conversations: args.max_conversations,
        max_idle: (args.idle_timeout > 0).then(|| Duration::from_secs(args.idle_timeout)),
        connect_timeout: Duration::from_secs(10),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let running = start(config, &args.listen)
            .await
            .map_err(|e| BadInput(e.to_string()))?;
        eprintln!(
            "ctxfit proxy: listening on http://{} (Anthropic → {}, OpenAI → {})",
            running.addr, args.upstream_anthropic, args.upstream_openai
        );
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = running.task => {}
        }
        eprintln!("ctxfit proxy: stopped");
        Ok(())
    })
}
