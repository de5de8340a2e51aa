//! `validate`'s verdict held against the real API server's, on generated pod templates.
//!
//! The server's verdict is the one a real cluster gives: the TFJob's create dry run under strict
//! field validation (kubectl's default; schema, pruning, unknown fields), then the create dry run
//! of each pod the operator makes from the job the server returned (Pod validation and the
//! default admission plugins). The operator's webhook does not run here, so a refusal that
//! `validate` names as the webhook's (`webhook/…` rules) is left out of the comparison.
//!
//! A seeded sample runs in the suite; a long run is
//! `REAL_DIFF_VARIANTS=2000 REAL_DIFF_SEED=7 cargo test --test real differential -- --nocapture`.

use serde_json::{Value, json};

use crate::harness::ControlPlane;
use crate::with_plane;

/// What the real server makes of a manifest.
#[derive(Debug, Clone, PartialEq)]
pub enum Server {
    Accepted,
    /// Refused; which object and the server's words.
    Refused(String),
}

/// The server's verdict on `manifest` (YAML or JSON; one or more documents) in `ns`.
pub fn server_verdict(plane: &ControlPlane, ns: &str, manifest: &str) -> Server {
    let job = plane.kubectl_in(
        &[
            "-n",
            ns,
            "create",
            "--dry-run=server",
            "--validate=strict",
            "-o",
            "json",
            "-f",
            "-",
        ],
        Some(manifest),
    );
    if job.code != 0 {
        return Server::Refused(format!("TFJob: {}", job.stderr.trim()));
    }
    let mut pods = vec![];
    for v in serde_json::Deserializer::from_str(&job.stdout).into_iter::<Value>() {
        let Ok(v) = v else { break };
        let items = match v["kind"].as_str() {
            Some("List") => v["items"].as_array().cloned().unwrap_or_default(),
            _ => vec![v],
        };
        for item in items.into_iter().filter(|i| i["kind"] == "TFJob") {
            match serde_json::from_value::<kubectl_tfjob::model::TFJob>(item) {
                Ok(job) => pods.extend(
                    kubectl_tfjob::ops::pod_dry_run::operator_pods(&job, ns)
                        .into_iter()
                        .map(|(_, p)| {
                            let mut p = serde_json::to_value(p).unwrap();
                            p["apiVersion"] = "v1".into();
                            p["kind"] = "Pod".into();
                            p
                        }),
                ),
                // The server stored it, our model cannot read it: a disagreement to report.
                Err(e) => return Server::Refused(format!("model cannot read the stored job: {e}")),
            }
        }
    }
    if pods.is_empty() {
        return Server::Accepted;
    }
    // The operator's headless Service per replica, named as its pod (DNS-1035 labels: the name
    // limit a long job name hits first).
    let services: Vec<Value> = pods
        .iter()
        .map(|p| {
            json!({"apiVersion": "v1", "kind": "Service",
                   "metadata": {"name": p["metadata"]["name"], "labels": p["metadata"]["labels"]},
                   "spec": {"clusterIP": "None", "selector": p["metadata"]["labels"],
                            "ports": [{"name": "tfjob-port", "port": 2222}]}})
        })
        .collect();
    pods.extend(services);
    let list = json!({"apiVersion": "v1", "kind": "List", "items": pods}).to_string();
    let created = plane.kubectl_in(
        &["-n", ns, "create", "--dry-run=server", "-f", "-"],
        Some(&list),
    );
    if created.code != 0 {
        return Server::Refused(format!("Pod or Service: {}", created.stderr.trim()));
    }
    Server::Accepted
}

/// `validate`'s verdict: `Some(errors)` with the non-webhook errors it reports (empty: it
/// accepts at the server's layers), and whether the webhook refuses.
pub struct Verdict {
    pub errors: Vec<String>,
    pub webhook: bool,
}

