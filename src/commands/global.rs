//! The flags every command takes ([`Global`]: kubectl's connection flags and `-v`), the order
//! they were typed in (so hints repeat them as typed), `kubectl tfjob options`, and their
//! conversion into the core's clap-free [`ConnectionOptions`].

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgMatches, Args};

use super::parse_request_timeout;
use crate::cluster::{ConnFlag, ConnectionOptions};

/// The flags every command takes: kubectl's connection flags (cli-runtime's ConfigFlags, same
/// names and meanings) and -v.
#[derive(Debug, Clone, Default, Args)]
// kubectl keeps these out of each command's own flags (`kubectl options`); here they sit under
// one heading after them.
#[command(next_help_heading = "Connection and logging (kubectl's global flags)")]
pub struct Global {
    /// Path to the kubeconfig file to use (default: $KUBECONFIG, else ~/.kube/config).
    #[arg(long, global = true, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use.
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,

    /// The kubeconfig cluster to use.
    #[arg(long, global = true, value_name = "NAME")]
    pub cluster: Option<String>,

    /// The kubeconfig user to use.
    #[arg(long, global = true, value_name = "NAME")]
    pub user: Option<String>,

    /// The namespace (default: the context's namespace, else "default").
    #[arg(short = 'n', long, global = true, value_name = "NAME")]
    pub namespace: Option<String>,

    /// Username to impersonate for the operation.
    #[arg(long = "as", global = true, value_name = "USER")]
    pub impersonate: Option<String>,

    /// Group to impersonate (repeatable).
    #[arg(long = "as-group", global = true, value_name = "GROUP")]
    pub impersonate_groups: Vec<String>,

    /// UID to impersonate.
    #[arg(long = "as-uid", global = true, value_name = "UID")]
    pub impersonate_uid: Option<String>,

    /// Bearer token for authentication to the API server.
    #[arg(long, global = true, value_name = "TOKEN")]
    pub token: Option<String>,

    /// The address and port of the Kubernetes API server.
    #[arg(short = 's', long, global = true, value_name = "URL")]
    pub server: Option<String>,

    /// Path to a cert file for the certificate authority.
    #[arg(long, global = true, value_name = "PATH")]
    pub certificate_authority: Option<PathBuf>,

    /// Path to a client certificate file for TLS.
    #[arg(long, global = true, value_name = "PATH")]
    pub client_certificate: Option<PathBuf>,

    /// Path to a client key file for TLS.
    #[arg(long, global = true, value_name = "PATH")]
    pub client_key: Option<PathBuf>,

    /// Do not check the server's certificate (makes HTTPS connections insecure).
    #[arg(long, global = true)]
    pub insecure_skip_tls_verify: bool,

    /// Server name to use for server certificate validation (default: the server's hostname).
    #[arg(long, global = true, value_name = "NAME")]
    pub tls_server_name: Option<String>,

    /// How long to wait for a single API request before giving up (e.g. 30s, 1m). 0 = no limit.
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_request_timeout)]
    pub request_timeout: Option<Duration>,

    /// How long one API request may be retried in all (429, 5xx, dropped connections), e.g.
    /// 10s. Hidden: for tests and unusual clusters; the default ends a persistent 429 in a minute.
    #[arg(long, global = true, hide = true, value_name = "DURATION", value_parser = parse_request_timeout,
          env = "KUBECTL_TFJOB_RETRY_DEADLINE")]
    pub retry_deadline: Option<Duration>,

    /// Log more: -v for info, -vv for debug, -vvv for trace. Secrets are redacted at every level.
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,

    /// The order in which the connection flags appeared on the command line (filled by
    /// [`Cli::from_matches`]), so hints repeat them as typed.
    #[arg(skip)]
    pub order: Vec<ConnFlag>,

    /// Set by a caller that runs commands in-process (the MCP adapter): each command's deadline
    /// and cancellation. Never a flag.
    #[arg(skip)]
    pub call: Option<crate::ops::context::Call>,
}

/// Each connection flag's clap id (the field name in [`Global`]).
const CONNECTION_IDS: [(&str, ConnFlag); 16] = [
    ("kubeconfig", ConnFlag::Kubeconfig),
    ("context", ConnFlag::Context),
    ("cluster", ConnFlag::Cluster),
    ("user", ConnFlag::User),
    ("namespace", ConnFlag::Namespace),
    ("impersonate", ConnFlag::As),
    ("impersonate_groups", ConnFlag::AsGroup),
    ("impersonate_uid", ConnFlag::AsUid),
    ("token", ConnFlag::Token),
    ("server", ConnFlag::Server),
    ("certificate_authority", ConnFlag::CertificateAuthority),
    ("client_certificate", ConnFlag::ClientCertificate),
    ("client_key", ConnFlag::ClientKey),
    ("insecure_skip_tls_verify", ConnFlag::InsecureSkipTlsVerify),
    ("tls_server_name", ConnFlag::TlsServerName),
    ("request_timeout", ConnFlag::RequestTimeout),
];

