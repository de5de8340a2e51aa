"""End-to-end submit time: `kubectl tfjob submit -f` (render, validate, pre-flight with pod dry
runs, create) against `kubectl create -f` of the same manifest, alternating, each run a fresh job
name so neither meets the other's job. Prints medians and their ratio.

usage: submit.py PLUGIN KUBECTL KUBECONFIG MANIFEST RUNS
"""
import re
import statistics
import subprocess
import sys
import time

plugin, kubectl, kubeconfig, manifest, runs = sys.argv[1:6]
text = open(manifest).read()


def timed(argv):
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = (time.perf_counter() - start) * 1000
    if done.returncode != 0:
        sys.exit(f"{argv[0]} exited {done.returncode}: {done.stderr.decode()[-400:]}")
    return elapsed


ours, theirs = [], []

def named(who, i):
    """The manifest with its metadata.name replaced, written beside it."""
    path = f"{manifest}.{who}-{i}.yaml"
    open(path, "w").write(re.sub(r"(?m)^  name: .*$", f"  name: sub-{who}-{i}", text, count=1))
    return path


for i in range(int(runs)):
    ours.append(timed([plugin, "--kubeconfig", kubeconfig, "submit", "-f", named("ours", i)]))
    theirs.append(timed([kubectl, "--kubeconfig", kubeconfig, "create", "-f", named("kubectl", i)]))

print(f"submit: job written, whole process ({runs} runs each, alternating)")
for label, v in [("kubectl tfjob submit -f", ours), ("kubectl create -f", theirs)]:
    print(f"  {label:<24} median {statistics.median(v):7.1f} ms   min {min(v):6.1f} ms   max {max(v):6.1f} ms")
print(f"  ratio (kubectl tfjob submit / kubectl create): {statistics.median(ours) / statistics.median(theirs):.2f}")
