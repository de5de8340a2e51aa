//! The CRD layer: installed, serving v1, established.

use super::*;

pub(super) fn crd(s: &Snapshot, out: &mut Vec<Finding>) -> Gate {
    let name = model::CRD_NAME;
    match &s.crd {
        CrdState::Missing => {
            out.push(
                Finding::new(
                    Layer::Crd,
                    Grade::Fail,
                    format!("CRD {name} is not installed: no training-operator serves TFJobs here"),
                )
                .next(install_operator_hint()),
            );
            Err("CRD missing".into())
        }
        CrdState::Present {
            established,
            served_versions,
        } => {
            let serves = served_versions.join(", ");
            if !served_versions.iter().any(|v| v == model::VERSION) {
                out.push(
                    Finding::new(
                        Layer::Crd,
                        Grade::Fail,
                        format!(
                            "CRD {name} does not serve v1 (serves: {})",
                            if serves.is_empty() {
                                "nothing"
                            } else {
                                &serves
                            }
                        ),
                    )
                    .evidence("TFJob kubeflow.org/v1 is served only by training-operator v1.x")
                    .next(install_operator_hint()),
                );
                return Err("CRD does not serve v1".into());
            }
            if !established {
                out.push(
                    Finding::new(
                        Layer::Crd,
                        Grade::Fail,
                        format!("CRD {name} is not Established yet"),
                    )
                    .next(format!(
                        "check its conditions: kubectl get crd {name} -o jsonpath='{{.status.conditions}}'{}",
                        conn_suffix(s)
                    )),
                );
                return Err("CRD not established".into());
            }
            out.push(Finding::new(
                Layer::Crd,
                Grade::Ok,
                format!("{name} established, serves {serves}"),
            ));
            Ok(())
        }
        CrdState::Unknown(why) => {
            out.push(
                Finding::new(
                    Layer::Crd,
                    Grade::Unknown,
                    format!("cannot tell whether {name} is installed"),
                )
                .evidence(why.clone()),
            );
            Ok(())
        }
    }
}