pub fn validate_verdict(plane: &ControlPlane, manifest: &str) -> Verdict {
    let out = crate::harness::tfjob_as(
        &plane.kubeconfig(),
        &["validate", "-f", "-", "-o", "json"],
        Some(manifest),
    );
    let report: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|_| {
        // Not even a report (unreadable YAML): one error of the document.
        json!({"findings": [{"severity": "error", "rule": "document", "path": "", "message": out.stderr}]})
    });
    let errors = report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["severity"] == "error");
    let (webhook, errors): (Vec<&Value>, Vec<&Value>) = errors.partition(|f| {
        f["rule"]
            .as_str()
            .is_some_and(|r| r.starts_with("webhook/"))
    });
    Verdict {
        errors: errors
            .iter()
            .map(|f| {
                format!(
                    "{}: {}",
                    f["path"].as_str().unwrap_or(""),
                    f["message"].as_str().unwrap_or("")
                )
            })
            .collect(),
        webhook: !webhook.is_empty(),
    }
}

/// A tiny seeded generator (xorshift64*), so a run is reproducible from its seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// One change to a pod template: its area, and where it goes (`pod` spec keys, `container`
/// keys of the training container, `meta` keys of the template's metadata).
pub struct Atom {
    pub area: &'static str,
    pub at: &'static str,
    pub value: Value,
    /// Where it goes, as a disagreement names it (the OpenAPI generator's field path).
    pub label: String,
}

impl Atom {
    pub fn owned(area: &'static str, at: &'static str, value: Value, label: String) -> Atom {
        Atom {
            area,
            at,
            value,
            label,
        }
    }
}

fn atom(area: &'static str, at: &'static str, value: Value) -> Atom {
    Atom::owned(area, at, value, String::new())
}

