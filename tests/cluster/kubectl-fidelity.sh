#!/usr/bin/env bash
# Runs a real kubectl (1.36 by default) against the standalone tfjob-testcluster and fails
# on any unexpected result. Usage: tests/cluster/kubectl-fidelity.sh
#   KUBECTL=/path/to/kubectl   use another kubectl (e.g. /usr/bin/kubectl 1.32)
#   TFJOB_TESTCLUSTER_CACHE    where kubectl 1.36 is cached (default ~/.cache/tfjob-testcluster)
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

if [[ -z "${KUBECTL:-}" ]]; then
  KUBECTL=$("$HERE/install-kubectl-1.36.sh")
fi
echo "kubectl: $("$KUBECTL" version --client 2>/dev/null | head -1)"
MINOR=$("$KUBECTL" version --client -o json 2>/dev/null | python3 -c 'import json,sys; print(int("".join(c for c in json.load(sys.stdin)["clientVersion"]["minor"] if c.isdigit())))')
# since VERSION: run the check only with kubectl >= 1.VERSION (older clients lack the flag/feature).
since() { [[ $MINOR -ge $1 ]]; }

(cd "$ROOT" && cargo build --quiet --bin tfjob-testcluster)
WORK=$(mktemp -d)
SERVER_PID=""
TLS_PID=""
cleanup() {
  [[ -n "$SERVER_PID" ]] && kill "$SERVER_PID" 2>/dev/null || true
  [[ -n "$TLS_PID" ]] && kill "$TLS_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# The CRD schema is the real server's (tests/real/wire.rs holds these words to it); the test
# cluster is told which object it refuses and with what causes.
cat > "$WORK/scenario.yaml" <<'YAML'
operator: running
succeedAfterMs: 2500
refusals:
- resource: tfjobs
  name: article-
  causes:
  - field: spec.tfReplicaSpecs.PS.template.metadata.annotations.sidecar.istio.io/inject
    message: 'Invalid value: "boolean": spec.tfReplicaSpecs.PS.template.metadata.annotations.sidecar.istio.io/inject in body must be of type string: "boolean"'
    reason: FieldValueTypeInvalid
  - field: spec.tfReplicaSpecs.Worker.template.metadata.annotations.sidecar.istio.io/inject
    message: 'Invalid value: "boolean": spec.tfReplicaSpecs.Worker.template.metadata.annotations.sidecar.istio.io/inject in body must be of type string: "boolean"'
    reason: FieldValueTypeInvalid
  - field: <nil>
    message: 'Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation'
YAML
"$ROOT/target/debug/tfjob-testcluster" --kubeconfig "$WORK/kubeconfig" --scenario "$WORK/scenario.yaml" > "$WORK/url" 2> "$WORK/server.log" &
SERVER_PID=$!
for _ in $(seq 1 100); do [[ -s "$WORK/url" && -s "$WORK/kubeconfig" ]] && break; sleep 0.05; done
echo "server: $(cat "$WORK/url")"
export KUBECONFIG="$WORK/kubeconfig"
kc() { "$KUBECTL" --cache-dir "$WORK/cache" "$@"; }

FAILED=0
pass() { echo "ok    $1"; }
fail() { echo "FAIL  $1"; echo "$2" | sed 's/^/      /'; FAILED=1; }
# expect DESC PATTERN CMD...: command must succeed and its output match the extended regex.
expect() {
  local desc=$1 pat=$2; shift 2
  local out
  if out=$("$@" 2>&1) && grep -Eq -- "$pat" <<<"$out"; then pass "$desc"; else fail "$desc" "$out"; fi
}
# expect_fail DESC PATTERN CMD...: command must fail and its output match.
expect_fail() {
  local desc=$1 pat=$2; shift 2
  local out
  if ! out=$("$@" 2>&1) && grep -Eq -- "$pat" <<<"$out"; then pass "$desc"; else fail "$desc" "$out"; fi
}
wait_for() { # DESC CMD... (until the command's output is non-empty and it succeeds)
  local desc=$1; shift
  for _ in $(seq 1 100); do if out=$("$@" 2>/dev/null) && [[ -n "$out" ]]; then pass "$desc"; return; fi; sleep 0.1; done
  fail "$desc" "timed out"
}

cat > "$WORK/secret.yaml" <<'YAML'
apiVersion: v1
kind: Secret
metadata:
  name: taotoken-secret
stringData:
  api-key: test-key
YAML
job_yaml() { # NAME [extra line under Worker]
  cat <<YAML
apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: $1
  namespace: default
spec:
  tfReplicaSpecs:
    PS:
      replicas: 1
      restartPolicy: OnFailure
      template:
        metadata:
          annotations:
            sidecar.istio.io/inject: "false"
        spec:
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.13.0-gpu
            env:
            - name: TAOTOKEN_API_KEY
              valueFrom:
                secretKeyRef: {name: taotoken-secret, key: api-key}
            resources:
              limits: {cpu: 2, memory: 4Gi}
    Worker:
      replicas: 3
      restartPolicy: OnFailure
      ${2:-}
      template:
        spec:
          containers:
          - name: tensorflow
            image: tensorflow/tensorflow:2.13.0-gpu
            resources:
              limits: {cpu: 4, memory: 8Gi, nvidia.com/gpu: 1}
YAML
}
job_yaml tf-dist-train > "$WORK/job.yaml"
job_yaml other > "$WORK/other.yaml"
job_yaml strict "bogusField: 1" > "$WORK/strict.yaml"

expect "version reports a 1.36 server" 'Server Version: (v1\.36|version.Info\{Major:"1", Minor:"36")' kc version
expect "api-resources lists tfjobs" 'tfjobs +kubeflow.org/v1 +true +TFJob' kc api-resources
expect "apply Secret" 'secret/taotoken-secret created' kc apply -f "$WORK/secret.yaml"
expect "re-apply Secret" 'secret/taotoken-secret (configured|unchanged)' kc apply -f "$WORK/secret.yaml"

kc get tfjobs -w > "$WORK/watch.txt" 2>&1 &
WATCH_PID=$!
sleep 0.5
expect "apply TFJob" 'tfjob.kubeflow.org/tf-dist-train created' kc apply -f "$WORK/job.yaml"
expect "re-apply TFJob unchanged" 'tfjob.kubeflow.org/tf-dist-train unchanged' kc apply -f "$WORK/job.yaml"
# kubectl < 1.22 decides dry-run support from OpenAPI v2 paths, which the server leaves empty.
since 22 && expect "create --dry-run=server" 'tfjob.kubeflow.org/other created \(server dry run\)' kc create --dry-run=server -f "$WORK/other.yaml"
expect_fail "dry-run stored nothing" 'NotFound.*tfjobs.kubeflow.org "other" not found' kc get tfjob other
since 25 && expect_fail "apply --validate=strict rejects unknown fields" 'unknown field "spec.tfReplicaSpecs.Worker.bogusField"' kc apply --validate=strict -f "$WORK/strict.yaml"
if [[ -f "$ROOT/../shared/reference/article-tfjob.yaml" ]]; then
  # Renamed so that the refusal above is for it alone (job.yaml has the article's name).
  sed 's/^  name: tf-dist-train$/  name: article-tf-dist-train/' "$ROOT/../shared/reference/article-tfjob.yaml" > "$WORK/article.yaml"
  expect_fail "article YAML (unquoted bool annotation) is refused as the schema does" '^\* spec\.tfReplicaSpecs\.Worker\.template\.metadata\.annotations\.sidecar\.istio\.io/inject: Invalid value: "boolean": .* must be of type string' kc apply -f "$WORK/article.yaml"
else
  echo "skipped: article YAML check ($ROOT/../shared/reference/article-tfjob.yaml not present)"
fi
wait_for "TFJob reaches Running" sh -c "'$KUBECTL' --cache-dir '$WORK/cache' get tfjob tf-dist-train -o jsonpath='{.status.conditions[-1:].type}' | grep -x Running"
expect "get tfjob prints State/Age columns" '^NAME +STATE +AGE' kc get tfjob tf-dist-train
expect "get tfjob shows Running" '^tf-dist-train +Running +[0-9]+s' kc get tfjob tf-dist-train
expect "auth can-i (SelfSubjectAccessReview, protobuf body)" '^yes' kc auth can-i create tfjobs.kubeflow.org
expect "get all (discovery categories)" 'service/tf-dist-train-worker-0 +ClusterIP +None' kc get all
since 22 && expect "diff -f against the live TFJob" 'replicas: 4' sh -c "sed 's/replicas: 3/replicas: 4/' '$WORK/job.yaml' | '$KUBECTL' --cache-dir '$WORK/cache' diff -f - ; true"
expect "get pods shows the 4 replicas" 'tf-dist-train-worker-2 +1/1 +Running +0' kc get pods
expect "pods selected by operator labels" 'tf-dist-train-ps-0' kc get pods -l training.kubeflow.org/job-name=tf-dist-train,training.kubeflow.org/replica-type=ps
expect "TF_CONFIG env on worker-0" '"task":\{"type":"worker","index":0\},"environment":"cloud"' kc get pod tf-dist-train-worker-0 -o jsonpath='{.spec.containers[0].env[?(@.name=="TF_CONFIG")].value}'
expect "logs --tail" 'INFO:tensorflow' kc logs tf-dist-train-worker-0 -c tensorflow --tail=2
expect "events on the TFJob" 'SuccessfulCreatePod +tfjob/tf-dist-train +Created pod: tf-dist-train-' kc get events --field-selector involvedObject.name=tf-dist-train
expect "kubectl wait --for=condition=Succeeded" 'tfjob.kubeflow.org/tf-dist-train condition met' kc wait --for=condition=Succeeded tfjob/tf-dist-train --timeout=20s
since 23 && expect "kubectl wait --for=jsonpath" 'condition met' kc wait --for=jsonpath='{.status.replicaStatuses.Worker.succeeded}'=3 tfjob/tf-dist-train --timeout=20s
wait_for "TFJob reaches Succeeded" sh -c "'$KUBECTL' --cache-dir '$WORK/cache' get tfjob tf-dist-train -o jsonpath='{.status.conditions[-1:].type}' | grep -x Succeeded"
sleep 0.3
kill "$WATCH_PID" 2>/dev/null || true
wait "$WATCH_PID" 2>/dev/null || true
if grep -Eq 'tf-dist-train +Running' "$WORK/watch.txt" && grep -Eq 'tf-dist-train +Succeeded' "$WORK/watch.txt"; then pass "get tfjobs -w saw Running and Succeeded"; else fail "get tfjobs -w saw Running and Succeeded" "$(cat "$WORK/watch.txt")"; fi
since 24 && expect "patch --subresource=status" 'tfjob.kubeflow.org/tf-dist-train patched' kc patch tfjob tf-dist-train --subresource=status --type=merge -p '{"status":{"replicaStatuses":{"Chief":{"succeeded":1}}}}'
since 24 && expect "status patch is visible" '"succeeded":1' kc get tfjob tf-dist-train -o jsonpath='{.status.replicaStatuses.Chief}'
expect "apply --server-side" 'tfjob.kubeflow.org/tf-dist-train serverside-applied' kc apply --server-side -f "$WORK/job.yaml"
expect "delete TFJob" 'tfjob.kubeflow.org "tf-dist-train" deleted' kc delete tfjob tf-dist-train
expect "pods were garbage-collected" 'No resources found' kc get pods
expect "create secret generic (protobuf body)" 'secret/literal created' kc create secret generic literal --from-literal=api-key=x
expect "created secret has the key" '"api-key":"eA=="' kc get secret literal -o jsonpath='{.data}'
expect "create configmap (protobuf body)" 'configmap/cfg created' kc create configmap cfg --from-literal=a=b
expect "delete -f Secret" 'secret "taotoken-secret" deleted' kc delete -f "$WORK/secret.yaml"

# HTTPS and authentication: a second server with a generated CA, --anonymous-auth=false,
# a client-certificate kubeconfig (CN=tester, O=system:masters) and a token-table user alice
# whom RBAC denies creating Secrets.
cat > "$WORK/tls.yaml" <<'YAML'
operator: running
security:
  tls: true
  requireAuth: true
  kubeconfig: clientCert
  tokens:
  - {token: alice-token, user: alice, groups: [ml-team]}
rbac:
  deny:
  - {user: alice, verb: create, resource: secrets}
YAML
"$ROOT/target/debug/tfjob-testcluster" --kubeconfig "$WORK/tls-kubeconfig" --scenario "$WORK/tls.yaml" > "$WORK/tls-url" 2> "$WORK/tls-server.log" &
TLS_PID=$!
for _ in $(seq 1 100); do [[ -s "$WORK/tls-url" && -s "$WORK/tls-kubeconfig" ]] && break; sleep 0.05; done
TLS_URL=$(cat "$WORK/tls-url")
ktls() { KUBECONFIG="$WORK/tls-kubeconfig" kc "$@"; }
# Same cluster and CA, user switched to alice's bearer token with kubectl's own config commands.
cp "$WORK/tls-kubeconfig" "$WORK/token-kubeconfig"
ktok() { KUBECONFIG="$WORK/token-kubeconfig" kc "$@"; }
ktok config unset users.tester.client-certificate-data >/dev/null
ktok config unset users.tester.client-key-data >/dev/null
ktok config set-credentials tester --token=alice-token >/dev/null
# An exec credential plugin (client.authentication.k8s.io/v1) that prints alice's token. It
# lives in a subdirectory: `config set-credentials` stores the command relative to the
# kubeconfig, and client-go resolves a relative command against the kubeconfig's directory
# only when it contains a slash (a bare name is looked up in $PATH).
mkdir -p "$WORK/bin"
cat > "$WORK/bin/exec-plugin.sh" <<'SH'
#!/bin/sh
echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"alice-token"}}'
SH
chmod 700 "$WORK/bin/exec-plugin.sh"
cp "$WORK/token-kubeconfig" "$WORK/exec-kubeconfig"
kexec() { KUBECONFIG="$WORK/exec-kubeconfig" kc "$@"; }
kexec config unset users.tester.token >/dev/null
kexec config set-credentials tester --exec-command="$WORK/bin/exec-plugin.sh" \
  --exec-api-version=client.authentication.k8s.io/v1 --exec-interactive-mode=Never >/dev/null

