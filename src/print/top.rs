//! `top`'s units, as `kubectl top pod` prints usage (k8s.io/kubectl pkg/metricsutil
//! metrics_printer.go, printSingleResourceUsage): CPU as whole millicores (`MilliValue`, rounded
//! up) with `m`, memory as whole MiB (`Value()/(1024*1024)`, truncated) with `Mi`, and
//! `<unknown>` where there is no sample (printSingleMissingResource).

/// What a missing sample prints as.
pub const UNKNOWN: &str = "<unknown>";

/// `250m` for 250 millicores.
pub fn cpu(millicores: i128) -> String {
    format!("{millicores}m")
}

/// `64Mi` for 64 MiB (bytes truncated to whole MiB).
pub fn memory(bytes: i128) -> String {
    format!("{}Mi", bytes / (1024 * 1024))
}

/// A usage cell: the value, or `<unknown>`.
pub fn usage(v: Option<i128>, unit: fn(i128) -> String) -> String {
    v.map(unit).unwrap_or_else(|| UNKNOWN.to_string())
}

/// A request/limit cell: `-` when no container sets it (kubectl describe prints 0; a dash tells
/// "unset" apart from a real 0).
pub fn declared(v: Option<i128>, unit: fn(i128) -> String) -> String {
    v.map(unit).unwrap_or_else(|| "-".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_kubectl_tops() {
        assert_eq!(cpu(250), "250m");
        assert_eq!(memory(64 * 1024 * 1024), "64Mi");
        // Truncated, as Go's integer division.
        assert_eq!(memory(64 * 1024 * 1024 + 1024 * 1023), "64Mi");
        assert_eq!(usage(None, cpu), "<unknown>");
        assert_eq!(declared(None, memory), "-");
    }
}
