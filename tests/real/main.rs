//! The real-API tier: the `kubectl-tfjob` binary against a real kube-apiserver 1.36 and etcd
//! (found through `KUBEBUILDER_ASSETS`, started by [`harness`]), with the upstream TFJob CRD
//! installed. What the project's simulated cluster answers is compared with what the real one
//! answers ([`wire`]); the commands' verdicts are held against the real server's ([`api`],
//! [`differential`], whose variants also come from the server's own schema: [`openapi`]). Without the binaries each test prints one `skipped` line and passes.

mod api;
mod differential;
mod harness;
mod node;
mod openapi;
mod operator;
mod wire;

/// A lock for tests that change cluster-scoped objects (nodes): they run one at a time.
pub static NODES: std::sync::Mutex<()> = std::sync::Mutex::new(());
