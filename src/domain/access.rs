//! Who may do what over the local socket.
//!
//! A request id belongs to the uid that asked it. That uid may re-attach, cancel it and see it;
//! an operator (`operator_uids`, root, or the daemon's own uid) may cancel and see every request.
//! Nobody else learns anything about it.

use super::request::{Peer, Request};
use std::collections::BTreeSet;

/// The local user on the other end of a socket connection, as its peer credentials say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalUser {
    pub peer: Peer,
    /// The user name from the passwd database, when the uid has one.
    pub name: Option<String>,
    pub operator: bool,
}

impl LocalUser {
    /// Whether this user owns `req` (asked it).
    pub fn owns(&self, req: &Request) -> bool {
        self.peer.uid.is_some() && self.peer.uid == req.owner_uid()
    }

    /// Whether this user may see, cancel or answer `req`.
    pub fn may_touch(&self, req: &Request) -> bool {
        self.operator || self.owns(req)
    }

    /// How the audit log names this user: `uid:1000 name=alice pid=4242`.
    pub fn audit(&self) -> String {
        self.peer.audit(self.name.as_deref())
    }

    /// How logs and messages name this user.
    pub fn describe(&self) -> String {
        match (&self.name, self.peer.uid) {
            (Some(n), _) => format!("{n} ({})", self.peer),
            (None, _) => self.peer.to_string(),
        }
    }
}

/// The operators: root, the daemon's own uid, and `operator_uids`.
#[derive(Debug, Clone, Default)]
pub struct Operators {
    uids: BTreeSet<u32>,
}

impl Operators {
    pub fn new(configured: &[u32], daemon_uid: u32) -> Operators {
        let mut uids: BTreeSet<u32> = configured.iter().copied().collect();
        uids.insert(0);
        uids.insert(daemon_uid);
        Operators { uids }
    }

    pub fn contains(&self, uid: Option<u32>) -> bool {
        uid.is_some_and(|u| self.uids.contains(&u))
    }
}
