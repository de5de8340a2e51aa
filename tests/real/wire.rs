//! Wire conformance: the same requests to the project's simulated cluster and to the real
//! kube-apiserver, compared on status code, content type and body shape. The simulated cluster
//! answers every fault test; where it differs from the real server here, it is the one to change.
//!
//! Compared (each a row of [`cases`]): a group that is not installed and a resource that is not
//! served (plain-text 404), NotFound / AlreadyExists / Conflict / Invalid Status objects (a
//! merge patch naming another uid, the precondition every write after a read carries) with
//! their details and causes (a Pod refused by Pod validation and a TFJob by its CRD's schema among them), strict unknown fields (a null value included), create dry runs,
//! an unsupported field selector, one node's pods as `check` reads them, list paging with `continue`, the initial-events watch ending
//! in a bookmark, Table output, and the service proxy `top` reads Prometheus through (a
//! missing Service, a Service with nothing behind it) with the label lookup that finds it. Not compared: exec subprotocol negotiation (it needs a pod on
//! a node; the real-node tier runs `probe` through it), and a watch's 410 (it needs an etcd
//! compaction).

use http_body_util::BodyExt as _;
use serde_json::{Value, json};

use crate::with_plane;

/// What kube-apiserver 1.36 says of the refused pod's dnsPolicy (validation.go
/// `validateDNSPolicy`: field.NotSupported over the policies in their declared order), checked
/// against the real server below.
const POD_REFUSAL: &str = "Unsupported value: \"ClusterFrist\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\"";

/// What kube-apiserver 1.36 says of a TFJob whose pod template has an annotation that YAML
/// reads as a bool (the article's `sidecar.istio.io/inject: false`): the CRD schema's type
/// error (apiextensions' structural schema, `FieldValueTypeInvalid`), then the cause it adds
/// when the CRD's CEL rules were not run on an invalid object.
const SCHEMA_REFUSAL: [(&str, &str, &str); 2] = [
    (
        "spec.tfReplicaSpecs.Worker.template.metadata.annotations.sidecar.istio.io/inject",
        "Invalid value: \"boolean\": spec.tfReplicaSpecs.Worker.template.metadata.annotations.sidecar.istio.io/inject in body must be of type string: \"boolean\"",
        "FieldValueTypeInvalid",
    ),
    (
        "<nil>",
        "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        "FieldValueInvalid",
    ),
];

/// One request: method, path (the namespace is `wire`), body.
struct Case {
    what: &'static str,
    method: &'static str,
    path: &'static str,
    body: Option<Value>,
    accept: Option<&'static str>,
}

/// What is compared of an answer.
#[derive(Debug, PartialEq)]
struct Shape {
    status: u16,
    content_type: String,
    body: Value,
}

fn job(name: &str) -> Value {
    json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name},
           "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {
               "containers": [{"name": "tensorflow", "image": "local/python:3"}]}}}}}})
}

