//! Volume sources, as kube-apiserver 1.36 validates them (pkg/apis/core/validation/
//! validation.go `validateVolumeSource` and the per-source functions it calls). Each rule
//! names the upstream function; paths are upstream's, quirks included (GCE disks report under
//! `persistentDisk`, downward API items under the source, not the item).

use serde_json::Value;

use super::super::names::{dns1123_label, dns1123_subdomain, label_value, qualified_name};
use super::{Out, err, int, items, local_descending_path, local_non_reserved_path, one_of, s};
use crate::pipeline::manifest::{join_index, join_key};

/// In validateVolumeSource's order: the second one set is the one reported.
const VOLUME_SOURCES: [&str; 30] = [
    "emptyDir",
    "hostPath",
    "gitRepo",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "flocker",
    "persistentVolumeClaim",
    "rbd",
    "cinder",
    "cephfs",
    "quobyte",
    "downwardAPI",
    "fc",
    "flexVolume",
    "configMap",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "storageos",
    "projected",
    "scaleIO",
    "csi",
    "ephemeral",
    "image",
];

fn required(v: &Value, key: &str, path: &str, out: &mut Out) {
    if s(v, key).is_none_or(str::is_empty) {
        let owner = path.rsplit('.').next().unwrap_or(path);
        err(
            out,
            format!("{path}.{key}"),
            format!("{owner}.{key} is required"),
        );
    }
}

fn nonempty_list(v: &Value, key: &str, path: &str, out: &mut Out) {
    if items(v, key).next().is_none() {
        err(out, format!("{path}.{key}"), format!("{key} is required"));
    }
}

fn file_mode(v: &Value, key: &str, path: &str, out: &mut Out) {
    if let Some(m) = int(v, key)
        && !(0..=0o777).contains(&m)
    {
        err(
            out,
            format!("{path}.{key}"),
            format!("must be a number between 0 and 0777 (octal), both inclusive, is {m}"),
        );
    }
}

fn range_0_255(v: &Value, key: &str, path: &str, out: &mut Out) {
    if let Some(n) = int(v, key)
        && !(0..=255).contains(&n)
    {
        err(
            out,
            format!("{path}.{key}"),
            format!("must be between 0 and 255, inclusive, is {n}"),
        );
    }
}

