//! Whether the cluster-autoscaler's status ConfigMap shows an autoscaler that can add a node.
//! Pure: the collector reads the ConfigMap, this judges it.
//!
//! cluster-autoscaler rewrites `kube-system/cluster-autoscaler-status` on every loop (every
//! `--scan-interval`, 10 s by default) with the annotation
//! `cluster-autoscaler.kubernetes.io/last-updated` in Go's `2006-01-02 15:04:05.999999999 -0700
//! MST` layout (`utils/utils.go` `ConfigMapLastUpdatedKey`, `ConfigMapLastUpdateFormat`). It
//! skips scale-up while the cluster is unhealthy (`core/static_autoscaler.go`: "Cluster is not
//! ready for autoscaling"), and can only grow a node group it knows (`nodeGroups` in the
//! status; `NodeGroups:` in the text format before 1.30). A ConfigMap left behind by an
//! uninstalled autoscaler therefore says nothing will add a node.

use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// Older than this, the autoscaler that wrote the status is not running: it writes every loop.
pub const STALE_AFTER: SignedDuration = SignedDuration::from_secs(30 * 60);

/// `Ok` when an autoscaler may add nodes; else why not, in words. Signals that cannot be read
/// (no annotation, a status in an unknown shape) count for the autoscaler: only what the
/// ConfigMap shows can rule it out.
pub fn judge(
    last_updated: Option<&str>,
    status: Option<&str>,
    now: Timestamp,
) -> Result<(), String> {
    if let Some(at) = last_updated.and_then(parse_go_time) {
        let age = now.duration_since(at);
        if age > STALE_AFTER {
            return Err(format!(
                "its status was last updated {} ({} ago), so no cluster-autoscaler is running",
                last_updated.unwrap_or_default().trim(),
                human(age)
            ));
        }
    }
    let Some(status) = status else { return Ok(()) };
    if let Some(health) = cluster_health(status)
        && !health.eq_ignore_ascii_case("Healthy")
    {
        return Err(format!(
            "it says the cluster is {health}, and the cluster-autoscaler does not scale up an unhealthy cluster"
        ));
    }
    if node_groups(status) == Some(0) {
        return Err("it lists no node group, so the cluster-autoscaler has nothing to grow".into());
    }
    Ok(())
}

/// Go's `time.Time.String()` layout as the annotation carries it:
/// `2019-05-22 12:59:38.123456789 +0000 UTC`.
fn parse_go_time(text: &str) -> Option<Timestamp> {
    let mut parts = text.split_whitespace();
    let (date, time, offset) = (parts.next()?, parts.next()?, parts.next()?);
    let (sign, digits) = offset.split_at_checked(1)?;
    if !matches!(sign, "+" | "-")
        || digits.len() != 4
        || !digits.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    format!("{date}T{time}{sign}{}:{}", &digits[..2], &digits[2..])
        .parse()
        .ok()
}

/// The cluster-wide health: `clusterWide.health.status` (YAML, 1.30 and later) or the
/// `Health:` line under `Cluster-wide:` (text, before).
fn cluster_health(status: &str) -> Option<String> {
    if let Ok(v) = serde_saphyr::from_str::<serde_json::Value>(status)
        && let Some(h) = v
            .pointer("/clusterWide/health/status")
            .and_then(|h| h.as_str())
    {
        return Some(h.to_string());
    }
    let wide = status.split_once("Cluster-wide:")?.1;
    let line = wide
        .lines()
        .find(|l| l.trim_start().starts_with("Health:"))?;
    let value = line.trim_start().trim_start_matches("Health:").trim();
    value.split_whitespace().next().map(str::to_string)
}

/// How many node groups the status lists; `None` when its shape is not known.
fn node_groups(status: &str) -> Option<usize> {
    if let Ok(v) = serde_saphyr::from_str::<serde_json::Value>(status)
        && v.get("clusterWide").is_some()
    {
        return Some(
            v.get("nodeGroups")
                .and_then(|g| g.as_array())
                .map_or(0, Vec::len),
        );
    }
    let groups = status.split_once("NodeGroups:")?.1;
    Some(
        groups
            .lines()
            .filter(|l| l.trim_start().starts_with("Name:"))
            .count(),
    )
}

fn human(d: SignedDuration) -> String {
    let secs = d.as_secs();
    match secs {
        s if s >= 2 * 86_400 => format!("{} days", s / 86_400),
        s if s >= 2 * 3_600 => format!("{} hours", s / 3_600),
        s => format!("{} minutes", s / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2026-12-05T12:00:00Z".parse().unwrap()
    }

    const RUNNING: &str = "time: 2026-12-05 11:59:50 +0000 UTC\nautoscalerStatus: Running\nclusterWide:\n  health:\n    status: Healthy\nnodeGroups:\n- name: gpu-pool\n  health:\n    status: Healthy\n";

    #[test]
    fn a_status_written_seconds_ago_with_a_node_group_may_add_nodes() {
        assert_eq!(
            judge(
                Some("2026-12-05 11:59:50.123456789 +0000 UTC"),
                Some(RUNNING),
                now()
            ),
            Ok(())
        );
        // Nothing readable rules nothing out.
        assert_eq!(judge(None, None, now()), Ok(()));
        assert_eq!(judge(Some("yesterday"), Some("???"), now()), Ok(()));
    }

    #[test]
    fn a_status_left_behind_in_2019_rules_the_autoscaler_out() {
        let e = judge(Some("2019-05-22 12:59:38 +0000 UTC"), Some(RUNNING), now()).unwrap_err();
        assert!(e.contains("2019-05-22 12:59:38 +0000 UTC"), "{e}");
        assert!(e.contains("days ago"), "{e}");
        // An offset other than UTC is read as written.
        assert!(judge(Some("2026-12-05 13:29:00 +0200 CEST"), None, now()).is_err());
        assert!(judge(Some("2026-12-05 13:59:00 +0200 CEST"), None, now()).is_ok());
    }

    #[test]
    fn an_unhealthy_cluster_or_no_node_group_rules_it_out_in_both_formats() {
        let unhealthy = RUNNING.replace(
            "status: Healthy\nnodeGroups",
            "status: Unhealthy\nnodeGroups",
        );
        assert!(
            judge(None, Some(&unhealthy), now())
                .unwrap_err()
                .contains("Unhealthy")
        );
        let none = "clusterWide:\n  health:\n    status: Healthy\n";
        assert!(
            judge(None, Some(none), now())
                .unwrap_err()
                .contains("no node group")
        );
        let text = "Cluster-autoscaler status at 2019-05-22 12:59:38 +0000 UTC:\nCluster-wide:\n  Health:      Unhealthy (ready=0 unready=3 notStarted=0 registered=3)\n\nNodeGroups:\n";
        assert!(
            judge(None, Some(text), now())
                .unwrap_err()
                .contains("Unhealthy")
        );
        let text_ok = "Cluster-wide:\n  Health:      Healthy (ready=3)\nNodeGroups:\n  Name:        gpu-pool\n  Health:      Healthy\n";
        assert_eq!(judge(None, Some(text_ok), now()), Ok(()));
        let text_empty = "Cluster-wide:\n  Health:      Healthy (ready=3)\nNodeGroups:\n";
        assert!(judge(None, Some(text_empty), now()).is_err());
    }
}
