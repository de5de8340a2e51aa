//! The exec credential plugin under a timeout and a size bound.
//!
//! kube runs a kubeconfig's `exec` plugin with `Command::output()` (kube-client
//! `client/auth/mod.rs`, `auth_exec`): no timeout, and all of its stdout in memory, so a plugin
//! that hangs hangs the command, and one that never stops writing grows it. Here the kubeconfig's
//! plugin is replaced by this binary's hidden `__exec-credential` helper, which runs the real
//! plugin (same arguments, environment, stdin and stderr; kube still sets `KUBERNETES_EXEC_INFO`
//! and the plugin's env on the helper, which the plugin inherits), kills it past the deadline or
//! past [`OUTPUT`] bytes, and passes its ExecCredential through. kube keeps refreshing the
//! credential as before, each refresh under the same bounds.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use kube::config::AuthInfo;

use crate::error::{Error, Result};

/// The helper's subcommand name (hidden from `--help`).
pub const SUBCOMMAND: &str = "__exec-credential";

/// An ExecCredential is a token or a certificate and key: a few KiB. 1 MiB is plenty.
pub const OUTPUT: usize = 1024 * 1024;

/// Points the user's exec plugin at the helper. Without a path to this binary it is left as is.
pub fn wrap(auth: &mut AuthInfo, timeout: Duration) {
    let Some(exec) = auth.exec.as_mut() else {
        return;
    };
    let Some(command) = exec.command.clone() else {
        return;
    };
    let Ok(me) = std::env::current_exe() else {
        return;
    };
    let mut args = vec![
        SUBCOMMAND.to_string(),
        "--timeout-ms".to_string(),
        timeout.as_millis().to_string(),
        "--".to_string(),
        command,
    ];
    args.extend(exec.args.take().unwrap_or_default());
    exec.command = Some(me.display().to_string());
    exec.args = Some(args);
}

/// The plugin's process, stopped (with its group when it has its own) when dropped unwaited.
struct Guarded {
    child: std::process::Child,
    group: bool,
}

impl Guarded {
    fn kill(&mut self) -> std::io::Result<()> {
        #[cfg(unix)]
        if self.group
            && let Ok(pid) = i32::try_from(self.child.id())
        {
            // SAFETY: a plain syscall; the group is the one this child leads.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        self.child.kill()
    }
    fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        self.child.wait()
    }
    fn try_wait(&mut self) -> std::io::Result<Option<std::process::ExitStatus>> {
        self.child.try_wait()
    }
}

/// The helper: runs `command args`, bounded; on success writes its output to stdout and returns;
/// on failure returns an error naming the plugin (the caller exits non-zero, and kube reports the
/// plugin as failed).
pub fn run(timeout: Duration, command: &str, args: &[String]) -> Result<()> {
    let deadline = super::budget::after(timeout);
    let mut cmd = Command::new(command);
    cmd.args(args)
        .stdin(Stdio::inherit())
        .stderr(Stdio::inherit())
        .stdout(Stdio::piped());
    // A plugin that is a script leaves children holding our stderr (kube's pipe), so stopping
    // it means stopping its whole process group: its own, unless it may talk to the terminal
    // (kube says so in KUBERNETES_EXEC_INFO), where a background group would be stopped by it.
    let interactive = std::env::var("KUBERNETES_EXEC_INFO")
        .is_ok_and(|info| info.replace(' ', "").contains("\"interactive\":true"));
    #[cfg(unix)]
    if !interactive {
        use std::os::unix::process::CommandExt as _;
        cmd.process_group(0);
    }
    let child = cmd.spawn().map_err(|e| {
        Error::Other(format!(
            "cannot start the exec credential plugin {command}: {e}"
        ))
    })?;
    let mut child = Guarded {
        child,
        group: !interactive,
    };
    let stdout = child.child.stdout.take().expect("stdout is piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let read = stdout.take(OUTPUT as u64 + 1).read_to_end(&mut buf);
        let _ = tx.send(read.map(|_| buf));
    });
    let output = match rx.recv_timeout(timeout) {
        Ok(Ok(buf)) if buf.len() > OUTPUT => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Other(format!(
                "the exec credential plugin {command} wrote more than {} (an ExecCredential is a \
                 few KiB); stopped it",
                crate::input::human(OUTPUT)
            )));
        }
        Ok(Ok(buf)) => buf,
        Ok(Err(e)) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Other(format!(
                "reading the exec credential plugin {command}: {e}"
            )));
        }
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Other(format!(
                "the exec credential plugin {command} gave no credential within {}s; stopped it \
                 (--request-timeout or KUBECTL_TFJOB_RETRY_DEADLINE set the limit)",
                timeout.as_secs()
            )));
        }
    };
    // Its stdout closed: it is ending; a plugin that then lingers is stopped at the deadline.
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error::Other(format!(
                    "the exec credential plugin {command} did not exit within {}s; stopped it",
                    timeout.as_secs()
                )));
            }
            Err(e) => return Err(Error::Other(format!("waiting for {command}: {e}"))),
        }
    };
    if !status.success() {
        return Err(Error::Other(format!(
            "the exec credential plugin {command} failed ({status})"
        )));
    }
    let mut out = std::io::stdout().lock();
    out.write_all(&output)
        .and_then(|()| out.flush())
        .map_err(|e| Error::io("writing the credential", e))
}
