//! One versioned object store for every resource, with a bounded event history and
//! broadcast fan-out for watches. Objects are `serde_json::Value`s keyed by
//! resource plural, namespace ("" for cluster-scoped) and name.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::util::{new_uid, now_rfc3339};

/// Watch event type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Object created.
    Added,
    /// Object changed.
    Modified,
    /// Object removed.
    Deleted,
}

impl EventType {
    /// The wire name (`ADDED`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change in the store.
#[derive(Debug)]
pub struct StoreEvent {
    /// resourceVersion of this change.
    pub rv: u64,
    /// What happened.
    pub kind: EventType,
    /// Resource plural.
    pub resource: String,
    /// Namespace ("" when cluster-scoped).
    pub namespace: String,
    /// The object after the change (before, for deletes; carrying the delete's resourceVersion).
    pub object: Arc<Value>,
    /// The object before the change (modifications only), for selector transitions.
    pub old: Option<Arc<Value>>,
    /// `object` serialized once, shared by every watcher that sends it as-is.
    pub json: std::sync::OnceLock<bytes::Bytes>,
}

// Objects are shared with watch events (and big TF_CONFIG-laden pods are not copied per event).
type Bucket = BTreeMap<String, BTreeMap<String, Arc<Value>>>;

struct Inner {
    rv: u64,
    data: HashMap<String, Bucket>,
    history: VecDeque<Arc<StoreEvent>>,
    history_cap: usize,
    /// owner uid → dependents, for garbage collection without scanning everything.
    owners: HashMap<String, Vec<(String, String, String)>>,
    /// The uids of deleted objects: a dependent created after its owner went (an operator that
    /// read the job just before its deletion) is collected too, as kube-controller-manager's
    /// garbage collector deletes a dependent whose owners are all absent.
    gone: std::collections::HashSet<String>,
}

/// Why a store write failed (mapped to Status errors by the HTTP layer).
#[derive(Debug, PartialEq, Eq)]
pub enum StoreError {
    /// The object does not exist.
    NotFound,
    /// The name is taken.
    AlreadyExists,
    /// resourceVersion precondition failed.
    Conflict,
}

/// Thread-safe store shared by the HTTP layer and the simulated controllers.
pub struct Store {
    inner: Mutex<Inner>,
    tx: broadcast::Sender<Arc<StoreEvent>>,
}

/// Resources whose objects carry `metadata.generation` (custom resources and apps).
fn has_generation(resource: &str) -> bool {
    !matches!(
        resource,
        "pods" | "services" | "secrets" | "configmaps" | "events" | "nodes" | "namespaces"
    )
}

fn meta_str<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj["metadata"][key].as_str().unwrap_or("")
}

