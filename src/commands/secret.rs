//! `kubectl tfjob secret create|check`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::block_on;
use crate::error::Result;
use crate::gateway::{DEFAULT_SECRET_KEY, DEFAULT_SECRET_NAME};
use crate::ops::Context;
use crate::ops::DryRun;
use crate::ops::secret::{SecretCheckOptions, SecretCreateOptions, SecretOptions};
use crate::output::{ManifestFormat, Output};

const SECRET_CHECK_EXAMPLES: &str = "\
Examples:
  # The default Secret and key of the namespace, or another namespace's
  kubectl tfjob secret check
  kubectl tfjob secret check my-gateway -n team-b";

#[derive(Debug, Clone, Args)]
#[command(after_help = SECRET_CREATE_EXAMPLES)]
pub struct SecretArgs {
    #[command(subcommand)]
    pub action: SecretAction,
}

#[derive(Debug, Clone, Subcommand)]
pub enum SecretAction {
    /// Store the gateway API key in a Secret, reading it from a hidden prompt, stdin, env or file.
    #[command(after_help = SECRET_CREATE_EXAMPLES)]
    Create(SecretCreateArgs),
    /// Check that the Secret and key exist (the value is never printed).
    #[command(after_help = SECRET_CHECK_EXAMPLES)]
    Check(SecretCheckArgs),
}

#[derive(Debug, Clone, Args)]
pub struct SecretCreateArgs {
    /// Secret name.
    #[arg(default_value = DEFAULT_SECRET_NAME)]
    pub name: String,

    /// Key inside the Secret.
    #[arg(long, default_value = DEFAULT_SECRET_KEY)]
    pub key: String,

    /// Gateway base URL, stored beside the key under `base-url`.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,

    /// Read the key from stdin (one line; the trailing newline is stripped).
    #[arg(long, group = "source")]
    pub from_stdin: bool,

    /// Read the key from this environment variable.
    #[arg(long, value_name = "VAR", group = "source")]
    pub from_env: Option<String>,

    /// Read the key from a file.
    #[arg(long, value_name = "PATH", group = "source")]
    pub from_file: Option<PathBuf>,

    /// The key itself. Discouraged: it lands in shell history and `ps`.
    #[arg(long, value_name = "KEY", group = "source")]
    pub from_literal: Option<String>,

    /// Replace an existing Secret whose content differs.
    #[arg(long)]
    pub overwrite: bool,

    /// Call GET {base-url}/v1/models with the key before storing it.
    #[arg(long)]
    pub verify: bool,

    /// Print what would be stored (data masked) instead of storing it.
    #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "client")]
    pub dry_run: Option<DryRun>,

    /// Output format with --dry-run.
    #[arg(short = 'o', long, value_enum)]
    pub output: Option<ManifestFormat>,
}

#[derive(Debug, Clone, Args)]
pub struct SecretCheckArgs {
    /// Secret name.
    #[arg(default_value = DEFAULT_SECRET_NAME)]
    pub name: String,

    /// Key inside the Secret.
    #[arg(long, default_value = DEFAULT_SECRET_KEY)]
    pub key: String,
}

pub fn exec(ctx: Context, args: SecretArgs, out: &mut Output) -> Result<()> {
    let opts = match args.action {
        SecretAction::Create(a) => {
            let options = SecretCreateOptions {
                name: a.name,
                key: a.key,
                base_url: a.base_url,
                from_stdin: a.from_stdin,
                from_env: a.from_env,
                from_file: a.from_file,
                from_literal: a.from_literal,
                overwrite: a.overwrite,
                verify: a.verify,
                dry_run: a.dry_run,
                output: a.output,
            };
            // The key is read (and --from-env's variable removed) before the runtime starts.
            let (options, key) = crate::ops::secret::prepare_create(options, out)?;
            SecretOptions::Create(options, key)
        }
        SecretAction::Check(a) => {
            let options = SecretCheckOptions {
                name: a.name,
                key: a.key,
            };
            SecretOptions::Check(options)
        }
    };
    block_on(&ctx, crate::ops::secret::run(&ctx, opts, out))
}

const SECRET_CREATE_EXAMPLES: &str = "\
Examples:
  # Type the key at a hidden prompt
  kubectl tfjob secret create -n team-a

  # From a password manager, never touching argv or disk
  pass show taotoken | kubectl tfjob secret create --from-stdin

  # Check the key against the gateway first
  kubectl tfjob secret create --from-env TAOTOKEN_API_KEY --verify";
