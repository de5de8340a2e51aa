//! The one loop every stand-in controller runs: wait for a change in the store, wait
//! `delay` more and take every change that came meanwhile (a trailing-edge debounce), then
//! one reconcile pass over what the changes made due.
//!
//! This mirrors the shape of a controller-runtime reconcile loop over client-go's workqueue
//! (a key queued many times is reconciled once; a lost watch means a full relist) with the
//! debounce kube-runtime's `controller::Config::debounce` adds. What is due, how a change
//! maps to it and what one pass does stay with each controller (`Controller`).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, watch};

use crate::state::Shared;
use crate::store::StoreEvent;

/// One stand-in controller as the loop drives it.
pub(crate) trait Controller {
    /// A change in the store: note what it makes due.
    fn note(&mut self, ev: &StoreEvent);
    /// The change feed lagged, so changes were lost: make everything due (a relist).
    fn lagged(&mut self);
    /// Whether a pass is due. A controller that is not running may drop here what it noted.
    fn due(&mut self) -> bool;
    /// One pass over what is due; afterwards nothing is, unless it must be retried.
    fn reconcile(&mut self);
    /// A wake-up from outside the store (the operator's requeues and mode changes), already
    /// noted when it resolves; `false` ends the loop (its source closed). Default: none.
    fn wake(&mut self) -> impl Future<Output = bool> + Send {
        std::future::pending()
    }
}

/// The store's change feed and the cluster's stop signal, taken before a controller's first
/// list so that no change between the two is missed.
pub(crate) struct Changes {
    rx: broadcast::Receiver<Arc<StoreEvent>>,
    stop: watch::Receiver<bool>,
}

impl Changes {
    pub(crate) fn subscribe(sh: &Shared) -> Changes {
        Changes {
            rx: sh.store.subscribe(),
            stop: sh.stop.subscribe(),
        }
    }

    /// Runs `c` until the cluster stops or the store closes.
    pub(crate) async fn run<C: Controller + Send>(mut self, delay: Duration, mut c: C) {
        loop {
            if !c.due() {
                let got = tokio::select! {
                    r = self.rx.recv() => Some(r),
                    open = c.wake() => {
                        if !open {
                            return;
                        }
                        None
                    }
                    _ = self.stop.changed() => return,
                };
                match got {
                    Some(Ok(ev)) => c.note(&ev),
                    Some(Err(broadcast::error::RecvError::Lagged(_))) => c.lagged(),
                    Some(Err(broadcast::error::RecvError::Closed)) => return,
                    None => {}
                }
                if !c.due() {
                    continue;
                }
            }
            tokio::time::sleep(delay).await;
            loop {
                match self.rx.try_recv() {
                    Ok(ev) => c.note(&ev),
                    Err(broadcast::error::TryRecvError::Lagged(_)) => c.lagged(),
                    Err(broadcast::error::TryRecvError::Empty) => break,
                    Err(broadcast::error::TryRecvError::Closed) => return,
                }
            }
            c.reconcile();
        }
    }
}
