//! The commands that read or write the API, against the real kube-apiserver: check and
//! submit's pre-flight, `submit -f` against `kubectl create -f`, `validate` against the strict
//! server dry run, on manifests as users write them.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::differential::{Server, server_verdict, validate_verdict};
use crate::harness::{ControlPlane, tfjob};
use crate::{NODES, with_plane};

const ARTICLE: &[&str] = &[
    "render",
    "--name",
    "tf-dist-train",
    "--image",
    "tensorflow/tensorflow:2.13.0-gpu",
    "--ps",
    "1",
    "--workers",
    "3",
    "--gpus",
    "1",
    "--cpu",
    "4",
    "--memory",
    "8Gi",
    "--",
    "python",
    "-m",
    "trainer.task",
    "--batch_size=32",
    "--training_steps=1000",
];

/// The article's job as `render` writes it (1 PS, 3 workers with one GPU each).
fn article(plane: &ControlPlane) -> String {
    let out = tfjob(plane, ARTICLE);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.stdout
}

fn file(body: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("job.yaml");
    std::fs::write(&path, body).unwrap();
    (dir, path)
}

/// Nodes made for one test, deleted when it ends; held under [`NODES`].
struct Nodes<'a> {
    plane: &'a ControlPlane,
    names: Vec<String>,
    _lock: std::sync::MutexGuard<'static, ()>,
}

impl<'a> Nodes<'a> {
    /// Ready nodes with `gpus` GPUs each. The API server's TaintNodesByCondition admission
    /// gives a new Node the `node.kubernetes.io/not-ready` taint; the node-lifecycle controller
    /// (not run here) lifts it once the node is Ready, so the test lifts it.
    fn ready(plane: &'a ControlPlane, gpus: &[u32]) -> Nodes<'a> {
        let lock = NODES.lock().unwrap_or_else(|e| e.into_inner());
        let mut names = vec![];
        for (i, g) in gpus.iter().enumerate() {
            let name = format!("real-node-{i}");
            let _ = plane.kubectl(&["delete", "node", &name, "--ignore-not-found"]);
            let res = json!({"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": g.to_string()});
            let node = json!({"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"capacity": res, "allocatable": res, "conditions": [{"type": "Ready", "status": "True",
                    "reason": "KubeletReady", "message": "kubelet is posting ready status"}]}});
            let made = plane.kubectl_in(&["create", "-f", "-"], Some(&node.to_string()));
            assert_eq!(made.code, 0, "{}", made.stderr);
            let untaint = plane.kubectl(&[
                "taint",
                "node",
                &name,
                "node.kubernetes.io/not-ready:NoSchedule-",
            ]);
            assert_eq!(untaint.code, 0, "{}", untaint.stderr);
            names.push(name);
        }
        Nodes {
            plane,
            names,
            _lock: lock,
        }
    }
}

impl Drop for Nodes<'_> {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = self.plane.kubectl(&["delete", "node", n, "--wait=false"]);
        }
    }
}

fn secret(plane: &ControlPlane, ns: &str) {
    let made = plane.kubectl(&[
        "-n",
        ns,
        "create",
        "secret",
        "generic",
        "taotoken-secret",
        "--from-literal=api-key=sk-real-tier-0000",
    ]);
    assert_eq!(made.code, 0, "{}", made.stderr);
}

#[test]
fn check_gives_the_placement_verdict_on_a_cluster_without_karpenter() {
    with_plane!(plane => {
        let ns = plane.namespace("check");
        secret(plane, &ns);
        let _nodes = Nodes::ready(plane, &[1]);
        let (_d, job) = file(&article(plane));
        let out = tfjob(plane, &["-n", &ns, "check", "-f", job.to_str().unwrap()]);
        // Before: `error: cannot list nodes: 404 page not found`, exit 3 (the karpenter.sh
        // probe's plain-text 404 was taken for a failed read of the cluster).
        assert!(!out.all().contains("404 page not found"), "{}", out.all());
        assert_eq!(out.code, 4, "{}", out.all());
        assert!(out.stdout.contains("Placement: never"), "{}", out.stdout);
        assert!(out.stdout.contains("3 nvidia.com/gpu"), "{}", out.stdout);
    })
}