/// validateVolumeSource: exactly one source, then that source's own function.
pub(super) fn validate_volume_source(v: &Value, vol_name: &str, path: &str, out: &mut Out) {
    let Some(m) = v.as_object() else { return };
    let sources: Vec<&str> = VOLUME_SOURCES
        .iter()
        .copied()
        .filter(|k| m.get(*k).is_some_and(|x| !x.is_null()))
        .collect();
    match sources.len() {
        // No source: the API server defaults it to `emptyDir: {}` before validating
        // (pkg/apis/core/v1/defaults.go SetDefaults_Volume), so it is stored and runs.
        0 => return,
        1 => {}
        _ => err(
            out,
            format!("{path}.{}", sources[1]),
            format!(
                "may not specify more than 1 volume type: this volume has {}",
                sources.join(" and ")
            ),
        ),
    }
    let src = sources[0];
    let x = &m[src];
    let p = format!("{path}.{src}");
    match src {
        "emptyDir" => validate_empty_dir(x, &p, out),
        "hostPath" => validate_host_path_volume_source(x, &p, out),
        "gitRepo" => {
            // validateGitRepoVolumeSource.
            required(x, "repository", &p, out);
            if let Some(d) = s(x, "directory")
                && let Some(e) = local_descending_path(d)
            {
                err(out, format!("{p}.directory"), format!("directory {e}"));
            }
        }
        "gcePersistentDisk" => {
            // validateGCEPersistentDiskVolumeSource (upstream reports under persistentDisk).
            let q = format!("{path}.persistentDisk");
            required(x, "pdName", &q, out);
            partition(x, &q, out);
        }
        "awsElasticBlockStore" => {
            // validateAWSElasticBlockStoreVolumeSource.
            required(x, "volumeID", &p, out);
            partition(x, &p, out);
        }
        "secret" => {
            // validateSecretVolumeSource.
            required(x, "secretName", &p, out);
            file_mode(x, "defaultMode", &p, out);
            key_to_paths(x, &p, out);
        }
        "configMap" => {
            // validateConfigMapVolumeSource.
            required(x, "name", &p, out);
            file_mode(x, "defaultMode", &p, out);
            key_to_paths(x, &p, out);
        }
        "nfs" => {
            // validateNFSVolumeSource.
            required(x, "server", &p, out);
            required(x, "path", &p, out);
            if s(x, "path").is_some_and(|q| !q.is_empty() && !q.starts_with('/')) {
                err(out, format!("{p}.path"), "must be an absolute path".into());
            }
        }
        "iscsi" => {
            validate_iscsi_volume_source(x, &p, out);
            let portal = s(x, "targetPortal").unwrap_or("");
            if x.get("initiatorName").is_some_and(|v| !v.is_null())
                && vol_name.len() + 1 + portal.len() > 64
            {
                err(
                    out,
                    format!("{path}.name"),
                    "Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified.".into(),
                );
            }
        }
        "glusterfs" => {
            // validateGlusterfsVolumeSource.
            required(x, "endpoints", &p, out);
            required(x, "path", &p, out);
        }
        "flocker" => validate_flocker_volume_source(x, &p, out),
        "persistentVolumeClaim" => required(x, "claimName", &p, out),
        "rbd" => {
            // validateRBDVolumeSource.
            nonempty_list(x, "monitors", &p, out);
            required(x, "image", &p, out);
        }
        "cinder" => {
            // validateCinderVolumeSource.
            required(x, "volumeID", &p, out);
            secret_ref_name(x, &p, out);
        }
        "cephfs" => nonempty_list(x, "monitors", &p, out),
        "flexVolume" => validate_flex_volume_source(x, &p, out),
        "downwardAPI" => {
            // validateDownwardAPIVolumeSource.
            file_mode(x, "defaultMode", &p, out);
            for (_, f) in items(x, "items") {
                validate_downward_api_volume_file(f, &p, out);
            }
        }
        "fc" => validate_fc_volume_source(x, &p, out),
        "azureFile" => {
            // validateAzureFile.
            required(x, "secretName", &p, out);
            required(x, "shareName", &p, out);
        }
        "azureDisk" => validate_azure_disk(x, &p, out),
        "vsphereVolume" => required(x, "volumePath", &p, out),
        "photonPersistentDisk" => required(x, "pdID", &p, out),
        "portworxVolume" => required(x, "volumeID", &p, out),
        "scaleIO" => {
            // validateScaleIOVolumeSource.
            for k in ["gateway", "system", "volumeName"] {
                required(x, k, &p, out);
            }
        }
        "quobyte" => validate_quobyte_volume_source(x, &p, out),
        "storageos" => validate_storageos_volume_source(x, &p, out),
        "projected" => validate_projected_volume_source(x, &p, out),
        "csi" => validate_csi_volume_source(x, &p, out),
        "ephemeral" => validate_ephemeral_volume_source(x, &p, out),
        "image" => {
            // validateImageVolumeSource (ResourceIsPod: a reference is required).
            required(x, "reference", &p, out);
            one_of(
                x,
                "pullPolicy",
                &["Always", "Never", "IfNotPresent"],
                &p,
                "pullPolicy",
                out,
            );
        }
        _ => {}
    }
}

/// validateFlockerVolumeSource: a dataset by name or by UUID, not both.
fn validate_flocker_volume_source(x: &Value, p: &str, out: &mut Out) {
    // validateFlockerVolumeSource.
    let (n, u) = (
        s(x, "datasetName").unwrap_or(""),
        s(x, "datasetUUID").unwrap_or(""),
    );
    if n.is_empty() && u.is_empty() {
        err(
            out,
            p.to_string(),
            "one of datasetName and datasetUUID is required".into(),
        );
    }
    if !n.is_empty() && !u.is_empty() {
        err(
            out,
            p.to_string(),
            "datasetName and datasetUUID can not be specified simultaneously".into(),
        );
    }
    if n.contains('/') {
        err(
            out,
            format!("{p}.datasetName"),
            "must not contain '/'".into(),
        );
    }
}

