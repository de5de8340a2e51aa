//! Security contexts at both levels and the OS-specific rules, as kube-apiserver 1.36 applies
//! them (pkg/apis/core/validation/validation.go): `validatePodSpecSecurityContext`,
//! `ValidateSecurityContext`, `validateSysctls` / `ValidateHostSysctl`,
//! `validateWindowsSecurityContextOptions`, `ValidateAppArmorProfileField`,
//! `validateSeccompProfileField`, `validateHostUsers`, `validateWindowsHostProcessPod`,
//! `validateOS` / `validateLinux` / `validateWindows`.

use serde_json::Value;

use super::super::names::dns1123_subdomain;
use super::{Out, err, ids, int, items, local_descending_path, one_of, s};
use crate::manifest::join_index;

fn flag(v: &Value, k: &str) -> bool {
    v.get(k).and_then(Value::as_bool) == Some(true)
}

fn set(v: &Value, k: &str) -> bool {
    v.get(k).is_some_and(|x| !x.is_null())
}

/// Every container of the pod with its path (podshelper.VisitContainersWithPath: init
/// containers first, then containers).
pub(super) fn containers<'a>(ps: &'a Value, path: &str) -> Vec<(String, &'a Value)> {
    let mut v = Vec::new();
    for key in ["initContainers", "containers"] {
        for (i, c) in items(ps, key) {
            v.push((join_index(&format!("{path}.{key}"), i), c));
        }
    }
    v
}

/// Whether the pod runs in the host's user namespace (`hostUsers` defaults to true).
pub(super) fn host_users(ps: &Value) -> bool {
    ps.get("hostUsers").and_then(Value::as_bool) != Some(false)
}

/// validatePodSpecSecurityContext: ids in range, shareProcessNamespace with hostPID,
/// sysctls, fsGroupChangePolicy, seccomp, windowsOptions, AppArmor, supplementalGroupsPolicy,
/// seLinuxChangePolicy.
pub(super) fn validate_pod_spec_security_context(ps: &Value, path: &str, out: &mut Out) {
    let Some(sc) = ps.get("securityContext").filter(|v| v.is_object()) else {
        return;
    };
    let scp = format!("{path}.securityContext");
    ids(sc, &["runAsUser", "runAsGroup", "fsGroup"], &scp, out);
    for (i, g) in items(sc, "supplementalGroups") {
        if let Some(n) = g.as_i64()
            && !(0..=i64::from(i32::MAX)).contains(&n)
        {
            err(
                out,
                join_index(&format!("{scp}.supplementalGroups"), i),
                format!("must be between 0 and 2147483647, inclusive, is {n}"),
            );
        }
    }
    // The internal type keeps shareProcessNamespace in the security context: so does the path.
    if flag(ps, "shareProcessNamespace") && flag(ps, "hostPID") {
        err(
            out,
            format!("{scp}.shareProcessNamespace"),
            "ShareProcessNamespace and HostPID cannot both be enabled".into(),
        );
    }
    validate_sysctls(ps, sc, &format!("{scp}.sysctls"), out);
    one_of(
        sc,
        "fsGroupChangePolicy",
        &["OnRootMismatch", "Always"],
        &scp,
        "fsGroupChangePolicy",
        out,
    );
    validate_seccomp_profile_field(sc, &scp, out);
    validate_windows_security_context_options(sc, &scp, out);
    validate_app_armor_profile_field(sc, &scp, out);
    // validateSupplementalGroupsPolicy.
    one_of(
        sc,
        "supplementalGroupsPolicy",
        &["Merge", "Strict"],
        &scp,
        "supplementalGroupsPolicy",
        out,
    );
    // validateSELinuxChangePolicy: 1.36 enables SELinuxChangePolicy, so both values pass.
    one_of(
        sc,
        "seLinuxChangePolicy",
        &["Recursive", "MountOption"],
        &scp,
        "seLinuxChangePolicy",
        out,
    );
}