expect "https: client certificate lists namespaces" '^default +Active' ktls get namespaces
expect "https: client certificate may create a Secret" 'secret/by-cert created' ktls create secret generic by-cert --from-literal=k=v
expect "https: client certificate user passes can-i" '^yes' ktls auth can-i create tfjobs.kubeflow.org
expect "https: bearer token lists Secrets" 'by-cert +Opaque' ktok get secrets
expect_fail "https: token user alice is denied by RBAC" 'User "alice" cannot create resource "secrets"' ktok create secret generic by-token --from-literal=k=v
expect "https: exec plugin token lists Secrets" 'by-cert +Opaque' kexec get secrets
expect_fail "https: a wrong token is 401" 'You must be logged in to the server \(Unauthorized\)' ktok get secrets --token=wrong
# kubectl prompts for a user name instead of sending a request without credentials, so the
# anonymous 401 is checked on the wire, trusting the CA from the kubeconfig.
ktls config view --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d > "$WORK/ca.pem"
anonymous_get() {
  python3 - "$TLS_URL/api/v1/namespaces/default/secrets" "$WORK/ca.pem" <<'PY'
import json, ssl, sys, urllib.error, urllib.request
ctx = ssl.create_default_context(cafile=sys.argv[2])
try:
    urllib.request.urlopen(sys.argv[1], context=ctx)
    print("200")
except urllib.error.HTTPError as e:
    body = json.loads(e.read())
    print(e.code, body["kind"], body["status"], body["reason"], body["message"], body["code"])
PY
}
expect "https: no credentials is 401 Status Unauthorized with --anonymous-auth=false" '^401 Status Failure Unauthorized Unauthorized 401$' anonymous_get
expect_fail "https: a client without the CA refuses the server certificate" 'certificate signed by unknown authority' env KUBECONFIG=/dev/null "$KUBECTL" --cache-dir "$WORK/cache" --server "$TLS_URL" --token=alice-token get secrets

if [[ $FAILED -ne 0 ]]; then
  echo "kubectl fidelity: FAILED"; exit 1
fi
echo "kubectl fidelity: all checks passed"
