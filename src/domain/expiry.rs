//! Expiry: how long a request may wait for people, and what happens when nobody answered.
//!
//! The deadline is computed once, when the request is stored, and stored with it (with the
//! policy), so a restart resumes it and a config change never moves the deadline of a request
//! already asked. The hub keeps the deadlines of pending requests in a [`Deadlines`] queue, one
//! timer for all of them, and ends or answers each request when its time comes.

use super::answer::Settlement;
use super::model::{Question, RECOMMENDED_SUFFIX};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// What happens when a request's expiry runs out (`on_expire`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnExpire {
    /// The agent gets `EXPIRED` and the messages say so.
    #[default]
    Fail,
    /// Each open question gets its recommended option (the label ending in " (Recommended)");
    /// a question without one makes it `Fail`.
    Recommended,
    /// Each open question gets the option with this label; a question without it makes it
    /// `Fail`.
    Select(String),
}

impl OnExpire {
    /// The answer this policy gives `q`, if it gives one.
    pub fn choose(&self, q: &Question) -> Option<Settlement> {
        let idx = match self {
            OnExpire::Fail => None,
            OnExpire::Recommended => q
                .options
                .iter()
                .position(|o| o.label.ends_with(RECOMMENDED_SUFFIX)),
            OnExpire::Select(label) => q.options.iter().position(|o| &o.label == label),
        }?;
        Some(Settlement::choice(idx))
    }

    /// The answers for every open question (`open` gives their indices), or `None` when the
    /// policy cannot answer one of them: then the whole request fails, so that an agent never
    /// gets half of its questions decided by a default.
    pub fn answers(
        &self,
        questions: &[Question],
        open: impl Iterator<Item = usize>,
    ) -> Option<Vec<(usize, Settlement)>> {
        open.map(|i| Some((i, self.choose(questions.get(i)?)?)))
            .collect()
    }

    /// How the policy reads in the config and in messages.
    pub fn describe(&self) -> String {
        match self {
            OnExpire::Fail => "fail".to_owned(),
            OnExpire::Recommended => "recommended".to_owned(),
            OnExpire::Select(l) => format!("select {l:?}"),
        }
    }
}

/// An expiry rule from the config: `[expiry]`, or a route's `expiry`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct ExpiryRule {
    /// Requests nobody answered within this many seconds expire; never when unset.
    pub after_secs: Option<u64>,
    pub on_expire: OnExpire,
    /// The operator's opt-in to an `on_expire` that allows an approval when nobody answered
    /// (refused at start-up without it: docs/approvals.md, "Expiry on approval routes").
    pub approve_unattended: bool,
}

impl ExpiryRule {
    /// The expiry of a request asked at `created_at_ms` under this rule.
    pub fn for_request(&self, created_at_ms: i64) -> Option<Expiry> {
        let after = self.after_secs?;
        Some(Expiry {
            at_ms: created_at_ms.saturating_add((after as i64).saturating_mul(1000)),
            on_expire: self.on_expire.clone(),
        })
    }
}

/// A request's stored expiry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expiry {
    /// When it runs out, in Unix milliseconds.
    pub at_ms: i64,
    pub on_expire: OnExpire,
}

/// "2h", "15m", "1m 30s", "2d 3h": a wait as people say it, for messages (whole seconds, in
/// jiff's friendly format; a day is 24 hours, and days are the largest unit).
pub fn human(d: Duration) -> String {
    let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
    let span = jiff::Span::new().try_seconds(secs).and_then(|s| {
        s.round(
            jiff::SpanRound::new()
                .largest(jiff::Unit::Day)
                .days_are_24_hours(),
        )
    });
    match span {
        Ok(span) => format!("{span:#}"),
        // Past what a span holds (hundreds of years): in seconds.
        Err(_) => format!("{secs}s"),
    }
}

/// A queue of deadlines (Unix milliseconds) with one timer: [`Deadlines::run`] hands each item
/// to its callback once its time has come. The stored deadlines are the truth; this is only
/// the index that says which comes next, filled again from the store at start-up.
pub struct Deadlines<K> {
    queue: Mutex<BTreeSet<(i64, K)>>,
    changed: Notify,
}

impl<K: Ord + Clone> Default for Deadlines<K> {
    fn default() -> Self {
        Deadlines {
            queue: Mutex::new(BTreeSet::new()),
            changed: Notify::new(),
        }
    }
}