/// IsValidSysctlName: segments `[a-z0-9]([-_a-z0-9]*[a-z0-9])?` joined by '.' or '/', at most
/// 253 characters.
pub fn is_valid_sysctl_name(n: &str) -> bool {
    let seg = |p: &str| {
        !p.is_empty()
            && p.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
            && !p.starts_with(['-', '_'])
            && !p.ends_with(['-', '_'])
    };
    n.len() <= 253 && n.split(['.', '/']).all(seg)
}

/// component-helpers sysctl.GetNamespace: which namespace a sysctl lives in.
fn sysctl_namespace(n: &str) -> Option<&'static str> {
    let n = n.replace('/', ".");
    if n.starts_with("net.") {
        Some("net")
    } else if n == "kernel.sem"
        || n.starts_with("kernel.shm")
        || n.starts_with("kernel.msg")
        || n.starts_with("fs.mqueue.")
    {
        Some("ipc")
    } else {
        None
    }
}

/// validateSysctls and ValidateHostSysctl (new pods never get
/// AllowNamespacedSysctlsForHostNetAndHostIPC).
pub(super) fn validate_sysctls(ps: &Value, sc: &Value, path: &str, out: &mut Out) {
    let mut seen: Vec<&str> = Vec::new();
    for (i, x) in items(sc, "sysctls") {
        let npath = format!("{}.name", join_index(path, i));
        let n = s(x, "name").unwrap_or("");
        if n.is_empty() {
            err(out, npath.clone(), "a sysctl needs a name".into());
        } else if !is_valid_sysctl_name(n) {
            err(
                out,
                npath.clone(),
                format!(
                    "sysctl {n:?} must have at most 253 characters and match regex ([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
                ),
            );
        } else if seen.contains(&n) {
            err(out, npath.clone(), format!("sysctl {n:?} is listed twice"));
        }
        match sysctl_namespace(n) {
            Some("net") if flag(ps, "hostNetwork") => err(
                out,
                npath.clone(),
                format!("sysctl {n:?} may not be specified when 'hostNetwork' is true"),
            ),
            Some("ipc") if flag(ps, "hostIPC") => err(
                out,
                npath.clone(),
                format!("sysctl {n:?} may not be specified when 'hostIPC' is true"),
            ),
            _ => {}
        }
        seen.push(n);
    }
}

/// validateSeccompProfileField: a known type (required), localhostProfile exactly with
/// Localhost and then a relative path without '..'.
pub(super) fn validate_seccomp_profile_field(sc: &Value, path: &str, out: &mut Out) {
    let Some(p) = sc.get("seccompProfile").filter(|v| v.is_object()) else {
        return;
    };
    let ppath = format!("{path}.seccompProfile");
    match s(p, "type") {
        None | Some("") => err(
            out,
            format!("{ppath}.type"),
            "type is required when seccompProfile is set".into(),
        ),
        _ => one_of(
            p,
            "type",
            &["Localhost", "RuntimeDefault", "Unconfined"],
            &ppath,
            "seccomp profile type",
            out,
        ),
    }
    let lp = format!("{ppath}.localhostProfile");
    match (
        s(p, "type"),
        p.get("localhostProfile").filter(|v| !v.is_null()),
    ) {
        (Some("Localhost"), None) => {
            err(out, lp, "must be set when seccomp type is Localhost".into())
        }
        (Some("Localhost"), Some(v)) => {
            if let Some(e) = local_descending_path(v.as_str().unwrap_or("")) {
                err(out, lp, format!("localhostProfile {e}"));
            }
        }
        (_, Some(_)) => err(
            out,
            lp,
            "can only be set when seccomp type is Localhost".into(),
        ),
        _ => {}
    }
}

