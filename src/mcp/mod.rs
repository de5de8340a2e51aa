//! `kubectl tfjob mcp`: the verbs served to AI agents over the Model Context Protocol (stdio),
//! with the official Rust SDK (`rmcp`). An adapter above `commands/`: each tool call is one
//! command line run in-process ([`call`]), so an agent gets the answers, exit classes, redaction
//! and write guards a person gets; nothing here judges a job.
//!
//! - Tools ([`tools`]): the verbs, each with an input schema generated from its input type,
//!   annotated read-only or destructive per the spec's tool annotations; `--read-only` serves
//!   none of the writes. A result is the verb's data as structured content (JSON, a table's
//!   rows, or text), its exit code and class, and its notes (stderr), plus a short text.
//! - Resources: `tfjob://NAMESPACE/NAME`, the job's diagnosis as JSON (the verdict `diagnose`
//!   gives, without looking inside the pods), and `tfjob-template://NAME`, each built-in template.
//! - One call at a time: a command's interrupt message and the redactor's memory are the
//!   process's (`error::on_interrupt`), so calls are run one after another.

pub mod call;
pub mod tools;

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate, ServerCapabilities, ServerConfig, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::commands::Global;
use crate::commands::mcp::McpArgs;
use crate::error::{Error, Result};
use call::{Invocation, Outcome};
use tools::Data;

/// Characters of the data repeated in the short text (the whole data is the structured content).
const SHORT_TEXT: usize = 4000;

/// Serves until the client closes stdin, or SIGINT/SIGTERM.
pub fn serve(global: Global, args: McpArgs) -> Result<()> {
    crate::commands::new_runtime()?.block_on(async {
        let server = Server {
            global,
            read_only: args.read_only,
            call_timeout: args.call_timeout,
            one_at_a_time: Arc::new(tokio::sync::Mutex::new(())),
        };
        let running = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| Error::Other(format!("starting the MCP server on stdio: {e}")))?;
        tokio::select! {
            ended = running.waiting() => ended
                .map(|_| ())
                .map_err(|e| Error::Other(format!("the MCP server stopped: {e}"))),
            _ = stop_signal() => Ok(()),
        }
    })
}

/// SIGINT or SIGTERM. A command run by a call installs tokio's handlers, after which the
/// default action (ending the process) no longer happens by itself: the server ends here.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(mut int), Ok(mut term)) => {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
            }
            _ => std::future::pending().await,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[derive(Clone)]
struct Server {
    global: Global,
    read_only: bool,
    call_timeout: Duration,
    one_at_a_time: Arc<tokio::sync::Mutex<()>>,
}

impl Server {
    fn tools(&self) -> Vec<tools::Tool> {
        tools::all()
            .into_iter()
            .filter(|t| !(self.read_only && t.writes))
            .collect()
    }

    async fn run(&self, inv: Invocation, cancel: CancellationToken) -> Outcome {
        let _turn = self.one_at_a_time.lock().await;
        call::run(&self.global, inv, self.call_timeout, cancel).await
    }
}

/// The MCP description of a tool.
fn describe(t: &tools::Tool) -> rmcp::model::Tool {
    let annotations = ToolAnnotations::with_title(t.title)
        .read_only(!t.writes)
        .destructive(t.writes)
        .idempotent(!t.writes)
        .open_world(false);
    rmcp::model::Tool::new(t.name, t.description, Arc::new((t.schema)()))
        .with_title(t.title)
        .with_raw_output_schema(Arc::new(output_schema()))
        .with_annotations(annotations)
}

/// The schema of every tool's structured result ([`structured`]).
fn output_schema() -> serde_json::Map<String, Value> {
    let schema = json!({
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command line the call ran."},
            "exit_code": {"type": "integer", "description": "The CLI's exit code (README.md's table)."},
            "exit_class": {"type": "string", "enum": ["ok", "failure", "invalid", "not-ready", "job-failed", "timeout", "write-unknown", "interrupted"]},
            "data": {"description": "What the command printed as data: JSON, a table's rows, or text."},
            "notes": {"type": "string", "description": "Progress, warnings, hints and the error, as the CLI prints them on stderr."},
            "truncated": {"type": "boolean", "description": "Output past the call's limit was left out."}
        },
        "required": ["command", "exit_code", "exit_class", "data", "notes", "truncated"]
    });
    match schema {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    }
}