/// validateStorageOSVolumeSource: DNS-label volume name and namespace, a secret reference.
fn validate_storageos_volume_source(x: &Value, p: &str, out: &mut Out) {
    // validateStorageOSVolumeSource.
    match s(x, "volumeName") {
        None | Some("") => required(x, "volumeName", p, out),
        Some(n) => {
            if let Err(e) = dns1123_label(n) {
                err(out, format!("{p}.volumeName"), format!("{n:?} {e}"));
            }
        }
    }
    if let Some(n) = s(x, "volumeNamespace").filter(|n| !n.is_empty())
        && let Err(e) = dns1123_label(n)
    {
        err(out, format!("{p}.volumeNamespace"), format!("{n:?} {e}"));
    }
    secret_ref_name(x, p, out);
}

fn partition(x: &Value, p: &str, out: &mut Out) {
    if let Some(n) = int(x, "partition")
        && !(0..=255).contains(&n)
    {
        err(
            out,
            format!("{p}.partition"),
            format!("must be between 1 and 255, inclusive, is {n}"),
        );
    }
}

fn secret_ref_name(x: &Value, p: &str, out: &mut Out) {
    if let Some(r) = x.get("secretRef").filter(|v| v.is_object())
        && s(r, "name").is_none_or(str::is_empty)
    {
        err(
            out,
            format!("{p}.secretRef.name"),
            "secretRef.name is required".into(),
        );
    }
}

/// validateVolumeSource's emptyDir rule: a sizeLimit that is not negative. The medium is not
/// validated by the API server (kubernetes `pkg/apis/core/validation/validation.go`
/// `validateVolumeSource` checks only `sizeLimit`): `medium: memory` is stored, and the kubelet's
/// emptydir plugin fails the pod later, which the lint warns of.
fn validate_empty_dir(ed: &Value, p: &str, out: &mut Out) {
    if let Some(l) = s(ed, "sizeLimit")
        && l.trim_start().starts_with('-')
    {
        err(
            out,
            format!("{p}.sizeLimit"),
            "SizeLimit field must be a valid resource quantity".into(),
        );
    }
}

/// validateHostPathVolumeSource: a path without '..' and a known type (validateHostPathType).
fn validate_host_path_volume_source(hp: &Value, p: &str, out: &mut Out) {
    match s(hp, "path") {
        None | Some("") => return required(hp, "path", p, out),
        Some(x) => {
            if x.replace('\\', "/").split('/').any(|part| part == "..") {
                err(out, format!("{p}.path"), "must not contain '..'".into());
            }
        }
    }
    one_of(
        hp,
        "type",
        &[
            "",
            "DirectoryOrCreate",
            "Directory",
            "FileOrCreate",
            "File",
            "Socket",
            "CharDevice",
            "BlockDevice",
        ],
        p,
        "hostPath type",
        out,
    );
}

/// validateKeyToPath for each of a secret's or config map's items.
fn key_to_paths(x: &Value, p: &str, out: &mut Out) {
    for (i, kp) in items(x, "items") {
        validate_key_to_path(kp, &join_index(&format!("{p}.items"), i), out);
    }
}

/// validateKeyToPath: key and path required, path local and not reserved, mode in range.
fn validate_key_to_path(kp: &Value, p: &str, out: &mut Out) {
    required(kp, "key", p, out);
    match s(kp, "path") {
        None | Some("") => required(kp, "path", p, out),
        Some(x) => {
            if let Some(e) = local_non_reserved_path(x) {
                err(out, format!("{p}.path"), format!("path {x:?} {e}"));
            }
        }
    }
    file_mode(kp, "mode", p, out);
}

/// validateISCSIVolumeSource: a target portal, an iqn/eui/naa IQN, a LUN in 0..=255, a
/// secretRef with CHAP, an iqn/eui/naa initiator name.
fn validate_iscsi_volume_source(x: &Value, p: &str, out: &mut Out) {
    required(x, "targetPortal", p, out);
    match s(x, "iqn") {
        None | Some("") => required(x, "iqn", p, out),
        Some(q) => {
            if !["iqn", "eui", "naa"].iter().any(|pre| q.starts_with(pre)) {
                err(
                    out,
                    format!("{p}.iqn"),
                    format!("iqn {q:?} must be valid format starting with iqn, eui, or naa"),
                );
            }
        }
    }
    range_0_255(x, "lun", p, out);
    let chap = ["chapAuthDiscovery", "chapAuthSession"]
        .iter()
        .any(|k| x.get(*k).and_then(Value::as_bool) == Some(true));
    if chap && x.get("secretRef").is_none_or(|v| v.is_null()) {
        err(
            out,
            format!("{p}.secretRef"),
            "secretRef is required with CHAP authentication".into(),
        );
    }
    if let Some(init) = s(x, "initiatorName")
        && !["iqn", "eui", "naa"]
            .iter()
            .any(|pre| init.starts_with(pre))
    {
        err(
            out,
            format!("{p}.initiatorname"),
            format!("initiatorName {init:?} must be valid format starting with iqn, eui, or naa"),
        );
    }
}