/// ValidateAppArmorProfileField.
pub(super) fn validate_app_armor_profile_field(sc: &Value, path: &str, out: &mut Out) {
    let Some(p) = sc.get("appArmorProfile").filter(|v| v.is_object()) else {
        return;
    };
    let ppath = format!("{path}.appArmorProfile");
    let lp = p.get("localhostProfile").filter(|v| !v.is_null());
    match s(p, "type") {
        Some("Localhost") => match lp.and_then(Value::as_str) {
            None => err(
                out,
                format!("{ppath}.localhostProfile"),
                "must be set when AppArmor type is Localhost".into(),
            ),
            Some(l) if l.trim() != l => err(
                out,
                format!("{ppath}.localhostProfile"),
                "must not be padded with whitespace".into(),
            ),
            Some("") => err(
                out,
                format!("{ppath}.localhostProfile"),
                "must be set when AppArmor type is Localhost".into(),
            ),
            Some(l) if l.len() > 4095 => err(
                out,
                format!("{ppath}.localhostProfile"),
                "may not be longer than 4095 characters".into(),
            ),
            Some(_) => {}
        },
        Some("RuntimeDefault" | "Unconfined") => {
            if lp.is_some() {
                err(
                    out,
                    format!("{ppath}.localhostProfile"),
                    "can only be set when AppArmor type is Localhost".into(),
                );
            }
        }
        None | Some("") => err(
            out,
            format!("{ppath}.type"),
            "type is required when appArmorProfile is set".into(),
        ),
        Some(_) => one_of(
            p,
            "type",
            &["Localhost", "RuntimeDefault", "Unconfined"],
            &ppath,
            "AppArmor profile type",
            out,
        ),
    }
}

/// validateWindowsSecurityContextOptions: gmsaCredentialSpecName a DNS subdomain,
/// gmsaCredentialSpec not empty and under 64 KiB, runAsUserName `[DOMAIN\]USER` within the
/// limits Windows sets.
pub(super) fn validate_windows_security_context_options(sc: &Value, path: &str, out: &mut Out) {
    let Some(w) = sc.get("windowsOptions").filter(|v| v.is_object()) else {
        return;
    };
    let wp = format!("{path}.windowsOptions");
    if let Some(n) = s(w, "gmsaCredentialSpecName")
        && let Err(e) = dns1123_subdomain(n)
    {
        err(
            out,
            format!("{wp}.gmsaCredentialSpecName"),
            format!("{n:?} {e}"),
        );
    }
    if let Some(c) = s(w, "gmsaCredentialSpec") {
        if c.is_empty() {
            err(
                out,
                format!("{wp}.gmsaCredentialSpec"),
                "gmsaCredentialSpec cannot be an empty string".into(),
            );
        } else if c.len() > 64 * 1024 {
            err(
                out,
                format!("{wp}.gmsaCredentialSpec"),
                "gmsaCredentialSpec size must be under 64 KiB".into(),
            );
        }
    }
    let Some(u) = s(w, "runAsUserName") else {
        return;
    };
    let up = format!("{wp}.runAsUserName");
    let parts: Vec<&str> = u.split('\\').collect();
    if u.is_empty() {
        return err(out, up, "runAsUserName cannot be an empty string".into());
    }
    if u.chars().any(char::is_control) {
        return err(
            out,
            up,
            "runAsUserName cannot contain control characters".into(),
        );
    }
    if parts.len() > 2 {
        return err(
            out,
            up,
            "runAsUserName cannot contain more than one backslash".into(),
        );
    }
    let (domain, user) = match parts[..] {
        [d, u] => (Some(d), u),
        _ => (None, parts[0]),
    };
    if let Some(d) = domain {
        if d.len() >= 256 {
            err(
                out,
                up.clone(),
                "runAsUserName's Domain length must be under 256 characters".into(),
            );
        }
        if !(netbios_domain(d) || dns_domain(d)) {
            err(
                out,
                up.clone(),
                "runAsUserName's Domain doesn't match the NetBios nor the DNS format".into(),
            );
        }
    }
    if user.is_empty() {
        err(
            out,
            up.clone(),
            "runAsUserName's User cannot be empty".into(),
        );
    } else if user.chars().count() > 104 {
        err(
            out,
            up.clone(),
            "runAsUserName's User length must not be longer than 104 characters".into(),
        );
    }
    if !user.is_empty() && user.chars().all(|c| c == '.' || c == ' ') {
        err(
            out,
            up.clone(),
            "runAsUserName's User cannot contain only periods or spaces".into(),
        );
    }
    if user.chars().any(|c| "\"/\\:;|=,+*?<>@[]".contains(c)) {
        err(
            out,
            up,
            "runAsUserName's User cannot contain the following characters: \"/\\:;|=,+*?<>@[]"
                .into(),
        );
    }
}

