//! What lists need of each stored object, kept while the object is: its JSON encoding and the
//! values of the fields selectors ask about. A list of 150,000 pods is then a copy of bytes and a
//! lookup per term, not 150,000 serializations and walks. kube-apiserver keeps the same: its
//! watch cache stores each object with its label and field sets computed once
//! (k8s.io/apiserver `pkg/storage/cacher/store.go`, `storeElement{Key, Object, Labels, Fields}`)
//! and encodes an object once per serializer for every watcher it goes to
//! (`pkg/storage/cacher/caching_object.go`). The wire is unchanged: the cached bytes are what
//! `serde_json::to_writer` wrote for the same object, and the values what
//! `selectors::field_value` reads.
//!
//! Keyed by the stored `Arc`'s address. The store replaces an object on every write (it never
//! changes one in place), and the `Weak` held here keeps the address from being reused while its
//! entry lives, so a live entry always belongs to the object at that address.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use bytes::Bytes;
use serde_json::Value;

#[derive(Default)]
pub(crate) struct Encoded {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    map: HashMap<usize, Entry>,
    /// Entries added since the last sweep of dead ones.
    added: usize,
}

struct Entry {
    object: Weak<Value>,
    json: Option<Bytes>,
    /// (field path, value) for the fields asked about so far.
    fields: Vec<(Box<str>, Box<str>)>,
}

impl Inner {
    /// The live entry of the object at `obj`'s address, made when missing or stale.
    fn entry(&mut self, obj: &Value, arc: impl FnOnce() -> Weak<Value>) -> &mut Entry {
        let key = obj as *const Value as usize;
        let stale = self
            .map
            .get(&key)
            .is_none_or(|e| e.object.strong_count() == 0);
        if stale {
            self.added += 1;
            self.map.insert(
                key,
                Entry {
                    object: arc(),
                    json: None,
                    fields: Vec::new(),
                },
            );
        }
        self.map.get_mut(&key).unwrap()
    }

    /// Objects deleted or replaced since: dropped once as many were added as there are
    /// entries, so the sweeps cost O(1) per insert.
    fn sweep(&mut self) {
        if self.added > 1024 && self.added > self.map.len() / 2 {
            self.map.retain(|_, e| e.object.strong_count() > 0);
            self.added = 0;
        }
    }
}

impl Encoded {
    /// Appends the JSON of each object to `buf`, comma-separated, encoding only those not seen.
    pub(crate) fn write_all(&self, items: &[Arc<Value>], buf: &mut Vec<u8>) {
        let mut g = self.inner.lock().unwrap();
        for (i, obj) in items.iter().enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            let e = g.entry(obj, || Arc::downgrade(obj));
            let json = e
                .json
                .get_or_insert_with(|| Bytes::from(serde_json::to_vec(&**obj).unwrap()));
            buf.extend_from_slice(json);
        }
        g.sweep();
    }

    /// Whether `field` of the stored object `obj` (a reference into `arc`'s allocation) is
    /// `want`, reading the value once per object and field.
    pub(crate) fn field_is(&self, arc: &Arc<Value>, field: &str, want: &str) -> bool {
        let mut g = self.inner.lock().unwrap();
        let e = g.entry(arc, || Arc::downgrade(arc));
        if let Some((_, v)) = e.fields.iter().find(|(f, _)| &**f == field) {
            return &**v == want;
        }
        let v = crate::selectors::field_value(arc, field);
        let equal = v == want;
        e.fields.push((field.into(), v.into()));
        equal
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cached_bytes_are_the_encoding_and_a_replaced_object_is_encoded_anew() {
        let cache = Encoded::default();
        let a = Arc::new(json!({"metadata": {"name": "a"}, "n": 1}));
        let b = Arc::new(json!({"metadata": {"name": "b"}}));
        let mut first = Vec::new();
        cache.write_all(&[a.clone(), b.clone()], &mut first);
        let mut second = Vec::new();
        cache.write_all(&[a.clone(), b.clone()], &mut second);
        let whole = |v: &[u8]| serde_json::from_slice::<Value>(&[b"[", v, b"]"].concat()).unwrap();
        assert_eq!(whole(&first), json!([*a, *b]));
        assert_eq!(first, second);
        // A write replaces the Arc: the new object's bytes, never the old one's.
        drop(a);
        let a2 = Arc::new(json!({"metadata": {"name": "a"}, "n": 2}));
        let mut third = Vec::new();
        cache.write_all(std::slice::from_ref(&a2), &mut third);
        assert_eq!(whole(&third), json!([*a2]));
    }

    #[test]
    fn field_values_are_read_once_and_follow_a_replaced_object() {
        let cache = Encoded::default();
        let p = Arc::new(json!({"spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}));
        assert!(cache.field_is(&p, "spec.nodeName", "n1"));
        assert!(cache.field_is(&p, "spec.nodeName", "n1"));
        assert!(!cache.field_is(&p, "status.phase", "Succeeded"));
        assert!(cache.field_is(&p, "spec.missing", ""));
        drop(p);
        let q = Arc::new(json!({"spec": {}, "status": {"phase": "Succeeded"}}));
        assert!(cache.field_is(&q, "spec.nodeName", ""));
        assert!(cache.field_is(&q, "status.phase", "Succeeded"));
    }
}
