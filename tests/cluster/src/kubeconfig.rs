//! The kubeconfig the cluster writes for its clients.

/// Kubeconfig YAML: context/cluster "test", user "tester" with a bearer token, namespace "default".
pub fn render(url: &str, token: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: {url}
contexts:
- name: test
  context:
    cluster: test
    user: tester
    namespace: default
current-context: test
preferences: {{}}
users:
- name: tester
  user:
    token: {token}
"
    )
}