/// `^[^\\/:\*\?"<>|\.][^\\/:\*\?"<>|]{0,14}$`
fn netbios_domain(d: &str) -> bool {
    let bad = |c: char| "\\/:*?\"<>|".contains(c);
    let n = d.chars().count();
    (1..=15).contains(&n) && !d.starts_with('.') && !d.chars().any(bad)
}

/// Dot-separated `[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?` labels.
fn dns_domain(d: &str) -> bool {
    d.split('.').all(|l| {
        !l.is_empty()
            && l.len() <= 63
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    })
}

/// ValidateSecurityContext (a container's): ids, procMount (`Unmasked` needs
/// `hostUsers: false`), seccomp, allowPrivilegeEscalation false with privileged or
/// CAP_SYS_ADMIN, windowsOptions, AppArmor. `privileged` against --allow-privileged is left
/// to the server (a flag of the cluster, true by default).
pub(super) fn validate_security_context(sc: &Value, path: &str, host_users: bool, out: &mut Out) {
    if !sc.is_object() {
        return;
    }
    ids(sc, &["runAsUser", "runAsGroup"], path, out);
    // ValidateProcMountType.
    one_of(
        sc,
        "procMount",
        &["Default", "Unmasked"],
        path,
        "procMount",
        out,
    );
    if host_users && s(sc, "procMount") == Some("Unmasked") {
        err(
            out,
            format!("{path}.procMount"),
            "`hostUsers` must be false to use `Unmasked`".into(),
        );
    }
    validate_seccomp_profile_field(sc, path, out);
    if sc.get("allowPrivilegeEscalation").and_then(Value::as_bool) == Some(false) {
        if flag(sc, "privileged") {
            err(
                out,
                path.to_string(),
                "cannot set `allowPrivilegeEscalation` to false and `privileged` to true".into(),
            );
        }
        if sc
            .pointer("/capabilities/add")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|c| c.as_str() == Some("CAP_SYS_ADMIN")))
        {
            err(
                out,
                path.to_string(),
                "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN".into(),
            );
        }
    }
    validate_windows_security_context_options(sc, path, out);
    validate_app_armor_profile_field(sc, path, out);
}

/// validateHostUsers: a pod in its own user namespace shares no other host namespace. The
/// paths are upstream's, capitals included.
pub(super) fn validate_host_users(ps: &Value, path: &str, out: &mut Out) {
    if host_users(ps) {
        return;
    }
    for (k, p) in [
        ("hostNetwork", "hostNetwork"),
        ("hostPID", "HostPID"),
        ("hostIPC", "HostIPC"),
    ] {
        if flag(ps, k) {
            err(
                out,
                format!("{path}.{p}"),
                format!("{k} is forbidden when `pod.Spec.HostUsers` is false"),
            );
        }
    }
}

fn host_process(sc: Option<&Value>) -> Option<bool> {
    sc?.pointer("/windowsOptions/hostProcess")?.as_bool()
}

/// validateWindowsHostProcessPod: hostProcess the same at both levels, all containers or
/// none, and hostNetwork with it.
pub(super) fn validate_windows_host_process_pod(ps: &Value, path: &str, out: &mut Out) {
    let pod = host_process(ps.get("securityContext"));
    let all = containers(ps, path);
    let mut hp = 0;
    for (cpath, c) in &all {
        let ctr = host_process(c.get("securityContext"));
        if let (Some(p), Some(c)) = (pod, ctr)
            && p != c
        {
            err(
                out,
                format!("{cpath}.securityContext.windowsOptions.hostProcess"),
                format!("pod hostProcess value must be identical if both are specified, was {p}"),
            );
        }
        if ctr == Some(true) || (ctr.is_none() && pod == Some(true)) {
            hp += 1;
        }
    }
    if hp > 0 {
        if hp != all.len() {
            err(
                out,
                path.to_string(),
                "If pod contains any hostProcess containers then all containers must be HostProcess containers".into(),
            );
        }
        if !flag(ps, "hostNetwork") {
            err(
                out,
                format!("{path}.hostNetwork"),
                "hostNetwork must be true if pod contains any hostProcess containers".into(),
            );
        }
    }
}

