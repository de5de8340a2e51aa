"""Issue 49's readings of a job, whole process, against the test cluster (release build), each
beside what kubectl needs for the same reading, alternating:

- diagnose of a failed 100-replica job (targets <= 1 s) vs kubectl get tfjob, get pods,
  get events and logs --tail=20 of every pod (one `logs -l`, 100 streams at once);
- probe of the article's 4 replicas (<= 2 s) and of 64 (<= 5 s) vs one `kubectl exec … printenv
  TF_CONFIG` per replica, in turn (the first of the facts probe reads);
- progress of 100 running workers (`top`, <= 1 s) vs `kubectl logs -l … --tail=200` of them all.

usage: training.py PLUGIN KUBECTL TESTCLUSTER WORKDIR RUNS
"""
import json
import os
import statistics
import subprocess
import sys
import time

plugin, kubectl, testcluster, work, runs = sys.argv[1:6]
runs = int(runs)
KEY = "sk-bench-key"
SELECTOR = "training.kubeflow.org/job-name="
NODES = [{"name": f"node-{n:02}", "cpu": "64", "memory": "256Gi", "gpu": 8, "pods": 110} for n in range(8)]


def job(name, ps, workers, restart="OnFailure"):
    template = {"spec": {"containers": [{"name": "tensorflow", "image": "tensorflow/tensorflow:2.13.0",
        "env": [{"name": "TAOTOKEN_API_KEY", "valueFrom": {"secretKeyRef": {"name": "taotoken-secret", "key": "api-key"}}},
                {"name": "TAOTOKEN_BASE_URL", "value": "https://taotoken.net/api"}]}]}}
    specs = {"Worker": {"replicas": workers, "restartPolicy": restart, "template": template}}
    if ps:
        specs["PS"] = {"replicas": ps, "restartPolicy": restart, "template": template}
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name, "namespace": "default"},
            "spec": {"runPolicy": {"cleanPodPolicy": "None"}, "tfReplicaSpecs": specs}}


def start(name, scenario):
    path = os.path.join(work, f"{name}.json")
    json.dump(scenario, open(path, "w"))
    kubeconfig = os.path.join(work, f"kubeconfig-{name}")
    url = os.path.join(work, f"url-{name}")
    proc = subprocess.Popen([testcluster, "--kubeconfig", kubeconfig, "--scenario", path],
                            stdout=open(url, "w"), stderr=subprocess.DEVNULL)
    for _ in range(300):
        if os.path.getsize(url) > 0:
            break
        time.sleep(0.1)
    return proc, kubeconfig


def until(kubeconfig, what, check):
    for _ in range(600):
        out = subprocess.run([kubectl, "--kubeconfig", kubeconfig] + what, capture_output=True, text=True).stdout
        if check(out):
            return
        time.sleep(0.2)
    sys.exit(f"never ready: {what}")


def timed(argv, ok=(0,)):
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, shell=isinstance(argv, str))
    elapsed = time.perf_counter() - start
    if done.returncode not in ok:
        sys.exit(f"{argv if isinstance(argv, str) else argv[:4]} exited {done.returncode}: {done.stderr.decode()[-400:]}")
    return elapsed


def compare(what, target, ours, ok, theirs_label, theirs):
    a, b = [], []
    for _ in range(runs):
        a.append(timed(ours, ok))
        if theirs:
            b.append(timed(theirs))
    ma = statistics.median(a)
    line = f"{what}: kubectl-tfjob median {ma * 1000:.0f} ms (min {min(a) * 1000:.0f}, max {max(a) * 1000:.0f}; target <= {target} s: {'met' if ma <= target else 'MISSED'})"
    print(line)
    if theirs:
        mb = statistics.median(b)
        print(f"  beside {theirs_label}: median {mb * 1000:.0f} ms; ratio {ma / mb:.2f}")


secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "taotoken-secret", "namespace": "default"},
          "stringData": {"api-key": KEY}}

# 1. A failed 100-replica job: every worker exits 1 after a traceback.
traceback = "Traceback (most recent call last):\n  File \"train.py\", line 9, in <module>\nValueError: bad shape (32, 10) vs (32, 1)\n"
proc, kc = start("failed", {"nodes": NODES, "objects": [secret, job("failed", 0, 100, "Never")],
                            "containerBehaviour": [{"match": {"container": "tensorflow"}, "exitCode": 1, "runMs": 200, "log": traceback}]})
until(kc, ["get", "tfjob", "failed", "-o", "jsonpath={.status.conditions[?(@.type==\"Failed\")].status}"], lambda s: s == "True")
sel = SELECTOR + "failed"
kubectl_read = (f"{kubectl} --kubeconfig {kc} get tfjob failed -o json >/dev/null && "
                f"{kubectl} --kubeconfig {kc} get pods -l {sel} -o json >/dev/null && "
                f"{kubectl} --kubeconfig {kc} get events -o json >/dev/null && "
                f"{kubectl} --kubeconfig {kc} logs -l {sel} --tail=20 --prefix --max-log-requests=100 >/dev/null")
compare("diagnose of a failed 100-replica job", 1.0, [plugin, "--kubeconfig", kc, "diagnose", "failed", "--no-probe"], (4,),
        "kubectl get tfjob + get pods + get events + logs -l --tail=20 (100 streams)", kubectl_read)
proc.kill()

# 2. probe of 4 and of 64 replicas, the gateway answering the pods' key.
for workers, target in [(3, 2.0), (63, 5.0)]:
    name = f"probe{workers + 1}"
    proc, kc = start(name, {"nodes": NODES, "gatewayKey": KEY, "objects": [secret, job(name, 1, workers)]})
    until(kc, ["get", "pods", "-l", SELECTOR + name, "-o", "jsonpath={range .items[*]}{.status.phase} {end}"],
          lambda s, n=workers + 1: s.split().count("Running") == n)
    pods = [f"{name}-ps-0"] + [f"{name}-worker-{i}" for i in range(workers)]
    execs = " && ".join(f"{kubectl} --kubeconfig {kc} exec {p} -- printenv TF_CONFIG >/dev/null" for p in pods)
    compare(f"probe of {workers + 1} replicas", target, [plugin, "--kubeconfig", kc, "probe", name], (0,),
            f"kubectl exec printenv TF_CONFIG once per replica ({workers + 1}, in turn)", execs)
    proc.kill()

# 3. progress of 100 running workers, each at a Keras step.
keras = "Epoch 3/10\n120/500 [=====>........................] - ETA: 9s - loss: 0.4123\n"
proc, kc = start("progress", {"nodes": NODES, "objects": [secret, job("progress", 0, 100)],
                              "containerBehaviour": [{"match": {"container": "tensorflow"}, "log": keras}]})
until(kc, ["get", "pods", "-l", SELECTOR + "progress", "-o", "jsonpath={range .items[*]}{.status.phase} {end}"],
      lambda s: s.split().count("Running") == 100)
compare("progress of 100 running workers (top)", 1.0, [plugin, "--kubeconfig", kc, "top", "progress"], (0,),
        "kubectl logs -l --tail=200 (100 streams)",
        f"{kubectl} --kubeconfig {kc} logs -l {SELECTOR}progress --tail=200 --max-log-requests=100 >/dev/null")
# Every worker read: the cells are counted, not assumed.
out = subprocess.run([plugin, "--kubeconfig", kc, "top", "progress", "-o", "json"], capture_output=True, text=True).stdout
read = sum(1 for r in json.loads(out)["items"][0]["replicas"] if (r.get("progress") or "").startswith("step "))
print(f"  workers whose progress top read: {read} of 100")
proc.kill()
