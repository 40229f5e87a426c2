//! The clicker: follows the messages the stand-in created and clicks each question's planned
//! option (or casts its ballots) until the click counts, again after a restart or a timeout.

use super::plan::{Expect, PlannedRequest};
use super::shared::{ClickRec, Shared, Step};
use super::{Rng, CLICK_TIMEOUT, SEND_LIMIT};
use crate::fixtures::{self, Clicker};
use crate::standin::{Recorded, StandIn};
use askrelay::answerer::discord::custom_id::{self, Action};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::{sleep, timeout, Instant};

pub(super) enum Kind {
    Button(String),
    SelectOne(String, String),
    Multi {
        draft: String,
        submit: String,
        values: Vec<String>,
    },
}

pub(super) struct InFlight {
    iid: u64,
    epoch: u64,
    sent: Instant,
}

pub(super) struct Target {
    token: String,
    channel: u64,
    message: u64,
    /// The control of each ballot of the question, in the plan's order.
    kinds: Vec<Kind>,
    /// The ballot being clicked; the question is done after the last.
    ballot: usize,
    step: Step,
    not_before: Instant,
    inflight: Option<InFlight>,
    confirmed: bool,
    /// The request ended without an answer: nothing more to click.
    dead: bool,
    /// A draft whose save was slow (its update deferred): the person reads its follow-up
    /// ("saved", or "could not save, try again") before pressing Submit.
    awaiting_draft: Option<u64>,
}

/// How long the person waits for a slow draft's follow-up before choosing again.
pub(super) const DRAFT_FOLLOW_UP_WAIT: Duration = Duration::from_secs(20);

pub(super) struct ClickerOut {
    /// (request, question) that got at least one settling click, and when the first was sent.
    pub(super) settle_clicked: HashMap<(usize, usize), Instant>,
    /// (request, question) → request key, from the messages.
    pub(super) keys: HashMap<(usize, usize), String>,
}

pub(super) struct ClickerTask {
    pub(super) standin: StandIn,
    pub(super) plan: Arc<Vec<PlannedRequest>>,
    pub(super) shared: Arc<Shared>,
    pub(super) rng: Rng,
    pub(super) click_spread: Duration,
    /// No click before this: the end of the ramp.
    pub(super) clicks_from: Instant,
    /// Everyone who clicks, by the index a ballot names ([`people`]).
    pub(super) people: Vec<Clicker>,
    /// Every option label → (request, question, option).
    pub(super) labels: HashMap<String, (usize, usize, usize)>,
    pub(super) targets: BTreeMap<(usize, usize), Target>,
    /// Interaction id → (request, question, step, ballot).
    pub(super) iids: HashMap<u64, (usize, usize, Step, usize)>,
    pub(super) next_iid: u64,
    pub(super) message_cursor: usize,
    pub(super) request_cursor: usize,
    pub(super) finished_seen: Vec<bool>,
    pub(super) settle_clicked: HashMap<(usize, usize), Instant>,
    pub(super) confirmed_count: usize,
    pub(super) unexpected_replies: usize,
}

impl ClickerTask {
    pub(super) async fn run(mut self) -> ClickerOut {
        let mut changes = self.standin.subscribe();
        let mut done = self.shared.all_done.subscribe();
        loop {
            if *done.borrow() {
                break;
            }
            self.scan_messages();
            self.scan_requests();
            self.scan_finals();
            self.click_due();
            let now = (self.targets.len(), self.confirmed_count);
            self.shared.progress.send_if_modified(|p| {
                let changed = *p != now;
                *p = now;
                changed
            });
            tokio::select! {
                _ = changes.changed() => {}
                _ = sleep(Duration::from_millis(50)) => {}
                _ = done.wait_for(|&d| d) => {}
            }
            // Let a burst of changes collect before the next scan.
            sleep(Duration::from_millis(5)).await;
        }
        if self.unexpected_replies > 0 {
            self.shared.note(format!(
                "{} interaction replies were neither an acknowledgement nor \"already answered\"",
                self.unexpected_replies
            ));
        }
        ClickerOut {
            settle_clicked: self.settle_clicked,
            keys: self
                .targets
                .iter()
                .map(|(k, t)| (*k, t.token.clone()))
                .collect(),
        }
    }