/// The structured result of a call.
fn structured(inv_line: &str, outcome: &Outcome, data: Data) -> Value {
    let stdout = outcome.stdout.as_str();
    let data = match data {
        Data::Json if !stdout.trim().is_empty() => {
            serde_json::from_str(stdout).unwrap_or_else(|_| Value::String(stdout.to_string()))
        }
        Data::Table => Value::Array(
            tools::table_rows(stdout)
                .into_iter()
                .map(Value::Object)
                .collect(),
        ),
        Data::Json | Data::Text => Value::String(stdout.to_string()),
    };
    json!({
        "command": inv_line,
        "exit_code": outcome.exit_code,
        "exit_class": outcome.exit_class(),
        "data": data,
        "notes": outcome.stderr,
        "truncated": outcome.truncated,
    })
}

/// The short text beside the structured result: the exit class, then the error or the data.
fn short_text(outcome: &Outcome) -> String {
    let body = if outcome.exit_code == 0 || outcome.stdout.trim().is_empty() {
        if outcome.exit_code == 0 {
            outcome.stdout.as_str()
        } else {
            outcome.stderr.as_str()
        }
    } else {
        outcome.stdout.as_str()
    };
    let mut text: String = body.chars().take(SHORT_TEXT).collect();
    if body.chars().count() > SHORT_TEXT {
        text.push_str("\n… (the whole answer is in the structured content)");
    }
    format!(
        "exit {} ({})\n{}",
        outcome.exit_code,
        outcome.exit_class(),
        text
    )
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new(
            "kubectl-tfjob",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(
            "Kubeflow TFJobs: why a job does not run (diagnose), whether one would (check), what \
             it looks like inside its pods (probe). Exit classes follow the CLI's exit codes. \
             Writes: submit is a dry run unless confirm is true; suspend, resume and delete take \
             the uid that get shows.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.tools().iter().map(describe).collect(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.tools().iter().find(|t| t.name == name).map(describe)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, ErrorData> {
        let Some(tool) = self.tools().into_iter().find(|t| t.name == request.name) else {
            let why = if self.read_only && tools::all().iter().any(|t| t.name == request.name) {
                format!(
                    "tool {:?} writes, and this server is read-only (--read-only)",
                    request.name
                )
            } else {
                format!("no tool named {:?}", request.name)
            };
            return Err(ErrorData::invalid_params(why, None));
        };
        let args = Value::Object(request.arguments.unwrap_or_default());
        let inv = match (tool.build)(args, self.call_timeout) {
            Ok(inv) => inv,
            // Bad arguments are the tool's answer, said the way the CLI says bad input (exit 2).
            Err(why) => {
                let outcome = Outcome {
                    exit_code: crate::error::ExitCode::Invalid as i32,
                    stdout: String::new(),
                    stderr: format!("error: {why}\n"),
                    truncated: false,
                };
                let value = structured(tool.name, &outcome, Data::Text);
                return Ok(result(value, &outcome).into());
            }
        };
        let line = inv.command_line();
        let outcome = self.run(inv, context.ct.clone()).await;
        let value = structured(&line, &outcome, tool.data);
        Ok(result(value, &outcome).into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourcesResult, ErrorData> {
        let listed = self
            .run(Invocation::new(["templates", "list"]), context.ct.clone())
            .await;
        let resources = tools::table_rows(&listed.stdout)
            .into_iter()
            .filter_map(|row| {
                let name = row.get("NAME")?.as_str()?.to_string();
                let about = row.get("DESCRIPTION").and_then(Value::as_str).unwrap_or("");
                Some(
                    Resource::new(format!("tfjob-template://{name}"), name.clone())
                        .with_description(about.to_string())
                        .with_mime_type("text/plain"),
                )
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourceTemplatesResult, ErrorData> {
        let job = ResourceTemplate::new("tfjob://{namespace}/{name}", "tfjob")
            .with_description(
                "A TFJob's diagnosis as JSON: every layer's finding and the verdict, as `kubectl tfjob diagnose -o json --no-probe` gives it.",
            )
            .with_mime_type("application/json");
        Ok(ListResourceTemplatesResult::with_all_items(vec![job]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.clone();
        let (inv, mime) = resource_invocation(&uri, self.call_timeout)
            .map_err(|why| ErrorData::resource_not_found(why, Some(json!({"uri": uri}))))?;
        let outcome = self.run(inv, context.ct.clone()).await;
        // A job that is not there is not a resource (exit 3 with nothing printed).
        if outcome.stdout.trim().is_empty() {
            let why = outcome.stderr.trim().to_string();
            return Err(ErrorData::resource_not_found(
                why,
                Some(json!({"uri": uri})),
            ));
        }
        let contents = ResourceContents::text(outcome.stdout, uri).with_mime_type(mime);
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

/// The command that reads a resource, and its MIME type.
fn resource_invocation(
    uri: &str,
    timeout: Duration,
) -> std::result::Result<(Invocation, &'static str), String> {
    if let Some(name) = uri.strip_prefix("tfjob-template://") {
        let name = tools_positional("template", name)?;
        return Ok((Invocation::new(["templates", "show", &name]), "text/plain"));
    }
    let Some(path) = uri.strip_prefix("tfjob://") else {
        return Err(format!(
            "{uri}: not a resource of this server (tfjob://NAMESPACE/NAME, tfjob-template://NAME)"
        ));
    };
    let Some((namespace, name)) = path.split_once('/') else {
        return Err(format!("{uri}: expected tfjob://NAMESPACE/NAME"));
    };
    let name = tools_positional("name", name)?;
    let namespace = tools_positional("namespace", namespace)?;
    let mut inv = Invocation::new([
        "diagnose".to_string(),
        name,
        "--output=json".into(),
        "--no-probe".into(),
        format!("--timeout={}s", timeout.as_secs().max(1)),
    ]);
    inv.namespace = Some(namespace);
    Ok((inv, "application/json"))
}

/// A name in a resource's URI: a positional argument ([`tools::positional`]) with no `/`.
fn tools_positional(field: &str, value: &str) -> std::result::Result<String, String> {
    match tools::positional(field, value)? {
        v if v.contains('/') => Err(format!("{field}: {value:?} is not a name")),
        v => Ok(v),
    }
}

/// The call's result: structured content, the short text, and `isError` when the command did
/// not succeed (its exit code is not 0), as a shell reads it.
fn result(value: Value, outcome: &Outcome) -> CallToolResult {
    let mut r = if outcome.exit_code == 0 {
        CallToolResult::structured(value)
    } else {
        CallToolResult::structured_error(value)
    };
    r.content = vec![ContentBlock::text(short_text(outcome))];
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_uri_becomes_the_diagnosis_of_that_job_and_nothing_else() {
        let (inv, mime) = resource_invocation("tfjob://team-a/train", Duration::from_secs(9))
            .expect("a job's uri");
        assert_eq!(mime, "application/json");
        assert_eq!(
            inv.command_line(),
            "kubectl tfjob diagnose train --output=json --no-probe --timeout=9s -n=team-a"
        );
        for bad in [
            "tfjob://team-a",
            "tfjob://team-a/--all",
            "tfjob://a/b/c",
            "file:///etc/passwd",
            "tfjob-template://../x",
        ] {
            assert!(
                resource_invocation(bad, Duration::from_secs(1)).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn read_only_serves_no_write_and_writes_are_annotated_destructive() {
        let server = Server {
            global: Global::default(),
            read_only: true,
            call_timeout: Duration::from_secs(1),
            one_at_a_time: Default::default(),
        };
        let names: Vec<_> = server.tools().iter().map(|t| t.name).collect();
        assert!(!names.contains(&"submit") && !names.contains(&"delete"));
        assert!(names.contains(&"diagnose"));
        for t in tools::all() {
            let a = describe(&t).annotations.unwrap();
            assert_eq!(a.destructive_hint, Some(t.writes), "{}", t.name);
            assert_eq!(a.read_only_hint, Some(!t.writes), "{}", t.name);
        }
    }

    #[test]
    fn a_failed_command_is_an_error_result_with_its_class_first() {
        let outcome = Outcome {
            exit_code: 4,
            stdout: "{\"verdict\": \"x\"}".into(),
            stderr: "error: it failed\n".into(),
            truncated: false,
        };
        let value = structured("kubectl tfjob diagnose a", &outcome, Data::Json);
        assert_eq!(value["data"]["verdict"], "x");
        assert_eq!(value["exit_class"], "job-failed");
        let r = result(value, &outcome);
        assert_eq!(r.is_error, Some(true));
        let text = serde_json::to_value(&r.content[0]).unwrap();
        assert!(
            text["text"]
                .as_str()
                .unwrap()
                .starts_with("exit 4 (job-failed)\n{")
        );
    }
}
