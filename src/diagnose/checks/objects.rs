//! The objects layer: the pods and services the operator should have created.

use super::*;

pub(super) fn objects(s: &Snapshot, out: &mut Vec<Finding>) -> Gate {
    let Some(job) = &s.job else {
        return Err("TFJob not found".into());
    };
    let expected = crate::operator_pods::expand(job).pod_names();
    let (pods, svcs) = (names(&s.pods), names(&s.services));
    let missing_pods: Vec<String> = expected
        .iter()
        .filter(|n| !pods.contains(n.as_str()))
        .cloned()
        .collect();
    let missing_svcs: Vec<String> = expected
        .iter()
        .filter(|n| !svcs.contains(n.as_str()))
        .cloned()
        .collect();
    let n = expected.len();
    let counts = format!(
        "{}/{n} pods, {}/{n} services",
        n - missing_pods.len(),
        n - missing_svcs.len()
    );
    if missing_pods.is_empty() && missing_svcs.is_empty() {
        out.push(Finding::new(Layer::Objects, Grade::Ok, counts));
        return Ok(());
    }
    let finished = job.is_finished();
    let young = job
        .condition(condition::CREATED)
        .and_then(|c| c.last_transition_time.as_ref())
        .or(job.metadata.creation_timestamp.as_ref())
        .and_then(|t| age_secs(s.now, Some(t)))
        .is_some_and(|a| a < RECONCILE_GRACE_SECS);
    let verdict = if finished || young {
        Grade::Info
    } else {
        Grade::Fail
    };
    let mut summary = counts;
    if finished {
        summary.push_str(" (the job is finished; cleanPodPolicy removes pods)");
    } else if young {
        summary.push_str(" (the operator is still creating them)");
    }
    let mut f = Finding::new(Layer::Objects, verdict, summary);
    // An ended job's pods and Services go by its cleanPodPolicy: naming each is noise.
    if finished {
        out.push(f);
        return if s.pods.is_empty() {
            Err("no pods".into())
        } else {
            Ok(())
        };
    }
    if !missing_pods.is_empty() {
        f = f.evidence(format!("missing pods: {}", name_list(&missing_pods)));
    }
    if !missing_svcs.is_empty() {
        f = f.evidence(format!(
            "missing headless services: {} (replicas find each other through them)",
            name_list(&missing_svcs)
        ));
    }
    if verdict == Grade::Fail {
        f = f.next(format!(
            "the operator has not created them; see its events: kubectl describe tfjob {} {}",
            s.job_name,
            ns_flags(s, &s.namespace)
        ));
    }
    let mut affected = missing_pods.clone();
    for n in &missing_svcs {
        if !affected.contains(n) {
            affected.push(n.clone());
        }
    }
    out.push(f.replicas(affected));
    if s.pods.is_empty() {
        Err("no pods".into())
    } else {
        Ok(())
    }
}
