//! One task per pod instance: its container's log, instance after instance, read in bounded
//! pieces and sent to the main loop.

use super::*;
use crate::cluster::budget::Budget;

pub(super) enum Msg {
    Line {
        label: Arc<str>,
        slot: usize,
        text: String,
    },
    /// One log request answered (whatever it held).
    Read,
    /// A replica's log could not be read; the note says why.
    Unreadable(String),
    Done,
}

/// The longest piece of one log line printed at once: a line that never ends is printed in
/// pieces of this size, each with its replica's prefix, instead of being held whole.
pub const PIECE: usize = 64 * 1024;

/// Pure: where to cut a full buffer so no UTF-8 character is split (at most 3 bytes back).
pub(super) fn cut_at_char(buf: &[u8]) -> usize {
    let mut cut = buf.len();
    while cut > 0 && buf.len() - cut < 4 && (buf[cut - 1] & 0xC0) == 0x80 {
        cut -= 1;
    }
    // `cut - 1` is now a lead byte (or ASCII): keep it only if its character is complete.
    if cut > 0 {
        let lead = buf[cut - 1];
        let want = match lead {
            b if b < 0x80 => 1,
            b if b >= 0xF0 => 4,
            b if b >= 0xE0 => 3,
            b if b >= 0xC0 => 2,
            _ => 1,
        };
        if buf.len() - (cut - 1) < want {
            return cut - 1;
        }
    }
    buf.len()
}

/// Log lines read in pieces of at most [`PIECE`] bytes: a line that ends is one piece (without
/// its `\n` or `\r\n`); a longer one is several.
pub(super) struct Pieces<R> {
    reader: R,
    carry: Vec<u8>,
}

impl<R: futures::AsyncBufRead + Unpin> Pieces<R> {
    fn new(reader: R) -> Self {
        Pieces {
            reader,
            carry: Vec::new(),
        }
    }

    async fn next(&mut self) -> std::io::Result<Option<String>> {
        let mut buf = std::mem::take(&mut self.carry);
        loop {
            if let Some(i) = buf.iter().position(|&b| b == b'\n') {
                self.carry = buf.split_off(i + 1);
                buf.truncate(i);
                if buf.last() == Some(&b'\r') {
                    buf.pop();
                }
                return Ok(Some(String::from_utf8_lossy(&buf).into_owned()));
            }
            if buf.len() >= PIECE {
                let cut = cut_at_char(&buf[..PIECE]);
                self.carry = buf.split_off(cut);
                return Ok(Some(String::from_utf8_lossy(&buf).into_owned()));
            }
            let avail = self.reader.fill_buf().await?;
            if avail.is_empty() {
                return Ok((!buf.is_empty()).then(|| String::from_utf8_lossy(&buf).into_owned()));
            }
            let take = avail.len().min(PIECE + 1 - buf.len());
            buf.extend_from_slice(&avail[..take]);
            self.reader.consume_unpin(take);
        }
    }
}

/// The container instance a log request would reach, from the pod's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Instance {
    /// No node, or waiting with nothing to show: `reason` for the user.
    NotStarted(String),
    Running(String),
    Terminated(String),
    /// Waiting to restart; the last terminated instance is what the kubelet serves.
    BackOff(String),
}

pub(super) fn instance(pod: &Pod, container: &str) -> Instance {
    let status = pod.status.as_ref();
    let cs = status
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|v| v.iter().find(|c| c.name == container));
    let Some(cs) = cs else {
        let sched = pod.not_scheduled();
        return Instance::NotStarted(match sched {
            Some(c) => format!(
                "{}: {}",
                c.reason.as_deref().unwrap_or("Unschedulable"),
                c.message.as_deref().unwrap_or("")
            ),
            None => "Pending".into(),
        });
    };
    let id = cs.container_id.clone().unwrap_or_default();
    let state = cs.state.as_ref();
    if state.and_then(|s| s.running.as_ref()).is_some() {
        return Instance::Running(id);
    }
    if let Some(t) = state.and_then(|s| s.terminated.as_ref()) {
        return Instance::Terminated(t.container_id.clone().unwrap_or(id));
    }
    let last = cs
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .and_then(|t| t.container_id.clone());
    let reason = state
        .and_then(|s| s.waiting.as_ref())
        .and_then(|w| w.reason.clone())
        .unwrap_or_else(|| "ContainerCreating".into());
    match last {
        Some(l) => Instance::BackOff(l),
        None => Instance::NotStarted(reason),
    }
}

