//! `tfjob-testcluster`: an in-process Kubernetes API server that speaks the real REST
//! API (discovery, CRUD, watch, patch, Status errors, server-side tables, OpenAPI v3
//! stubs) with a simulated training-operator v1.9.4, scheduler and kubelet.
//!
//! Modules: `store` (versioned objects, event history, broadcast), `http` (routing and
//! verbs), `watch`, `selectors`, `patch`, `proto` (the few protobuf bodies kubectl sends),
//! `defaults` and `validation` (apiserver defaulting, CRD schemas, the TFJob webhook),
//! `table` and `openapi` (what kubectl asks for), `status` (Status errors), `resources`
//! (discovery), `operator`, `kubelet` (scheduler + kubelet), `logs`, `scenario`, `state`
//! (request log, faults, RBAC), `kubeconfig`, `tls` (HTTPS, generated CA, client
//! certificates), `auth` (client certificate / token table authentication) and `queueing`
//! (Kueue, Volcano and scheduler-plugins stand-ins). See README.md for the scenario format.
//!
//! ```no_run
//! use tfjob_testcluster::{Scenario, TestCluster};
//! let cluster = TestCluster::start(Scenario::default());
//! println!("kubeconfig at {}", cluster.kubeconfig().display());
//! ```

#![warn(missing_docs)]

mod admission;
mod auth;
mod binding;
mod controller;
mod crd;
mod defaults;
pub mod demo;
mod encoded;
mod exec;
mod expansion;
mod http;
mod jobcontroller;
mod jobset;
mod kubeconfig;
mod kubelet;
mod logs;
mod metrics;
mod openapi;
mod operator;
mod patch;
mod podadmission;
mod prometheus;
mod proto;
mod queueing;
mod refusals;
mod resources;
mod scenario;
mod scheduler;
mod selectors;
mod state;
mod status;
mod store;
mod table;
mod tls;
mod util;
mod validation;
mod watch;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};

pub use auth::{Credential, KubeconfigAuth, Security, StaticToken, User};
pub use crd::builtin_tfjob_crd;
pub use queueing::kueue::preempted_message as kueue_preempted_message;
pub use queueing::kueue::{assign as kueue_assign, names as kueue_names, podsets as kueue_podsets};
pub use queueing::{GangScheduler, KueueConfig};
pub use scenario::{
    ContainerBehaviour, ContainerMatch, DEFAULT_TOOLS, Fault, FaultMatch, ImageTools, NodeSpec,
    OperatorMode, Rbac, RbacRule, Refusal, RefusalCause, Scenario, Taint, Timing,
};
pub use state::Request;
pub use store::EventType;
pub use tls::{CertPair, unrelated_ca_pem};

use state::Shared;

