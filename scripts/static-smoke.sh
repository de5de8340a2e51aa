#!/usr/bin/env bash
# Builds the static linux-amd64 binary a release ships (x86_64-unknown-linux-musl, as
# .github/workflows/release.yml does) and runs it, so a static build that links but does not
# start (as -no-pie on musl's static PIE once did) fails here, not on a user's machine.
# Installs the musl target and musl-gcc (for ring's C code) when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
target=x86_64-unknown-linux-musl

rustup target list --installed | grep -qx "$target" || rustup target add "$target"
if ! command -v musl-gcc >/dev/null; then
  apt-get install -y musl-tools >/dev/null 2>&1 ||
    { apt-get update >/dev/null && apt-get install -y musl-tools >/dev/null; }
fi

CC_x86_64_unknown_linux_musl=musl-gcc cargo build --locked --target "$target" -p kubectl-tfjob --bin kubectl-tfjob
bin="${CARGO_TARGET_DIR:-target}/$target/debug/kubectl-tfjob"

# Static: ldd has no library to list ("statically linked" for musl's static PIE, "not a
# dynamic executable" for a static non-PIE).
linked=$(ldd "$bin" 2>&1 || true)
if ! grep -qE 'statically linked|not a dynamic executable' <<<"$linked"; then
  echo "static-smoke: $bin is dynamically linked:" >&2
  echo "$linked" >&2
  exit 1
fi

"$bin" --version
out=$("$bin" render --name smoke --image tensorflow/tensorflow:2.13.0 --workers 2)
grep -q '^kind: TFJob$' <<<"$out" || { echo "static-smoke: render printed no TFJob" >&2; exit 1; }
set +e
"$bin" validate -f tests/corpus/wrong-type-image.yaml >/dev/null 2>&1
code=$?
set -e
[ "$code" = 2 ] || { echo "static-smoke: validate of a bad manifest exited $code, not 2" >&2; exit 1; }
echo "static-smoke: $bin is static and runs (render ok, validate refuses with 2)"
