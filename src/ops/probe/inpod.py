# kubectl-tfjob probe: read-only checks run inside a training container as
#   python3 -c "$(this file)" MODE ARGS...
# It writes nothing, starts nothing that outlives it, and never prints a secret: a secret
# variable comes back as the first 8 hex digits of its SHA-256. Every answer is a line of
# key=value words (the plugin's diagnose/inpod.rs parses them).
#   env ENVIRON SECRET_VAR... -- PLAIN_VAR...   the main process's environment (ENVIRON is
#                                               /proc/1/environ: the process, not the pod spec)
#   peers TIMEOUT HOST:PORT...                  resolve each host, open a TCP connection
#   gateway ENVIRON BASE_VAR KEY_VAR TIMEOUT    GET BASE/v1/models with the process's own key;
#                                               when that lists models, again without a key
#                                               (anon=yes|no) and, if still listed, with a
#                                               wrong one (wrong=STATUS)
#   gpus                                        /dev/nvidia<N> device files and the GPUs
#                                               /proc/driver/nvidia lists
#   chat ENVIRON BASE_VAR KEY_VAR TIMEOUT MODEL POST BASE/v1/chat/completions: one tiny
#                                               completion (max_tokens 1); is there `choices`?
import hashlib
import json
import re
import socket
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request


def environ(path):
    try:
        with open(path, "rb") as f:
            raw = f.read(1 << 20)
    except OSError as e:
        print("error=environ:%s" % type(e).__name__)
        sys.exit(0)
    env = {}
    for item in raw.split(b"\0"):
        k, sep, v = item.partition(b"=")
        if sep:
            # getenv returns the first match; so does this.
            env.setdefault(k.decode("utf-8", "replace"), v.decode("utf-8", "replace"))
    return env


def mode_env(args):
    env = environ(args[0])
    plain = False
    for name in args[1:]:
        if name == "--":
            plain = True
            continue
        if name not in env:
            print("absent=%s" % name)
        elif plain:
            print("value=%s:%s" % (name, env[name].replace("\n", " ")))
        else:
            print("fp=%s:%s" % (name, hashlib.sha256(env[name].encode()).hexdigest()[:8]))


def mode_peers(args):
    timeout = float(args[0])
    for peer in args[1:]:
        host, _, port = peer.rpartition(":")
        try:
            port = int(port)
            socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except socket.gaierror as e:
            kind = "nxdomain" if e.errno in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", -5)) else "error:%s" % e.errno
            print("peer=%s resolve=%s connect=skipped" % (peer, kind))
            continue
        except ValueError:
            print("peer=%s resolve=error:bad-address connect=skipped" % peer)
            continue
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            connect = "ok"
        except ConnectionRefusedError:
            connect = "refused"
        except (socket.timeout, TimeoutError):
            connect = "timeout"
        except OSError as e:
            connect = "error:%s" % (e.errno or type(e).__name__)
        print("peer=%s resolve=ok connect=%s" % (peer, connect))


def shown(url):
    # Never echo credentials a URL may carry (user:password@host).
    p = urllib.parse.urlsplit(url)
    netloc = p.hostname or ""
    if p.port:
        netloc += ":%d" % p.port
    return urllib.parse.urlunsplit((p.scheme, netloc, p.path, "", "")).replace(" ", "%20")


def origin(url):
    p = urllib.parse.urlsplit(url)
    return (p.scheme, p.hostname, p.port or {"http": 80, "https": 443}.get(p.scheme))


class OtherOrigin(Exception):
    def __init__(self, code, url):
        Exception.__init__(self, url)
        self.code = code
        self.url = url


class SameOriginOnly(urllib.request.HTTPRedirectHandler):
    # urllib sends the Authorization header on to wherever a redirect points; a gateway key
    # must not reach another origin, so such a redirect is reported, not followed.
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if origin(newurl) != origin(req.full_url):
            raise OtherOrigin(code, newurl)
        return urllib.request.HTTPRedirectHandler.redirect_request(self, req, fp, code, msg, headers, newurl)


opener = urllib.request.build_opener(SameOriginOnly)
# A key no gateway issued: what a gateway that checks keys refuses.
WRONG_KEY = "kubectl-tfjob-probe-not-a-key"