/// A running test cluster. Dropping it stops the server and the simulated components.
pub struct TestCluster {
    shared: Arc<Shared>,
    url: String,
    kubeconfig: PathBuf,
    /// CA, serving and client certificates when the scenario asks for TLS.
    pki: Option<Arc<tls::Pki>>,
    _dir: Option<tempfile::TempDir>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn seed(sh: &Shared) {
    let sc = &sh.scenario;
    let store = &sh.store;
    let mut namespaces = sc.namespaces.clone();
    if sc.operator != OperatorMode::Absent && !namespaces.contains(&sc.operator_namespace) {
        namespaces.push(sc.operator_namespace.clone());
    }
    for ns in ["kube-system", "kube-public", "kube-node-lease"] {
        if !namespaces.iter().any(|n| n == ns) {
            namespaces.push(ns.to_string());
        }
    }
    for ns in &namespaces {
        let _ = store.create(
            "namespaces",
            "",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
        );
    }
    for (i, n) in sc.nodes.iter().enumerate() {
        let _ = store.create(
            "nodes",
            "",
            kubelet::node_object(n, &sc.kubernetes_version, i),
        );
    }
    install_operator(sh, sc.operator);
    jobset::install(sh, sc.jobset);
    queueing::kueue::install(sh);
    queueing::gang::install(sh);
    if let Some(p) = &sc.prometheus {
        insert_object(sh, prometheus::service(p));
    }
    for obj in &sc.objects {
        insert_object(sh, obj.clone());
    }
    // Seeded quotas start with the usage of the seeded pods, as the quota controller would.
    let quota_ns: std::collections::BTreeSet<String> = store
        .list("resourcequotas", None)
        .0
        .iter()
        .filter_map(|q| q["metadata"]["namespace"].as_str().map(String::from))
        .collect();
    for ns in quota_ns {
        admission::refresh_quotas(sh, &ns);
    }
}

/// Puts the cluster's training-operator installation into `mode`: CRD, Deployment and pod
/// are created, updated or removed (removing the CRD removes every TFJob, as in Kubernetes).
fn install_operator(sh: &Shared, mode: OperatorMode) {
    // No pass may straddle the change: one begun under the old mode could otherwise create
    // pods for a job the CRD's removal just deleted, or a Service a test just deleted.
    let _pass = sh.operator_pass.lock().unwrap_or_else(|e| e.into_inner());
    let sc = &sh.scenario;
    let store = &sh.store;
    let ns = &sc.operator_namespace;
    let crd_name = "tfjobs.kubeflow.org";
    if mode == OperatorMode::Absent {
        let _ = store.delete("customresourcedefinitions", "", crd_name);
        let _ = store.delete("deployments", ns, "training-operator");
        let _ = store.delete("pods", ns, "training-operator-7f8b9c6d5-x2x4z");
        sh.mode.send_replace(mode);
        return;
    }
    if !store.namespace_exists(ns) {
        let _ = store.create(
            "namespaces",
            "",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}}, "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
        );
    }
    let mut crd = sc.crd.clone().unwrap_or_else(crd::builtin_tfjob_crd);
    if let Some(vs) = &sc.served_versions {
        crd = crd::restrict_served(crd, vs);
    }
    if let Some(m) = crd["metadata"].as_object_mut() {
        for k in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "managedFields",
        ] {
            m.remove(k);
        }
    }
    let crd_name = crd["metadata"]["name"]
        .as_str()
        .unwrap_or(crd_name)
        .to_string();
    if store
        .get("customresourcedefinitions", "", &crd_name)
        .is_none()
    {
        let _ = store.create(
            "customresourcedefinitions",
            "",
            crd::with_established_status(crd),
        );
    }
    let running = mode == OperatorMode::Running;
    let gang = sc.gang_scheduler.map(|g| g.flag_value());
    let dep = crd::operator_deployment(ns, running, gang);
    let pod = kubelet::operator_pod(ns, running);
    for (res, obj) in [("deployments", dep), ("pods", pod)] {
        let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
        if store.get(res, ns, &name).is_some() {
            let _ = store.update(res, ns, &name, obj, None);
        } else {
            let _ = store.create(res, ns, obj);
        }
    }
    sh.mode.send_replace(mode);
}

/// Creates or replaces `obj` directly in the store (resource inferred from apiVersion/kind).
fn insert_object(sh: &Shared, mut obj: Value) {
    let api_version = obj["apiVersion"].as_str().unwrap_or("v1").to_string();
    let kind = obj["kind"].as_str().unwrap_or("").to_string();
    let Some(info) = resources::for_kind(&sh.store, &api_version, &kind) else {
        eprintln!("tfjob-testcluster: cannot insert {api_version} {kind}: resource not served");
        return;
    };
    let ns = if info.namespaced {
        obj["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default")
            .to_string()
    } else {
        String::new()
    };
    let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
    if info.namespaced && !sh.store.namespace_exists(&ns) {
        let _ = sh.store.create("namespaces", "", json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}, "status": {"phase": "Active"}}));
    }
    if info.plural == "customresourcedefinitions"
        && obj
            .get("status")
            .is_none_or(|s| s.get("conditions").is_none())
    {
        obj = crd::with_established_status(obj);
    }
    if info.plural == "secrets"
        && let Some(sd) = obj.as_object_mut().and_then(|m| m.remove("stringData"))
    {
        use base64::Engine;
        for (k, v) in sd.as_object().into_iter().flatten() {
            obj["data"][k] =
                json!(base64::engine::general_purpose::STANDARD.encode(v.as_str().unwrap_or("")));
        }
    }
    if queueing::is_queueing_group(&info.group)
        && let Some(schema) = info
            .crd_version
            .as_ref()
            .map(|v| &v["schema"]["openAPIV3Schema"])
    {
        // Queue objects written by a scenario get their CRD's defaults (queueingStrategy,
        // stopPolicy, a Volcano queue's weight), as any client's create would.
        let _ = validation::check_schema(schema, &mut obj);
    }
    if sh.store.get(&info.plural, &ns, &name).is_some() {
        let _ = sh.store.update(&info.plural, &ns, &name, obj, None);
    } else {
        let _ = sh.store.create(&info.plural, &ns, obj);
    }
}

