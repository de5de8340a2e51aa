//! The clap-free core of the commands: each takes a `kube::Client`, a namespace, a plain
//! options struct and the two output streams (stdout for data, stderr for progress), so it can
//! be driven and tested without the CLI.

pub mod delete;
pub mod get;
pub mod list;
pub mod logs;
pub mod podtable;
pub mod suspend;