fn owner_uids(obj: &Value) -> Vec<String> {
    obj["metadata"]["ownerReferences"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|o| o["uid"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

impl Store {
    /// An empty store whose watch window holds the last `history_cap` events.
    pub fn new(history_cap: usize) -> Self {
        let (tx, _) = broadcast::channel(65_536);
        Store {
            inner: Mutex::new(Inner {
                rv: 1,
                data: HashMap::new(),
                history: VecDeque::new(),
                history_cap: history_cap.max(1),
                owners: HashMap::new(),
                gone: Default::default(),
            }),
            tx,
        }
    }

    /// Current (latest) resourceVersion.
    pub fn current_rv(&self) -> u64 {
        self.inner.lock().unwrap().rv
    }

    /// Oldest resourceVersion a watch can still resume from.
    pub fn oldest_rv(&self) -> u64 {
        let g = self.inner.lock().unwrap();
        g.history.front().map(|e| e.rv - 1).unwrap_or(g.rv)
    }

    /// A receiver for every future change.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<StoreEvent>> {
        self.tx.subscribe()
    }

    /// One object.
    pub fn get(&self, resource: &str, namespace: &str, name: &str) -> Option<Value> {
        let g = self.inner.lock().unwrap();
        g.data
            .get(resource)?
            .get(namespace)?
            .get(name)
            .map(|a| (**a).clone())
    }

    /// Objects of a resource, in one namespace or all (`None`), sorted by namespace/name, plus the list RV.
    pub fn list(&self, resource: &str, namespace: Option<&str>) -> (Vec<Value>, u64) {
        self.list_filtered(resource, namespace, |_| true)
    }

    /// Like `list`, cloning only objects that pass `keep` (cheap for big namespaces).
    pub fn list_filtered(
        &self,
        resource: &str,
        namespace: Option<&str>,
        keep: impl Fn(&Value) -> bool,
    ) -> (Vec<Value>, u64) {
        let g = self.inner.lock().unwrap();
        let mut out = Vec::new();
        if let Some(bucket) = g.data.get(resource) {
            match namespace {
                Some(ns) => {
                    if let Some(m) = bucket.get(ns) {
                        out.extend(m.values().filter(|o| keep(o)).map(|a| (**a).clone()));
                    }
                }
                None => {
                    for m in bucket.values() {
                        out.extend(m.values().filter(|o| keep(o)).map(|a| (**a).clone()));
                    }
                }
            }
        }
        (out, g.rv)
    }

    /// Like `list_filtered`, returning shared handles instead of deep copies.
    pub fn list_filtered_shared(
        &self,
        resource: &str,
        namespace: Option<&str>,
        keep: impl Fn(&Arc<Value>) -> bool,
    ) -> (Vec<Arc<Value>>, u64) {
        let g = self.inner.lock().unwrap();
        let mut out = Vec::new();
        if let Some(bucket) = g.data.get(resource) {
            match namespace {
                Some(ns) => {
                    if let Some(m) = bucket.get(ns) {
                        out.extend(m.values().filter(|o| keep(o)).cloned());
                    }
                }
                None => {
                    for m in bucket.values() {
                        out.extend(m.values().filter(|o| keep(o)).cloned());
                    }
                }
            }
        }
        (out, g.rv)
    }

    /// One page of a list, as etcd serves `limit`/`continue`: up to `limit` objects passing
    /// `keep` that sort after `after` (namespace, name), walked in key order from there, so a
    /// page costs what it returns, not the whole collection. Returns the page, the list RV,
    /// whether a further match exists, and how many objects follow the page when `count_rest`
    /// (the apiserver's `remainingItemCount`, only given for unfiltered lists).
    pub fn list_page_shared(
        &self,
        resource: &str,
        namespace: Option<&str>,
        after: Option<(&str, &str)>,
        limit: usize,
        count_rest: bool,
        keep: impl Fn(&Arc<Value>) -> bool,
    ) -> (Vec<Arc<Value>>, u64, bool, usize) {
        use std::ops::Bound::{Excluded, Included, Unbounded};
        let g = self.inner.lock().unwrap();
        let Some(bucket) = g.data.get(resource) else {
            return (vec![], g.rv, false, 0);
        };
        let from_ns = match (namespace, after) {
            (Some(ns), _) => Included(ns),
            (None, Some((ns, _))) => Included(ns),
            (None, None) => Unbounded,
        };
        let namespaces = bucket
            .range::<str, _>((from_ns, Unbounded))
            .take_while(|(ns, _)| namespace.is_none_or(|want| ns.as_str() == want));
        let mut objects = namespaces.flat_map(|(ns, m)| {
            let from = match after {
                Some((a_ns, a_name)) if a_ns == ns.as_str() => Excluded(a_name),
                Some((a_ns, _)) if a_ns > ns.as_str() => {
                    return m.range::<str, _>((Included(""), Excluded("")));
                }
                _ => Unbounded,
            };
            m.range::<str, _>((from, Unbounded))
        });
        let mut page = Vec::new();
        for (_, o) in objects.by_ref() {
            if keep(o) {
                page.push(o.clone());
                if page.len() == limit {
                    break;
                }
            }
        }
        let (more, rest) = if count_rest {
            let rest = objects.count();
            (rest > 0, rest)
        } else {
            (objects.any(|(_, o)| keep(o)), 0)
        };
        (page, g.rv, more, rest)
    }

    /// Shared handles to the objects of one namespace passing `keep` (no deep copies).
    pub fn list_shared(
        &self,
        resource: &str,
        namespace: &str,
        keep: impl Fn(&Value) -> bool,
    ) -> Vec<Arc<Value>> {
        let g = self.inner.lock().unwrap();
        g.data
            .get(resource)
            .and_then(|b| b.get(namespace))
            .map(|m| m.values().filter(|o| keep(o)).cloned().collect())
            .unwrap_or_default()
    }

    /// Names of the namespaces that exist.
    pub fn namespace_exists(&self, ns: &str) -> bool {
        self.get("namespaces", "", ns).is_some()
    }

    /// Stores a new object: assigns uid, creationTimestamp, resourceVersion (and generation).
    pub fn create(
        &self,
        resource: &str,
        namespace: &str,
        mut obj: Value,
    ) -> Result<Value, StoreError> {
        let mut g = self.inner.lock().unwrap();
        let name = meta_str(&obj, "name").to_string();
        if g.data
            .get(resource)
            .and_then(|b| b.get(namespace))
            .is_some_and(|m| m.contains_key(&name))
        {
            return Err(StoreError::AlreadyExists);
        }
        g.rv += 1;
        let rv = g.rv;
        let meta = obj["metadata"].as_object_mut().expect("metadata object");
        meta.insert("uid".into(), json!(new_uid()));
        meta.insert("resourceVersion".into(), json!(rv.to_string()));
        if !meta.contains_key("creationTimestamp") || meta["creationTimestamp"].is_null() {
            meta.insert("creationTimestamp".into(), json!(now_rfc3339()));
        }
        if !namespace.is_empty() {
            meta.insert("namespace".into(), json!(namespace));
        } else {
            meta.remove("namespace");
        }
        if has_generation(resource) {
            meta.insert("generation".into(), json!(1));
        }
        Self::index_owners(&mut g, resource, namespace, &name, &obj);
        g.data
            .entry(resource.to_string())
            .or_default()
            .entry(namespace.to_string())
            .or_default()
            .insert(name, Arc::new(obj.clone()));
        let shared = g.data[resource][namespace][meta_str(&obj, "name")].clone();
        self.emit(
            &mut g,
            EventType::Added,
            resource,
            namespace,
            shared,
            None,
            rv,
        );
        let owners = owner_uids(&obj);
        if !owners.is_empty() && owners.iter().all(|o| g.gone.contains(o.as_str())) {
            let name = meta_str(&obj, "name").to_string();
            let _ = Self::remove_locked(self, &mut g, resource, namespace, &name);
        }
        Ok(obj)
    }

    /// Replaces an object. `expected_rv` enforces optimistic concurrency when given.
    /// Writes that change nothing keep the resourceVersion and emit no event, like the apiserver.
    pub fn update(
        &self,
        resource: &str,
        namespace: &str,
        name: &str,
        obj: Value,
        expected_rv: Option<&str>,
    ) -> Result<Value, StoreError> {
        self.write(resource, namespace, name, obj, expected_rv, false)
    }

    /// Starts a graceful deletion as the API server's `BeforeDelete` does for an object with a
    /// grace period (apiserver `pkg/registry/rest/delete.go`): `deletionTimestamp` and
    /// `deletionGracePeriodSeconds` set, the object kept (Terminating) until someone removes
    /// it. A lost node's pods stay so, since no kubelet confirms.
    pub fn mark_deleting(
        &self,
        resource: &str,
        namespace: &str,
        name: &str,
        uid: &str,
        at: &str,
        grace_seconds: i64,
    ) -> Option<Value> {
        for _ in 0..16 {
            let cur = self.get(resource, namespace, name)?;
            if cur["metadata"]["uid"] != json!(uid)
                || cur["metadata"].get("deletionTimestamp").is_some()
            {
                return Some(cur);
            }
            let rv = meta_str(&cur, "resourceVersion").to_string();
            let mut next = cur.clone();
            next["metadata"]["deletionTimestamp"] = json!(at);
            next["metadata"]["deletionGracePeriodSeconds"] = json!(grace_seconds);
            match self.write(resource, namespace, name, next, Some(&rv), true) {
                Ok(v) => return Some(v),
                Err(StoreError::Conflict) => continue,
                Err(_) => return None,
            }
        }
        None
    }

    fn write(
        &self,
        resource: &str,
        namespace: &str,
        name: &str,
        mut obj: Value,
        expected_rv: Option<&str>,
        deleting: bool,
    ) -> Result<Value, StoreError> {
        let mut g = self.inner.lock().unwrap();
        let old = g
            .data
            .get(resource)
            .and_then(|b| b.get(namespace))
            .and_then(|m| m.get(name))
            .cloned()
            .ok_or(StoreError::NotFound)?;
        if let Some(exp) = expected_rv
            && !exp.is_empty()
            && exp != meta_str(&old, "resourceVersion")
        {
            return Err(StoreError::Conflict);
        }
        // Server-owned metadata survives updates.
        for k in [
            "uid",
            "creationTimestamp",
            "resourceVersion",
            "generation",
            "deletionTimestamp",
        ] {
            if deleting && k == "deletionTimestamp" {
                continue;
            }
            match old["metadata"].get(k) {
                Some(v) => {
                    obj["metadata"][k] = v.clone();
                }
                None => {
                    if let Some(m) = obj["metadata"].as_object_mut() {
                        m.remove(k);
                    }
                }
            }
        }
        obj["metadata"]["name"] = json!(name);
        if !namespace.is_empty() {
            obj["metadata"]["namespace"] = json!(namespace);
        }
        if obj == *old {
            return Ok((*old).clone());
        }
        if has_generation(resource) && obj.get("spec") != old.get("spec") {
            let gen_ = old["metadata"]["generation"].as_i64().unwrap_or(1) + 1;
            obj["metadata"]["generation"] = json!(gen_);
        }
        g.rv += 1;
        let rv = g.rv;
        obj["metadata"]["resourceVersion"] = json!(rv.to_string());
        Self::index_owners(&mut g, resource, namespace, name, &obj);
        g.data
            .get_mut(resource)
            .unwrap()
            .get_mut(namespace)
            .unwrap()
            .insert(name.to_string(), Arc::new(obj.clone()));
        let shared = g.data[resource][namespace][name].clone();
        self.emit(
            &mut g,
            EventType::Modified,
            resource,
            namespace,
            shared,
            Some(old),
            rv,
        );
        Ok(obj)
    }

    /// Read-modify-write under the lock; `f` returning false skips the write.
    pub fn modify(
        &self,
        resource: &str,
        namespace: &str,
        name: &str,
        f: impl Fn(&mut Value) -> bool,
    ) -> Option<Value> {
        // The lock is not held across `update` to keep one code path for writes; a
        // concurrent writer in between makes `update` fail with Conflict, and we retry.
        for _ in 0..16 {
            let cur = self.get(resource, namespace, name)?;
            let rv = meta_str(&cur, "resourceVersion").to_string();
            let mut next = cur.clone();
            if !f(&mut next) {
                return Some(cur);
            }
            match self.update(resource, namespace, name, next, Some(&rv)) {
                Ok(v) => return Some(v),
                Err(StoreError::Conflict) => continue,
                Err(_) => return None,
            }
        }
        None
    }

    /// Removes an object and (cascading) everything it owns; namespaces take their contents along.
    pub fn delete(&self, resource: &str, namespace: &str, name: &str) -> Result<Value, StoreError> {
        let mut g = self.inner.lock().unwrap();
        let removed = Self::remove_locked(self, &mut g, resource, namespace, name)?;
        if resource == "customresourcedefinitions"
            && let Some(plural) = removed["spec"]["names"]["plural"].as_str()
        {
            // Deleting a CRD deletes all its custom resources.
            let keys: Vec<(String, String)> = g
                .data
                .get(plural)
                .map(|b| {
                    b.iter()
                        .flat_map(|(ns, m)| m.keys().map(|n| (ns.clone(), n.clone())))
                        .collect()
                })
                .unwrap_or_default();
            for (ns, n) in keys {
                let _ = Self::remove_locked(self, &mut g, plural, &ns, &n);
            }
        }
        if resource == "namespaces" {
            let keys: Vec<(String, String)> = g
                .data
                .iter()
                .filter_map(|(r, b)| {
                    b.get(name)
                        .map(|m| m.keys().map(|n| (r.clone(), n.clone())).collect::<Vec<_>>())
                })
                .flatten()
                .collect();
            for (r, n) in keys {
                let _ = Self::remove_locked(self, &mut g, &r, name, &n);
            }
        }
        Ok(removed)
    }

    fn remove_locked(
        &self,
        g: &mut Inner,
        resource: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Value, StoreError> {
        let mut obj = g
            .data
            .get_mut(resource)
            .and_then(|b| b.get_mut(namespace))
            .and_then(|m| m.remove(name))
            .map(Arc::unwrap_or_clone)
            .ok_or(StoreError::NotFound)?;
        g.rv += 1;
        let rv = g.rv;
        for o in owner_uids(&obj) {
            if let Some(v) = g.owners.get_mut(&o) {
                v.retain(|(r, ns, n)| !(r == resource && ns == namespace && n == name));
            }
        }
        obj["metadata"]["resourceVersion"] = json!(rv.to_string());
        self.emit(
            g,
            EventType::Deleted,
            resource,
            namespace,
            Arc::new(obj.clone()),
            None,
            rv,
        );
        // Garbage collection: dependents whose owner is gone are deleted too.
        let uid = meta_str(&obj, "uid").to_string();
        g.gone.insert(uid.clone());
        if let Some(deps) = g.owners.remove(&uid) {
            for (r, ns, n) in deps {
                // A dependent orphaned since it was indexed (propagationPolicy=Orphan strips
                // the reference) no longer belongs to this owner.
                let still_owned = g
                    .data
                    .get(&r)
                    .and_then(|b| b.get(&ns))
                    .and_then(|m| m.get(&n))
                    .is_some_and(|o| owner_uids(o).contains(&uid));
                if still_owned {
                    let _ = Self::remove_locked(self, g, &r, &ns, &n);
                }
            }
        }
        Ok(obj)
    }

    fn index_owners(g: &mut Inner, resource: &str, namespace: &str, name: &str, obj: &Value) {
        for o in owner_uids(obj) {
            let v = g.owners.entry(o).or_default();
            let key = (
                resource.to_string(),
                namespace.to_string(),
                name.to_string(),
            );
            if !v.contains(&key) {
                v.push(key);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn emit(
        &self,
        g: &mut Inner,
        kind: EventType,
        resource: &str,
        namespace: &str,
        obj: Arc<Value>,
        old: Option<Arc<Value>>,
        rv: u64,
    ) {
        let ev = Arc::new(StoreEvent {
            rv,
            kind,
            resource: resource.to_string(),
            namespace: namespace.to_string(),
            object: obj,
            old,
            json: std::sync::OnceLock::new(),
        });
        g.history.push_back(ev.clone());
        while g.history.len() > g.history_cap {
            g.history.pop_front();
        }
        let _ = self.tx.send(ev);
    }

    /// Starts a watch: the backlog to replay plus a receiver for what follows, taken
    /// atomically so nothing is missed. `from_rv == None` means "current state as ADDED".
    /// `Err(oldest)` when `from_rv` fell out of the window (410 Expired).
    #[allow(clippy::type_complexity)]
    pub fn watch_from(
        &self,
        resource: &str,
        namespace: Option<&str>,
        from_rv: Option<u64>,
    ) -> Result<
        (
            Vec<Arc<StoreEvent>>,
            broadcast::Receiver<Arc<StoreEvent>>,
            u64,
        ),
        u64,
    > {
        let g = self.inner.lock().unwrap();
        let rx = self.tx.subscribe();
        let mut backlog = Vec::new();
        match from_rv {
            None => {
                if let Some(bucket) = g.data.get(resource) {
                    let iter: Box<dyn Iterator<Item = (&String, &BTreeMap<String, Arc<Value>>)>> =
                        match namespace {
                            Some(ns) => Box::new(bucket.get_key_value(ns).into_iter()),
                            None => Box::new(bucket.iter()),
                        };
                    for (ns, m) in iter {
                        for o in m.values() {
                            let rv = meta_str(o, "resourceVersion").parse().unwrap_or(0);
                            backlog.push(Arc::new(StoreEvent {
                                rv,
                                kind: EventType::Added,
                                resource: resource.to_string(),
                                namespace: ns.clone(),
                                object: o.clone(),
                                old: None,
                                json: std::sync::OnceLock::new(),
                            }));
                        }
                    }
                }
            }
            Some(rv) => {
                let oldest = g.history.front().map(|e| e.rv - 1).unwrap_or(g.rv);
                if rv < oldest {
                    return Err(oldest);
                }
                for e in g.history.iter().filter(|e| e.rv > rv) {
                    if e.resource == resource && namespace.is_none_or(|ns| ns == e.namespace) {
                        backlog.push(e.clone());
                    }
                }
            }
        }
        Ok((backlog, rx, g.rv))
    }
}