pub(super) fn last_terminated(pod: &Pod, container: &str) -> Option<String> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|c| c.name == container)?
        .last_state
        .as_ref()?
        .terminated
        .as_ref()?
        .container_id
        .clone()
}

pub(super) struct PodTask {
    /// The typed Pod API: `log_stream` needs k8s-openapi's `Pod`.
    pub(super) pods: Api<k8s_openapi::api::core::v1::Pod>,
    pub(super) name: String,
    pub(super) label: Arc<str>,
    pub(super) slot: usize,
    pub(super) opts: LogsOptions,
    pub(super) state: watch::Receiver<Option<Arc<Pod>>>,
    pub(super) tx: mpsc::Sender<Msg>,
    pub(super) sem: Arc<Semaphore>,
    /// Set when the job finished: a task with nothing left to read ends.
    pub(super) job_done: watch::Receiver<bool>,
    /// `--request-timeout`: one log request, its body included, as kubectl bounds it
    /// (client-go's http.Client Timeout covers reading the body).
    pub(super) request_timeout: Option<Duration>,
}

/// How one log request ended without an error.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum ReadEnd {
    /// The stream ended (the instance stopped, the log was read whole, or it dropped).
    Ended,
    /// `--request-timeout` ran out while the body was still coming.
    TimedOut(Duration),
}

impl PodTask {
    /// Reads one answer, sending the lines the cursor has not seen. Returns whether it ended
    /// cleanly (false: an error worth a retry).
    async fn read(
        &self,
        lp: &LogParams,
        cursor: &mut Cursor,
    ) -> std::result::Result<ReadEnd, kube::Error> {
        let _permit = self.sem.acquire().await;
        let Some(limit) = self.request_timeout else {
            return self.read_all(lp, cursor).await.map(|()| ReadEnd::Ended);
        };
        match Budget::new(limit).attempt(self.read_all(lp, cursor)).await {
            Some(r) => r.map(|()| ReadEnd::Ended),
            None => Ok(ReadEnd::TimedOut(limit)),
        }
    }

    async fn read_all(
        &self,
        lp: &LogParams,
        cursor: &mut Cursor,
    ) -> std::result::Result<(), kube::Error> {
        let stream = self.pods.log_stream(&self.name, lp).await?;
        let mut lines = Pieces::new(stream);
        cursor.begin();
        while let Some(line) = lines.next().await.map_err(kube::Error::ReadEvents)? {
            let text = match crate::cluster::pod::split_timestamp(&line) {
                Some((ts, rest)) => {
                    if !cursor.accept(ts) {
                        continue;
                    }
                    if self.opts.timestamps {
                        line.clone()
                    } else {
                        rest.to_string()
                    }
                }
                None => line.clone(),
            };
            let msg = Msg::Line {
                label: self.label.clone(),
                slot: self.slot,
                text,
            };
            if self.tx.send(msg).await.is_err() {
                return Ok(());
            }
        }
        Ok(())
    }

    fn params(&self, cursor: &Cursor, first: bool, previous: bool) -> LogParams {
        let mut lp = LogParams {
            container: Some(self.opts.container().to_string()),
            follow: self.opts.follow && !previous,
            previous,
            timestamps: true,
            ..Default::default()
        };
        if let Some(since) = cursor.resume_from() {
            lp.since_time = Some(since);
        } else if first {
            lp.since_seconds = self.opts.since_seconds;
            lp.since_time = self.opts.since_time;
            lp.tail_lines = self.opts.tail;
        }
        lp
    }

