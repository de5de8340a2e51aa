"""Section 7: detection latency on a real kube-apiserver (1.36.2, ../shared/cluster/realk8s).

For each run a fresh TFJob (no operator: the status is written here), a waiter started and given
a second to list and watch, then the Running condition written through the status subresource.
The latency is from the write's response to the waiter's exit, alternating kubectl-tfjob and
kubectl 1.36 `wait --for=condition=Running`. Medians, and their ratio.

    python real_wait.py BIN KUBECTL KUBECONFIG RUNS
"""

import statistics
import subprocess
import sys
import time

from kubernetes import client, config

bin_, kubectl, kubeconfig, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
config.load_kube_config(kubeconfig)
api = client.CustomObjectsApi()
GROUP, VERSION, NS, PLURAL = "kubeflow.org", "v1", "default", "tfjobs"


def job(name):
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name},
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {
            "containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0"}]}}}}},
    }


def running(name):
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    cond = lambda t: {"type": t, "status": "True", "reason": f"TFJob{t}", "message": "bench",
                      "lastUpdateTime": now, "lastTransitionTime": now}
    return {"status": {"conditions": [cond("Created"), cond("Running")]}}


def one(kind, i):
    name = f"bench-{kind}-{i}"
    api.create_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, job(name))
    if kind == "tfjob":
        argv = [bin_, "--kubeconfig", kubeconfig, "wait", name, "--for", "running", "--timeout", "60s"]
    else:
        argv = [kubectl, "--kubeconfig", kubeconfig, "wait", f"tfjob/{name}",
                "--for=condition=Running", "--timeout=60s"]
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # listed and watching
    api.patch_namespaced_custom_object_status(GROUP, VERSION, NS, PLURAL, name, running(name))
    t0 = time.monotonic()
    code = p.wait()
    t1 = time.monotonic()
    api.delete_namespaced_custom_object(GROUP, VERSION, NS, PLURAL, name)
    if code != 0:
        raise SystemExit(f"{kind} run {i}: exit {code}")
    return (t1 - t0) * 1000


times = {"tfjob": [], "kubectl": []}
for i in range(runs):
    for kind in ("tfjob", "kubectl") if i % 2 == 0 else ("kubectl", "tfjob"):
        times[kind].append(one(kind, i))
a, b = statistics.median(times["tfjob"]), statistics.median(times["kubectl"])
print(f"median {a:6.1f} ms over {runs} runs  kubectl tfjob wait --for running (min {min(times['tfjob']):.1f}, max {max(times['tfjob']):.1f})")
print(f"median {b:6.1f} ms over {runs} runs  kubectl 1.36 wait --for=condition=Running (min {min(times['kubectl']):.1f}, max {max(times['kubectl']):.1f})")
print(f"ratio (kubectl-tfjob / kubectl): {a / b:.2f}")