/// validateFCVolumeSource: targetWWNs or wwids (not both); a LUN in 0..=255 with targetWWNs.
fn validate_fc_volume_source(x: &Value, p: &str, out: &mut Out) {
    let wwns = items(x, "targetWWNs").count();
    let wwids = items(x, "wwids").count();
    if wwns == 0 && wwids == 0 {
        err(
            out,
            format!("{p}.targetWWNs"),
            "must specify either targetWWNs or wwids, but not both".into(),
        );
    }
    if wwns != 0 && wwids != 0 {
        err(
            out,
            format!("{p}.targetWWNs"),
            "targetWWNs and wwids can not be specified simultaneously".into(),
        );
    }
    if wwns != 0 {
        if int(x, "lun").is_none() {
            err(
                out,
                format!("{p}.lun"),
                "lun is required if targetWWNs is specified".into(),
            );
        }
        range_0_255(x, "lun", p, out);
    }
}

/// validateFlexVolumeSource: a driver; option keys outside kubernetes.io and k8s.io.
fn validate_flex_volume_source(x: &Value, p: &str, out: &mut Out) {
    required(x, "driver", p, out);
    if let Some(o) = x.get("options").and_then(Value::as_object) {
        for k in o.keys() {
            let ns = k.split_once('/').map_or(k.as_str(), |x| x.0);
            let norm = format!(".{}", ns.to_lowercase());
            if norm.ends_with(".kubernetes.io") || norm.ends_with(".k8s.io") {
                err(
                    out,
                    join_key(&format!("{p}.options"), k),
                    format!("option {k:?}: kubernetes.io and k8s.io namespaces are reserved"),
                );
            }
        }
    }
}

/// validateAzureDisk: diskName and diskURI, known caching mode and kind, a URI that fits the
/// kind.
fn validate_azure_disk(x: &Value, p: &str, out: &mut Out) {
    required(x, "diskName", p, out);
    required(x, "diskURI", p, out);
    one_of(
        x,
        "cachingMode",
        &["None", "ReadOnly", "ReadWrite"],
        p,
        "cachingMode",
        out,
    );
    one_of(
        x,
        "kind",
        &["Shared", "Dedicated", "Managed"],
        p,
        "kind",
        out,
    );
    let uri = s(x, "diskURI").unwrap_or("");
    // Defaulting makes an unset kind Shared (core/v1 SetDefaults_AzureDiskVolumeSource)
    // before validation: a blob disk.
    match Some(s(x, "kind").unwrap_or("Shared")) {
        Some("Managed") if !uri.starts_with("/subscriptions/") => err(
            out,
            format!("{p}.diskURI"),
            "a managed disk's URI must be /subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}".into(),
        ),
        Some(k) if k != "Managed" && !uri.starts_with("https://") => err(
            out,
            format!("{p}.diskURI"),
            "a blob disk's URI must be https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd".into(),
        ),
        _ => {}
    }
}

/// validateQuobyteVolumeSource: host:port registry pairs, a tenant of at most 64 characters,
/// a volume.
fn validate_quobyte_volume_source(x: &Value, p: &str, out: &mut Out) {
    let reg = s(x, "registry").unwrap_or("");
    if reg.is_empty() {
        err(
            out,
            format!("{p}.registry"),
            "must be a host:port pair or multiple pairs separated by commas".into(),
        );
    } else if s(x, "tenant").unwrap_or("").len() >= 65 {
        err(
            out,
            format!("{p}.tenant"),
            "must be a UUID and may not exceed a length of 64 characters".into(),
        );
    } else if reg.split(',').any(|hp| !host_port(hp)) {
        err(
            out,
            format!("{p}.registry"),
            "must be a host:port pair or multiple pairs separated by commas".into(),
        );
    }
    required(x, "volume", p, out);
}

/// net.SplitHostPort succeeds: `host:port` or `[v6]:port`.
fn host_port(hp: &str) -> bool {
    if let Some(r) = hp.strip_prefix('[') {
        return r.split_once("]:").is_some();
    }
    hp.matches(':').count() == 1
}

