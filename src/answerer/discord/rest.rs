//! Discord REST: pacing, retries and what a failure means.
//!
//! serenity's rate limiter reacts to 429s per route but never paces, and lets every request
//! through while it knows nothing of a bucket. So calls here take turns per channel (one create
//! at a time, in the order asked) and, with the limiter on, a slot under Discord's global limit
//! of 50 requests a second. Failures are sorted into transient (retry with backoff) and
//! permanent (give up and say why).

use crate::domain::metrics::RestRecorder;
use serenity::all::{ChannelId, InteractionId, Message, MessageId};
use serenity::builder::{
    CreateInteractionResponse, CreateInteractionResponseFollowup, CreateInteractionResponseMessage,
    CreateMessage, EditInteractionResponse, EditMessage,
};
use serenity::http::{Http, HttpError};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long an interaction's answer may take before it is deferred, the same for every
/// interaction (a click, a modal, `/askrelay`, a batch): Discord drops an interaction whose
/// first response comes after 3 s ("This interaction failed"), so a deferral at 2 s leaves a
/// second for its own trip to Discord, and work that is quick, as a store write nearly always
/// is, is answered in one callback as before.
pub const DEFER_AFTER: Duration = Duration::from_millis(2000);

/// An interaction's work raced against [`DEFER_AFTER`] ([`Rest::in_time_or_defer`]).
pub enum Timely<T> {
    /// Done in time: answer it with its callback as usual.
    InTime(T),
    /// Slow: the interaction was deferred first (`Ok`), or the deferral failed (`Err`), and
    /// the work ran on to its end meanwhile. What it says goes as a follow-up or an edit.
    Deferred(T, Result<(), Failure>),
}

/// A Discord failure, sorted by what to do about it.
#[derive(Debug)]
pub enum Failure {
    /// Worth retrying: 429, 5xx, a network error.
    Transient(String),
    /// Retrying will not help: an unknown channel, a missing permission, a rejected body.
    Permanent(String),
}

impl Failure {
    pub fn message(&self) -> &str {
        match self {
            Failure::Transient(m) | Failure::Permanent(m) => m,
        }
    }
}

/// Sorts a serenity error. Messages name the status and Discord's code, never the token.
pub fn classify(e: &serenity::Error) -> Failure {
    match e {
        serenity::Error::Http(HttpError::UnsuccessfulRequest(r)) => {
            let status = r.status_code.as_u16();
            let what = format!(
                "Discord answered {} {} (code {}: {})",
                status,
                r.status_code.canonical_reason().unwrap_or(""),
                r.error.code,
                r.error.message
            );
            if status == 429 || status >= 500 {
                Failure::Transient(what)
            } else {
                Failure::Permanent(what)
            }
        }
        serenity::Error::Http(HttpError::Request(re)) => Failure::Transient(format!(
            "cannot reach Discord ({})",
            if re.is_timeout() {
                "timed out"
            } else if re.is_connect() {
                "connection failed"
            } else {
                "the request failed"
            }
        )),
        other => Failure::Permanent(format!("Discord request failed: {other}")),
    }
}

/// Discord allows a bot 50 REST requests a second over all routes. Every call but interaction
/// responses and their follow-ups, which Discord exempts, takes a slot here first (channel
/// checks, posts, edits, the command registration, serenity's gateway URL), so that a burst
/// over many channels stays under the global limit.
struct GlobalPace {
    sent: tokio::sync::Mutex<VecDeque<tokio::time::Instant>>,
}

const GLOBAL_REQUESTS: usize = 50;
/// A little over Discord's second, for the skew between our clock and when Discord counts.
const GLOBAL_WINDOW: Duration = Duration::from_millis(1050);