/// The variants' building blocks across the PodSpec: valid shapes and the mistakes users make,
/// each judged by the server, not by this list (no expected verdict is written here).
pub fn atoms() -> Vec<Atom> {
    vec![
        // security contexts
        atom(
            "security",
            "pod",
            json!({"securityContext": {"runAsUser": -1}}),
        ),
        atom(
            "security",
            "pod",
            json!({"securityContext": {"runAsNonRoot": true, "runAsUser": 1000, "fsGroup": 2000}}),
        ),
        atom(
            "security",
            "pod",
            json!({"securityContext": {"fsGroupChangePolicy": "Sometimes"}}),
        ),
        atom(
            "security",
            "pod",
            json!({"securityContext": {"sysctls": [{"name": "net.core.somaxconn", "value": "1024"}]}}),
        ),
        atom(
            "security",
            "pod",
            json!({"securityContext": {"sysctls": [{"name": "bad name!", "value": "1"}]}}),
        ),
        atom(
            "security",
            "pod",
            json!({"securityContext": {"seccompProfile": {"type": "Localhost"}}}),
        ),
        atom(
            "security",
            "pod",
            json!({"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}),
        ),
        atom(
            "security",
            "container",
            json!({"securityContext": {"privileged": true, "allowPrivilegeEscalation": false}}),
        ),
        atom(
            "security",
            "container",
            json!({"securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}, "allowPrivilegeEscalation": false}}),
        ),
        atom(
            "security",
            "container",
            json!({"securityContext": {"capabilities": {"add": ["CAP_SYS_ADMIN"]}, "allowPrivilegeEscalation": false}}),
        ),
        atom(
            "security",
            "container",
            json!({"securityContext": {"procMount": "Unmasked"}}),
        ),
        atom(
            "security",
            "container",
            json!({"securityContext": {"readOnlyRootFilesystem": true, "runAsGroup": -5}}),
        ),
        atom(
            "security",
            "container",
            json!({"securityContext": {"appArmorProfile": {"type": "Localhost"}}}),
        ),
        // volumes of every type
        atom(
            "volumes",
            "pod",
            json!({"volumes": [{"name": "v", "emptyDir": {"medium": "memory"}}]}),
        ),
        atom(
            "volumes",
            "pod",
            json!({"volumes": [{"name": "v", "emptyDir": {"sizeLimit": "-1Gi"}}]}),
        ),
        atom("volumes", "pod", json!({"volumes": [{"name": "v"}]})),
        atom(
            "volumes",
            "pod",
            json!({"volumes": [{"name": "v", "hostPath": {"path": "/data", "type": "Directory"}}]}),
        ),
        atom(
            "volumes",
            "pod",
            json!({"volumes": [{"name": "v", "hostPath": {"path": "/data/../etc"}}]}),
        ),
        atom(
            "volumes",
            "pod",
            json!({"volumes": [{"name": "v", "hostPath": {"path": "/data", "type": "Dir"}}]}),
        ),
        atom(
            "volumes",
            "pod",
            json!({"volumes": [{"name": "v", "configMap": {"name": "c", "items": [{"key": "k", "path": "../x"}]}}]}),
        ),
        atom(
            "volumes",
            "pod",
            json!({"volumes": [{"name": "v", "secret": {"secretName": "s", "defaultMode": 4096}}]}),
        ),
        atom(
            "volumes",
            "pod",
            json!({"volumes": [{"name": "v", "secret": {"secretName": "s", "defaultMode": 420}}]}),
        ),
        atom(
            "volumes",
            "pod",
            json!({"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": ""}}]}),
        ),
        atom(
            "volumes",
            "pod",
            json!({"volumes": [{"name": "v", "nfs": {"server": "nfs", "path": "data"}}]}),
        ),
        atom(
            "volumes",
            "pod",
            json!({"volumes": [{"name": "v", "nfs": {"server": "nfs", "path": "/data"}}]}),
        ),
        atom(
            "volumes",
            "pod",
            json!({"volumes": [{"name": "v", "csi": {"driver": ""}}]}),
        ),
        atom(
            "volumes",
            "pod",
            json!({"volumes": [{"name": "v", "csi": {"driver": "csi.example.com"}}]}),
        ),
        atom(
            "volumes",
            "pod",
            json!({"volumes": [{"name": "v", "projected": {"sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 60}}]}}]}),
        ),
        atom(
            "volumes",
            "pod",
            json!({"volumes": [{"name": "v", "projected": {"sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}}]}}]}),
        ),
        atom(
            "volumes",
            "pod",
            json!({"volumes": [{"name": "v", "ephemeral": {}}]}),
        ),
        atom(
            "volumes",
            "pod",
            json!({"volumes": [{"name": "v", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}}]}),
        ),
        atom(
            "volumes",
            "pod",
            json!({"volumes": [{"name": "v", "image": {"reference": "local/data:1"}}]}),
        ),
        atom(
            "volumes",
            "pod",
            json!({"volumes": [{"name": "V_bad", "emptyDir": {}}]}),
        ),
        atom(
            "volumes",
            "container",
            json!({"volumeMounts": [{"name": "missing", "mountPath": "/m"}]}),
        ),
        atom(
            "volumes",
            "container",
            json!({"volumeMounts": [{"name": "v", "mountPath": "/m", "subPath": "../x"}]}),
        ),
        // probes
        atom(
            "probes",
            "container",
            json!({"livenessProbe": {"exec": {"command": ["true"]}, "httpGet": {"port": 80}}}),
        ),
        atom(
            "probes",
            "container",
            json!({"livenessProbe": {"periodSeconds": 5}}),
        ),
        atom(
            "probes",
            "container",
            json!({"readinessProbe": {"tcpSocket": {"port": 2222}, "successThreshold": 1}}),
        ),
        atom(
            "probes",
            "container",
            json!({"livenessProbe": {"tcpSocket": {"port": 2222}, "successThreshold": 2}}),
        ),
        atom(
            "probes",
            "container",
            json!({"startupProbe": {"grpc": {"port": 2222}, "terminationGracePeriodSeconds": 0}}),
        ),
        atom(
            "probes",
            "container",
            json!({"readinessProbe": {"httpGet": {"port": "http-metrics-port-x"}}}),
        ),
        // env and envFrom, every ref kind
        atom(
            "env",
            "container",
            json!({"env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}),
        ),
        atom(
            "env",
            "container",
            json!({"env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "bad/key"}}}]}),
        ),
        atom(
            "env",
            "container",
            json!({"env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}}]}),
        ),
        atom(
            "env",
            "container",
            json!({"env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}),
        ),
        atom(
            "env",
            "container",
            json!({"env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]}),
        ),
        atom(
            "env",
            "container",
            json!({"env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "status.bogus"}}}]}),
        ),
        atom(
            "env",
            "container",
            json!({"env": [{"name": "A", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}]}),
        ),
        atom(
            "env",
            "container",
            json!({"env": [{"name": "A", "valueFrom": {"resourceFieldRef": {"resource": "limits.gpu"}}}]}),
        ),
        atom(
            "env",
            "container",
            json!({"env": [{"name": "A", "valueFrom": {"fileKeyRef": {"volumeName": "v", "path": "env.txt", "key": "A"}}}]}),
        ),
        atom(
            "env",
            "container",
            json!({"env": [{"name": "A", "valueFrom": {"fileKeyRef": {"volumeName": "v", "path": "/abs", "key": "A"}}}]}),
        ),
        atom(
            "env",
            "container",
            json!({"env": [{"name": "1A", "value": "x"}]}),
        ),
        atom(
            "env",
            "container",
            json!({"env": [{"name": "A=B", "value": "x"}]}),
        ),
        atom(
            "env",
            "container",
            json!({"env": [{"name": "A", "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}),
        ),
        atom(
            "env",
            "container",
            json!({"envFrom": [{"prefix": "P_", "configMapRef": {"name": "c"}}]}),
        ),
        atom(
            "env",
            "container",
            json!({"envFrom": [{"prefix": "1=", "configMapRef": {"name": "c"}}]}),
        ),
        atom(
            "env",
            "container",
            json!({"envFrom": [{"secretRef": {"name": "s"}, "configMapRef": {"name": "c"}}]}),
        ),
        // ports, hostPort, hostNetwork
        atom(
            "ports",
            "container",
            json!({"ports": [{"containerPort": 2222, "hostPort": 2222}]}),
        ),
        atom(
            "ports",
            "container",
            json!({"ports": [{"containerPort": 2222, "hostPort": 2223}]}),
        ),
        atom("ports", "pod", json!({"hostNetwork": true})),
        atom(
            "ports",
            "container",
            json!({"ports": [{"containerPort": 70000}]}),
        ),
        atom(
            "ports",
            "container",
            json!({"ports": [{"name": "tfjob-port", "containerPort": 2222}, {"name": "tfjob-port", "containerPort": 2223}]}),
        ),
        atom(
            "ports",
            "container",
            json!({"ports": [{"containerPort": 2222, "protocol": "tcp"}]}),
        ),
        // init and sidecar containers
        atom(
            "init",
            "pod",
            json!({"initContainers": [{"name": "init", "image": "local/busybox:1", "restartPolicy": "Always"}]}),
        ),
        atom(
            "init",
            "pod",
            json!({"initContainers": [{"name": "init", "image": "local/busybox:1", "restartPolicy": "Never"}]}),
        ),
        atom(
            "init",
            "pod",
            json!({"initContainers": [{"name": "init", "image": "local/busybox:1", "readinessProbe": {"exec": {"command": ["true"]}}}]}),
        ),
        atom(
            "init",
            "pod",
            json!({"initContainers": [{"name": "init", "image": "local/busybox:1", "restartPolicy": "Always", "readinessProbe": {"exec": {"command": ["true"]}}}]}),
        ),
        atom(
            "init",
            "pod",
            json!({"initContainers": [{"name": "tensorflow", "image": "local/busybox:1"}]}),
        ),
        atom("init", "container", json!({"restartPolicy": "Always"})),
        // resources, pod-level resources
        atom(
            "resources",
            "container",
            json!({"resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}),
        ),
        atom(
            "resources",
            "container",
            json!({"resources": {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "2"}}}),
        ),
        atom(
            "resources",
            "container",
            json!({"resources": {"limits": {"nvidia.com/gpu": "0.5"}}}),
        ),
        atom(
            "resources",
            "container",
            json!({"resources": {"requests": {"memory": "1.5"}}}),
        ),
        atom(
            "resources",
            "container",
            json!({"resources": {"limits": {"example.com/foo": "1"}}}),
        ),
        atom(
            "resources",
            "container",
            json!({"resources": {"limits": {"foo": "1"}}}),
        ),
        atom(
            "resources",
            "pod",
            json!({"resources": {"limits": {"cpu": "2", "memory": "2Gi"}}}),
        ),
        atom(
            "resources",
            "pod",
            json!({"resources": {"limits": {"nvidia.com/gpu": "1"}}}),
        ),
        atom(
            "resources",
            "pod",
            json!({"resources": {"requests": {"cpu": "4"}, "limits": {"cpu": "2"}}}),
        ),
        // metadata, finalizers
        atom("meta", "meta", json!({"finalizers": ["example.com/keep"]})),
        atom("meta", "meta", json!({"finalizers": ["keep"]})),
        atom("meta", "meta", json!({"labels": {"app": "bad value!"}})),
        atom("meta", "meta", json!({"annotations": {"UPPER/x": "1"}})),
        atom("meta", "meta", json!({"creationTimestamp": null})),
        atom("meta", "meta", json!({"generateName": "x-"})),
        // DNS and host aliases
        atom("dns", "pod", json!({"dnsPolicy": "None"})),
        atom(
            "dns",
            "pod",
            json!({"dnsPolicy": "None", "dnsConfig": {"nameservers": ["10.0.0.10"]}}),
        ),
        atom(
            "dns",
            "pod",
            json!({"dnsConfig": {"options": [{"name": "ndots", "value": "2"}]}}),
        ),
        atom("dns", "pod", json!({"dnsConfig": {"searches": ["a..b"]}})),
        atom(
            "dns",
            "pod",
            json!({"hostAliases": [{"ip": "10.0.0.1", "hostnames": ["gw"]}]}),
        ),
        atom(
            "dns",
            "pod",
            json!({"hostAliases": [{"ip": "not-an-ip", "hostnames": ["gw"]}]}),
        ),
        atom("dns", "pod", json!({"hostname": "Bad_Host"})),
        atom("dns", "pod", json!({"subdomain": "svc"})),
        // scheduling
        atom(
            "scheduling",
            "pod",
            json!({"tolerations": [{"operator": "Exists", "value": "x"}]}),
        ),
        atom(
            "scheduling",
            "pod",
            json!({"tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule", "tolerationSeconds": 30}]}),
        ),
        atom(
            "scheduling",
            "pod",
            json!({"tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}]}),
        ),
        atom(
            "scheduling",
            "pod",
            json!({"nodeSelector": {"gpu": "a100"}}),
        ),
        atom(
            "scheduling",
            "pod",
            json!({"nodeSelector": {"bad key!": "x"}}),
        ),
        atom(
            "scheduling",
            "pod",
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}}),
        ),
        atom(
            "scheduling",
            "pod",
            json!({"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 101, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}]}}}),
        ),
        atom(
            "scheduling",
            "pod",
            json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]}),
        ),
        atom(
            "scheduling",
            "pod",
            json!({"topologySpreadConstraints": [{"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]}),
        ),
        atom("scheduling", "pod", json!({"priority": 10})),
        atom(
            "scheduling",
            "pod",
            json!({"schedulingGates": [{"name": "example.com/gate"}]}),
        ),
        atom(
            "scheduling",
            "pod",
            json!({"terminationGracePeriodSeconds": -1}),
        ),
        atom("scheduling", "pod", json!({"activeDeadlineSeconds": 0})),
        // images and names
        atom(
            "image",
            "container",
            json!({"image": "Registry.Example.com/Team/Trainer:V1"}),
        ),
        atom("image", "container", json!({"image": " local/python:3"})),
        atom(
            "image",
            "container",
            json!({"image": "local/python@sha256:abc"}),
        ),
        atom(
            "image",
            "container",
            json!({"imagePullPolicy": "Sometimes"}),
        ),
        atom(
            "image",
            "container",
            json!({"terminationMessagePolicy": "FallbackToLogsOnError"}),
        ),
        atom("image", "container", json!({"workingDir": "relative/dir"})),
        atom(
            "image",
            "container",
            json!({"lifecycle": {"preStop": {"sleep": {"seconds": 5}}}}),
        ),
        atom(
            "image",
            "container",
            json!({"lifecycle": {"preStop": {"sleep": {"seconds": -5}}}}),
        ),
        // 1.36's newest corners (issue 60 item 11): pod-level resources against the
        // containers' aggregate, a container's own restart policy and rules, divisors,
        // resize policies, image volumes with a subPath.
        atom(
            "pod-resources",
            "pod",
            json!({"resources": {"limits": {"cpu": "1"}}, "initContainers": [
            {"name": "init", "image": "local/python:3", "resources": {"requests": {"cpu": "2"}}}]}),
        ),
        atom(
            "pod-resources",
            "pod",
            json!({"resources": {"requests": {"memory": "64Mi"}}, "initContainers": [
            {"name": "side", "image": "local/python:3", "restartPolicy": "Always", "resources": {"requests": {"memory": "128Mi"}}}]}),
        ),
        atom(
            "pod-resources",
            "pod",
            json!({"resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2", "memory": "1Gi"}}}),
        ),
        atom(
            "pod-resources",
            "container",
            json!({"resources": {"limits": {"cpu": "500m", "memory": "256Mi"}}}),
        ),
        atom(
            "pod-resources",
            "pod",
            json!({"resources": {"limits": {"cpu": "200m"}}}),
        ),
        atom(
            "restart-rules",
            "container",
            json!({"restartPolicy": "Bogus"}),
        ),
        atom(
            "restart-rules",
            "container",
            json!({"restartPolicy": "Never", "restartPolicyRules": [
            {"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}]}),
        ),
        atom(
            "restart-rules",
            "container",
            json!({"restartPolicyRules": [
            {"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}]}),
        ),
        atom(
            "restart-rules",
            "container",
            json!({"restartPolicy": "Always", "restartPolicyRules": [
            {"action": "Stop", "exitCodes": {"operator": "NotIn", "values": [0]}}, {"action": "Restart"}]}),
        ),
        atom(
            "divisor",
            "container",
            json!({"env": [{"name": "CPUS", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "2"}}}]}),
        ),
        atom(
            "divisor",
            "container",
            json!({"env": [{"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1024"}}}]}),
        ),
        atom(
            "divisor",
            "container",
            json!({"env": [{"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}}]}),
        ),
        atom(
            "resize",
            "pod",
            json!({"initContainers": [{"name": "init", "image": "local/python:3",
            "resizePolicy": [{"resourceName": "gpu", "restartPolicy": "NotRequired"}]}]}),
        ),
        atom(
            "resize",
            "container",
            json!({"resizePolicy": [{"resourceName": "memory", "restartPolicy": "RestartContainer"}]}),
        ),
        atom(
            "image-volume",
            "pod",
            json!({"volumes": [{"name": "model", "image": {"reference": "local/python:3"}}],
            "initContainers": [{"name": "init", "image": "local/python:3",
                "volumeMounts": [{"name": "model", "mountPath": "/model", "subPath": "usr"}]}]}),
        ),
    ]
}

fn merge(into: &mut Value, patch: &Value) {
    match (into, patch) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v.clone(),
    }
}

/// The base job: one Worker of `local/python:3`, the training container first.
pub fn base_job(name: &str) -> Value {
    json!({
        "apiVersion": "kubeflow.org/v1", "kind": "TFJob",
        "metadata": {"name": name},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 2, "restartPolicy": "OnFailure", "template": {
            "metadata": {"annotations": {"sidecar.istio.io/inject": "false"}},
            "spec": {"containers": [{"name": "tensorflow", "image": "local/python:3",
                                     "command": ["python3", "-c", "print(1)"]}]}}}}}
    })
}

/// The base job with `atoms` applied, in order.
pub fn variant(name: &str, atoms: &[&Atom]) -> Value {
    let mut job = base_job(name);
    let t = &mut job["spec"]["tfReplicaSpecs"]["Worker"]["template"];
    for a in atoms {
        match a.at {
            "pod" => merge(&mut t["spec"], &a.value),
            "container" => merge(&mut t["spec"]["containers"][0], &a.value),
            _ => merge(&mut t["metadata"], &a.value),
        }
    }
    job
}

/// One run of `n` variants from `seed`: `(agreements, disagreements with their story)`.
pub fn run(plane: &ControlPlane, ns: &str, seed: u64, n: usize) -> (usize, Vec<String>) {
    let atoms = atoms();
    let mut rng = Rng::new(seed);
    let (mut agree, mut differ) = (0, vec![]);
    for i in 0..n {
        // Every atom alone first (the areas' coverage), then random pairs and triples.
        let chosen: Vec<&Atom> = if i < atoms.len() {
            vec![&atoms[i]]
        } else {
            let k = 2 + rng.below(2);
            (0..k).map(|_| &atoms[rng.below(atoms.len())]).collect()
        };
        match judge(plane, ns, i, &chosen) {
            Ok(()) => agree += 1,
            Err(story) => differ.push(story),
        }
    }
    (agree, differ)
}

/// Each atom alone, as a variant of its own: `(agreements, disagreements with their story)`.
pub fn run_atoms(plane: &ControlPlane, ns: &str, atoms: &[&Atom]) -> (usize, Vec<String>) {
    let (mut agree, mut differ) = (0, vec![]);
    for (i, a) in atoms.iter().enumerate() {
        match judge(plane, ns, i, &[a]) {
            Ok(()) => agree += 1,
            Err(story) => differ.push(story),
        }
    }
    (agree, differ)
}

/// The server's and validate's verdicts on one variant: equal, or the story of how they differ.
fn judge(plane: &ControlPlane, ns: &str, i: usize, chosen: &[&Atom]) -> Result<(), String> {
    {
        let job = variant(&format!("v{i}"), chosen);
        let text = job.to_string();
        let server = server_verdict(plane, ns, &text);
        let ours = validate_verdict(plane, &text);
        let ours_refuses = !ours.errors.is_empty();
        let server_refuses = matches!(server, Server::Refused(_));
        if ours_refuses == server_refuses || (ours.webhook && !server_refuses) {
            Ok(())
        } else {
            let areas: Vec<&str> = chosen.iter().map(|a| a.area).collect();
            let values: Vec<String> = chosen
                .iter()
                .map(|a| format!("{}{}", a.label, a.value))
                .collect();
            Err(format!(
                "[{}] {}\n    validate: {}\n    server:   {}",
                areas.join("+"),
                values.join(" + "),
                if ours_refuses {
                    ours.errors.join("; ")
                } else {
                    "accepts".into()
                },
                match &server {
                    Server::Accepted => "accepts".to_string(),
                    Server::Refused(why) => why.lines().next().unwrap_or("").to_string(),
                }
            ))
        }
    }
}

#[test]
fn validate_agrees_with_the_real_server_on_generated_pod_templates() {
    with_plane!(plane => {
        let ns = plane.namespace("diff");
        let n = std::env::var("REAL_DIFF_VARIANTS").ok().and_then(|v| v.parse().ok()).unwrap_or(atoms().len() + 20);
        let seed = std::env::var("REAL_DIFF_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
        let (agree, differ) = run(plane, &ns, seed, n);
        eprintln!("differential: {agree}/{n} agree (seed {seed})");
        for d in &differ {
            eprintln!("  {d}");
        }
        assert!(differ.is_empty(), "{} of {n} variants: validate and the real server disagree:\n{}", differ.len(), differ.join("\n"));
    })
}
