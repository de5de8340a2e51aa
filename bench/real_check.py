"""`check` at scale on a real kube-apiserver 1.36.2 (issue 44): NODES nodes with PER bound pods
each (nodeName set, as the scheduler leaves them), made through the API with the node status
patched as a kubelet would report it (the CRD and the gateway Secret made by the caller); then
`check` of three jobs, RUNS times each (the one that must wait at most 3), beside kubectl's
reading of the whole data (`get nodes -o json` + `get pods -A -o json`, paged by 500) and
beside curl reading the same two lists whole (issue 63).

usage: real_check.py PLUGIN KUBECTL KUBECONFIG NODES PER RUNS READ_RUNS
"""
import base64
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import yaml
from kubernetes import client, config

plugin, kubectl, kubeconfig = sys.argv[1:4]
nodes, per, runs, read_runs = (int(a) for a in sys.argv[4:8])
config.load_kube_config(kubeconfig)
cfg = client.Configuration.get_default_copy()
cfg.connection_pool_maxsize = 16
api = client.CoreV1Api(client.ApiClient(cfg))


def node(n):
    name = f"node-{n:05}"
    try:
        api.create_node({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}})
    except client.ApiException as e:
        if e.status != 409:
            raise
    cap = {"cpu": "64", "memory": "256Gi", "pods": "110"}
    if n % 10 == 0:
        cap["nvidia.com/gpu"] = "8"
    # The NodeRestriction/TaintNodesByCondition admission taints a new node not-ready until its
    # kubelet reports; there is no kubelet here, so the taint goes as a Ready report would lift it.
    api.patch_node(name, {"spec": {"taints": None}})
    api.patch_node_status(name, {"status": {"capacity": cap, "allocatable": cap,
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                        "message": "bench", "lastHeartbeatTime": "2026-12-06T00:00:00Z",
                        "lastTransitionTime": "2026-12-06T00:00:00Z"}]}})


def pods(n):
    for i in range(per):
        try:
            api.create_namespaced_pod("bench", {"metadata": {"name": f"p-{n:05}-{i:02}"},
                "spec": {"nodeName": f"node-{n:05}", "containers": [{"name": "c", "image": "busybox",
                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]}})
        except client.ApiException as e:
            if e.status != 409:
                raise


start = time.perf_counter()
try:
    api.create_namespace({"metadata": {"name": "bench"}})
    api.create_namespaced_service_account("bench", {"metadata": {"name": "default"}})
except client.ApiException as e:
    if e.status != 409:
        raise
with ThreadPoolExecutor(12) as pool:
    list(pool.map(node, range(nodes)))
    made_nodes = time.perf_counter()
    list(pool.map(pods, range(nodes)))
print(f"made {nodes} nodes in {made_nodes - start:.0f} s and {nodes * per} bound pods in "
      f"{time.perf_counter() - made_nodes:.0f} s through the API")

def timed(argv, shell=False):
    t = time.perf_counter()
    done = subprocess.run(argv, shell=shell, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if done.returncode not in (0,):
        sys.exit(f"exit {done.returncode}: {done.stderr.decode()[-300:]}")
    return time.perf_counter() - t


# The floor of the JSON path: curl reading the same two lists whole, one request each, with the
# kubeconfig's own client certificate (written to a private temporary folder).
with open(kubeconfig) as f:
    kc = yaml.safe_load(f)
tls = tempfile.mkdtemp()
server = kc["clusters"][0]["cluster"]["server"]
for key, field in (("ca", "certificate-authority-data"), ("cert", "client-certificate-data"),
                   ("key", "client-key-data")):
    src = kc["clusters"][0]["cluster"] if key == "ca" else kc["users"][0]["user"]
    with open(os.path.join(tls, key), "wb") as f:
        f.write(base64.b64decode(src[field]))
curl = (f"curl -sf --cacert {tls}/ca --cert {tls}/cert --key {tls}/key -o /dev/null {server}/api/v1/nodes && "
        f"curl -sf --cacert {tls}/ca --cert {tls}/cert --key {tls}/key -o /dev/null {server}/api/v1/pods")
read = f"{kubectl} --kubeconfig {kubeconfig} get nodes -o json > /dev/null && {kubectl} --kubeconfig {kubeconfig} get pods -A -o json > /dev/null"
theirs = [timed(read, shell=True) for _ in range(read_runs)]
floor = [timed(curl, shell=True) for _ in range(read_runs)]
mt, mf = statistics.median(theirs), statistics.median(floor)
print(f"kubectl 1.36.2 get nodes -o json + get pods -A -o json: median {mt:.2f} s over {read_runs} runs")
print(f"curl of /api/v1/nodes + /api/v1/pods (whole, JSON): median {mf:.2f} s over {read_runs} runs")

# The article's shape (a CPU parameter server, 16 GPU workers: only the 1 node in 10 with GPUs
# can take a worker), the same job on CPU only (every node a candidate), and a CPU job that
# cannot fit now (60 CPU per worker, 49 free per node: every node's pods are read).
common = ["--ps", "1", "--workers", "16", "--memory", "8Gi", "-o", "json", "--", "python", "t.py"]
jobs = [
    ("article's job, 16 GPU workers", ["check", "--name", "big", "--image", "tensorflow/tensorflow:2.13.0-gpu", "--gpus", "1", "--cpu", "4"] + common, runs),
    ("CPU job, 16 workers", ["check", "--name", "cpu", "--image", "tensorflow/tensorflow:2.13.0", "--cpu", "4"] + common, runs),
    ("CPU job that must wait", ["check", "--name", "wide", "--image", "tensorflow/tensorflow:2.13.0", "--cpu", "60"] + common, max(1, min(runs, 3))),
]
for label, job, n in jobs:
    first = subprocess.run([plugin, "--kubeconfig", kubeconfig] + job, capture_output=True, text=True)
    report = json.loads(first.stdout)
    print(f"{label}: verdict {report['placement']['verdict']} - {report['placement']['reason'][:160]}")
    ours = [timed([plugin, "--kubeconfig", kubeconfig] + job) for _ in range(n)]
    rss = subprocess.run(["/usr/bin/time", "-f", "%M", plugin, "--kubeconfig", kubeconfig] + job,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True).stderr.strip().splitlines()[-1]
    mo = statistics.median(ours)
    print(f"  check: median {mo:.2f} s (min {min(ours):.2f}, max {max(ours):.2f}) over {n} runs, peak RSS {int(rss) / 1000:.1f} MB")
    print(f"  ratio to kubectl's read: {mo / mt:.4f}; to curl's: {mo / mf:.4f}")