/// The REST side of the Discord answerer.
pub(crate) struct Rest {
    pub http: Arc<Http>,
    /// The client behind `http`, for the one call serenity cannot make right (see
    /// [`Rest::send_with_files`]).
    client: reqwest::Client,
    retry_max_delay_ms: u64,
    /// Every call's deadline (`discord.request_timeout_ms`).
    request_timeout: Duration,
    /// The guild of each channel (`None` for a DM channel), learned by the channel check.
    guilds: Mutex<HashMap<u64, Option<u64>>>,
    /// The DM channel of each user askrelay opened one with.
    dms: Mutex<HashMap<u64, u64>>,
    /// One queue per channel: channel checks and message creates in a channel go one at a
    /// time, each response telling serenity's limiter the bucket before the next request. It
    /// also keeps questions in the order they were asked.
    lanes: Mutex<HashMap<u64, Arc<tokio::sync::Mutex<()>>>>,
    /// `Some` when serenity's rate limiter is on (no REST proxy).
    pace: Option<GlobalPace>,
    shutdown: CancellationToken,
    /// Counts every call's outcome (`askrelay_discord_rest_responses_total`).
    metrics: Arc<dyn RestRecorder>,
}

impl Rest {
    pub fn new(
        http: Arc<Http>,
        client: reqwest::Client,
        paced: bool,
        retry_max_delay_ms: u64,
        request_timeout: Duration,
        shutdown: CancellationToken,
        metrics: Arc<dyn RestRecorder>,
    ) -> Rest {
        Rest {
            http,
            client,
            retry_max_delay_ms,
            request_timeout,
            guilds: Mutex::new(HashMap::new()),
            dms: Mutex::new(HashMap::new()),
            lanes: Mutex::new(HashMap::new()),
            pace: paced.then(|| GlobalPace {
                sent: tokio::sync::Mutex::new(VecDeque::new()),
            }),
            shutdown,
            metrics,
        }
    }

    /// The queue of `channel` (see `lanes`).
    fn lane(&self, channel: u64) -> Arc<tokio::sync::Mutex<()>> {
        self.lanes
            .lock()
            .unwrap()
            .entry(channel)
            .or_default()
            .clone()
    }

    /// Waits until serenity's bucket for creating messages in `channel` has room, so that the
    /// global slot taken next is used at once.
    async fn wait_for_channel_bucket(&self, channel: u64) {
        let Some(limiter) = &self.http.ratelimiter else {
            return;
        };
        let key = serenity::http::Route::ChannelMessages {
            channel_id: ChannelId::new(channel),
        }
        .ratelimiting_bucket();
        let bucket = limiter.routes().read().await.get(&key).cloned();
        let Some(bucket) = bucket else { return };
        let wait = {
            let b = bucket.lock().await;
            match b.reset() {
                Some(reset) if b.remaining() == 0 => {
                    reset.duration_since(std::time::SystemTime::now()).ok()
                }
                _ => None,
            }
        };
        if let Some(d) = wait {
            self.pause(d).await;
        }
    }

    /// Waits for a slot under Discord's global limit; at once behind a REST proxy. Every REST
    /// request but interaction responses takes one, serenity's own included (the gateway URL
    /// it asks for as a client is built): Discord counts them all.
    pub(super) async fn global_slot(&self) {
        let Some(pace) = &self.pace else { return };
        let mut sent = pace.sent.lock().await;
        loop {
            let now = tokio::time::Instant::now();
            while sent
                .front()
                .is_some_and(|t| now.duration_since(*t) >= GLOBAL_WINDOW)
            {
                sent.pop_front();
            }
            match sent.front() {
                Some(&oldest) if sent.len() >= GLOBAL_REQUESTS => {
                    tokio::time::sleep_until(oldest + GLOBAL_WINDOW).await;
                }
                _ => {
                    sent.push_back(now);
                    return;
                }
            }
        }
    }