/// The connection flags clap saw on the command line, in the order of their first appearance.
///
/// clap numbers argument positions per subcommand level and copies global flags between the
/// levels, so its indices cannot order flags typed before and after a subcommand. clap says
/// which flags were given; their order comes from scanning argv for their spellings (up to
/// `--`, after which everything is the container's command).
pub(super) fn connection_order(
    command: &clap::Command,
    matches: &ArgMatches,
    argv: &[std::ffi::OsString],
) -> Vec<ConnFlag> {
    let given = |id: &str| matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine);
    // (flag, --long, -short) for each connection flag given.
    let spellings: Vec<(ConnFlag, String, Option<char>)> = CONNECTION_IDS
        .iter()
        .filter(|(id, _)| given(id))
        .filter_map(|(id, flag)| {
            let arg = command.get_arguments().find(|a| a.get_id() == *id)?;
            Some((*flag, format!("--{}", arg.get_long()?), arg.get_short()))
        })
        .collect();
    let mut order: Vec<ConnFlag> = Vec::new();
    for word in argv.iter().skip(1).map(|w| w.to_string_lossy()) {
        if word == "--" {
            break;
        }
        let found = spellings.iter().find(|(_, long, short)| {
            word == long.as_str()
                || word
                    .strip_prefix(long.as_str())
                    .is_some_and(|r| r.starts_with('='))
                || short.is_some_and(|c| short_cluster_has(&word, c))
        });
        if let Some((flag, _, _)) = found
            && !order.contains(flag)
        {
            order.push(*flag);
        }
    }
    // Anything clap saw but the scan missed keeps its place after the rest.
    for (flag, _, _) in &spellings {
        if !order.contains(flag) {
            order.push(*flag);
        }
    }
    order
}

/// `-n`, `-nteam`, `-n=team`, or `-vvn` (value-less `-v`s first): a short-flag word naming `c`.
fn short_cluster_has(word: &str, c: char) -> bool {
    let Some(rest) = word.strip_prefix('-') else {
        return false;
    };
    if rest.starts_with('-') {
        return false;
    }
    rest.chars().find(|&ch| ch != 'v') == Some(c)
}

/// The ids of [`Global`]'s flags (connection flags and -v), which help leaves to `options`.
pub(super) fn global_ids() -> Vec<clap::Id> {
    let root = Global::augment_args(clap::Command::new("global"));
    root.get_arguments().map(|a| a.get_id().clone()).collect()
}

/// `kubectl tfjob options`: the global flags as `kubectl options` prints them (pflag's
/// FlagUsages in kubectl's pkg/cmd/options): `    -n, --namespace='':` then the help on a tab.
pub fn options_text() -> String {
    let cmd = Global::augment_args(clap::Command::new("global"));
    let mut args: Vec<&clap::Arg> = cmd.get_arguments().filter(|a| !a.is_hide_set()).collect();
    args.sort_by_key(|a| a.get_long().unwrap_or_default().to_string());
    let mut out = String::from("The following options can be passed to any command:\n\n");
    for a in args {
        let Some(long) = a.get_long() else { continue };
        let default = match a.get_action() {
            clap::ArgAction::SetTrue => "false",
            clap::ArgAction::Count => "0",
            clap::ArgAction::Append => "[]",
            _ => "''",
        };
        let short = a.get_short().map(|c| format!("-{c}, ")).unwrap_or_default();
        let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
        out.push_str(&format!("    {short}--{long}={default}:\n\t{help}\n\n"));
    }
    out
}

impl Global {
    /// The one command context the cores take: the flags as plain options, no I/O yet (the
    /// client is built on first use, the deadline set by the command that has `--timeout`).
    pub fn context(&self) -> crate::ops::Context {
        let ctx = crate::ops::Context::new(self.connection());
        match &self.call {
            Some(call) => ctx
                .with_deadline(crate::cluster::budget::Deadline::after(
                    call.timeout,
                    "the call's timeout",
                ))
                .with_cancel(call.cancel.clone()),
            None => ctx,
        }
    }

    /// The connection flags as the core takes them.
    pub fn connection(&self) -> ConnectionOptions {
        ConnectionOptions {
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.clone(),
            cluster: self.cluster.clone(),
            user: self.user.clone(),
            namespace: self.namespace.clone(),
            impersonate: self.impersonate.clone(),
            impersonate_groups: self.impersonate_groups.clone(),
            impersonate_uid: self.impersonate_uid.clone(),
            token: self.token.clone(),
            server: self.server.clone(),
            certificate_authority: self.certificate_authority.clone(),
            client_certificate: self.client_certificate.clone(),
            client_key: self.client_key.clone(),
            insecure_skip_tls_verify: self.insecure_skip_tls_verify,
            tls_server_name: self.tls_server_name.clone(),
            request_timeout: self.request_timeout,
            order: self.order.clone(),
            retry_deadline: self.retry_deadline,
        }
    }
}
