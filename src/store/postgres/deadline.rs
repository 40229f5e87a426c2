//! The deadline of every database call (`postgres.db_deadline_secs`), and what the store does
//! while the database does not answer.
//!
//! A query on a connection that is already open has no deadline of its own: in a network
//! partition TCP holds it for about 15 minutes, and `statement_timeout` cannot help, since the
//! server never got the statement. So every pooled call (a read, or a transaction with its
//! commit), the wait for a free connection included, runs within the deadline ([`Call`]). A
//! call that runs out fails naming the cause ([`Unanswered`]), and its connection is closed
//! rather than given back to the pool ([`Held`]): the pool would test it with a ping of its
//! own that has no deadline, and hold its place until TCP gives up.
//!
//! **While the database is silent** (a call ran out, and no call and no beat has been
//! answered since), calls fail at once with the same cause, except one *probe* at a time,
//! which may start at most once per deadline. Without this, the calls queued behind one
//! another (asks take turns to store) would each wait out a deadline of their own, and the
//! last one of forty would hear after minutes instead of seconds. The first answer (a probe,
//! or the lease's beat on its own connection) ends the silence.

use anyhow::Result;
use sqlx::pool::PoolConnection;
use sqlx::{PgPool, Postgres};
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// A call the database did not answer in time: the one that ran out, or one refused at once
/// while the database is silent. Its text names the key that sets the deadline.
#[derive(Debug, thiserror::Error)]
pub enum Unanswered {
    #[error(
        "the database did not answer within {} s (postgres.db_deadline_secs)",
        .0.as_secs()
    )]
    RanOut(Duration),
    #[error(
        "the database did not answer within {} s (postgres.db_deadline_secs) and has not \
         answered for {:.1} s since; not waiting for it again yet",
        .limit.as_secs(),
        .silent.as_secs_f64()
    )]
    Silent { limit: Duration, silent: Duration },
}

/// The deadline and the database's silence, shared by every call of one store.
pub(crate) struct Deadlines {
    limit: Duration,
    state: Mutex<Silence>,
}

#[derive(Default)]
struct Silence {
    /// Since when the database has not answered: the end of the first call that ran out, while
    /// nothing has been answered since.
    since: Option<Instant>,
    /// Whether a probe (a call let through while silent) is running.
    probing: bool,
    /// No new probe before this: one deadline after the last one ended.
    quiet_until: Option<Instant>,
}

impl Deadlines {
    pub(crate) fn new(limit: Duration) -> Deadlines {
        Deadlines {
            limit,
            state: Mutex::new(Silence::default()),
        }
    }

    /// `postgres.db_deadline_secs`.
    pub(crate) fn limit(&self) -> Duration {
        self.limit
    }

    /// Starts a call that may take `limit` (the deadline, or longer for a call that is known
    /// to be long, such as pruning); refused at once while the database is silent and another
    /// call probes it, or did a moment ago.
    pub(crate) fn start(&self, limit: Duration) -> Result<Call<'_>, Unanswered> {
        self.start_at(Instant::now(), limit)
    }

    fn start_at(&self, now: Instant, limit: Duration) -> Result<Call<'_>, Unanswered> {
        let mut state = self.state.lock().unwrap();
        let probe = match state.since {
            None => false,
            Some(since) => {
                if state.probing || state.quiet_until.is_some_and(|q| now < q) {
                    return Err(Unanswered::Silent {
                        limit: self.limit,
                        silent: now - since,
                    });
                }
                state.probing = true;
                true
            }
        };
        Ok(Call {
            deadlines: self,
            limit,
            until: now + limit,
            probe,
            done: false,
        })
    }

    /// The database answered (a call, or a beat on the lease connection): it is not silent.
    pub(crate) fn answered(&self) {
        let mut state = self.state.lock().unwrap();
        if state.since.take().is_some() {
            tracing::info!("the database answers again");
        }
        state.quiet_until = None;
    }

    fn ran_out(&self, now: Instant) {
        let mut state = self.state.lock().unwrap();
        if state.since.is_none() {
            tracing::warn!(
                deadline_secs = self.limit.as_secs(),
                "the database did not answer a call in time; until it answers, calls fail at once but one every db_deadline_secs"
            );
            state.since = Some(now);
        }
        // The calls that waited behind this one are told at once: the next probe is due a
        // deadline from now.
        state.quiet_until = Some(now + self.limit);
    }

    fn end_probe(&self, now: Instant) {
        let mut state = self.state.lock().unwrap();
        state.probing = false;
        state.quiet_until = Some(now + self.limit);
    }
}

/// One call under its deadline. Dropped unfinished (its caller gave up first), it frees the
/// probe's turn.
pub(crate) struct Call<'a> {
    deadlines: &'a Deadlines,
    limit: Duration,
    until: Instant,
    probe: bool,
    done: bool,
}