#[test]
fn the_articles_job_on_one_gpu_is_refused_before_any_write() {
    with_plane!(plane => {
        let ns = plane.namespace("onegpu");
        secret(plane, &ns);
        let _nodes = Nodes::ready(plane, &[1]);
        let (_d, job) = file(&article(plane));
        let out = tfjob(plane, &["-n", &ns, "submit", "-f", job.to_str().unwrap(), "--wait", "--timeout", "60s"]);
        assert_eq!(out.code, 4, "{}", out.all());
        assert!(out.stderr.contains("Nothing was created"), "{}", out.stderr);
        assert_eq!(plane.writes("kubectl-tfjob", &ns), vec![], "writes");
        let jobs = plane.kubectl(&["-n", &ns, "get", "tfjobs", "-o", "name"]);
        assert_eq!(jobs.stdout.trim(), "", "stored: {}", jobs.stdout);
        // Issue 61 item 3: a server dry run of the same job reaches the real API server's
        // admission, as `kubectl create --dry-run=server` does; the placement is a warning.
        let out = tfjob(plane, &["-n", &ns, "submit", "-f", job.to_str().unwrap(), "--dry-run=server"]);
        assert_eq!(out.code, 0, "{}", out.all());
        assert!(out.stdout.contains("created (server dry run)"), "{}", out.all());
        assert!(out.stderr.contains("can never run on this cluster as it is"), "{}", out.all());
        assert!(
            plane.dry_runs("kubectl-tfjob", &ns).iter().any(|(verb, resource, _)| verb == "create" && resource == "tfjobs"),
            "the dry run never reached the server: {:?}",
            plane.dry_runs("kubectl-tfjob", &ns)
        );
        assert_eq!(plane.writes("kubectl-tfjob", &ns), vec![], "a server dry run writes nothing");
        // With enough GPUs the same job passes the pre-flight (and only the dry runs are sent).
        drop(_nodes);
        let _nodes = Nodes::ready(plane, &[2, 2]);
        let out = tfjob(plane, &["-n", &ns, "submit", "-f", job.to_str().unwrap(), "--dry-run=server"]);
        assert_eq!(out.code, 0, "{}", out.all());
        assert_eq!(plane.writes("kubectl-tfjob", &ns), vec![], "a server dry run writes nothing");
    })
}

/// What `kubectl get -o yaml` and generators write: fields the CRD's embedded ObjectMeta does
/// not have, set to null. Strict field validation refuses an unknown field whatever its value.
#[test]
fn unknown_fields_are_refused_as_the_server_does_even_when_null() {
    with_plane!(plane => {
        let ns = plane.namespace("nulls");
        let variants: [(&str, &str, Value); 3] = [
            ("template-creation-timestamp", "template.metadata.creationTimestamp", json!({"creationTimestamp": null})),
            ("template-uid", "template.metadata.uid", json!({"uid": null})),
            ("template-owner-references", "template.metadata.ownerReferences", json!({"ownerReferences": null})),
        ];
        for (name, field, meta) in variants {
            let mut job = crate::differential::base_job(name);
            let t = &mut job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["metadata"];
            for (k, v) in meta.as_object().unwrap() {
                t[k] = v.clone();
            }
            let text = serde_json::to_string_pretty(&job).unwrap();
            let server = server_verdict(plane, &ns, &text);
            assert!(matches!(&server, Server::Refused(w) if w.contains("unknown field")), "{name}: {server:?}");
            let ours = validate_verdict(plane, &text);
            assert!(ours.errors.iter().any(|e| e.contains(field)), "{name}: {:?}", ours.errors);
            let (_d, path) = file(&text);
            let submit = tfjob(plane, &["-n", &ns, "submit", "-f", path.to_str().unwrap()]);
            assert_eq!(submit.code, 2, "{name}: {}", submit.all());
            let export = tfjob(plane, &["export", "--to", "jobset", "-f", path.to_str().unwrap()]);
            assert_eq!(export.code, 2, "{name}: export: {}", export.all());
        }
        assert_eq!(plane.writes("kubectl-tfjob", &ns), vec![]);
    })
}