    /// New messages in the channel: one target per question (the first message for it).
    fn scan_messages(&mut self) {
        let new = self.standin.created_messages_from(self.message_cursor);
        self.message_cursor += new.len();
        for m in new {
            let Some(found) = self.target_of(&m) else {
                continue;
            };
            let (rq, target) = found;
            match self.targets.entry(rq) {
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(target);
                }
                // The question posted again in the same channel (a duplicate; with the
                // stand-in's nonce de-duplication off it stays one): a person would click the
                // newest, and so does the clicker, so that a duplicate shows as a duplicate
                // and not also as a lost answer.
                std::collections::btree_map::Entry::Occupied(mut e) => {
                    let t = e.get_mut();
                    if t.channel == target.channel && !t.confirmed && !t.dead {
                        t.message = target.message;
                    }
                }
            }
        }
    }

    fn target_of(&mut self, m: &Value) -> Option<((usize, usize), Target)> {
        let message: u64 = m["id"].as_str()?.parse().ok()?;
        let channel: u64 = m["channel_id"].as_str()?.parse().ok()?;
        let mut ids: Vec<(custom_id::CustomId, String)> = Vec::new();
        let mut rq = None;
        for row in m["components"].as_array().into_iter().flatten() {
            for c in row["components"].as_array().into_iter().flatten() {
                let Some(raw) = c["custom_id"].as_str() else {
                    continue;
                };
                let Some(id) = custom_id::parse(raw) else {
                    self.shared.problem(format!(
                        "message {message}: a custom_id that does not parse: {raw:?}"
                    ));
                    continue;
                };
                ids.push((id, raw.to_owned()));
                let mut labels: Vec<&str> = c["label"].as_str().into_iter().collect();
                for o in c["options"].as_array().into_iter().flatten() {
                    labels.extend(o["label"].as_str());
                }
                for l in labels {
                    if let Some(&(r, q, _)) = self.labels.get(l) {
                        rq = Some((r, q));
                    }
                }
            }
        }
        let Some((r, q)) = rq else {
            self.shared.problem(format!(
                "message {message} in channel {channel} shows no option of any planned question"
            ));
            return None;
        };
        let pq = &self.plan[r].questions[q];
        let token = ids.first()?.0.token.clone();
        if ids
            .iter()
            .any(|(id, _)| id.token != token || id.question != q)
        {
            self.shared.problem(format!(
                "message {message} for {} question {q} carries custom_ids of another question: {:?}",
                self.plan[r].request_id,
                ids.iter().map(|(_, s)| s).collect::<Vec<_>>()
            ));
        }
        let find = |want: &dyn Fn(Action) -> bool| {
            ids.iter()
                .find(|(id, _)| want(id.action))
                .map(|(_, s)| s.clone())
        };
        let kind_of = |pick: &[usize]| {
            if pq.multi {
                find(&|a| a == Action::Draft)
                    .zip(find(&|a| a == Action::Submit))
                    .map(|(draft, submit)| Kind::Multi {
                        draft,
                        submit,
                        values: pick.iter().map(|o| o.to_string()).collect(),
                    })
            } else if pq.labels.len() <= 5 {
                let want = pick[0];
                find(&|a| a == Action::Choose(want)).map(Kind::Button)
            } else {
                find(&|a| a == Action::SelectOne).map(|id| Kind::SelectOne(id, pick[0].to_string()))
            }
        };
        let kinds: Option<Vec<Kind>> = pq.ballots.iter().map(|b| kind_of(&b.pick)).collect();
        let Some(kinds) = kinds else {
            self.shared.problem(format!(
                "message {message} for {} question {q} lacks a control the harness clicks: {:?}",
                self.plan[r].request_id,
                ids.iter().map(|(_, s)| s).collect::<Vec<_>>()
            ));
            return None;
        };
        let delay = self.rng.below(self.click_spread.as_millis() as u64 + 1);
        Some((
            (r, q),
            Target {
                token,
                channel,
                message,
                step: if pq.multi { Step::Draft } else { Step::Settle },
                kinds,
                ballot: 0,
                not_before: Instant::now().max(self.clicks_from) + Duration::from_millis(delay),
                inflight: None,
                confirmed: false,
                dead: false,
                awaiting_draft: None,
            },
        ))
    }

    /// A follow-up of a slow draft: "saved" moves the person on to Submit; anything else
    /// ("could not save your selection, try again") has them choose again.
    fn note_follow_up(&mut self, r: &Recorded) {
        let Some(iid) = r
            .path
            .rsplit('/')
            .next()
            .and_then(|t| t.strip_prefix("tok"))
            .and_then(|t| t.parse::<u64>().ok())
        else {
            return;
        };
        let Some(&(ri, qi, _, _)) = self.iids.get(&iid) else {
            return;
        };
        let Some(t) = self.targets.get_mut(&(ri, qi)) else {
            return;
        };
        if t.awaiting_draft != Some(iid) {
            return;
        }
        t.awaiting_draft = None;
        let content = r
            .body
            .as_ref()
            .and_then(|b| b["content"].as_str())
            .unwrap_or_default();
        if content.contains("selection was saved") {
            t.step = Step::Settle;
            t.not_before = Instant::now();
        } else {
            t.step = Step::Draft;
            t.not_before = Instant::now() + Duration::from_millis(300);
        }
    }

    /// New REST requests: the callbacks of our interactions, and the follow-ups of slow
    /// drafts.
    fn scan_requests(&mut self) {
        let new = self.standin.requests_from(self.request_cursor);
        self.request_cursor += new.len();
        for r in new {
            let segs: Vec<&str> = r.path.split('/').collect();
            if r.method == "POST" && segs.contains(&"webhooks") {
                self.note_follow_up(&r);
                continue;
            }
            let Some(at) = segs.iter().position(|s| *s == "interactions") else {
                continue;
            };
            if segs.last() != Some(&"callback") {
                continue;
            }
            let Some(iid) = segs.get(at + 1).and_then(|s| s.parse::<u64>().ok()) else {
                continue;
            };
            let Some(&(ri, qi, step, ballot)) = self.iids.get(&iid) else {
                continue;
            };
            if let Some(rec) = self.shared.click_log.lock().unwrap().get_mut(&iid) {
                rec.note_callback(&r);
            }
            let Some(t) = self.targets.get_mut(&(ri, qi)) else {
                continue;
            };
            let current = t.inflight.as_ref().is_some_and(|f| f.iid == iid);
            if !(200..300).contains(&r.status) {
                // Discord failed the callback (injected): the click may or may not have counted.
                if current {
                    t.inflight = None;
                    t.not_before = Instant::now() + Duration::from_millis(100);
                }
                continue;
            }
            let body = r.body.clone().unwrap_or(Value::Null);
            let kind = body["type"].as_u64();
            let content = body["data"]["content"].as_str().unwrap_or("");
            if t.confirmed || t.dead {
                continue;
            }
            let already_answered = content.starts_with("Already answered")
                || content.contains("already been answered");
            if ballot != t.ballot {
                // A late reply to a click of a ballot that is done already.
                if kind == Some(4) && already_answered {
                    t.confirmed = true;
                    self.confirmed_count += 1;
                }
                continue;
            }
            let pq = &self.plan[ri].questions[qi];
            let rid = &self.plan[ri].request_id;
            let expect = pq.ballots[ballot].expect;
            let who = &self.people[pq.ballots[ballot].who].username;
            // The message still shows its controls: the question is open.
            let open = body["data"]["components"]
                .as_array()
                .is_some_and(|c| !c.is_empty());
            // Whether this ballot is done: a draft is acknowledged (type 6); a vote or the
            // settling click updates the message (type 7), a vote showing the count so far.
            let done = match kind {
                Some(6) if step == Step::Draft => {
                    if t.step == Step::Draft && current {
                        let dispatched = self
                            .shared
                            .click_log
                            .lock()
                            .unwrap()
                            .get(&iid)
                            .and_then(|c| c.dispatched);
                        let slow = dispatched.is_some_and(|d| {
                            Instant::from_std(r.at).saturating_duration_since(d)
                                >= Duration::from_millis(1500)
                        });
                        t.inflight = None;
                        if slow {
                            // Deferred: its follow-up says whether the selection was saved.
                            t.awaiting_draft = Some(iid);
                            t.not_before = Instant::now() + DRAFT_FOLLOW_UP_WAIT;
                        } else {
                            t.step = Step::Settle;
                            t.not_before = Instant::now();
                        }
                    }
                    false
                }
                Some(7) if step == Step::Settle => {
                    match expect {
                        Expect::Refused => self.shared.problem(format!(
                            "{rid} question {qi}: the requester's click on a quorum route was \
                             taken: {body}"
                        )),
                        Expect::Votes if !open => self.shared.problem(format!(
                            "{rid} question {qi}: {who}'s vote (ballot {} of {}) settled the \
                             question before the quorum of {} was reached",
                            ballot + 1,
                            pq.ballots.len(),
                            self.plan[ri].approvals
                        )),
                        Expect::Settles if open => self.shared.problem(format!(
                            "{rid} question {qi}: {who}'s vote completes the quorum, and the \
                             question is still open"
                        )),
                        _ => {}
                    }
                    true
                }
                Some(4) if already_answered => {
                    t.confirmed = true;
                    self.confirmed_count += 1;
                    false
                }
                // A deferred update: the store took longer than 2 s, and what became of the
                // click follows as an edit or a follow-up. Click again a moment later, as a
                // person would: "already answered" or "already voted" if it counted.
                Some(6) => {
                    if current {
                        t.inflight = None;
                        t.not_before = Instant::now() + Duration::from_millis(500);
                    }
                    false
                }
                // The vote was stored before: a click repeated after a restart or a failed
                // callback. The last one may have completed the quorum without settling it
                // (a crash between the two): the next start settles it.
                Some(4) if content.contains("already voted") && expect != Expect::Refused => true,
                Some(4) if content.contains("another person must answer it") => {
                    if expect != Expect::Refused {
                        self.shared.problem(format!(
                            "{rid} question {qi}: {who} was refused as the requester: {content:?}"
                        ));
                    }
                    true
                }
                Some(4) if content.contains("has ended") => {
                    t.dead = true;
                    false
                }
                // "Submit" after a draft that failed to save (its deferred update said so in
                // a follow-up), or one made before a restart or a change of leader (which
                // cannot know of a later one that failed): choose again, as a person would,
                // then Submit.
                Some(4) if content.contains("choose your options again") => {
                    if current {
                        t.step = Step::Draft;
                        t.inflight = None;
                        t.not_before = Instant::now() + Duration::from_millis(500);
                    }
                    false
                }
                _ => {
                    self.unexpected_replies += 1;
                    self.shared.log(format!(
                        "unexpected reply to {who}'s click on {rid} question {qi}: {body}"
                    ));
                    if current {
                        t.inflight = None;
                        t.not_before = Instant::now() + Duration::from_millis(500);
                    }
                    false
                }
            };
            if done {
                t.ballot += 1;
                t.inflight = None;
                if t.ballot >= pq.ballots.len() {
                    t.confirmed = true;
                    self.confirmed_count += 1;
                } else {
                    // The next person clicks a moment later.
                    t.step = if pq.multi { Step::Draft } else { Step::Settle };
                    t.not_before = Instant::now() + self.rng.millis(0, 300);
                }
            }
        }
    }

    /// Requests whose client has its final line: their questions need no more clicks.
    fn scan_finals(&mut self) {
        let newly: Vec<(usize, bool)> = {
            let reqs = self.shared.reqs.lock().unwrap();
            reqs.iter()
                .enumerate()
                .filter(|(i, r)| r.finished && !self.finished_seen[*i])
                .map(|(i, r)| {
                    let answered = r
                        .finals
                        .first()
                        .is_some_and(|l| l.starts_with("{\"event\":\"answered\""));
                    (i, answered)
                })
                .collect()
        };
        for (i, answered) in newly {
            self.finished_seen[i] = true;
            for q in 0..self.plan[i].questions.len() {
                match self.targets.get_mut(&(i, q)) {
                    Some(t) if !t.confirmed => {
                        if answered {
                            t.confirmed = true;
                            self.confirmed_count += 1;
                        } else {
                            t.dead = true;
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    fn click_due(&mut self) {
        let now = Instant::now();
        let epoch = self.shared.epoch.load(Ordering::SeqCst);
        let due: Vec<(usize, usize, bool)> = self
            .targets
            .iter()
            .filter(|(_, t)| !t.confirmed && !t.dead && now >= t.not_before)
            .filter_map(|(k, t)| match &t.inflight {
                None => Some((k.0, k.1, false)),
                Some(f)
                    if (f.epoch != epoch && now >= f.sent + Duration::from_millis(300))
                        || now >= f.sent + CLICK_TIMEOUT =>
                {
                    Some((k.0, k.1, true))
                }
                Some(_) => None,
            })
            .collect();
        for (r, q, repeat) in due {
            if repeat {
                self.shared.clicks_repeated.fetch_add(1, Ordering::Relaxed);
            }
            self.click(r, q, epoch, now);
        }
    }

    fn click(&mut self, r: usize, q: usize, epoch: u64, now: Instant) {
        let iid = self.next_iid;
        self.next_iid += 1;
        let app = self.standin.application_id();
        let guild = self.standin.guild_id();
        let t = self.targets.get_mut(&(r, q)).expect("a target");
        let at = fixtures::At {
            application_id: app,
            guild_id: Some(guild),
            channel_id: t.channel,
            message_id: t.message,
        };
        let ballot = &self.plan[r].questions[q].ballots[t.ballot];
        let who = &self.people[ballot.who];
        let payload = match (&t.kinds[t.ballot], t.step) {
            (Kind::Button(id), _) => fixtures::component_click(iid, &at, who, id),
            (Kind::SelectOne(id, value), _) => {
                fixtures::select_values(iid, &at, who, id, &[value.as_str()])
            }
            (Kind::Multi { draft, values, .. }, Step::Draft) => {
                let values: Vec<&str> = values.iter().map(String::as_str).collect();
                fixtures::select_values(iid, &at, who, draft, &values)
            }
            (Kind::Multi { submit, .. }, Step::Settle) => {
                fixtures::component_click(iid, &at, who, submit)
            }
        };
        // The question counts as clicked once its last ballot's settling click is sent.
        let last = t.ballot + 1 == self.plan[r].questions[q].ballots.len();
        if t.step == Step::Settle && last {
            self.settle_clicked.entry((r, q)).or_insert(now);
        }
        t.inflight = Some(InFlight {
            iid,
            epoch,
            sent: now,
        });
        self.iids.insert(iid, (r, q, t.step, t.ballot));
        self.shared.click_log.lock().unwrap().insert(
            iid,
            ClickRec {
                iid,
                request: r,
                question: q,
                ballot: t.ballot,
                step: t.step,
                dispatched: None,
                updated: None,
                replied: None,
                discord_failed: false,
            },
        );
        self.shared.clicks.fetch_add(1, Ordering::Relaxed);
        let standin = self.standin.clone();
        let shared = self.shared.clone();
        tokio::spawn(async move {
            let sent = timeout(SEND_LIMIT, standin.send_interaction(payload)).await;
            if sent.is_ok() {
                if let Some(rec) = shared.click_log.lock().unwrap().get_mut(&iid) {
                    rec.dispatched = Some(Instant::now());
                }
            }
            if sent.is_err() {
                shared.problem(format!(
                    "no live gateway session for {} s to deliver a click to",
                    SEND_LIMIT.as_secs()
                ));
            }
        });
    }
}
