//! What the Discord answerer shows, as its parts share it: its name on requests and posts, the
//! pending requests it shows with their outbox rows ([`Shown`], what a click needs without
//! reading the store), and where a posted row's message is ([`placed`]).

use crate::domain::request::{Post, Request};
use std::sync::Arc;

/// The answerer name stored with requests and posts.
pub const NAME: &str = "discord";

/// The pending requests this answerer shows, with their outbox rows as they stand: what a
/// click needs, without reading the store. An entry is added when a request is shown (or
/// resumed, or read after a miss), follows its messages as they are recorded, and leaves as
/// soon as anything about the request's answers or status changes; the next click then reads
/// it again. The store stays the judge: first-wins is its conditional write, so an entry that
/// is behind can only let a late click reach that write and lose there.
#[derive(Default)]
pub(crate) struct Shown(std::sync::Mutex<std::collections::HashMap<String, ShownRequest>>);

/// A request as shown, with its outbox rows.
type ShownRequest = Arc<(Request, Vec<Post>)>;

impl Shown {
    pub fn get(&self, token: &str) -> Option<ShownRequest> {
        self.0.lock().unwrap().get(token).cloned()
    }

    pub fn insert(&self, req: Request, posts: Vec<Post>) {
        let token = req.token.clone();
        self.0.lock().unwrap().insert(token, Arc::new((req, posts)));
    }

    /// Records a message Discord confirmed.
    pub fn posted(
        &self,
        token: &str,
        post: &Post,
        message: &str,
        channel: &str,
        guild: Option<&str>,
    ) {
        let mut map = self.0.lock().unwrap();
        if let Some(entry) = map.get_mut(token) {
            let (req, posts) = &**entry;
            let mut posts = posts.clone();
            for p in posts
                .iter_mut()
                .filter(|p| p.idx == post.idx && p.slot == post.slot)
            {
                p.message = Some(message.to_owned());
                p.channel = channel.to_owned();
                if guild.is_some() {
                    p.guild = guild.map(str::to_owned);
                }
            }
            *entry = Arc::new((req.clone(), posts));
        }
    }

    /// Records that a post not posted yet goes to `channel` (its session's thread).
    pub fn placed_in(&self, token: &str, post: &Post, channel: &str) {
        let mut map = self.0.lock().unwrap();
        if let Some(entry) = map.get_mut(token) {
            let (req, posts) = &**entry;
            let mut posts = posts.clone();
            for p in posts
                .iter_mut()
                .filter(|p| p.idx == post.idx && p.slot == post.slot)
            {
                p.channel = channel.to_owned();
            }
            *entry = Arc::new((req.clone(), posts));
        }
    }

    pub fn forget(&self, token: &str) {
        let mut map = self.0.lock().unwrap();
        map.remove(token);
        if map.is_empty() && map.capacity() > 1024 {
            *map = Default::default();
        }
    }
}

/// Where an outbox row's message is (channel, message), once it is posted.
pub(super) fn placed(p: &Post) -> Option<(u64, u64)> {
    Some((p.channel.parse().ok()?, p.message.as_deref()?.parse().ok()?))
}