/// The fieldRef paths a downward API volume may read.
const VOLUME_FIELD_PATHS: [&str; 5] = [
    "metadata.name",
    "metadata.namespace",
    "metadata.labels",
    "metadata.annotations",
    "metadata.uid",
];

/// validateDownwardAPIVolumeFile: a local path, exactly one of fieldRef (volume fields) and
/// resourceFieldRef (with a container name), a mode in range. Upstream reports under the
/// source's path, not the item's.
fn validate_downward_api_volume_file(f: &Value, p: &str, out: &mut Out) {
    match s(f, "path") {
        None | Some("") => required(f, "path", p, out),
        Some(x) => {
            if let Some(e) = local_non_reserved_path(x) {
                err(out, format!("{p}.path"), format!("path {x:?} {e}"));
            }
        }
    }
    let fr = f.get("fieldRef").filter(|v| !v.is_null());
    let rr = f.get("resourceFieldRef").filter(|v| !v.is_null());
    match (fr, rr) {
        (Some(_), Some(_)) => err(
            out,
            p.to_string(),
            "fieldRef and resourceFieldRef can not be specified simultaneously".into(),
        ),
        (None, None) => err(
            out,
            p.to_string(),
            "one of fieldRef and resourceFieldRef is required".into(),
        ),
        _ => {}
    }
    if let Some(fr) = fr {
        let fp = s(fr, "fieldPath").unwrap_or("");
        let fpath = format!("{p}.fieldRef");
        let sub = ["metadata.labels", "metadata.annotations"]
            .iter()
            .find_map(|pre| {
                fp.strip_prefix(pre)
                    .and_then(|r| r.strip_prefix("['"))
                    .and_then(|r| r.strip_suffix("']"))
            });
        match sub {
            Some(k) => {
                let k = if fp.starts_with("metadata.annotations") {
                    k.to_lowercase()
                } else {
                    k.to_string()
                };
                if let Err(e) = qualified_name(&k) {
                    err(out, fpath, format!("the key {k:?} {e}"));
                }
            }
            None if fp.is_empty() => err(
                out,
                format!("{fpath}.fieldPath"),
                "fieldPath is required".into(),
            ),
            None if !VOLUME_FIELD_PATHS.contains(&fp) => err(
                out,
                format!("{fpath}.fieldPath"),
                format!(
                    "fieldPath {fp:?} is not supported: use one of {}",
                    VOLUME_FIELD_PATHS.join(", ")
                ),
            ),
            None => {}
        }
    } else if let Some(rr) = rr {
        super::env::divisor(
            rr,
            s(rr, "resource").unwrap_or(""),
            &format!("{p}.resourceFieldRef"),
            out,
        );
        // validateContainerResourceFieldSelector with volume=true.
        if s(rr, "containerName").is_none_or(str::is_empty) {
            err(
                out,
                format!("{p}.resourceFieldRef.containerName"),
                "containerName is required".into(),
            );
        } else if s(rr, "resource").is_none_or(str::is_empty) {
            err(
                out,
                format!("{p}.resourceFieldRef.resource"),
                "resource is required".into(),
            );
        }
    }
    file_mode(f, "mode", p, out);
}