/// Shapes the server (and Pod validation of the operator's pods) accepts: validate must not
/// refuse them. Each was refused by an earlier version or is a near miss of a refused shape.
#[test]
fn what_the_server_accepts_validate_does_not_refuse() {
    with_plane!(plane => {
        let ns = plane.namespace("accepts");
        let cases: [(&str, Value); 6] = [
            ("emptydir-medium-lowercase", json!({"volumes": [{"name": "shm", "emptyDir": {"medium": "memory"}}]})),
            ("volume-without-source", json!({"volumes": [{"name": "scratch"}]})),
            ("image-with-capitals", json!({"containers": [{"name": "tensorflow", "image": "Registry.Example.com/Team/Trainer:V1"}]})),
            ("image-digest-short", json!({"containers": [{"name": "tensorflow", "image": "trainer@sha256:abc"}]})),
            ("empty-strings", json!({"dnsPolicy": "", "serviceAccountName": ""})),
            ("null-args", json!({"containers": [{"name": "tensorflow", "image": "local/python:3", "args": null}]})),
        ];
        for (name, spec) in cases {
            let mut job = crate::differential::base_job(name);
            let t = &mut job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"];
            for (k, v) in spec.as_object().unwrap() {
                t[k] = v.clone();
            }
            let text = serde_json::to_string_pretty(&job).unwrap();
            assert_eq!(server_verdict(plane, &ns, &text), Server::Accepted, "{name}");
            let ours = validate_verdict(plane, &text);
            assert!(ours.errors.is_empty(), "{name}: validate refuses what the server accepts: {:?}", ours.errors);
        }
    })
}

/// `submit -f` sends what the file says: the server stores the same object as for
/// `kubectl create -f` (the same spec, labels and annotations; identity and time differ, and
/// submit adds its submission mark).
#[test]
fn submit_f_stores_what_kubectl_create_f_stores() {
    with_plane!(plane => {
        let a = plane.namespace("create-kubectl");
        let b = plane.namespace("create-tfjob");
        let _nodes = Nodes::ready(plane, &[4]);
        let manifest = r#"apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: same
  labels: {team: ml}
  annotations: {note: "as written"}
spec:
  runPolicy: {cleanPodPolicy: None, backoffLimit: 3}
  tfReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: ExitCode
      template:
        metadata:
          annotations: {sidecar.istio.io/inject: "false"}
        spec:
          dnsPolicy: ""
          volumes: [{name: scratch}, {name: shm, emptyDir: {medium: Memory}}]
          containers:
          - name: tensorflow
            image: local/python:3
            args: null
            command: [python3, -c, "print(1)"]
            resources: {limits: {cpu: 500m, memory: 1Gi, nvidia.com/gpu: 1}}
"#;
        let (_d, path) = file(manifest);
        let p = path.to_str().unwrap();
        let created = plane.kubectl(&["-n", &a, "create", "-f", p]);
        assert_eq!(created.code, 0, "{}", created.stderr);
        let submitted = tfjob(plane, &["-n", &b, "submit", "-f", p]);
        assert_eq!(submitted.code, 0, "{}", submitted.all());
        let stored = |ns: &str| {
            let got = plane.kubectl(&["-n", ns, "get", "tfjob", "same", "-o", "json"]);
            let mut v: Value = serde_json::from_str(&got.stdout).unwrap();
            let m = v["metadata"].as_object_mut().unwrap();
            for k in ["namespace", "uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"] {
                m.remove(k);
            }
            v
        };
        // The one addition is submit's own mark, by which it tells its create from someone
        // else's after a lost reply (docs/retries.md); everything the file says is stored as is.
        let mut ours = stored(&b);
        let mark = ours["metadata"]["annotations"]
            .as_object_mut()
            .unwrap()
            .remove("kubectl-tfjob.kubeflow.org/submission-id");
        assert!(mark.is_some(), "{ours}");
        assert_eq!(stored(&a), ours);
        let writes = plane.writes("kubectl-tfjob", &b);
        assert_eq!(writes, vec![("create".to_string(), "tfjobs".to_string(), "same".to_string())]);
    })
}