/// validateOS, then validateLinux or validateWindows for the OS named.
pub(super) fn validate_os(ps: &Value, path: &str, out: &mut Out) {
    let Some(os) = ps.get("os").filter(|v| v.is_object()) else {
        return;
    };
    let opath = format!("{path}.os");
    match s(os, "name") {
        None | Some("") => err(out, format!("{opath}.name"), "cannot be empty".into()),
        Some("linux") => validate_linux(ps, path, out),
        Some("windows") => validate_windows(ps, path, out),
        Some(n) => err(
            out,
            opath,
            format!("os name {n:?} is not supported: use one of linux, windows"),
        ),
    }
}

/// validateLinux: no windowsOptions anywhere.
fn validate_linux(ps: &Value, path: &str, out: &mut Out) {
    let mut scs: Vec<(String, &Value)> = Vec::new();
    if let Some(sc) = ps.get("securityContext") {
        scs.push((format!("{path}.securityContext"), sc));
    }
    for (cpath, c) in containers(ps, path) {
        if let Some(sc) = c.get("securityContext") {
            scs.push((format!("{cpath}.securityContext"), sc));
        }
    }
    for (p, sc) in scs {
        if set(sc, "windowsOptions") {
            err(
                out,
                format!("{p}.windowsOptions"),
                "windows options cannot be set for a linux pod".into(),
            );
        }
    }
}

/// validateWindows: the Linux-only settings at both levels.
fn validate_windows(ps: &Value, path: &str, out: &mut Out) {
    let forbid = |out: &mut Out, p: String| err(out, p, "cannot be set for a windows pod".into());
    if let Some(sc) = ps.get("securityContext").filter(|v| v.is_object()) {
        let scp = format!("{path}.securityContext");
        for k in [
            "appArmorProfile",
            "seLinuxOptions",
            "seccompProfile",
            "fsGroup",
            "fsGroupChangePolicy",
            "runAsUser",
            "runAsGroup",
            "supplementalGroupsPolicy",
            "seLinuxChangePolicy",
        ] {
            if set(sc, k) {
                forbid(out, format!("{scp}.{k}"));
            }
        }
        if items(sc, "sysctls").next().is_some() {
            forbid(out, format!("{scp}.sysctls"));
        }
        // An empty list may come back nil from conversion: only a non-empty one is refused.
        if items(sc, "supplementalGroups").next().is_some() {
            forbid(out, format!("{scp}.supplementalGroups"));
        }
    }
    // These live in the spec in v1 and in the internal security context upstream.
    if set(ps, "hostUsers") {
        forbid(out, format!("{path}.hostUsers"));
    }
    for k in ["hostPID", "hostIPC"] {
        if flag(ps, k) {
            forbid(out, format!("{path}.{k}"));
        }
    }
    if set(ps, "shareProcessNamespace") {
        forbid(out, format!("{path}.shareProcessNamespace"));
    }
    for (cpath, c) in containers(ps, path) {
        let Some(sc) = c.get("securityContext").filter(|v| v.is_object()) else {
            continue;
        };
        for k in [
            "appArmorProfile",
            "seLinuxOptions",
            "seccompProfile",
            "capabilities",
            "readOnlyRootFilesystem",
            "privileged",
            "allowPrivilegeEscalation",
            "procMount",
            "runAsUser",
            "runAsGroup",
        ] {
            if set(sc, k) {
                forbid(out, format!("{cpath}.securityContext.{k}"));
            }
        }
    }
}

/// How long the pod's containers get to stop (terminationGracePeriodSeconds, default 30).
pub(super) fn grace_period(ps: &Value) -> i64 {
    int(ps, "terminationGracePeriodSeconds").unwrap_or(30)
}