/// validateProjectedVolumeSource / validateProjectionSources: one source per entry, names,
/// items and paths, token lifetimes of 10 minutes to 2^32 seconds, cluster trust bundles by
/// name or signer, no path twice.
fn validate_projected_volume_source(x: &Value, p: &str, out: &mut Out) {
    file_mode(x, "defaultMode", p, out);
    let mut paths: Vec<String> = Vec::new();
    let mut dup = |path: &str, out: &mut Out| {
        if paths.iter().any(|q| q == path) {
            err(
                out,
                p.to_string(),
                format!("conflicting duplicate paths: {path:?}"),
            );
        } else {
            paths.push(path.to_string());
        }
    };
    for (i, src) in items(x, "sources") {
        let sp = join_index(&format!("{p}.sources"), i);
        // Sources behind feature gates a 1.36 API server has off: it drops them before it
        // validates (dropDisabledFields), stores `{}` and warns "has no sources provided" (seen
        // on the real 1.36.2 server), so they are never refused, only said.
        for (k, gate) in [
            ("clusterTrustBundle", "ClusterTrustBundleProjection"),
            ("podCertificate", "PodCertificateRequest"),
        ] {
            if src.get(k).is_some_and(|v| !v.is_null()) {
                out.push(super::super::Finding::new(
                    super::super::Severity::Warning,
                    "pod",
                    format!("{sp}.{k}"),
                    format!(
                        "a 1.36 API server drops this source unless the {gate} feature gate is on (it is off by default): the volume gets nothing from it"
                    ),
                ));
            }
        }
        let kinds: Vec<&str> = ["secret", "configMap", "downwardAPI", "serviceAccountToken"]
            .into_iter()
            .filter(|k| src.get(*k).is_some_and(|v| !v.is_null()))
            .collect();
        if kinds.len() > 1 {
            err(
                out,
                sp.clone(),
                "may not specify more than 1 volume type per source".into(),
            );
        }
        for k in ["secret", "configMap"] {
            if let Some(o) = src.get(k).filter(|v| !v.is_null()) {
                let op = format!("{sp}.{k}");
                required(o, "name", &op, out);
                for (j, kp) in items(o, "items") {
                    validate_key_to_path(kp, &join_index(&format!("{op}.items"), j), out);
                    if let Some(q) = s(kp, "path").filter(|q| !q.is_empty()) {
                        dup(q, out);
                    }
                }
            }
        }
        if let Some(d) = src.get("downwardAPI").filter(|v| !v.is_null()) {
            let dp = format!("{sp}.downwardAPI");
            for (_, f) in items(d, "items") {
                validate_downward_api_volume_file(f, &dp, out);
                if let Some(q) = s(f, "path").filter(|q| !q.is_empty()) {
                    dup(q, out);
                }
            }
        }
        if let Some(t) = src.get("serviceAccountToken").filter(|v| !v.is_null()) {
            let tp = format!("{sp}.serviceAccountToken");
            // Defaulted to 3600 when absent (SetDefaults_ServiceAccountTokenProjection).
            let e = int(t, "expirationSeconds").unwrap_or(3600);
            if e < 600 {
                err(
                    out,
                    format!("{tp}.expirationSeconds"),
                    format!("may not specify a duration less than 10 minutes, is {e}"),
                );
            }
            if e > 1 << 32 {
                err(
                    out,
                    format!("{tp}.expirationSeconds"),
                    format!("may not specify a duration larger than 2^32 seconds, is {e}"),
                );
            }
            match s(t, "path") {
                None | Some("") => err(out, format!("{p}.path"), "path is required".into()),
                Some(q) => {
                    if let Some(e) = local_non_reserved_path(q) {
                        err(out, format!("{p}.path"), format!("path {q:?} {e}"));
                    }
                }
            }
        }
    }
}

/// ValidateCSIDriverName and validateCSIVolumeSource: a driver name of at most 63
/// characters that is a DNS subdomain once lowercased; a nodePublishSecretRef with a name.
fn validate_csi_volume_source(x: &Value, p: &str, out: &mut Out) {
    let d = s(x, "driver").unwrap_or("");
    if d.is_empty() {
        err(out, format!("{p}.driver"), "driver is required".into());
    } else {
        if d.len() > 63 {
            err(
                out,
                format!("{p}.driver"),
                format!("driver may not be more than 63 characters, is {}", d.len()),
            );
        }
        if let Err(e) = dns1123_subdomain(&d.to_lowercase()) {
            err(out, format!("{p}.driver"), format!("driver {d:?} {e}"));
        }
    }
    if let Some(r) = x.get("nodePublishSecretRef").filter(|v| !v.is_null()) {
        match s(r, "name") {
            None | Some("") => err(
                out,
                format!("{p}.nodePublishSecretRef.name"),
                "nodePublishSecretRef.name is required".into(),
            ),
            Some(n) => {
                if let Err(e) = dns1123_subdomain(n) {
                    err(out, format!("{p}.name"), format!("secret name {n:?} {e}"));
                }
            }
        }
    }
}

