//! Work under way on this daemon, marked while it runs so that a repair pass reading the store
//! meanwhile leaves it to that work: a request being stored and delivered, a vote between its
//! compare-and-swap and its settlement.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;

/// Keys marked as under way, each with how many holders (two votes on one question at once).
pub(super) struct Marks<K>(Mutex<HashMap<K, usize>>);

impl<K> Default for Marks<K> {
    fn default() -> Self {
        Marks(Mutex::new(HashMap::new()))
    }
}

impl<K: Hash + Eq + Clone> Marks<K> {
    /// Marks `key` until the returned guard is dropped.
    pub(super) fn hold(&self, key: K) -> Held<'_, K> {
        *self.0.lock().unwrap().entry(key.clone()).or_default() += 1;
        Held { marks: self, key }
    }

    /// Whether some holder marks `key` now.
    pub(super) fn contains<Q: Hash + Eq + ?Sized>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        self.0.lock().unwrap().contains_key(key)
    }
}

/// One holder's mark, taken back when dropped.
pub(super) struct Held<'m, K: Hash + Eq + Clone> {
    marks: &'m Marks<K>,
    key: K,
}

impl<K: Hash + Eq + Clone> Drop for Held<'_, K> {
    fn drop(&mut self) {
        let mut marks = self.marks.0.lock().unwrap();
        if let Some(n) = marks.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                marks.remove(&self.key);
            }
        }
    }
}