impl<K: Ord + Clone + Send + 'static> Deadlines<K> {
    pub fn insert(&self, at_ms: i64, k: K) {
        let earliest = {
            let mut q = self.queue.lock().unwrap();
            q.insert((at_ms, k));
            q.first().map(|f| f.0) == Some(at_ms)
        };
        if earliest {
            self.changed.notify_one();
        }
    }

    pub fn remove(&self, at_ms: i64, k: &K) {
        let mut q = self.queue.lock().unwrap();
        q.remove(&(at_ms, k.clone()));
    }

    /// Forgets every deadline (their owner stopped acting on them).
    pub fn clear(&self) {
        self.queue.lock().unwrap().clear();
        self.changed.notify_one();
    }

    pub fn len(&self) -> usize {
        self.queue.lock().unwrap().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes every item due at `now_ms`.
    fn take_due(&self, now_ms: i64) -> Vec<K> {
        let mut q = self.queue.lock().unwrap();
        let mut due = Vec::new();
        while q.first().is_some_and(|f| f.0 <= now_ms) {
            due.extend(q.pop_first().map(|(_, k)| k));
        }
        due
    }

    fn next_at(&self) -> Option<i64> {
        self.queue.lock().unwrap().first().map(|f| f.0)
    }

    /// Calls `due` for each item whose time has come, in order, until `shutdown`. `now` reads
    /// the clock (Unix milliseconds).
    pub async fn run<F, Fut>(&self, shutdown: &CancellationToken, now: fn() -> i64, mut due: F)
    where
        F: FnMut(K) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        loop {
            for k in self.take_due(now()) {
                due(k).await;
            }
            let wait = match self.next_at() {
                // At most a minute at a time: the wall clock may jump.
                Some(at) => Duration::from_millis((at - now()).clamp(0, 60_000) as u64),
                None => Duration::from_secs(60),
            };
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = self.changed.notified() => {}
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::model::QuestionOption;

    fn q(labels: &[&str]) -> Question {
        Question {
            id: "q".into(),
            question: "?".into(),
            header: None,
            options: labels
                .iter()
                .map(|l| QuestionOption {
                    label: (*l).into(),
                    description: None,
                })
                .collect(),
            multi_select: false,
        }
    }

    #[test]
    fn each_policy_chooses_its_option_or_nothing() {
        let yes_no = q(&["Yes", "No, keep them (Recommended)"]);
        assert_eq!(OnExpire::Fail.choose(&yes_no), None);
        assert_eq!(
            OnExpire::Recommended.choose(&yes_no),
            Some(Settlement::choice(1))
        );
        assert_eq!(
            OnExpire::Select("Yes".into()).choose(&yes_no),
            Some(Settlement::choice(0))
        );
        assert_eq!(OnExpire::Select("yes".into()).choose(&yes_no), None);
        assert_eq!(OnExpire::Recommended.choose(&q(&["A", "B"])), None);
        // "(Recommended)" must be the suffix, with its space.
        assert_eq!(
            OnExpire::Recommended.choose(&q(&["A(Recommended)", "B"])),
            None
        );
    }

    #[test]
    fn one_question_the_policy_cannot_answer_fails_them_all() {
        let qs = [q(&["A (Recommended)", "B"]), q(&["C", "D"])];
        assert_eq!(
            OnExpire::Recommended
                .answers(&qs, [0].into_iter())
                .unwrap()
                .len(),
            1
        );
        assert_eq!(OnExpire::Recommended.answers(&qs, [0, 1].into_iter()), None);
        assert_eq!(OnExpire::Recommended.answers(&qs, [5].into_iter()), None);
    }

    #[test]
    fn waits_read_as_people_say_them() {
        assert_eq!(human(Duration::from_secs(7200)), "2h");
        assert_eq!(human(Duration::from_secs(900)), "15m");
        assert_eq!(human(Duration::from_millis(45_900)), "45s");
        assert_eq!(human(Duration::from_secs(90)), "1m 30s");
        assert_eq!(human(Duration::from_secs(5400)), "1h 30m");
        assert_eq!(human(Duration::ZERO), "0s");
        // Days are the largest unit (humantime said "1day 2h", and "1month …" past 30.44 days).
        assert_eq!(human(Duration::from_secs(26 * 3600)), "1d 2h");
        assert_eq!(human(Duration::from_secs(40 * 86400 + 61)), "40d 1m 1s");
        assert_eq!(human(Duration::MAX), format!("{}s", i64::MAX));
    }

    #[tokio::test]
    async fn deadlines_come_due_in_order() {
        let d = Deadlines::<u32>::default();
        d.insert(30, 3);
        d.insert(10, 1);
        d.insert(20, 2);
        d.remove(20, &2);
        assert_eq!(d.take_due(15), vec![1]);
        assert_eq!(d.take_due(100), vec![3]);
        assert!(d.is_empty());
    }
}
