//! One thread per agent session (the route key `threads = "per_session"`; docs/approvals.md,
//! "One thread per agent session"): a session's questions, approvals and ends of turns are
//! posted in one thread of the route's channel, created on the session's first message and
//! named after the agent, its project and its session, so that a team can follow a session in
//! one place.
//!
//! The thread's id is kept by the store, so a restart posts in the same thread. A thread that
//! is gone (deleted, or the bot lost access) is replaced by a new one. What is not in the
//! route's own channel (DMs, an escalation step's channel) is posted where it always was.

use super::rest::{Failure, Rest};
use super::route::ResolvedRoute;
use crate::config::Threads;
use crate::domain::request::{Post, Request};
use crate::domain::AnswererContext;
use std::collections::HashMap;

/// The most characters of a thread name (Discord's limit).
const NAME_MAX: usize = 100;
/// How much of a session id a thread name shows.
const SESSION_SHOWN: usize = 8;

/// Which thread a session is in: (route channel, agent, session).
type SessionKey = (u64, String, String);

/// The threads of the sessions this term has posted for, and the one lock under which a
/// thread is looked up or created, so that two questions of one new session make one thread.
#[derive(Default)]
pub(super) struct SessionThreads(tokio::sync::Mutex<HashMap<SessionKey, u64>>);

/// The agent and the session of a request, when it has a session.
fn session_of(req: &Request) -> Option<(&str, &str)> {
    let session = req.scope.get("session")?.as_str();
    Some((req.agent().unwrap_or("agent"), session))
}

/// The thread's name: "claude-code · api · 3f2a9c1e" (agent, project, the session's first
/// characters).
pub(super) fn thread_name(agent: &str, project: Option<&str>, session: &str) -> String {
    let short: String = session.chars().take(SESSION_SHOWN).collect();
    let name = match project.filter(|p| !p.trim().is_empty()) {
        Some(p) => format!("{agent} · {p} · {short}"),
        None => format!("{agent} · {short}"),
    };
    let one_line: String = name
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    one_line.chars().take(NAME_MAX).collect()
}

impl SessionThreads {
    /// Forgets `thread` (it is gone): the session's next post looks again.
    pub(super) async fn forget(&self, thread: u64) {
        self.0.lock().await.retain(|_, t| *t != thread);
    }

    /// The thread `post` goes to: on a route with threads per session, for a request of a
    /// session, a post planned for the route's own channel. `None`: the post goes where it was
    /// planned.
    pub(super) async fn thread_for(
        &self,
        ctx: &AnswererContext,
        rest: &Rest,
        req: &Request,
        route: &ResolvedRoute,
        post: &Post,
    ) -> Result<Option<u64>, Failure> {
        if route.threads != Threads::PerSession
            || post.channel != route.channel_id.to_string()
            || route.closed
        {
            return Ok(None);
        }
        let Some((agent, session)) = session_of(req) else {
            return Ok(None);
        };
        let channel = route.channel_id;
        let key = (channel, agent.to_owned(), session.to_owned());
        let mut known = self.0.lock().await;
        if let Some(t) = known.get(&key) {
            return Ok(Some(*t));
        }
        let channel_s = channel.to_string();
        let kept = ctx
            .session_thread(&channel_s, agent, session)
            .await
            .map_err(|e| Failure::Transient(format!("{e:#}")))?;
        if let Some(t) = kept.and_then(|t| t.parse::<u64>().ok()) {
            match rest.check_channel(t, 1).await {
                Ok(_) => {
                    known.insert(key, t);
                    return Ok(Some(t));
                }
                Err(Failure::Permanent(why)) => {
                    tracing::warn!(thread = t, error = %why, "a session's thread is gone; starting a new one");
                }
                Err(f) => return Err(f),
            }
        }
        let name = thread_name(agent, req.scope.get("project").map(String::as_str), session);
        let t = rest.create_thread(channel, &name).await?;
        ctx.keep_session_thread(&channel_s, agent, session, &t.to_string())
            .await
            .map_err(|e| Failure::Transient(format!("{e:#}")))?;
        known.insert(key, t);
        Ok(Some(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_is_named_after_the_agent_the_project_and_the_session() {
        assert_eq!(
            thread_name(
                "claude-code",
                Some("api"),
                "3f2a9c1e-77aa-4bbb-8ccc-0123456789ab"
            ),
            "claude-code · api · 3f2a9c1e"
        );
        assert_eq!(thread_name("codex", None, "s1"), "codex · s1");
        let long = "p".repeat(300);
        assert_eq!(
            thread_name("codex", Some(&long), "s1").chars().count(),
            NAME_MAX
        );
        assert_eq!(thread_name("codex", Some("a\nb"), "s1"), "codex · a b · s1");
    }
}