impl TestCluster {
    /// Starts the cluster on its own multi-thread runtime (background thread). Returns when
    /// it is ready to serve on `127.0.0.1:<random port>` with a kubeconfig written.
    pub fn start(scenario: Scenario) -> TestCluster {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        std_listener.set_nonblocking(true).expect("nonblocking");
        let port = std_listener.local_addr().unwrap().port();
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        let pki = scenario
            .security
            .tls
            .then(|| Arc::new(tls::Pki::generate()));
        let acceptor = pki.as_ref().map(|p| p.acceptor());
        let shared = Arc::new(Shared::new(scenario));
        *shared.port.lock().unwrap() = port;
        let rx = shared.stop.subscribe();
        let sh = shared.clone();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("tfjob-testcluster".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .expect("runtime");
                rt.block_on(async move {
                    let listener =
                        tokio::net::TcpListener::from_std(std_listener).expect("listener");
                    start_components(&sh);
                    let _ = ready_tx.send(());
                    http::serve(listener, sh, rx, acceptor).await;
                });
                rt.shutdown_background();
            })
            .expect("spawn cluster thread");
        let _ = ready_rx.recv();
        let cluster = TestCluster {
            url: url_for(pki.is_some(), port),
            shared,
            kubeconfig,
            pki,
            _dir: Some(dir),
            thread: Some(thread),
        };
        cluster.write_initial_kubeconfig();
        cluster
    }

    /// Starts the cluster on the caller's tokio runtime.
    pub async fn start_async(scenario: Scenario) -> TestCluster {
        Self::start_async_on(scenario, 0, None).await
    }

    /// Like `start_async`, on a fixed port (0 = any) and optionally writing the kubeconfig to `path`.
    pub async fn start_async_on(
        scenario: Scenario,
        port: u16,
        kubeconfig_path: Option<PathBuf>,
    ) -> TestCluster {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("bind");
        let port = listener.local_addr().unwrap().port();
        let (dir, kubeconfig) = match kubeconfig_path {
            Some(p) => (None, p),
            None => {
                let d = tempfile::tempdir().expect("tempdir");
                let p = d.path().join("kubeconfig");
                (Some(d), p)
            }
        };
        let pki = scenario
            .security
            .tls
            .then(|| Arc::new(tls::Pki::generate()));
        let shared = Arc::new(Shared::new(scenario));
        *shared.port.lock().unwrap() = port;
        let rx = shared.stop.subscribe();
        start_components(&shared);
        tokio::spawn(http::serve(
            listener,
            shared.clone(),
            rx,
            pki.as_ref().map(|p| p.acceptor()),
        ));
        let cluster = TestCluster {
            url: url_for(pki.is_some(), port),
            shared,
            kubeconfig,
            pki,
            _dir: dir,
            thread: None,
        };
        cluster.write_initial_kubeconfig();
        cluster
    }

    /// The kubeconfig at `self.kubeconfig`, with the credential the scenario names.
    fn write_initial_kubeconfig(&self) {
        let token = self.shared.scenario.token.clone();
        let credential = match self.shared.scenario.security.kubeconfig {
            KubeconfigAuth::Token => Credential::Token(token),
            KubeconfigAuth::ClientCert => Credential::ClientCert {
                user: auth::TEST_USER.into(),
                groups: vec!["system:masters".into()],
            },
            KubeconfigAuth::Exec => Credential::Exec { token },
            KubeconfigAuth::None => Credential::None,
        };
        self.write_kubeconfig_at(&self.kubeconfig, &credential, self.ca_pem().as_deref());
    }

    /// The CA certificate (PEM) clients must trust; None over plain HTTP.
    pub fn ca_pem(&self) -> Option<String> {
        self.pki.as_ref().map(|p| p.ca_pem().to_string())
    }

    /// A client certificate signed by the cluster's CA for `user` in `groups` (at most two).
    /// Panics unless the scenario enabled `security.tls`.
    pub fn client_cert(&self, user: &str, groups: &[&str]) -> CertPair {
        let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        self.pki
            .as_ref()
            .expect("client certificates need a cluster started with security.tls")
            .issue_client(user, &groups)
    }

    /// Writes a kubeconfig named `name` next to the default one, trusting the cluster's CA,
    /// with `credential` as user "tester" of context "test". Returns its path.
    pub fn write_kubeconfig(&self, name: &str, credential: &Credential) -> PathBuf {
        self.write_kubeconfig_trusting(name, credential, self.ca_pem().as_deref())
    }

    /// Like `write_kubeconfig`, trusting `ca_pem` instead (e.g. `unrelated_ca_pem()`).
    pub fn write_kubeconfig_trusting(
        &self,
        name: &str,
        credential: &Credential,
        ca_pem: Option<&str>,
    ) -> PathBuf {
        let dir = self.kubeconfig.parent().unwrap_or(Path::new("."));
        let path = dir.join(name);
        self.write_kubeconfig_at(&path, credential, ca_pem);
        path
    }

    fn write_kubeconfig_at(&self, path: &Path, credential: &Credential, ca_pem: Option<&str>) {
        kubeconfig::write(path, &self.url, ca_pem, self.pki.as_deref(), credential)
            .unwrap_or_else(|e| panic!("write kubeconfig {}: {e}", path.display()));
    }

    /// `http://127.0.0.1:PORT`, or `https://` with `security.tls`.
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// Path of the kubeconfig (context "test", user "tester", namespace "default").
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// Every request answered so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// Every request received so far, logged on arrival (before a fault's latency), so a test
    /// can act while one is in flight; `status` is 0 here.
    pub fn arrived(&self) -> Vec<Request> {
        self.shared.arrived.lock().unwrap().clone()
    }

    /// Non-dry-run create/update/patch/delete requests (SelfSubjectAccessReviews excluded).
    pub fn writes(&self) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(Request::is_write)
            .collect()
    }

    /// Forgets the request log.
    pub fn clear_requests(&self) {
        self.shared.requests.lock().unwrap().clear();
        self.shared.arrived.lock().unwrap().clear();
    }

    /// One object by resource plural (e.g. "tfjobs", "pods"), namespace and name.
    pub fn get(&self, resource: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
        self.shared
            .store
            .get(resource, namespace.unwrap_or(""), name)
    }

    /// Objects of a resource in a namespace, or everywhere with `None`.
    pub fn list(&self, resource: &str, namespace: Option<&str>) -> Vec<Value> {
        self.shared.store.list(resource, namespace).0
    }

    /// Creates or replaces an object directly (no admission); watchers see the event.
    pub fn insert(&self, obj: Value) {
        insert_object(&self.shared, obj);
    }

    /// Adds a Ready node with the scenario's shape (as a node pool scaling up would); the
    /// scheduler retries pending pods.
    pub fn add_node(&self, node: &NodeSpec) {
        let index = self.list("nodes", None).len();
        let version = self.shared.scenario.kubernetes_version.clone();
        self.insert(kubelet::node_object(node, &version, index));
    }

    /// Lets every request a `hold` fault holds go on (see [`Fault::hold`]).
    pub fn release(&self) {
        self.shared.released.send_modify(|n| *n += 1);
    }

    /// Deletes an object directly (with garbage collection of its dependents).
    pub fn delete(&self, resource: &str, namespace: Option<&str>, name: &str) {
        let _ = self
            .shared
            .store
            .delete(resource, namespace.unwrap_or(""), name);
    }

    /// Replaces the fault list (counters restart).
    pub fn set_faults(&self, faults: Vec<Fault>) {
        self.shared.set_faults(faults);
    }

    /// Installs, breaks or removes the training-operator at runtime (e.g. `Installed` →
    /// `Running` to simulate the operator becoming ready; `Absent` deletes the CRD and with it
    /// every TFJob). Only `Running` reconciles and validates.
    pub fn set_operator_mode(&self, mode: OperatorMode) {
        install_operator(&self.shared, mode);
    }

    /// Holds (true) or lets go (false) the operator's cleanPodPolicy deletions: while held, an
    /// ended job keeps its pods; let go, every job is reconciled again and the pods of ended
    /// jobs are deleted as the policy says. A test orders "saved" before "deleted" with it
    /// instead of racing the operator.
    pub fn hold_cleanup(&self, held: bool) {
        let _pass = self
            .shared
            .operator_pass
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        self.shared
            .cleanup_held
            .store(held, std::sync::atomic::Ordering::SeqCst);
        if !held {
            // Wakes the operator's loop, which re-queues every job when it runs.
            self.shared.mode.send_modify(|_| {});
        }
    }

    /// Replaces the list of images whose pull fails; pods in ImagePullBackOff pick up the
    /// change at their next pull attempt (e.g. "the image was pushed later").
    pub fn set_missing_images(&self, images: Vec<String>) {
        *self.shared.missing_images.lock().unwrap() = images;
    }

    /// Replaces the list of images whose registry times out (a transient pull failure); pods
    /// in back-off pick up the change at their next attempt ("the network came back").
    pub fn set_unreachable_images(&self, images: Vec<String>) {
        *self.shared.unreachable_images.lock().unwrap() = images;
    }

    /// Replaces the RBAC denials.
    pub fn set_rbac(&self, rbac: Rbac) {
        *self.shared.rbac.lock().unwrap() = rbac;
    }

    /// When the simulated operator wrote each TFJob condition: (job, type, instant).
    pub fn condition_log(&self) -> Vec<(String, String, Instant)> {
        self.shared.condition_log.lock().unwrap().clone()
    }

    /// Appends a condition to a TFJob's status now (operator bookkeeping rules), returning the
    /// instant of the write; for latency benchmarks.
    pub fn write_tfjob_condition(
        &self,
        namespace: &str,
        name: &str,
        ctype: &str,
        status: &str,
        reason: &str,
        message: &str,
    ) -> Option<Instant> {
        operator::write_condition(
            &self.shared,
            namespace,
            name,
            ctype,
            status,
            reason,
            message,
        )
    }

    /// Text served by `pods/log` for a container (replaces the current instance's text).
    pub fn set_log(&self, namespace: &str, pod: &str, container: &str, text: &str) {
        self.shared.logs.replace(namespace, pod, container, text);
    }

    /// The running container prints `text` now: one log line per line, each timestamped.
    pub fn append_log(&self, namespace: &str, pod: &str, container: &str, text: &str) {
        self.shared.logs.append(namespace, pod, container, text);
    }

    /// Time passes for a container's log: its lines are dated `by` earlier, as if printed that
    /// long ago. The deterministic stand-in for a test sleeping through a grace period.
    pub fn age_log(&self, namespace: &str, pod: &str, container: &str, by: std::time::Duration) {
        self.shared.logs.age(namespace, pod, container, by);
    }

    /// The current instance's log text of a container, if it ever started.
    pub fn log_text(&self, namespace: &str, pod: &str, container: &str) -> Option<String> {
        self.shared.logs.text(namespace, pod, container)
    }

    /// Ends the running container with `exit_code` (a crash, or 0): the kubelet then applies
    /// the pod's restart policy (restart → a new instance whose old log is `previous=true`).
    /// Takes effect when the container is running; a scripted exit waits for the next start.
    pub fn exit_container(&self, namespace: &str, pod: &str, container: &str, exit_code: i32) {
        self.shared.logs.kill(namespace, pod, container, exit_code);
    }

    /// Evicts a Kueue Workload now, as preemption (`reason` "Preempted") or another eviction
    /// would: `Evicted=True` with the reason and message; Kueue then suspends the job, releases
    /// the quota once the pods are gone and queues the Workload again. False when it is absent.
    pub fn evict_workload(&self, namespace: &str, name: &str, reason: &str, message: &str) -> bool {
        queueing::kueue::evict(&self.shared, namespace, name, reason, message)
    }

    /// The Workload name Kueue gives a TFJob (`tfjob-<name>-<hash of name and uid>`).
    pub fn workload_name_for(&self, namespace: &str, job: &str) -> Option<String> {
        let j = self.get("tfjobs", Some(namespace), job)?;
        Some(queueing::kueue::names::tfjob_workload_name(
            job,
            j["metadata"]["uid"].as_str()?,
        ))
    }

    /// The current global resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.shared.store.current_rv()
    }

    /// Blocks (polling every 10ms) until `f` holds or `timeout` passes; returns whether it held.
    pub fn wait_for(
        &self,
        timeout: std::time::Duration,
        mut f: impl FnMut(&TestCluster) -> bool,
    ) -> bool {
        let end = Instant::now() + timeout;
        while Instant::now() < end {
            if f(self) {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        f(self)
    }
}

fn url_for(tls: bool, port: u16) -> String {
    let scheme = if tls { "https" } else { "http" };
    format!("{scheme}://127.0.0.1:{port}")
}

fn start_components(sh: &Arc<Shared>) {
    seed(sh);
    tokio::spawn(operator::run(sh.clone()));
    tokio::spawn(binding::run(sh.clone()));
    tokio::spawn(jobset::run(sh.clone()));
    tokio::spawn(jobcontroller::run(sh.clone()));
    tokio::spawn(queueing::kueue::run(sh.clone()));
    tokio::spawn(queueing::gang::run(sh.clone()));
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        let _ = self.shared.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
