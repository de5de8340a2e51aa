//! TODO(skeleton): filled in by its issue.
