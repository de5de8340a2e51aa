# kubectl-tfjob probe, for images without python3: the env check alone, run as
#   sh -c "$(this file)" env ENVIRON SECRET_VAR... -- PLAIN_VAR...
# POSIX sh with tr, grep and (for fingerprints) sha256sum. Read-only; a secret value is piped,
# never passed as an argument, and only its SHA-256's first 8 hex digits are printed.
f=$1
shift
if [ ! -r "$f" ]; then echo "error=environ:unreadable"; exit 0; fi
plain=
for v in "$@"; do
  if [ "$v" = "--" ]; then plain=1; continue; fi
  line=$(tr '\000' '\n' < "$f" | grep -m 1 "^$v=") || { echo "absent=$v"; continue; }
  if [ -n "$plain" ]; then
    echo "value=$v:${line#*=}"
  elif command -v sha256sum >/dev/null 2>&1; then
    fp=$(printf '%s' "${line#*=}" | sha256sum | cut -c1-8)
    echo "fp=$v:$fp"
  else
    echo "fp=$v:no-tool"
  fi
done
