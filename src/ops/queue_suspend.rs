//! `suspend`/`resume` of a job Kueue manages. Kueue owns `runPolicy.suspend` of such a job: it
//! suspends it until admitted and unsuspends an admitted job that a user suspended, and it
//! re-suspends one a user resumed before admission (Kueue `pkg/controller/jobframework/
//! reconciler.go`, `ReconcileGenericJob` steps 7 and 8). The supported switch is the Workload's
//! `spec.active` (`apis/kueue/v1beta2/workload_types.go`): `false` evicts it ("The workload is
//! deactivated"), suspends the job and frees its quota; `true` queues it again.

use std::io::Write;

use kube::api::{Patch, PatchParams};

use crate::cluster::queue::{self as q, Fact};
use crate::cluster::{self, Action, Kube};
use crate::error::{Error, Result};
use crate::model::TFJob;

/// `Ok(false)`: not Kueue's (no label, or no Workload): the caller patches `runPolicy.suspend`.
pub async fn set_active(
    kube: &Kube,
    ns: &str,
    job: &TFJob,
    suspend: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<bool> {
    let Some(lq) = q::local_queue_name(job) else {
        return Ok(false);
    };
    let name = job.metadata.name.as_deref().unwrap_or_default();
    let uid = job.metadata.uid.as_deref().unwrap_or_default();
    if q::kueue_served(kube).await?.known() == Some(&false) {
        return Ok(false);
    }
    let wl = match q::workload_for(kube, ns, uid).await? {
        Fact::Known(Some(w)) => w,
        Fact::Known(None) => return Ok(false),
        Fact::Unknown(why) => {
            return Err(Error::NotReady {
                message: format!(
                    "tfjob {name} is in Kueue LocalQueue {lq}, which owns its runPolicy.suspend, and its Workload cannot be read ({why}); nothing was changed"
                ),
                hint: Some("Ask for `get`/`patch` on workloads.kueue.x-k8s.io in this namespace; Kueue's switch is the Workload's spec.active.".into()),
            });
        }
    };
    let wl_name = wl.metadata.name.clone().unwrap_or_default();
    let io = |e: std::io::Error| Error::io("writing output", e);
    let verb = if suspend { "suspended" } else { "resumed" };
    let want_active = !suspend;
    if wl.spec.active.unwrap_or(true) == want_active {
        writeln!(
            out,
            "tfjob.kubeflow.org/{name} unchanged (already {verb}: Workload {wl_name} has spec.active: {want_active})"
        )
        .map_err(io)?;
        return Ok(true);
    }
    let path = format!(
        "/apis/{}/{}/namespaces/{ns}/workloads",
        q::KUEUE_GROUP,
        q::KUEUE_VERSION
    );
    let body = serde_json::json!({"spec": {"active": want_active}});
    let params = PatchParams::default();
    let action = Action {
        group: q::KUEUE_GROUP,
        ..Action::new("patch", "workloads", Some(ns)).named(&wl_name)
    };
    let check = format!(
        "kubectl get {} {wl_name} {} -o jsonpath={{.spec.active}}",
        crate::cluster::queue::KUEUE_WORKLOADS,
        kube.hints.ns_flags(ns)
    );
    crate::error::on_interrupt_write("Workload", ns, &wl_name, "patched", &check);
    let patched = cluster::retry(kube, || async {
        let req = kube::core::Request::new(&path)
            .patch(&wl_name, &params, &Patch::Merge(&body))
            .map_err(kube::Error::BuildRequest)?;
        kube.client.request::<serde_json::Value>(req).await
    })
    .await;
    crate::error::on_interrupt_settled();
    patched.map_err(|e| cluster::explain(e, &action, kube))?;
    writeln!(out, "tfjob.kubeflow.org/{name} {verb}").map_err(io)?;
    let what = if suspend {
        format!(
            "Kueue manages tfjob {name} (LocalQueue {lq}), so its Workload {wl_name} was deactivated (spec.active: false) instead of patching runPolicy.suspend, which Kueue would undo: Kueue evicts it, the training-operator deletes its pods, and its quota is released. `kubectl tfjob resume {name}` reactivates it; it then queues again."
        )
    } else {
        format!(
            "Kueue manages tfjob {name} (LocalQueue {lq}), so its Workload {wl_name} was reactivated (spec.active: true); runPolicy.suspend is left to Kueue, which resumes the job once the Workload is admitted again."
        )
    };
    writeln!(err, "{what}").map_err(io)?;
    Ok(true)
}
