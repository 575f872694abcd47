//! `ctxfit policy show`: the effective profile after the policy file, the agent's overrides and the environment.

use std::path::PathBuf;

use anyhow::Result;
use ctxfit_compactor::{PolicyFile, Settings};

use crate::output::emit;
use crate::BadInput;

/// Where a profile comes from: shared by `compact` and `policy show`.
#[derive(clap::Args, Clone)]
pub struct PolicyArgs {
    /// Policy file (TOML, or JSON).
    #[arg(long)]
    pub policy: Option<PathBuf>,
    /// Profile to use (default: the policy's `default_profile`, else its only profile, else smart).
    #[arg(long)]
    pub profile: Option<String>,
    /// Agent whose overrides to apply (`[agents.NAME]` in the policy).
    #[arg(long)]
    pub agent: Option<String>,
}

impl PolicyArgs {
    /// The effective settings; environment overrides (`CTXFIT_BUDGET`, ...) included.
    pub fn settings(&self) -> Result<Settings> {
        let file = match &self.policy {
            Some(path) => PolicyFile::read(path).map_err(|e| BadInput(e.to_string()))?,
            None => PolicyFile::default(),
        };
        file.resolve(self.profile.as_deref(), self.agent.as_deref(), &|k| {
            std::env::var(k).ok()
        })
        .map_err(|e| match &self.policy {
            // the file's own mistakes are named with the file
            Some(path) => BadInput(format!("policy {}: {e}", path.display())).into(),
            None => BadInput(e.to_string()).into(),
        })
    }
}

#[derive(clap::Subcommand)]
pub enum Command {
    /// Print the effective profile as TOML, and the rules this binary has; a profile that names a rule this
    /// binary does not have, or gives one parameters it refuses, is an error here as in `compact`.
    Show(PolicyArgs),
}

pub fn run(cmd: Command) -> Result<()> {
    let Command::Show(args) = cmd;
    let settings = args.settings()?;
    let registry = ctxfit_plugins::registry()?;
    // the profile's rules built as `compact` builds them: what it would refuse is refused here
    ctxfit_compactor::Compactor::new(
        settings.clone(),
        &registry,
        Box::new(ctxfit_tokens::FastEstimator),
    )
    .map_err(|e| BadInput(e.to_string()))?;
    let mut out = format!("# effective profile `{}`\n{settings}", settings.profile);
    out.push_str("\n# registered rules\n");
    for d in registry.iter() {
        out.push_str(&format!(
            "#   {:<10} tools {:<28} {}\n",
            d.name,
            d.tools.join(","),
            d.summary
        ));
    }
    emit(None, &out)
}