/// validateEphemeralVolumeSource → ValidatePersistentVolumeClaimTemplate
/// (ValidateTemplateObjectMeta: only labels and annotations) → ValidatePersistentVolumeClaimSpec
/// (access modes, a positive storage request, class name, volume mode, data sources).
fn validate_ephemeral_volume_source(x: &Value, p: &str, out: &mut Out) {
    let Some(t) = x.get("volumeClaimTemplate").filter(|v| v.is_object()) else {
        return err(
            out,
            format!("{p}.volumeClaimTemplate"),
            "volumeClaimTemplate is required".into(),
        );
    };
    let tp = format!("{p}.volumeClaimTemplate");
    if let Some(m) = t.get("metadata").and_then(Value::as_object) {
        for k in m.keys() {
            if !["labels", "annotations"].contains(&k.as_str()) {
                err(
                    out,
                    format!("{tp}.metadata.{k}"),
                    format!(
                        "{k} cannot be set: a claim template's metadata takes only labels and annotations"
                    ),
                );
            }
        }
        if let Some(l) = m.get("labels").and_then(Value::as_object) {
            for (k, v) in l {
                let lp = join_key(&format!("{tp}.metadata.labels"), k);
                if let Err(e) = qualified_name(k) {
                    err(out, lp.clone(), format!("label key {k:?} {e}"));
                }
                if let Some(v) = v.as_str()
                    && let Err(e) = label_value(v)
                {
                    err(out, lp, format!("label value {v:?} {e}"));
                }
            }
        }
    }
    let sp = format!("{tp}.spec");
    let spec = t.get("spec").cloned().unwrap_or(Value::Null);
    validate_persistent_volume_claim_spec(&spec, &sp, out);
}

/// ValidatePersistentVolumeClaimSpec.
fn validate_persistent_volume_claim_spec(spec: &Value, sp: &str, out: &mut Out) {
    let modes: Vec<&str> = items(spec, "accessModes")
        .map(|x| x.1.as_str().unwrap_or(""))
        .collect();
    if modes.is_empty() {
        err(
            out,
            format!("{sp}.accessModes"),
            "at least 1 access mode is required".into(),
        );
    }
    const MODES: [&str; 4] = [
        "ReadWriteOnce",
        "ReadOnlyMany",
        "ReadWriteMany",
        "ReadWriteOncePod",
    ];
    for m in &modes {
        if !MODES.contains(m) {
            err(
                out,
                format!("{sp}.accessModes"),
                format!(
                    "access mode {m:?} is not supported: use one of {}",
                    MODES.join(", ")
                ),
            );
        }
    }
    if modes.contains(&"ReadWriteOncePod")
        && modes
            .iter()
            .any(|m| *m != "ReadWriteOncePod" && MODES.contains(m))
    {
        err(
            out,
            format!("{sp}.accessModes"),
            "may not use ReadWriteOncePod with other access modes".into(),
        );
    }
    let storage = spec.pointer("/resources/requests/storage");
    let rp = format!("{sp}.resources[storage]");
    match storage {
        None => err(out, rp, "a storage request is required".into()),
        Some(v) => {
            let q = match v {
                Value::String(x) => crate::model::quantity::parse_approx(x).ok(),
                Value::Number(n) => n.as_f64(),
                _ => None,
            };
            if q.is_some_and(|q| q <= 0.0) {
                err(out, rp, "must be greater than zero".into());
            }
        }
    }
    if let Some(c) = s(spec, "storageClassName").filter(|c| !c.is_empty())
        && let Err(e) = dns1123_subdomain(c)
    {
        err(out, format!("{sp}.storageClassName"), format!("{c:?} {e}"));
    }
    one_of(
        spec,
        "volumeMode",
        &["Block", "Filesystem"],
        sp,
        "volumeMode",
        out,
    );
    // validateDataSource / validateDataSourceRef.
    for k in ["dataSource", "dataSourceRef"] {
        let Some(d) = spec.get(k).filter(|v| v.is_object()) else {
            continue;
        };
        let dp = format!("{sp}.{k}");
        required(d, "name", &dp, out);
        required(d, "kind", &dp, out);
        let group = s(d, "apiGroup").unwrap_or("");
        if group.is_empty()
            && s(d, "kind").is_some_and(|x| !x.is_empty() && x != "PersistentVolumeClaim")
        {
            err(
                out,
                dp.clone(),
                "must be 'PersistentVolumeClaim' when referencing the default apiGroup".into(),
            );
        }
        if !group.is_empty()
            && let Err(e) = dns1123_subdomain(group)
        {
            err(out, format!("{dp}.apiGroup"), format!("{group:?} {e}"));
        }
    }
}
