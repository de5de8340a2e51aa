//! Validation the simulated cluster is told the outcome of rather than computing it: Pod
//! validation (pkg/apis/core/validation), a custom resource's schema errors and the
//! training-operator's validating webhook. Each is a real component's rule set, held to the real
//! one in tests/real (the corpus, the differential run, the wire test) or in the plugin's own
//! tests; a second copy here had no test of the plugin depending on it. A scenario's
//! `refusals` name the objects to refuse and apimachinery's causes, and the answer has the
//! real server's shape: 422 Invalid, or 403 `admission webhook … denied the request`.

use crate::scenario::Refusal;
use crate::state::Shared;
use crate::status::{self, ApiError, FieldError};

/// `field.ErrorType` from the message's first words, as apimachinery prints them
/// (field/errors.go `ErrorType.String`).
fn reason_of(message: &str) -> &'static str {
    REASONS
        .iter()
        .find(|(prefix, _)| message.starts_with(prefix))
        .map_or("FieldValueInvalid", |(_, reason)| reason)
}

/// apimachinery's `ErrorType`s: the words each message starts with, and the reason.
const REASONS: &[(&str, &str)] = &[
    ("Unsupported value", "FieldValueNotSupported"),
    ("Required value", "FieldValueRequired"),
    ("Duplicate value", "FieldValueDuplicate"),
    ("Forbidden", "FieldValueForbidden"),
    ("Too long", "FieldValueTooLong"),
    ("Too many", "FieldValueTooMany"),
    ("Not found", "FieldValueNotFound"),
    ("Invalid value", "FieldValueInvalid"),
    ("Invalid value", "FieldValueTypeInvalid"),
    ("Internal error", "InternalError"),
];

/// The reason a scenario names, if it is one of apimachinery's; else the message's.
fn reason(cause: &crate::scenario::RefusalCause) -> &'static str {
    cause
        .reason
        .as_deref()
        .and_then(|named| REASONS.iter().find(|(_, r)| *r == named).map(|(_, r)| *r))
        .unwrap_or_else(|| reason_of(&cause.message))
}

fn causes(r: &Refusal) -> Vec<FieldError> {
    r.causes
        .iter()
        .map(|c| FieldError {
            reason: reason(c),
            message: c.message.clone(),
            field: c.field.clone(),
        })
        .collect()
}

/// The scenario's answer for an object of `resource` (plural) named `name`, create or update,
/// dry run or not: the first refusal whose `resource` matches and whose `name` prefixes it.
pub fn refused(
    sh: &Shared,
    resource: &str,
    kind: &str,
    group: &str,
    name: &str,
) -> Option<ApiError> {
    let r = sh
        .scenario
        .refusals
        .iter()
        .find(|r| r.resource == resource && name.starts_with(&r.name))?;
    let errs = causes(r);
    Some(match &r.webhook {
        Some(webhook) => status::webhook_denied(webhook, &errs),
        None => status::invalid(kind, group, name, &errs),
    })
}