fn cases() -> Vec<Case> {
    let c = |what, method, path, body: Option<Value>| Case {
        what,
        method,
        path,
        body,
        accept: None,
    };
    let mut unknown = job("unknown");
    unknown["spec"]["tfReplicaSpecs"]["Worker"]["template"]["metadata"] =
        json!({"creationTimestamp": null});
    let mut invalid = job("Bad_Name");
    invalid["metadata"]["name"] = "Bad_Name".into();
    vec![
        c(
            "group not installed",
            "GET",
            "/apis/karpenter.sh/v1/nodepools",
            None,
        ),
        c(
            "resource not served in a served group",
            "GET",
            "/apis/kubeflow.org/v1/namespaces/wire/pytorchjobs",
            None,
        ),
        c(
            "NotFound",
            "GET",
            "/apis/kubeflow.org/v1/namespaces/wire/tfjobs/missing",
            None,
        ),
        c(
            "create",
            "POST",
            "/apis/kubeflow.org/v1/namespaces/wire/tfjobs",
            Some(job("one")),
        ),
        c(
            "AlreadyExists",
            "POST",
            "/apis/kubeflow.org/v1/namespaces/wire/tfjobs",
            Some(job("one")),
        ),
        c(
            "Conflict (stale resourceVersion)",
            "PUT",
            "/apis/kubeflow.org/v1/namespaces/wire/tfjobs/one",
            Some({
                let mut j = job("one");
                j["metadata"]["resourceVersion"] = "1".into();
                j
            }),
        ),
        c(
            "Invalid patch (another uid: a patch's uid precondition)",
            "PATCH",
            "/apis/kubeflow.org/v1/namespaces/wire/tfjobs/one",
            Some(
                json!({"metadata": {"uid": "00000000-0000-0000-0000-000000000000"},
                        "spec": {"runPolicy": {"suspend": true}}}),
            ),
        ),
        c(
            "Invalid name",
            "POST",
            "/api/v1/namespaces/wire/configmaps",
            Some(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}}),
            ),
        ),
        c(
            "Invalid pod (Pod validation, dry run)",
            "POST",
            "/api/v1/namespaces/wire/pods?dryRun=All",
            Some(
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "refused"},
                        "spec": {"dnsPolicy": "ClusterFrist",
                                 "containers": [{"name": "tensorflow", "image": "local/python:3"}]}}),
            ),
        ),
        c(
            "Invalid TFJob (CRD schema: a bool annotation)",
            "POST",
            "/apis/kubeflow.org/v1/namespaces/wire/tfjobs",
            Some({
                let mut j = job("schema-bool");
                j["spec"]["tfReplicaSpecs"]["Worker"]["template"]["metadata"] =
                    json!({"annotations": {"sidecar.istio.io/inject": false}});
                j
            }),
        ),
        c(
            "strict unknown field, null value",
            "POST",
            "/apis/kubeflow.org/v1/namespaces/wire/tfjobs?fieldValidation=Strict",
            Some(unknown),
        ),
        c(
            "dry run create",
            "POST",
            "/apis/kubeflow.org/v1/namespaces/wire/tfjobs?dryRun=All",
            Some(job("dry")),
        ),
        c(
            "dry run stored nothing",
            "GET",
            "/apis/kubeflow.org/v1/namespaces/wire/tfjobs/dry",
            None,
        ),
        c(
            "unsupported field selector",
            "GET",
            "/api/v1/namespaces/wire/pods?fieldSelector=spec.bogus%3Dx",
            None,
        ),
        c(
            // What `check` reads per candidate node (issue 63): the watch cache's index.
            "one node's pods at resourceVersion 0",
            "GET",
            "/api/v1/pods?fieldSelector=spec.nodeName%3Dwire-node%2Cstatus.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed&limit=500&resourceVersion=0&resourceVersionMatch=NotOlderThan",
            None,
        ),
        c(
            "page 1",
            "GET",
            "/api/v1/namespaces/wire/configmaps?limit=2&labelSelector=page%3Dyes",
            None,
        ),
        c(
            "service proxy, no such Service",
            "GET",
            "/api/v1/namespaces/wire/services/nope:9090/proxy/api/v1/query?query=up",
            None,
        ),
        c(
            "service proxy, nothing behind the Service",
            "GET",
            "/api/v1/namespaces/wire/services/prometheus-operated:web/proxy/api/v1/query?query=up",
            None,
        ),
        c(
            "Services found by label in all namespaces",
            "GET",
            "/api/v1/services?labelSelector=operated-prometheus%3Dtrue&limit=20",
            None,
        ),
        Case {
            what: "Table",
            method: "GET",
            path: "/apis/kubeflow.org/v1/namespaces/wire/tfjobs",
            body: None,
            accept: Some("application/json;as=Table;v=v1;g=meta.k8s.io,application/json"),
        },
    ]
}

/// The parts of a body that both servers must agree on: for a Status its kind, status, reason,
/// code, details' name/group/kind and causes' reasons and fields; for a list its kind, item
/// count and whether a continue token came; for a Table its column names; for an object its
/// kind and name; for text, the text.
fn shape(content_type: &str, bytes: &[u8]) -> Value {
    if !content_type.starts_with("application/json") {
        return json!({"text": String::from_utf8_lossy(bytes).trim()});
    }
    let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
        return json!({"unparsable": String::from_utf8_lossy(bytes)});
    };
    match v["kind"].as_str() {
        Some("Status") => {
            let mut causes: Vec<Value> = v["details"]["causes"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(|c| json!({"reason": c["reason"], "field": c["field"]}))
                .collect();
            causes.sort_by_key(|c| c.to_string());
            json!({"kind": "Status", "status": v["status"], "reason": v["reason"], "code": v["code"],
                   "details": {"name": v["details"]["name"], "group": v["details"]["group"], "kind": v["details"]["kind"]},
                   "causes": causes, "message_has_unknown_field": v["message"].as_str().map(|m| m.contains("unknown field"))})
        }
        Some("Table") => json!({"kind": "Table",
            "columns": v["columnDefinitions"].as_array().into_iter().flatten().map(|c| c["name"].clone()).collect::<Vec<_>>()}),
        Some(k) if k.ends_with("List") => {
            json!({"kind": k, "items": v["items"].as_array().map(Vec::len),
            "continue": v["metadata"]["continue"].as_str().is_some_and(|c| !c.is_empty())})
        }
        _ => json!({"kind": v["kind"], "name": v["metadata"]["name"]}),
    }
}