    pub(super) async fn run(mut self) {
        let container = self.opts.container().to_string();
        let mut cursor = Cursor::default();
        let mut done: Vec<String> = Vec::new();
        let mut first = true;
        let mut failures = 0u32;
        loop {
            // Wait for an instance we have not finished reading.
            let pick = |p: &Option<Arc<Pod>>| -> Option<Instance> {
                let inst = instance(p.as_ref()?, &container);
                match &inst {
                    Instance::Running(id) | Instance::Terminated(id) | Instance::BackOff(id)
                        if !done.contains(id) =>
                    {
                        Some(inst)
                    }
                    _ => None,
                }
            };
            let inst = loop {
                let cur = self.state.borrow_and_update().clone();
                if cur.is_none() {
                    let _ = self.tx.send(Msg::Done).await;
                    return;
                }
                if let Some(i) = pick(&cur) {
                    break i;
                }
                if (!self.opts.follow && !first) || *self.job_done.borrow() {
                    let _ = self.tx.send(Msg::Done).await;
                    return;
                }
                tokio::select! {
                    r = self.state.changed() => if r.is_err() {
                        let _ = self.tx.send(Msg::Done).await;
                        return;
                    },
                    _ = self.job_done.changed() => {}
                }
            };
            let (id, previous) = match (&inst, self.opts.previous) {
                (_, true) => (String::new(), true),
                (Instance::Running(id) | Instance::Terminated(id) | Instance::BackOff(id), _) => {
                    (id.clone(), false)
                }
                (Instance::NotStarted(_), _) => unreachable!("not picked"),
            };
            let lp = self.params(&cursor, first, previous);
            first = false;
            let read = self.read(&lp, &mut cursor).await;
            if let Ok(ReadEnd::TimedOut(limit)) = read
                && (previous || !self.opts.follow)
            {
                // Read whole is what was asked, and it did not end in time: say so, once.
                let _ = self
                    .tx
                    .send(Msg::Unreadable(format!(
                        "{}: the log did not end within --request-timeout {}; what came is \
                         printed above",
                        self.label,
                        crate::model::duration::go(limit)
                    )))
                    .await;
                let _ = self.tx.send(Msg::Done).await;
                return;
            }
            if let Err(e) = read {
                // 400 while the container is between states: wait for the next status.
                failures += 1;
                if failures > 5 || kubeapi::status_code(&e).is_some_and(|c| c != 400) {
                    let _ = self
                        .tx
                        .send(Msg::Unreadable(format!(
                            "{}: {}",
                            self.label,
                            crate::cluster::podexec::through_kubelet(
                                &e,
                                "to read its log",
                                "kubectl logs"
                            )
                        )))
                        .await;
                    let _ = self.tx.send(Msg::Done).await;
                    return;
                }
                let _ = Budget::new(Duration::from_secs(1))
                    .attempt(self.state.changed())
                    .await;
                continue;
            }
            failures = 0;
            let _ = self.tx.send(Msg::Read).await;
            if previous || !self.opts.follow {
                let _ = self.tx.send(Msg::Done).await;
                return;
            }
            // The stream ended: the instance stopped, or the connection dropped. The pod watch
            // may trail the log by a moment, so give it a bounded wait before reconnecting
            // (a reconnect is harmless: the cursor skips what was printed).
            let settled = Budget::new(Duration::from_secs(2))
                .attempt(async {
                    loop {
                        let cur = self.state.borrow_and_update().clone();
                        match cur.as_ref().map(|p| instance(p, &container)) {
                            Some(Instance::Running(r)) if r == id => {}
                            _ => return cur,
                        }
                        if self.state.changed().await.is_err() {
                            return None;
                        }
                    }
                })
                .await;
            let Some(cur) = settled else {
                continue; // still running: the stream dropped, resume from the cursor
            };
            done.push(id.clone());
            // Restarted: re-read the crashed instance from the last printed second, so lines it
            // wrote after our stream ended are not lost.
            if let Some(p) = cur
                && last_terminated(&p, &container).as_deref() == Some(id.as_str())
            {
                let lp = self.params(&cursor, false, true);
                let _ = self.read(&lp, &mut cursor).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_never_splits_a_character() {
        assert_eq!(cut_at_char(b"abc"), 3);
        let e = "é".as_bytes(); // 2 bytes
        assert_eq!(cut_at_char(&[b'a', e[0]]), 1);
        assert_eq!(cut_at_char(&[b'a', e[0], e[1]]), 3);
        let euro = "€".as_bytes(); // 3 bytes
        assert_eq!(cut_at_char(&[b'a', euro[0], euro[1]]), 1);
    }

    #[tokio::test]
    async fn an_endless_line_comes_in_bounded_pieces() {
        let mut text = "short\r\n".to_string();
        text.push_str(&"x".repeat(PIECE * 2 + 10));
        text.push_str("\nlast");
        let mut p = Pieces::new(futures::io::Cursor::new(text.into_bytes()));
        assert_eq!(p.next().await.unwrap().unwrap(), "short");
        assert_eq!(p.next().await.unwrap().unwrap().len(), PIECE);
        assert_eq!(p.next().await.unwrap().unwrap().len(), PIECE);
        assert_eq!(p.next().await.unwrap().unwrap(), "x".repeat(10));
        assert_eq!(p.next().await.unwrap().unwrap(), "last");
        assert!(p.next().await.unwrap().is_none());
    }
}