    /// The wait before retry number `attempt` (1-based): exponential from 250 ms up to
    /// `discord.retry_max_delay_ms`, plus up to 50% jitter so that retries do not march in step.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let max = self.retry_max_delay_ms.max(1);
        let base = 250u64
            .saturating_mul(1 << attempt.saturating_sub(1).min(16))
            .min(max);
        Duration::from_millis(base + rand_ms(base / 2 + 1))
    }

    /// Sleeps unless the daemon shuts down first; false on shutdown.
    pub async fn pause(&self, d: Duration) -> bool {
        tokio::select! {
            _ = self.shutdown.cancelled() => false,
            _ = tokio::time::sleep(d) => true,
        }
    }

    /// Runs one Discord call under its deadline: a call that hangs past it is a transient
    /// failure, like a 5xx, so that it is retried and never holds anything up for good.
    pub async fn call<T>(
        &self,
        deadline: Duration,
        fut: impl Future<Output = serenity::Result<T>>,
    ) -> Result<T, Failure> {
        let outcome = tokio::time::timeout(deadline, fut).await;
        self.metrics.rest_response(&match &outcome {
            Ok(Ok(_)) => "2xx".to_owned(),
            Ok(Err(serenity::Error::Http(HttpError::UnsuccessfulRequest(r)))) => {
                r.status_code.as_u16().to_string()
            }
            Ok(Err(serenity::Error::Http(HttpError::Request(_)))) => "network".to_owned(),
            Ok(Err(_)) => "other".to_owned(),
            Err(_) => "timeout".to_owned(),
        });
        match outcome {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(classify(&e)),
            Err(_) => Err(Failure::Transient(format!(
                "Discord did not answer within {} ms",
                deadline.as_millis()
            ))),
        }
    }

    /// [`Rest::call`] in a slot under the global limit ([`Rest::global_slot`]), for a call with
    /// no channel turn of its own.
    pub async fn paced<T>(
        &self,
        deadline: Duration,
        fut: impl Future<Output = serenity::Result<T>>,
    ) -> Result<T, Failure> {
        self.global_slot().await;
        self.call(deadline, fut).await
    }

    /// An interaction's callback, through [`Rest::call`]. serenity's limiter (on against
    /// discord.com) keys the callback route's bucket by the interaction's id and never drops a
    /// bucket: every click would leave one behind for the daemon's lifetime. An interaction
    /// takes one callback, so its bucket goes with it.
    pub async fn respond<T>(
        &self,
        deadline: Duration,
        interaction: InteractionId,
        token: &str,
        fut: impl Future<Output = serenity::Result<T>>,
    ) -> Result<T, Failure> {
        let sent = self.call(deadline, fut).await;
        if let Some(limiter) = &self.http.ratelimiter {
            let key = serenity::http::Route::InteractionResponse {
                interaction_id: interaction,
                token,
            }
            .ratelimiting_bucket();
            limiter.routes().write().await.remove(&key);
        }
        sent
    }

    /// Runs an interaction's `work` and, when it is not done within [`DEFER_AFTER`], answers
    /// the interaction with `defer` (a deferred reply, type 5, or a deferred update, type 6)
    /// while the work goes on, so that Discord hears back within its 3 s whatever the work
    /// waits for (a store write behind another writer's lock). The work always runs to its
    /// end: what it stored stays stored, and the caller says so by a follow-up.
    pub async fn in_time_or_defer<T>(
        &self,
        deadline: Duration,
        id: InteractionId,
        token: &str,
        defer: &CreateInteractionResponse,
        work: impl Future<Output = T>,
    ) -> Timely<T> {
        tokio::pin!(work);
        tokio::select! {
            biased;
            done = &mut work => Timely::InTime(done),
            _ = tokio::time::sleep(DEFER_AFTER) => {
                let http = &self.http;
                let (deferred, done) = tokio::join!(
                    self.respond(deadline, id, token, http.create_interaction_response(id, token, defer, Vec::new())),
                    &mut work,
                );
                if let Err(f) = &deferred {
                    tracing::warn!(error = %f.message(), "cannot defer a slow interaction");
                }
                Timely::Deferred(done, deferred)
            }
        }
    }

    /// Answers an interaction privately within Discord's 3 s: with `work`'s message when it is
    /// ready within [`DEFER_AFTER`], else with a deferred private reply first and `work`'s edit
    /// of it after (`/askrelay`, a batch of approvals).
    pub async fn answer_in_time(
        &self,
        deadline: Duration,
        id: InteractionId,
        token: &str,
        what: &str,
        work: impl Future<Output = (CreateInteractionResponseMessage, EditInteractionResponse)>,
    ) -> Result<(), Failure> {
        let http = &self.http;
        let defer = CreateInteractionResponse::Defer(
            CreateInteractionResponseMessage::new().ephemeral(true),
        );
        match self
            .in_time_or_defer(deadline, id, token, &defer, work)
            .await
        {
            Timely::InTime((msg, _)) => {
                let msg = CreateInteractionResponse::Message(msg);
                self.respond(
                    deadline,
                    id,
                    token,
                    http.create_interaction_response(id, token, &msg, Vec::new()),
                )
                .await
            }
            Timely::Deferred((_, edit), deferred) => {
                deferred?;
                self.retry(what, 3, || async {
                    self.call(
                        deadline * 4,
                        http.edit_original_interaction_response(token, &edit, Vec::new()),
                    )
                    .await
                })
                .await
                .map(|_| ())
            }
        }
    }

    /// A private message to the person behind an interaction already answered (deferred):
    /// `POST /webhooks/{application}/{token}`, with flag 64, retried like an edit (the token
    /// stays valid for 15 minutes).
    pub async fn follow_up(
        &self,
        deadline: Duration,
        token: &str,
        message: CreateInteractionResponseFollowup,
    ) -> Result<(), Failure> {
        let message = message.ephemeral(true);
        self.retry("sending a follow-up", 3, || async {
            self.call(
                deadline * 4,
                self.http
                    .create_followup_message(token, &message, Vec::new()),
            )
            .await
        })
        .await
        .map(|_| ())
    }

    /// Runs `op` until it succeeds, fails for good, or has failed `attempts` times, with
    /// backoff in between.
    pub async fn retry<T, F, Fut>(&self, what: &str, attempts: u32, mut op: F) -> Result<T, Failure>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Failure>>,
    {
        let mut attempt = 1;
        loop {
            match op().await {
                Ok(v) => return Ok(v),
                Err(f) => match f {
                    Failure::Transient(m) if attempt < attempts => {
                        let wait = self.backoff(attempt);
                        tracing::warn!(attempt, error = %m, retry_in_ms = wait.as_millis() as u64, "{what} failed; retrying");
                        if !self.pause(wait).await {
                            return Err(Failure::Transient(m));
                        }
                        attempt += 1;
                    }
                    f => return Err(f),
                },
            }
        }
    }

    /// The guild of a channel already checked.
    pub fn known_guild(&self, channel: u64) -> Option<Option<u64>> {
        self.guilds.lock().unwrap().get(&channel).copied()
    }

    /// Forgets what was learnt of `channel` (it is gone): the next use checks it again.
    pub fn forget_channel(&self, channel: u64) {
        self.guilds.lock().unwrap().remove(&channel);
    }

    /// Checks that the channel exists and the bot can see it, and learns its guild; once per
    /// channel (one check at a time, the others wait for its answer).
    pub async fn check_channel(&self, channel: u64, attempts: u32) -> Result<Option<u64>, Failure> {
        if let Some(g) = self.known_guild(channel) {
            return Ok(g);
        }
        let lane = self.lane(channel);
        let _turn = lane.lock().await;
        if let Some(g) = self.known_guild(channel) {
            return Ok(g);
        }
        let found = self
            .retry("checking the channel", attempts, || async move {
                self.global_slot().await;
                self.call(
                    self.request_timeout,
                    self.http.get_channel(ChannelId::new(channel)),
                )
                .await
            })
            .await?;
        let guild = found.guild().map(|g| g.guild_id.get());
        self.guilds.lock().unwrap().insert(channel, guild);
        Ok(guild)
    }

    /// The DM channel with `user`, opened (create DM) once per user and then remembered, with
    /// its guild known to be none.
    pub async fn open_dm(&self, user: u64) -> Result<u64, Failure> {
        if let Some(c) = self.dms.lock().unwrap().get(&user) {
            return Ok(*c);
        }
        self.global_slot().await;
        let body = serde_json::json!({ "recipient_id": user.to_string() });
        let channel = self
            .call(
                self.request_timeout,
                self.http.create_private_channel(&body),
            )
            .await?
            .id
            .get();
        self.dms.lock().unwrap().insert(user, channel);
        self.guilds.lock().unwrap().insert(channel, None);
        Ok(channel)
    }

    /// Creates a public thread named `name` in `channel`, with no starter message (an agent
    /// session's thread), and learns its guild. One attempt, under the global pace.
    pub async fn create_thread(&self, channel: u64, name: &str) -> Result<u64, Failure> {
        use serenity::all::{AutoArchiveDuration, ChannelType};
        let body = serenity::builder::CreateThread::new(name)
            .kind(ChannelType::PublicThread)
            .auto_archive_duration(AutoArchiveDuration::OneWeek);
        self.global_slot().await;
        let thread = self
            .call(
                self.request_timeout,
                self.http
                    .create_thread(ChannelId::new(channel), &body, None),
            )
            .await?;
        let id = thread.id.get();
        self.guilds
            .lock()
            .unwrap()
            .insert(id, Some(thread.guild_id.get()));
        Ok(id)
    }

    /// A link to a message.
    pub fn link(&self, channel: u64, message: u64) -> String {
        let guild = self.known_guild(channel).flatten();
        let g = guild.map_or("@me".to_owned(), |g| g.to_string());
        format!("https://discord.com/channels/{g}/{channel}/{message}")
    }

    /// Creates a message, in the channel's turn and under the global pace. One attempt,
    /// under the deadline: a hung create holds up its own channel only, and only that long.
    /// `live` is asked once the waits are over, right before the call ([`Live`]).
    pub async fn send(
        &self,
        channel: u64,
        message: CreateMessage,
        live: Live<'_>,
    ) -> Result<Message, Failure> {
        let lane = self.lane(channel);
        let _turn = lane.lock().await;
        self.wait_for_channel_bucket(channel).await;
        self.global_slot().await;
        still_live(live)?;
        self.call(
            self.request_timeout,
            ChannelId::new(channel).send_message(&self.http, message),
        )
        .await
    }

    /// Creates a message with files attached (`files`: name and bytes, in order), in the
    /// channel's turn and under the global pace, like [`Rest::send`].
    ///
    /// serenity 0.12 cannot send this body as Discord's spec has it: it writes each new
    /// attachment's placeholder id in `attachments` as a number where the spec has a snowflake
    /// string, and gives no way to set it. So this call builds the multipart body itself:
    /// `payload_json` (the message, with `attachments` of `{"id": "N", "filename": ...}`) and one
    /// `files[N]` part per file, sent with the same reqwest client, base URL and token as
    /// serenity's calls. Failures are sorted as [`classify`] sorts serenity's.
    pub async fn send_with_files(
        &self,
        channel: u64,
        message: &CreateMessage,
        files: &[(String, Vec<u8>)],
        live: Live<'_>,
    ) -> Result<Message, Failure> {
        let mut payload = serde_json::to_value(message)
            .map_err(|e| Failure::Permanent(format!("cannot encode the message: {e}")))?;
        payload["attachments"] = files
            .iter()
            .enumerate()
            .map(|(i, (name, _))| serde_json::json!({"id": i.to_string(), "filename": name}))
            .collect();
        let lane = self.lane(channel);
        let _turn = lane.lock().await;
        self.wait_for_channel_bucket(channel).await;
        self.global_slot().await;
        still_live(live)?;
        let mut form = reqwest::multipart::Form::new().text("payload_json", payload.to_string());
        for (i, (name, data)) in files.iter().enumerate() {
            let part = reqwest::multipart::Part::bytes(data.clone())
                .file_name(name.clone())
                .mime_str("text/plain; charset=utf-8")
                .map_err(|e| Failure::Permanent(format!("cannot attach {name}: {e}")))?;
            form = form.part(format!("files[{i}]"), part);
        }
        let base = self
            .http
            .proxy
            .as_deref()
            .unwrap_or(crate::config::DEFAULT_API_BASE)
            .trim_end_matches('/');
        let request = self
            .client
            .post(format!("{base}/api/v10/channels/{channel}/messages"))
            .header(reqwest::header::AUTHORIZATION, self.http.token())
            .header(reqwest::header::USER_AGENT, serenity::constants::USER_AGENT)
            .multipart(form)
            .send();
        let response = match tokio::time::timeout(self.request_timeout, request).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                return Err(Failure::Transient(format!(
                    "cannot reach Discord ({})",
                    if e.is_timeout() {
                        "timed out"
                    } else if e.is_connect() {
                        "connection failed"
                    } else {
                        "the request failed"
                    }
                )))
            }
            Err(_) => {
                return Err(Failure::Transient(format!(
                    "Discord did not answer within {} ms",
                    self.request_timeout.as_millis()
                )))
            }
        };
        let status = response.status();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<f64>().ok());
        let body = tokio::time::timeout(self.request_timeout, response.bytes())
            .await
            .map_err(|_| Failure::Transient("Discord stalled while answering".into()))?
            .map_err(|_| Failure::Transient("cannot read Discord's answer".into()))?;
        if status.is_success() {
            return serde_json::from_slice(&body).map_err(|e| {
                Failure::Permanent(format!(
                    "Discord answered with a message askrelay cannot read: {e}"
                ))
            });
        }
        #[derive(serde::Deserialize, Default)]
        struct DiscordError {
            #[serde(default)]
            code: i64,
            #[serde(default)]
            message: String,
        }
        let err: DiscordError = serde_json::from_slice(&body).unwrap_or_default();
        let what = format!(
            "Discord answered {} {} (code {}: {})",
            status.as_u16(),
            status.canonical_reason().unwrap_or(""),
            err.code,
            err.message
        );
        if status.as_u16() == 429 {
            // serenity's limiter never saw this call: keep to what Discord said here.
            if let Some(secs) = retry_after.filter(|s| s.is_finite() && *s > 0.0) {
                self.pause(Duration::from_secs_f64(secs.min(60.0))).await;
            }
            return Err(Failure::Transient(what));
        }
        if status.is_server_error() {
            return Err(Failure::Transient(what));
        }
        Err(Failure::Permanent(what))
    }

    /// Edits a message, retrying transient failures `attempts` times; `live` is asked before
    /// each attempt, once its wait for the global pace is over ([`Live`]).
    pub async fn edit(
        &self,
        channel: u64,
        message: u64,
        edit: &EditMessage,
        attempts: u32,
        live: Live<'_>,
    ) -> Result<(), Failure> {
        self.retry("editing the question message", attempts, || async move {
            self.global_slot().await;
            if !live() {
                // Not worth retrying: the next leader makes the edit.
                return Err(Failure::Permanent(LEAD_ENDED.into()));
            }
            self.call(
                self.request_timeout,
                ChannelId::new(channel).edit_message(
                    &self.http,
                    MessageId::new(message),
                    edit.clone(),
                ),
            )
            .await
        })
        .await
        .map(|_| ())
    }
}

