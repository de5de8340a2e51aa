//! The scripts run as a real pod runs them, and the pure verdicts.

use super::*;
use std::io::Write;
use std::process::Command;

fn passed(replica: &str) -> ReplicaProbe {
    ReplicaProbe {
        replica: replica.into(),
        pod: format!("j-{replica}"),
        state: "Running".into(),
        probed: true,
        tf_config: Some(Check::pass("as the operator gives it")),
        peers: vec![],
        peers_check: None,
        gateway: None,
        gateway_chat: None,
        containers: vec![],
        gpus: None,
        program: None,
    }
}

/// Issue 46: an ok counts what it saw against what TF_CONFIG names. A JobSet scaled from 2
/// to 3 workers after export runs 4 pods whose TF_CONFIG names 3: not `ok: 4/3`.
#[test]
fn the_verdict_is_ok_only_for_every_replica_tf_config_names() {
    let four: Vec<ReplicaProbe> = ["ps-0", "worker-0", "worker-1", "worker-2"]
        .into_iter()
        .map(passed)
        .collect();
    assert!(verdict("TFJob", "j", 4, &four).starts_with("ok: 4/4 replicas"));
    let scaled = verdict("JobSet", "j", 3, &four);
    assert!(
        scaled.starts_with("4 pods run but their TF_CONFIG names 3 replicas"),
        "{scaled}"
    );
    let short = verdict("TFJob", "j", 5, &four);
    assert_eq!(short, "1 of 5 replicas have no pod to probe");
}

/// The scripts as a real pod runs them: a real python3 and sh on this machine, an environ
/// file written here, a listening socket and a refused port on 127.0.0.1, a local gateway.
fn run(program: &str, script: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("these tests run the scripts with {program}: {e}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn environ(vars: &[(&str, &str)]) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    for (k, v) in vars {
        write!(f, "{k}={v}\0").unwrap();
    }
    f
}

#[test]
fn both_scripts_read_the_environment_alike_and_never_print_the_key() {
    let key = "sk-test-not-a-real-key-0123456789";
    let f = environ(&[
        ("TF_CONFIG", "{\"task\":{}}"),
        ("K", key),
        ("B", "https://g/api"),
    ]);
    let path = f.path().to_str().unwrap();
    let args = ["env", path, "K", "--", "TF_CONFIG", "B", "NOPE"];
    let py = run("python3", PY, &args);
    let sh = run("sh", SH, &args);
    assert_eq!(py, sh);
    assert!(!py.contains(key));
    let a = EnvAnswer::parse(&py);
    assert_eq!(
        a.fingerprint("K"),
        Some(fingerprint(key.as_bytes()).as_str())
    );
    assert_eq!(a.value("TF_CONFIG"), Some("{\"task\":{}}"));
    assert_eq!(a.value("B"), Some("https://g/api"));
    assert_eq!(a.absent, ["NOPE"]);
}

#[test]
fn peers_script_tells_reachable_refused_and_unknown_names_apart() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let open = listener.local_addr().unwrap().port();
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let a = format!("127.0.0.1:{open}");
    let b = format!("127.0.0.1:{closed}");
    // python3, and sh with getent, bash's /dev/tcp and timeout: the same answers.
    for (program, script) in [("python3", PY), ("sh", SH)] {
        let out = run(
            program,
            script,
            &["peers", "2", &a, &b, "no-such-host.invalid:2222"],
        );
        let peers = inpod::judge_peers(&out, &|_| PeerFacts::default());
        assert_eq!(peers.len(), 3, "{program}: {out}");
        assert_eq!(
            (peers[0].resolve.as_str(), peers[0].connect.as_str()),
            ("ok", "ok"),
            "{program}: {out}"
        );
        assert_eq!(peers[1].connect, "refused", "{program}: {out}");
        assert_eq!(peers[2].resolve, "nxdomain", "{program}: {out}");
    }
}

