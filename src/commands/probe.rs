//! `kubectl tfjob probe NAME`.

use std::time::Duration;

use clap::{Args, ValueEnum};

use super::{block_on, parse_duration};
use crate::cluster::Target;
use crate::cluster::budget::Deadline;
use crate::error::{Error, Result};
use crate::ops::Context;
use crate::ops::probe::{ProbeFormat, ProbeOptions};
use crate::output::Output;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ProbeOutput {
    Text,
    /// Every replica's checks and the peer matrix.
    Wide,
    Json,
    Yaml,
}

#[derive(Debug, Clone, Args)]
pub struct ProbeArgs {
    /// TFJob name (or tfjob/NAME), or jobset/NAME for a JobSet `export --to jobset` made.
    pub name: String,

    /// The container to probe [default: tensorflow].
    #[arg(short = 'c', long, value_name = "NAME")]
    pub container: Option<String>,

    /// Prefix of the gateway env vars: PREFIX_API_KEY and PREFIX_BASE_URL [default: TAOTOKEN].
    /// Given, the container must set one of them: a typo is an error, not a skipped check.
    #[arg(long, value_name = "PREFIX")]
    pub api_env_prefix: Option<String>,

    /// Also send one tiny chat completion (max_tokens 1) to MODEL from inside the first replica
    /// whose gateway check passed, and check the answer has `choices`. Opt-in: it costs tokens.
    #[arg(long, value_name = "MODEL")]
    pub gateway_chat: Option<String>,

    /// Output: text (the verdict and what did not pass, by cause), wide (every replica's
    /// checks and the peer matrix; also with -v), json or yaml (the whole result).
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: ProbeOutput,

    /// Bound on the whole command (kubectl duration syntax: 30s, 2m).
    #[arg(long, default_value = "1m", value_parser = parse_duration)]
    pub timeout: Duration,
}

/// `verbose`: the global `-v` was given.
pub fn exec(ctx: Context, args: ProbeArgs, verbose: bool, out: &mut Output) -> Result<()> {
    // `--timeout` is the whole command's deadline: every exec spends from it.
    let ctx = ctx.with_deadline(Deadline::after(args.timeout, "--timeout"));
    let target = Target::parse(&args.name, "probe")?;
    if let Some(model) = &args.gateway_chat
        && !crate::ops::probe::valid_model(model)
    {
        return Err(Error::Usage(format!(
            "--gateway-chat {model:?}: a model name has letters, digits and - _ . : / @ + only (as GET /v1/models lists them)"
        )));
    }
    if let Some(p) = &args.api_env_prefix {
        crate::gateway::check_env_prefix(p).map_err(Error::Usage)?;
    }
    let opts = ProbeOptions {
        target,
        container: args.container,
        env_prefix_given: args.api_env_prefix.is_some(),
        env_prefix: args
            .api_env_prefix
            .unwrap_or_else(|| crate::gateway::DEFAULT_ENV_PREFIX.to_string()),
        format: match args.output {
            // -v asks for more, as it does of kubectl: the blocks.
            ProbeOutput::Text if verbose => ProbeFormat::Wide,
            ProbeOutput::Text => ProbeFormat::Text,
            ProbeOutput::Wide => ProbeFormat::Wide,
            ProbeOutput::Json => ProbeFormat::Json,
            ProbeOutput::Yaml => ProbeFormat::Yaml,
        },
        chat_model: args.gateway_chat,
        only_when_all_running: false,
        one_per_role: false,
    };
    block_on(&ctx, crate::ops::probe::run(&ctx, opts, out))
}

pub(super) const PROBE_EXAMPLES: &str = "\
What it checks, in every running replica (read-only, through pods/exec):
  TF_CONFIG     as the training process sees it (its environment, not the pod spec), against
                what the operator gives that replica
  peers         every host:port of its cluster spec: the name resolves, a TCP connection opens
  gateway       GET <base>/v1/models with the process's own key (401: is the pod's key the
                Secret's? 404 with a base ending in /v1: the doubled /v1)
  chat          with --gateway-chat MODEL: one tiny POST <base>/v1/chat/completions from the
                first replica whose gateway check passed; the answer must have `choices`
  containers    an injected istio-proxy beside the training container
The key never leaves the pod: only the first 8 hex digits of its SHA-256 come back.
Exit 0 when every check passes, 4 when one fails, 3 when one could not run (no shell in the
image, pods/exec forbidden).

Examples:
  kubectl tfjob probe tf-dist-train
  kubectl tfjob probe tf-dist-train -o json
  kubectl tfjob probe jobset/tf-dist-train      # a JobSet made by export --to jobset
  kubectl tfjob probe tf-dist-train --api-env-prefix OPENAI
  kubectl tfjob probe tf-dist-train --gateway-chat gpt-4o-mini   # one tiny completion: costs tokens";