/// Every file of the broken-input corpus that `validate` refuses at the server's layers is
/// refused by the real server; one that only the operator's webhook refuses is stored here
/// (no webhook runs), which is the webhook's to refuse.
#[test]
fn the_corpus_refusals_are_the_real_servers() {
    with_plane!(plane => {
        let ns = plane.namespace("corpus");
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
        let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        let mut differ = vec![];
        for f in &files {
            let text = std::fs::read_to_string(f).unwrap();
            let ours = validate_verdict(plane, &text);
            let server = server_verdict(plane, &ns, &text);
            let refused = matches!(server, Server::Refused(_));
            // A document that is not a TFJob is outside what `validate` judges (exit 2, "this
            // plugin only handles TFJobs"), whatever the server makes of it.
            let not_ours = !text.contains("kind: TFJob");
            let agree = not_ours || if ours.errors.is_empty() { !refused || ours.webhook } else { refused };
            if !agree {
                differ.push(format!("{}: validate {:?} / server {server:?}", f.display(), ours.errors));
            }
        }
        eprintln!("corpus: {} of {} files agree with the real server", files.len() - differ.len(), files.len());
        assert!(differ.is_empty(), "{}", differ.join("\n"));
    })
}

/// Issue 61 item 1 on the real kube-apiserver: a pod on a node whose kubelet the API server
/// cannot reach (a Node with no address; the pod's running status written as a kubelet would).
/// The server refuses exec and logs with its own words (HTTP 500); probe, diagnose and logs
/// say it in one sentence naming the layer, never kube's `Debug` of the Status.
#[test]
fn an_exec_the_real_api_server_cannot_open_is_a_sentence() {
    with_plane!(plane => {
        let ns = plane.namespace("noexec");
        secret(plane, &ns);
        let _nodes = Nodes::ready(plane, &[4]);
        // One replica, so that every replica runs and diagnose --probe looks inside.
        let job = json!({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "tf-dist-train"},
            "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {"containers": [
                {"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0-gpu"}]}}}}}});
        let made = plane.kubectl_in(&["-n", &ns, "create", "-f", "-"], Some(&job.to_string()));
        assert_eq!(made.code, 0, "{}", made.all());
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "tf-dist-train-worker-0", "labels": {
                "training.kubeflow.org/job-name": "tf-dist-train", "training.kubeflow.org/operator-name": "tfjob-controller",
                "training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "0"}},
            "spec": {"nodeName": "real-node-0", "containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0-gpu"}]}});
        let made = plane.kubectl_in(&["-n", &ns, "create", "-f", "-"], Some(&pod.to_string()));
        assert_eq!(made.code, 0, "{}", made.all());
        let now = "2026-01-01T00:00:00Z";
        let status = json!({"status": {"phase": "Running", "startTime": now,
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
            "containerStatuses": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0-gpu", "imageID": "",
                "ready": true, "started": true, "restartCount": 0, "state": {"running": {"startedAt": now}}}]}});
        let patched = plane.kubectl(&["-n", &ns, "patch", "pod", "tf-dist-train-worker-0", "--subresource=status",
            "--type=merge", "-p", &status.to_string()]);
        assert_eq!(patched.code, 0, "{}", patched.all());
        // kubectl itself fails the same way: the server's words, which the sentence carries.
        let exec = plane.kubectl(&["-n", &ns, "exec", "tf-dist-train-worker-0", "--", "true"]);
        assert_ne!(exec.code, 0, "{}", exec.all());
        for cmd in [&["probe", "tf-dist-train"][..], &["diagnose", "tf-dist-train", "--probe"], &["logs", "tf-dist-train"]] {
            let mut argv = vec!["-n", ns.as_str()];
            argv.extend_from_slice(cmd);
            argv.extend_from_slice(&["--timeout", "30s"]);
            let out = tfjob(plane, &argv);
            let all = out.all();
            assert!(
                all.contains("the API server could not reach the kubelet of the pod's node"),
                "{cmd:?} (kubectl exec said: {}):\n{all}",
                exec.stderr
            );
            for debug in ["Status {", "ListMeta", "Some(", "ApiError", "(, HTTP"] {
                assert!(!all.contains(debug), "{cmd:?} printed {debug:?}:\n{all}");
            }
        }
    })
}