impl Call<'_> {
    /// A pooled connection, waited for within the call's deadline.
    pub(crate) async fn acquire(&self, pool: &PgPool) -> Result<Held> {
        match tokio::time::timeout_at(self.until, pool.acquire()).await {
            Ok(conn) => Ok(Held {
                conn: conn?,
                clean: false,
            }),
            Err(_) => Err(Unanswered::RanOut(self.limit).into()),
        }
    }

    /// `work` within what is left of the call's deadline.
    pub(crate) async fn run<T>(&self, work: impl Future<Output = Result<T>>) -> Result<T> {
        match tokio::time::timeout_at(self.until, work).await {
            Ok(r) => r,
            Err(_) => Err(Unanswered::RanOut(self.limit).into()),
        }
    }

    /// Ends the call with its result: an answer ends the database's silence, running out
    /// begins it (an error the server sent is an answer too, but says nothing of its health).
    pub(crate) fn finish<T>(self, result: &Result<T>) {
        self.finish_at(Instant::now(), result)
    }

    fn finish_at<T>(mut self, now: Instant, result: &Result<T>) {
        self.done = true;
        match result {
            Ok(_) => self.deadlines.answered(),
            Err(e) if e.downcast_ref::<Unanswered>().is_some() => self.deadlines.ran_out(now),
            Err(_) => {}
        }
        if self.probe {
            self.deadlines.end_probe(now);
        }
    }
}

impl Drop for Call<'_> {
    fn drop(&mut self) {
        if !self.done && self.probe {
            self.deadlines.end_probe(Instant::now());
        }
    }
}

/// A pooled connection that is closed, not given back, unless the call that holds it ended
/// well: after an error or a deadline (or a caller that gave up and dropped the call) its
/// state is not to be trusted, and testing it would wait without a deadline.
pub(crate) struct Held {
    conn: PoolConnection<Postgres>,
    clean: bool,
}

impl Held {
    /// A pooled connection taken outside a [`Call`] (a beat, which has a deadline of its own).
    pub(crate) fn new(conn: PoolConnection<Postgres>) -> Held {
        Held { conn, clean: false }
    }

    /// The call ended well: the connection goes back to the pool.
    pub(crate) fn keep(&mut self) {
        self.clean = true;
    }
}

impl std::ops::Deref for Held {
    type Target = sqlx::PgConnection;
    fn deref(&self) -> &sqlx::PgConnection {
        &self.conn
    }
}

impl std::ops::DerefMut for Held {
    fn deref_mut(&mut self) -> &mut sqlx::PgConnection {
        &mut self.conn
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if !self.clean {
            // sqlx closes it in the background, within 5 s.
            self.conn.close_on_drop();
        }
    }
}

/// Runs `$body` (an expression that may `.await`, of type `anyhow::Result<_>`) with `$conn`, a
/// `&mut PgConnection` from the pool of `$shared` (a [`super::Backend`]), within `$limit`, the
/// wait for the connection included; see the module comment.
macro_rules! on_conn {
    ($shared:expr, $limit:expr, |$conn:ident| $body:expr) => {{
        let shared: &$crate::store::postgres::Backend = &$shared;
        match shared.deadlines.start($limit) {
            Err(e) => Err(anyhow::Error::from(e)),
            Ok(call) => {
                let result: anyhow::Result<_> = async {
                    let mut held = call.acquire(&shared.pool).await?;
                    let value = call
                        .run(async {
                            let $conn: &mut sqlx::PgConnection = &mut *held;
                            $body
                        })
                        .await?;
                    held.keep();
                    anyhow::Ok(value)
                }
                .await;
                call.finish(&result);
                result
            }
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIVE: Duration = Duration::from_secs(5);

    fn ran_out() -> Result<()> {
        Err(Unanswered::RanOut(FIVE).into())
    }

    #[test]
    fn a_silent_database_fails_calls_at_once_but_one_probe_per_deadline() {
        let d = Deadlines::new(FIVE);
        let t0 = Instant::now();
        let r = ran_out();
        assert_eq!(
            format!("{:#}", r.as_ref().unwrap_err()),
            "the database did not answer within 5 s (postgres.db_deadline_secs)"
        );
        d.start_at(t0, FIVE).unwrap().finish_at(t0 + FIVE, &r);
        // Silent: refused at once, naming the cause, until a deadline has passed.
        let refused = d.start_at(t0 + FIVE + FIVE / 2, FIVE).err().unwrap();
        assert_eq!(
            refused.to_string(),
            "the database did not answer within 5 s (postgres.db_deadline_secs) and has not \
             answered for 2.5 s since; not waiting for it again yet"
        );
        // Then one probe at a time, and none again for a deadline after it.
        let probe = d.start_at(t0 + FIVE * 2, FIVE).unwrap();
        assert!(d.start_at(t0 + FIVE * 2, FIVE).is_err(), "a second probe");
        probe.finish_at(t0 + FIVE * 3, &ran_out());
        assert!(
            d.start_at(t0 + FIVE * 3, FIVE).is_err(),
            "a probe a moment ago"
        );
        let probe = d.start_at(t0 + FIVE * 4, FIVE).unwrap();
        // A probe whose caller gave up (dropped it) frees the turn.
        assert!(d.start_at(t0 + FIVE * 4, FIVE).is_err());
        drop(probe);
        assert!(d.start_at(t0 + FIVE * 4, FIVE).is_ok());
        // An answer (a beat on the lease connection) ends the silence.
        d.answered();
        let call = d.start_at(t0 + FIVE * 4, FIVE).unwrap();
        call.finish_at(t0 + FIVE * 4, &Ok(()));
        assert!(d.start_at(t0 + FIVE * 4, FIVE).is_ok());
    }

    #[test]
    fn an_error_the_server_sent_neither_begins_nor_ends_a_silence() {
        let d = Deadlines::new(FIVE);
        let now = Instant::now();
        let call = d.start_at(now, FIVE).unwrap();
        call.finish_at(now, &Err::<(), _>(anyhow::anyhow!("duplicate key")));
        assert!(d.start_at(now, FIVE).is_ok());
    }
}
