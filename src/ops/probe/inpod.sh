# kubectl-tfjob probe, for images without python3: the same checks with what a POSIX shell
# image has, run as
#   sh -c "$(this file)" MODE ARGS...
#   env ENVIRON SECRET_VAR... -- PLAIN_VAR...   tr, grep and (for fingerprints) sha256sum
#   peers TIMEOUT HOST:PORT...                  getent hosts, then bash's /dev/tcp under
#                                               timeout, or nc -z
#   gateway ENVIRON BASE_VAR KEY_VAR TIMEOUT    curl, its header given as a config on stdin
#   gpus                                        /dev/nvidia<N> files, /proc/driver/nvidia's GPUs
#   chat ENVIRON BASE_VAR KEY_VAR TIMEOUT MODEL the same, POST BASE/v1/chat/completions
#                                               (MODEL is checked by the plugin: no quotes)
# It prints what inpod.py prints, plus `missing=TOOL` when the image lacks what a check needs
# and `connect=no-tool` for a peer it could resolve but not connect to. Read-only: nothing is
# written or left running. A secret is read from the process's environment into a shell
# variable and handed on only through printf (a builtin) into a pipe: it is never a program's
# argument, so it is neither in the exec request nor in the pod's process list. wget is not
# used for the gateway: it takes a header only as an argument.
has() { command -v "$1" >/dev/null 2>&1; }
# The NAME=VALUE line of a variable in the environ file $f (the first, as getenv reads).
line_of() { tr '\000' '\n' < "$f" | grep -m 1 "^$1="; }
nl='
'
# $1 made safe inside a double-quoted value of curl's config: \ and " escaped. Builtins only:
# the key never becomes a program's argument.
cfg_quote() {
  s=$1
  q=
  while [ -n "$s" ]; do
    c=${s%"${s#?}"}
    s=${s#?}
    case $c in
    \\ | '"') q="$q\\$c" ;;
    *) q="$q$c" ;;
    esac
  done
  printf '%s' "$q"
}
# A URL without the credentials it may carry (user:password@host), its query or fragment.
show_url() {
  rest=${1#*://}
  hostport=${rest%%/*}
  path=${rest#"$hostport"}
  path=${path%%\?*}
  path=${path%%#*}
  printf '%s' "${1%%://*}://${hostport##*@}$path"
}
# ask QUOTED_KEY [CURL_ARGS...]: GET (or what the args make) $url with that bearer key (none
# when empty), the header handed to curl as a config on stdin. Prints the body, then a line
# "STATUS REDIRECT_URL"; exits with curl's code.
ask() {
  k=$1
  shift
  if [ -n "$k" ]; then printf 'header = "Authorization: Bearer %s"\n' "$k"; fi |
    curl -sS -K - --max-time "$t" --max-filesize 1048576 -w "\\n%{http_code} %{redirect_url}" "$@" "$url" 2>/dev/null
}
# answer OUTPUT: sets a_status, a_redirect and a_found (does the body hold "$field": [ ?).
answer() {
  last=${1##*"$nl"}
  a_status=${last%% *}
  a_redirect=${last#* }
  a_found=no
  if printf '%s' "${1%"$nl"*}" | grep -q "\"$field\"[[:space:]]*:[[:space:]]*\\["; then a_found=yes; fi
}
# sh -c SCRIPT MODE ARGS...: MODE is $0.
mode=$0
case $mode in
env)
  f=$1
  shift
  if [ ! -r "$f" ]; then echo "error=environ:unreadable"; exit 0; fi
  plain=
  for v in "$@"; do
    if [ "$v" = "--" ]; then plain=1; continue; fi
    line=$(line_of "$v") || { echo "absent=$v"; continue; }
    if [ -n "$plain" ]; then
      echo "value=$v:${line#*=}"
    elif has sha256sum; then
      fp=$(printf '%s' "${line#*=}" | sha256sum | cut -c1-8)
      echo "fp=$v:$fp"
    else
      echo "fp=$v:no-tool"
    fi
  done
  ;;
peers)
  t=$1
  shift
  if ! has getent; then echo "missing=getent"; exit 0; fi
  if has bash && has timeout; then via=bash; elif has nc; then via=nc; else via=; fi
  bound=
  if has timeout; then bound="timeout $t"; fi
  for peer in "$@"; do
    host=${peer%:*}
    port=${peer##*:}
    case $port in
    '' | *[!0-9]*) echo "peer=$peer resolve=error:bad-address connect=skipped"; continue ;;
    esac
    # getent exits 2 when the name is not found. An IPv4 address needs no resolving (getent
    # would look up its reverse name).
    case $host in
    *[!0-9.]*) $bound getent hosts "$host" >/dev/null 2>&1; rc=$? ;;
    *) rc=0 ;;
    esac
    if [ $rc -eq 2 ]; then echo "peer=$peer resolve=nxdomain connect=skipped"; continue; fi
    if [ $rc -ne 0 ]; then echo "peer=$peer resolve=error:$rc connect=skipped"; continue; fi
    case $via in
    bash) err=$(timeout "$t" bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$host" "$port" 2>&1) ;;
    nc) err=$(nc -z -w "$t" "$host" "$port" </dev/null 2>&1) ;;
    *) echo "peer=$peer resolve=ok connect=no-tool"; continue ;;
    esac
    rc=$?
    # timeout exits 124 when the bound ran out.
    if [ $rc -eq 0 ]; then c=ok
    elif [ $rc -eq 124 ]; then c=timeout
    else
      case $err in
      *refused*) c=refused ;;
      *'timed out'*) c=timeout ;;
      *) c=error:$rc ;;
      esac
    fi
    echo "peer=$peer resolve=ok connect=$c"
  done
  ;;
gateway | chat)
  f=$1
  if [ ! -r "$f" ]; then echo "error=environ:unreadable"; exit 0; fi
  if ! has curl; then echo "missing=curl"; exit 0; fi
  base=$(line_of "$2")
  base=${base#*=}
  key=$(line_of "$3")
  key=${key#*=}
  t=$4
  if [ -z "$base" ]; then echo "$mode error=no-base-url"; exit 0; fi
  while :; do case $base in */) base=${base%/} ;; *) break ;; esac; done
  if [ "$mode" = chat ]; then
    url="$base/v1/chat/completions"
    word=choices
    # The body is no secret: the model's name and a fixed question.
    set -- -H 'Content-Type: application/json' --data-binary \
      "{\"model\":\"$5\",\"messages\":[{\"role\":\"user\",\"content\":\"Say OK.\"}],\"max_tokens\":1}"
  else
    url="$base/v1/models"
    word=models
    set --
  fi
  # curl's config syntax: inside "..." a backslash escapes the next character, so a key
  # holding " or \ must have them escaped, or curl cuts it and the gateway refuses a key that
  # works.
  quoted=$(cfg_quote "$key")
  out=$(ask "$quoted" "$@")
  rc=$?
  case $rc in
  0)
    field=data
    [ "$mode" = chat ] && field=choices
    answer "$out"
    found=$a_found
    extra=
    # curl follows no redirect (no -L): where one points is said, the key not sent there.
    if [ -n "$a_redirect" ]; then extra=" redirect=$(show_url "$a_redirect")"; fi
    if [ "$mode" = gateway ] && [ "$found" = yes ] && [ "$a_status" -ge 200 ] && [ "$a_status" -lt 300 ]; then
      # A model list anyone may read says nothing about the key: ask without one, then with a
      # wrong one (a gateway may list publicly yet refuse a key it did not issue).
      if anon=$(ask ""); then
        answer "$anon"
        if [ "$a_found" = yes ] && [ "$a_status" -ge 200 ] && [ "$a_status" -lt 300 ]; then
          extra=" anon=yes"
          wrong=$(ask kubectl-tfjob-probe-not-a-key) && answer "$wrong" || a_status=0
          extra="$extra wrong=$a_status"
        else
          extra=" anon=no"
        fi
      else
        extra=" anon=error"
      fi
      answer "$out"
    fi
    echo "$mode url=$(show_url "$url") status=$a_status $word=$found$extra"
    ;;
  6) echo "$mode url=$(show_url "$url") error=dns" ;;
  7) echo "$mode url=$(show_url "$url") error=refused" ;;
  28) echo "$mode url=$(show_url "$url") error=timeout" ;;
  5 | 97) echo "$mode url=$(show_url "$url") error=proxy" ;;
  35 | 51 | 53 | 54 | 58 | 59 | 60 | 64 | 66 | 77 | 80 | 82 | 83 | 90 | 91) echo "$mode url=$(show_url "$url") error=tls" ;;
  *) echo "$mode url=$(show_url "$url") error=other:curl-$rc" ;;
  esac
  ;;
gpus)
  # Globs and test are builtins: no program is needed to count devices.
  n=0
  for d in /dev/nvidia[0-9]*; do [ -e "$d" ] && n=$((n + 1)); done
  g=none
  if [ -d /proc/driver/nvidia/gpus ]; then
    g=0
    for d in /proc/driver/nvidia/gpus/*; do [ -e "$d" ] && g=$((g + 1)); done
  fi
  echo "gpus devices=$n driver=$g"
  ;;
*)
  echo "unknown mode $mode" >&2
  exit 2
  ;;
esac