#[test]
fn gateway_script_sends_the_processs_key_and_prints_only_the_status() {
    use std::io::{BufRead, BufReader};
    let key = "sk-test-gateway-key-9876543210";
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = server.local_addr().unwrap().port();
    let serve = std::thread::spawn(move || {
        let mut seen = Vec::new();
        // Each script: the key (listed), again without one (401), the doubled /v1.
        for _ in 0..6 {
            let (mut s, _) = server.accept().unwrap();
            let mut lines = Vec::new();
            let mut r = BufReader::new(s.try_clone().unwrap());
            loop {
                let mut l = String::new();
                r.read_line(&mut l).unwrap();
                if l == "\r\n" || l.is_empty() {
                    break;
                }
                lines.push(l);
            }
            let auth_ok = lines
                .iter()
                .any(|l| l.trim_end() == format!("Authorization: Bearer {key}"));
            let body = "{\"object\":\"list\",\"data\":[]}";
            let (code, body) = if lines[0].contains("/v1/v1/") {
                ("404 Not Found", "{}")
            } else if auth_ok {
                ("200 OK", body)
            } else {
                ("401 Unauthorized", "{}")
            };
            write!(
                s,
                "HTTP/1.1 {code}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
            seen.push(lines[0].clone());
        }
        seen
    });
    let good = environ(&[("K", key), ("B", &format!("http://127.0.0.1:{port}/api"))]);
    let doubled = environ(&[
        ("K", key),
        ("B", &format!("http://127.0.0.1:{port}/api/v1")),
    ]);
    let args = |f: &tempfile::NamedTempFile| {
        vec![
            "gateway".to_string(),
            f.path().to_str().unwrap().into(),
            "B".into(),
            "K".into(),
            "3".into(),
        ]
    };
    // python3's urllib, then sh with curl (the header from a config on its stdin).
    for (program, script) in [("python3", PY), ("sh", SH)] {
        let a1 = args(&good);
        let ok = run(
            program,
            script,
            &a1.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        let a2 = args(&doubled);
        let v1 = run(
            program,
            script,
            &a2.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        assert!(!ok.contains(key) && !v1.contains(key));
        assert_eq!(
            inpod::judge_gateway(&ok, None, None).status,
            Status::Pass,
            "{program}: {ok}"
        );
        assert!(
            inpod::judge_gateway(&v1, None, None)
                .detail
                .contains("ends in /v1"),
            "{program}: {v1}"
        );
    }
    let seen = serve.join().unwrap();
    assert!(seen[0].starts_with("GET /api/v1/models "), "{seen:?}");
    assert!(seen[3].starts_with("GET /api/v1/models "), "{seen:?}");
}

/// A gateway on loopback answering each request by `answer(path, authorization)`; what it
/// was asked is kept for the test to read.
type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, Option<String>)>>>;
fn fake_gateway(
    answer: impl Fn(&str, Option<&str>) -> (u16, String, Option<String>) + Send + 'static,
) -> (u16, Seen) {
    use std::io::{BufRead, BufReader};
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = server.local_addr().unwrap().port();
    let seen: Seen = Default::default();
    let log = seen.clone();
    std::thread::spawn(move || {
        for conn in server.incoming() {
            let Ok(mut s) = conn else { return };
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut lines = Vec::new();
            loop {
                let mut l = String::new();
                if r.read_line(&mut l).unwrap_or(0) == 0 || l == "\r\n" {
                    break;
                }
                lines.push(l.trim_end().to_string());
            }
            let path = lines
                .first()
                .and_then(|l| l.split(' ').nth(1))
                .unwrap_or("")
                .to_string();
            let auth = lines
                .iter()
                .find_map(|l| l.strip_prefix("Authorization: "))
                .map(String::from);
            let (code, body, location) = answer(&path, auth.as_deref());
            log.lock().unwrap().push((path, auth));
            let location = location
                .map(|l| format!("Location: {l}\r\n"))
                .unwrap_or_default();
            let _ = write!(
                s,
                "HTTP/1.1 {code} X\r\n{location}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, seen)
}

fn gateway_check(program: &str, script: &str, base: &str, key: &str) -> (String, Check) {
    let f = environ(&[("K", key), ("B", base)]);
    let path = f.path().to_str().unwrap();
    let out = run(program, script, &["gateway", path, "B", "K", "3"]);
    assert!(!out.contains(key), "{program} printed the key: {out}");
    let check = inpod::judge_gateway(&out, None, None);
    (out, check)
}

const LIST: &str = "{\"object\":\"list\",\"data\":[{\"id\":\"m\"}]}";

/// Issue 47 items 3, 8 and 9, in both scripts: a redirect to another origin is not followed
/// (the key stays home); a model list anyone may read is "not checked", unless a wrong key
/// is refused; a key holding `"` and `\` reaches the gateway whole through curl's config.
#[test]
fn gateway_scripts_keep_the_key_home_and_do_not_pass_a_public_list() {
    let key = r#"sk-"quoted\back"-key"#;
    for (program, script) in [("python3", PY), ("sh", SH)] {
        // Another origin, which must never be asked.
        let (elsewhere, stolen) = fake_gateway(|_, _| (200, LIST.into(), None));
        let (port, _) = fake_gateway(move |_, _| {
            (
                302,
                String::new(),
                Some(format!("http://127.0.0.1:{elsewhere}/v1/models")),
            )
        });
        let (out, check) = gateway_check(
            program,
            script,
            &format!("http://127.0.0.1:{port}/api"),
            key,
        );
        assert_eq!(check.status, Status::Fail, "{program}: {out}");
        assert!(
            check.detail.contains(&format!(
                "redirects to http://127.0.0.1:{elsewhere}/v1/models"
            )),
            "{program}: {}",
            check.detail
        );
        assert!(
            stolen.lock().unwrap().is_empty(),
            "{program} followed the redirect"
        );

        // Public: any key, or none, gets the list.
        let (port, seen) = fake_gateway(|_, _| (200, LIST.into(), None));
        let (out, check) = gateway_check(
            program,
            script,
            &format!("http://127.0.0.1:{port}/api"),
            key,
        );
        assert_eq!(check.status, Status::NotChecked, "{program}: {out}");
        assert!(check.detail.contains("public"), "{}", check.detail);
        let asked: Vec<Option<String>> = seen
            .lock()
            .unwrap()
            .iter()
            .map(|(_, a)| a.clone())
            .collect();
        assert_eq!(asked.len(), 3, "{program}: {asked:?}");
        assert_eq!(asked[1], None, "{program}: the second ask carries no key");

        // Listed publicly, but a key is checked when given; the right one, whole.
        let want = format!("Bearer {key}");
        let (port, seen) = fake_gateway(move |_, auth| match auth {
            None => (200, LIST.into(), None),
            Some(a) if a == want => (200, LIST.into(), None),
            Some(_) => (401, "{}".into(), None),
        });
        let (out, check) = gateway_check(
            program,
            script,
            &format!("http://127.0.0.1:{port}/api"),
            key,
        );
        assert_eq!(check.status, Status::Pass, "{program}: {out}");
        assert!(
            check.detail.contains("wrong key gets 401"),
            "{}",
            check.detail
        );
        assert_eq!(
            seen.lock().unwrap()[0].1.as_deref(),
            Some(format!("Bearer {key}").as_str()),
            "{program} cut the key"
        );
    }
}

/// Both scripts count GPUs alike; this machine has none, and says so the same way.
#[test]
fn both_scripts_count_the_gpus_alike() {
    let py = run("python3", PY, &["gpus"]);
    let sh = run("sh", SH, &["gpus"]);
    assert_eq!(py, sh);
    let c = inpod::judge_gpus(&py, 1, None, None);
    assert_ne!(c.status, Status::NotChecked, "{py}");
}

#[test]
fn the_shell_script_names_the_tool_an_image_lacks() {
    // A PATH with only a POSIX shell's builtins: no getent, no curl.
    let out = Command::new("/bin/sh")
        .env("PATH", "/nonexistent")
        .arg("-c")
        .arg(SH)
        .args(["peers", "2", "a:1"])
        .output()
        .unwrap();
    assert_eq!(
        inpod::missing_tool(&String::from_utf8_lossy(&out.stdout)),
        Some("getent")
    );
    let f = environ(&[("B", "http://127.0.0.1:1/api"), ("K", "k")]);
    let out = Command::new("/bin/sh")
        .env("PATH", "/nonexistent")
        .arg("-c")
        .arg(SH)
        .args(["gateway", f.path().to_str().unwrap(), "B", "K", "2"])
        .output()
        .unwrap();
    assert_eq!(
        inpod::missing_tool(&String::from_utf8_lossy(&out.stdout)),
        Some("curl")
    );
}

/// Issue 60 item 1: a key ending in a newline (a Secret made with `--from-file`). python's
/// http.client would refuse the header and quote it, key included, in its traceback; the
/// script looks first and says `error=header`, which names the cause. Under the real python3.
#[test]
fn a_key_with_a_line_break_is_named_not_quoted() {
    let (port, seen) = fake_gateway(|_, _| (200, LIST.into(), None));
    let key = "sk-unit-line-break-key-0123\n";
    let (out, check) = gateway_check("python3", PY, &format!("http://127.0.0.1:{port}/api"), key);
    assert!(!out.contains(key.trim()), "{out}");
    assert!(out.contains("error=header"), "{out}");
    assert_eq!(check.status, Status::Fail, "{out}");
    assert!(
        check.detail.contains("holds a line break"),
        "{}",
        check.detail
    );
    assert!(seen.lock().unwrap().is_empty(), "the key was sent");
}

/// Issue 60 item 8: a 661-replica job's peer list does not fit one exec's query string; it is
/// checked in runs of at most PEER_ARGS_BYTES, every host once, in order.
#[test]
fn a_long_peer_list_is_cut_into_execs_of_bounded_arguments() {
    let hosts: Vec<String> = (0..661)
        .map(|i| format!("a-long-job-name-for-a-big-run-worker-{i}.default.svc:2222"))
        .collect();
    let parts = host_chunks(&hosts);
    assert!(parts.len() > 1, "{}", parts.len());
    for p in &parts {
        let bytes: usize = p.iter().map(|h| h.len() + 1).sum();
        assert!(bytes <= PEER_ARGS_BYTES, "{bytes}");
    }
    let again: Vec<&String> = parts.iter().flat_map(|p| p.iter()).collect();
    assert_eq!(again, hosts.iter().collect::<Vec<_>>());
    // A short list is one exec, as before.
    assert_eq!(host_chunks(&hosts[..4]).len(), 1);
    assert!(host_chunks(&[]).is_empty());
}

/// Issue 61 item 4: what `wait` makes of the checks taken as every replica starts running. A
/// peer that refuses the connection may not have opened its server yet (unknown); one whose
/// name does not resolve, a wrong TF_CONFIG or a rejected key fails; all passed passes.
#[test]
fn a_wait_fails_on_what_waiting_does_not_cure_only() {
    use crate::diagnose::inpod::{AtStart, Peer, at_start};
    let report = |replicas: Vec<ReplicaProbe>| {
        let verdict = verdict("TFJob", "j", replicas.len(), &replicas);
        let ok = replicas
            .iter()
            .flat_map(|r| r.checks())
            .all(|c| c.status == Status::Pass);
        ProbeReport {
            job: "j".into(),
            namespace: "ns".into(),
            verdict,
            ok,
            not_probed: None,
            replicas,
            again: String::new(),
        }
    };
    let peer = |to: &str, resolve: &str, connect: &str, check: Check| Peer {
        to: to.into(),
        resolve: resolve.into(),
        connect: connect.into(),
        check,
    };
    let all = report(vec![passed("PS-0"), passed("Worker-0")]);
    assert!(matches!(at_start(&all), AtStart::Passed(v) if v.starts_with("ok: 2/2")));

    let mut starting = passed("Worker-0");
    starting.peers = vec![peer(
        "j-ps-0.ns.svc:2222",
        "ok",
        "refused",
        Check::fail("connection refused: nothing listens there"),
    )];
    let got = at_start(&report(vec![passed("PS-0"), starting.clone()]));
    assert_eq!(
        got,
        AtStart::Unknown(
            "Worker-0 → j-ps-0.ns.svc:2222: connection refused (its training process may not \
             have opened its server yet)"
                .into()
        )
    );

    // A name that does not resolve beside it: that one is the answer.
    let mut lost = starting.clone();
    lost.peers.push(peer(
        "j-worker-1.ns.svc:2222",
        "nxdomain",
        "skipped",
        Check::fail("name not found"),
    ));
    assert_eq!(
        at_start(&report(vec![passed("PS-0"), lost])),
        AtStart::Failed("Worker-0 → j-worker-1.ns.svc:2222: name not found".into())
    );

    let mut rejected = passed("PS-0");
    rejected.gateway = Some(Check::fail("401: the gateway rejects this key"));
    assert_eq!(
        at_start(&report(vec![rejected, starting])),
        AtStart::Failed("PS-0 gateway: 401: the gateway rejects this key".into())
    );

    let mut unseen = passed("PS-0");
    unseen.gateway = Some(Check::not_checked("the image has no curl"));
    assert!(matches!(
        at_start(&report(vec![unseen])),
        AtStart::Unknown(v) if v.contains("the image has no curl")
    ));
}

/// A peer that crash-loops is not probed, and its name not resolving (a headless Service
/// resolves to Ready pods only) is its state's doing, not a failed check of the replicas that
/// tried it: probe's verdict was 3 or 4 by the moment it sampled (found by the one-story table).
#[test]
fn a_crash_looping_peer_is_not_checked_whatever_the_moment() {
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "j-worker-1", "namespace": "ns"},
        "status": {"phase": "Running", "containerStatuses": [{"name": "tensorflow", "image": "i",
            "imageID": "", "ready": true, "restartCount": 4,
            "state": {"running": {"startedAt": k8s_openapi::jiff::Timestamp::now().to_string()}}}]}
    }))
    .unwrap();
    let to = "j-worker-1.ns.svc:2222";
    let facts = read::peer_facts(
        to,
        "ns",
        std::slice::from_ref(&pod),
        "tensorflow",
        None,
        &[],
    );
    assert!(
        facts
            .pod_not_running
            .as_deref()
            .is_some_and(|s| s.contains("it runs only between restarts")),
        "{facts:?}"
    );
    let peers = crate::diagnose::inpod::judge_peers(
        &format!("peer={to} resolve=nxdomain connect=skipped"),
        &|_| facts.clone(),
    );
    assert_eq!(peers[0].check.status, Status::NotChecked, "{peers:?}");
}