async fn client(kubeconfig: &std::path::Path) -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    body: Option<&Value>,
    accept: Option<&str>,
) -> Shape {
    let mut req = hyper::Request::builder().method(method).uri(path);
    if let Some(a) = accept {
        req = req.header("Accept", a);
    }
    let body = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    if !body.is_empty() {
        let media = if method == "PATCH" {
            "application/merge-patch+json"
        } else {
            "application/json"
        };
        req = req.header("Content-Type", media);
    }
    let res = client
        .send(req.body(kube::client::Body::from(body)).unwrap())
        .await
        .unwrap();
    let status = res.status().as_u16();
    let content_type = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let bytes = res.into_body().collect().await.unwrap().to_bytes();
    // The media type alone: parameters (charset) differ in spelling, not in meaning.
    let media = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_string();
    Shape {
        status,
        body: shape(&media, &bytes),
        content_type: media,
    }
}

/// The answers of one server to every case, after the same setup.
async fn answers(kubeconfig: &std::path::Path) -> Vec<(&'static str, Shape)> {
    let client = client(kubeconfig).await;
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "wire"}});
    let made = send(&client, "POST", "/api/v1/namespaces", Some(&ns), None).await;
    assert!(made.status == 201 || made.status == 409, "{made:?}");
    for i in 0..3 {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("page-{i}"), "labels": {"page": "yes"}}});
        send(
            &client,
            "POST",
            "/api/v1/namespaces/wire/configmaps",
            Some(&cm),
            None,
        )
        .await;
    }
    // No ServiceAccount controller runs beside the real server: the default one is made here,
    // or its ServiceAccount admission forbids every pod before validation.
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}});
    send(
        &client,
        "POST",
        "/api/v1/namespaces/wire/serviceaccounts",
        Some(&sa),
        None,
    )
    .await;
    // What `top` looks for: prometheus-operator's governing Service, with no pod behind it.
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "prometheus-operated",
        "labels": {"operated-prometheus": "true"}},
        "spec": {"clusterIP": "None", "selector": {"app": "prometheus"},
                 "ports": [{"name": "web", "port": 9090}]}});
    send(
        &client,
        "POST",
        "/api/v1/namespaces/wire/services",
        Some(&svc),
        None,
    )
    .await;
    let mut out = vec![];
    for c in cases() {
        out.push((
            c.what,
            send(&client, c.method, c.path, c.body.as_ref(), c.accept).await,
        ));
    }
    out
}

#[test]
fn the_simulated_cluster_answers_as_the_real_api_server_does() {
    with_plane!(plane => {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let real = rt.block_on(answers(&plane.kubeconfig()));
        // The words the simulated cluster is given are the real server's.
        let said = rt.block_on(async {
            let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
                kube::Api::namespaced(client(&plane.kubeconfig()).await, "wire");
            let pod = serde_json::from_value(json!({"metadata": {"name": "refused"},
                "spec": {"dnsPolicy": "ClusterFrist",
                         "containers": [{"name": "tensorflow", "image": "local/python:3"}]}}))
            .unwrap();
            match pods.create(&kube::api::PostParams { dry_run: true, ..Default::default() }, &pod).await {
                Err(kube::Error::Api(s)) => s.message,
                other => panic!("{other:?}"),
            }
        });
        assert_eq!(said, format!("Pod \"refused\" is invalid: spec.dnsPolicy: {POD_REFUSAL}"));
        // Pod validation and the CRD schema are the real server's; the simulated cluster is
        // told the outcome.
        let mut scenario = tfjob_testcluster::Scenario::default().with_refusal(
            "pods",
            "refused",
            "spec.dnsPolicy",
            POD_REFUSAL,
        );
        scenario.refusals.push(tfjob_testcluster::Refusal {
            resource: "tfjobs".into(),
            name: "schema-".into(),
            webhook: None,
            causes: SCHEMA_REFUSAL
                .iter()
                .map(|(field, message, reason)| tfjob_testcluster::RefusalCause {
                    field: field.to_string(),
                    message: message.to_string(),
                    reason: Some(reason.to_string()),
                })
                .collect(),
        });
        let sim = tfjob_testcluster::TestCluster::start(scenario);
        let simulated = rt.block_on(answers(sim.kubeconfig()));
        let mut differ = vec![];
        for ((what, r), (_, s)) in real.iter().zip(&simulated) {
            if r != s {
                differ.push(format!("{what}:\n  real:      {} {} {}\n  simulated: {} {} {}", r.status, r.content_type, r.body, s.status, s.content_type, s.body));
            }
        }
        eprintln!("wire: {} of {} answers the same", real.len() - differ.len(), real.len());
        assert!(differ.is_empty(), "{}", differ.join("\n"));
    })
}