def mode_gateway(args):
    env = environ(args[0])
    answer = request(env, args, "gateway", "/v1/models", None, "models", "data")
    if answer is None:
        return
    status, found, extra = answer
    if 200 <= status < 300 and found == "yes":
        # A model list anyone may read says nothing about the key: ask without one, then with
        # a wrong one (a gateway may list publicly yet refuse a key it did not issue).
        try:
            anon = fetch(env, args, "/v1/models", None, "data", None)
            public = anon[1] == "yes" and 200 <= anon[0] < 300
            extra += " anon=%s" % ("yes" if public else "no")
            if public:
                extra += " wrong=%d" % fetch(env, args, "/v1/models", None, "data", WRONG_KEY)[0]
        except (urllib.error.URLError, OSError):
            extra += " anon=error"
    print_answer("gateway", env, args, "/v1/models", status, "models", found, extra)


def mode_chat(args):
    env = environ(args[0])
    body = {"model": args[4], "messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 1}
    answer = request(env, args, "chat", "/v1/chat/completions", json.dumps(body).encode(), "choices", "choices")
    if answer is not None:
        status, found, extra = answer
        print_answer("chat", env, args, "/v1/chat/completions", status, "choices", found, extra)


def print_answer(name, env, args, path, status, word, found, extra):
    url = env.get(args[1], "").rstrip("/") + path
    print("%s url=%s status=%d %s=%s%s" % (name, shown(url), status, word, found, extra))


def fetch(env, args, path, data, field, key):
    # One request: (status, "yes"|"no" for the field, " redirect=URL" or ""). key None sends
    # no Authorization header; otherwise that key (the process's own when key is True).
    url = env.get(args[1], "").rstrip("/") + path
    headers = {}
    if key is True:
        headers["Authorization"] = "Bearer " + env.get(args[2], "")
    elif key:
        headers["Authorization"] = "Bearer " + key
    if data is not None:
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, headers=headers)
    found = "no"
    try:
        with opener.open(req, timeout=float(args[3])) as r:
            status = r.status
            try:
                body = json.loads(r.read(1 << 20))
                found = "yes" if isinstance(body, dict) and isinstance(body.get(field), list) else "no"
            except ValueError:
                pass
    except OtherOrigin as e:
        return e.code, "no", " redirect=%s" % shown(e.url)
    except urllib.error.HTTPError as e:
        status = e.code
    return status, found, ""


def request(env, args, name, path, data, word, field):
    base = env.get(args[1], "")
    if not base:
        print("%s error=no-base-url" % name)
        return None
    url = base.rstrip("/") + path
    # http.client refuses a header value with a line break (Lib/http/client.py
    # _is_illegal_header_value) and quotes the whole header, key included, in its error; a
    # Secret made with --from-file keeps the file's last newline. Said here, never quoted.
    if re.search(r"\n(?![ \t])|\r(?![ \t\n])", env.get(args[2], "")):
        print("%s url=%s error=header" % (name, shown(url)))
        return None
    try:
        return fetch(env, args, path, data, field, True)
    except urllib.error.URLError as e:
        r = e.reason
        if isinstance(r, socket.gaierror):
            kind = "dns"
        elif isinstance(r, ssl.SSLError):
            kind = "tls"
        elif isinstance(r, (socket.timeout, TimeoutError)):
            kind = "timeout"
        elif isinstance(r, ConnectionRefusedError):
            kind = "refused"
        elif "Tunnel connection failed" in str(r):
            kind = "proxy"
        else:
            kind = "other:%s" % type(r).__name__
        print("%s url=%s error=%s" % (name, shown(url), kind))
        return None
    except (socket.timeout, TimeoutError):
        print("%s url=%s error=timeout" % (name, shown(url)))
        return None


def mode_gpus(args):
    # What CUDA, and so TensorFlow, can open in this container: the NVIDIA device files the
    # runtime mounted, and the GPUs the driver lists (none: no driver visible here).
    import os
    try:
        devices = len([d for d in os.listdir("/dev") if re.fullmatch(r"nvidia[0-9]+", d)])
    except OSError:
        devices = 0
    try:
        driver = str(len(os.listdir("/proc/driver/nvidia/gpus")))
    except OSError:
        driver = "none"
    print("gpus devices=%d driver=%s" % (devices, driver))


modes = {"env": mode_env, "peers": mode_peers, "gateway": mode_gateway, "chat": mode_chat, "gpus": mode_gpus}
modes[sys.argv[1]](sys.argv[2:])