/// Whether a post or an edit may still be made: in a cluster, whether this node still leads in
/// the term that claimed it. A call can wait long for its channel's turn and the rate limits,
/// or be retried seconds later; a node whose lead ended meanwhile must not send it, or its
/// post or edit would land beside or after the new leader's (a settled message shown open
/// again).
pub type Live<'a> = &'a (dyn Fn() -> bool + Send + Sync);

/// What a call refused by its [`Live`] fails with.
pub const LEAD_ENDED: &str = "this node's lead ended before the call";

fn still_live(live: Live<'_>) -> Result<(), Failure> {
    if live() {
        Ok(())
    } else {
        Err(Failure::Transient(LEAD_ENDED.into()))
    }
}

/// A random number below `max`, for jitter: from the OS, so that tasks that fail together do
/// not retry together (the clock's nanoseconds, read by tasks woken at the same instant, are
/// much alike).
fn rand_ms(max: u64) -> u64 {
    if max == 0 {
        return 0;
    }
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        // No OS randomness at all: a v4 UUID's random bits (it has its own fallback).
        bytes.copy_from_slice(&uuid::Uuid::new_v4().as_bytes()[..8]);
    }
    u64::from_le_bytes(bytes) % max
}

#[cfg(test)]
mod tests {
    use super::*;
    use serenity::all::HttpBuilder;

    #[test]
    fn jitter_is_below_its_bound_and_varies() {
        assert_eq!(rand_ms(0), 0);
        let draws: Vec<u64> = (0..64).map(|_| rand_ms(1000)).collect();
        assert!(draws.iter().all(|d| *d < 1000));
        // 64 draws from 1000 values, all equal: about 1 in 10^189.
        assert!(draws.iter().any(|d| *d != draws[0]), "{draws:?}");
    }

    /// A `Rest` whose serenity limiter is on, in front of a port where nothing listens.
    fn limited_rest() -> Rest {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", closed.local_addr().unwrap());
        drop(closed);
        let http = HttpBuilder::new("Bot test-token").proxy(base).build();
        assert!(http.ratelimiter.is_some());
        Rest::new(
            Arc::new(http),
            reqwest::Client::new(),
            true,
            1000,
            Duration::from_secs(5),
            CancellationToken::new(),
            Arc::new(crate::domain::metrics::Silent),
        )
    }

    async fn buckets(rest: &Rest) -> usize {
        rest.http
            .ratelimiter
            .as_ref()
            .unwrap()
            .routes()
            .read()
            .await
            .len()
    }

    /// Quick work is answered in time and never deferred; slow work is deferred at
    /// [`DEFER_AFTER`] and still runs to its end, whether the deferral reached Discord or not
    /// (here nothing listens, so it did not).
    #[tokio::test]
    async fn slow_work_is_deferred_and_still_runs_to_its_end() {
        let rest = limited_rest();
        let id = InteractionId::new(7);
        let ack = CreateInteractionResponse::Acknowledge;
        let quick = rest
            .in_time_or_defer(Duration::from_secs(1), id, "tok", &ack, async { "stored" })
            .await;
        assert!(matches!(quick, Timely::InTime("stored")));
        let started = tokio::time::Instant::now();
        let slow = rest
            .in_time_or_defer(Duration::from_secs(1), id, "tok", &ack, async {
                tokio::time::sleep(DEFER_AFTER + Duration::from_millis(100)).await;
                "stored late"
            })
            .await;
        match slow {
            Timely::Deferred(done, deferred) => {
                assert_eq!(done, "stored late");
                assert!(deferred.is_err(), "nothing listens there");
            }
            Timely::InTime(_) => panic!("slow work was not deferred"),
        }
        assert!(started.elapsed() >= DEFER_AFTER + Duration::from_millis(100));
    }

    #[tokio::test]
    async fn an_interaction_callback_leaves_no_bucket_in_the_limiter() {
        let rest = limited_rest();
        let body = serde_json::json!({"type": 6});
        for id in 1..=3u64 {
            let id = InteractionId::new(id);
            let sent = rest
                .respond(
                    Duration::from_secs(5),
                    id,
                    "tok",
                    rest.http
                        .create_interaction_response(id, "tok", &body, Vec::new()),
                )
                .await;
            assert!(sent.is_err(), "nothing listens there");
        }
        assert_eq!(buckets(&rest).await, 0);
        // Through `call` alone, serenity keeps the bucket: what `respond` is for.
        let id = InteractionId::new(4);
        let _ = rest
            .call(
                Duration::from_secs(5),
                rest.http
                    .create_interaction_response(id, "tok", &body, Vec::new()),
            )
            .await;
        assert_eq!(buckets(&rest).await, 1);
    }
}
