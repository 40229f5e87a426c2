//! The chat layer driven with no chat platform at all: a fake [`Platform`] whose allowlists and
//! places are plain sets, presses and forms as plain values, outcomes asserted as typed values.
//! A second adapter needs nothing more than what these tests supply.

use super::admit::{self, Refused};
use super::batch::{answerable, Skipped};
use super::confirm::{self, Pressed, WordFor};
use super::drafts::{NotSubmitted, UnsavedDrafts};
use super::form::{FormStep, Sent};
use super::grant::{
    self, PatternRefused, Waiting, WaitingPatterns, MAX_WAITING_PATTERNS_PER_PERSON,
};
use super::press::{decide_with, Form, Kept, Press, Refused as PressRefused, Shown, Step};
use super::{edit, listing, vote, Person, Platform};
use crate::domain::approval::fixtures::question;
use crate::domain::approval::Verdict;
use crate::domain::model::{Approval, Context};
use crate::domain::quorum::{Identity, Policy};
use crate::domain::request::{Actor, Answered, AuditAction, Post, Request, Status, Via};
use crate::domain::vote::Vote;
use crate::domain::{Question, Settlement};
use std::sync::Arc;

/// A platform of one place, `here`, whose allowlist is `allowed` (people or groups), with
/// `policy` on every route.
struct Fake {
    allowed: Vec<String>,
    policy: Policy,
}

impl Fake {
    fn allows(&self, p: &Person) -> bool {
        self.allowed.contains(&p.actor.id) || p.groups.iter().any(|g| self.allowed.contains(g))
    }
}

impl Platform for Fake {
    fn name(&self) -> &'static str {
        "fake"
    }
    fn may_answer(&self, _req: &Request, person: &Person, _now_ms: i64) -> bool {
        self.allows(person)
    }
    fn shows(&self, _req: &Request, person: &Person, place: &str) -> bool {
        place == "here" && self.allows(person)
    }
    fn answers_at(&self, person: &Person, place: &str, _route: Option<&str>) -> bool {
        place == "here" && self.allows(person)
    }
    fn policy(&self, _req: &Request) -> Policy {
        self.policy.clone()
    }
    fn host(&self) -> String {
        "h".into()
    }
}

fn fake() -> Fake {
    Fake {
        allowed: vec!["alice".into(), "ops".into()],
        policy: Policy::default(),
    }
}

fn person(id: &str, groups: &[&str]) -> Person {
    Person {
        actor: Actor {
            via: Via::Discord,
            id: id.into(),
            name: id.into(),
            note: None,
        },
        groups: groups.iter().map(|g| (*g).to_owned()).collect(),
        bot: false,
        operator: false,
    }
}

fn request(id: &str, token: &str, questions: Vec<Question>) -> Request {
    crate::domain::approval::fixtures::request("fake", id, token, questions)
}

fn approval_request() -> Request {
    request(
        "r",
        "0123456789abcdef0123",
        vec![question(&["Allow", "Deny"])],
    )
}

fn answered_by(who: &str) -> Answered {
    Answered {
        actor: person(who, &[]).actor,
        at_ms: 2_000,
        settlement: Settlement::choice(0),
    }
}

#[test]
fn a_press_is_checked_in_order_option_person_open_pending() {
    let f = fake();
    let req = approval_request();
    let alice = person("alice", &[]);
    let mut bot = person("bot", &[]);
    bot.bot = true;
    assert_eq!(admit::person(&bot).unwrap_err().action, AuditAction::Bot);
    assert!(admit::person(&alice).is_ok());
    // A forged option is refused before the person is looked at.
    let r = admit::press(&f, &req, 0, Some(2), &person("mallory", &[]), 0).unwrap_err();
    assert_eq!(
        (r.action, r.why),
        (AuditAction::Forged, Refused::NoSuchOption)
    );
    let r = admit::press(&f, &req, 0, Some(1), &person("mallory", &[]), 0).unwrap_err();
    assert_eq!(
        (r.action, r.why),
        (AuditAction::Denied, Refused::NotAllowed)
    );
    // A group on the allowlist lets its member answer.
    assert!(admit::press(&f, &req, 0, Some(1), &person("bob", &["ops"]), 0).is_ok());
    assert!(admit::press(&f, &req, 0, None, &alice, 0).is_ok());
    // Who answered tells a late presser more than "ended".
    let mut late = req.clone();
    late.answers[0] = Some(answered_by("carol"));
    late.status = Status::Answered;
    let r = admit::press(&f, &late, 0, Some(0), &alice, 0).unwrap_err();
    assert_eq!(r.action, AuditAction::Late);
    assert!(matches!(r.why, Refused::Answered(a) if a.actor.id == "carol"));
    let mut ended = req.clone();
    ended.status = Status::Cancelled;
    let r = admit::press(&f, &ended, 0, Some(0), &alice, 0).unwrap_err();
    assert_eq!(
        r.why,
        Refused::Ended {
            status: Status::Cancelled,
            error: None,
            withdrawn: None,
        }
    );
    // A withdrawn request says why, so that the late presser learns the terminal answered.
    ended.withdrawn = Some(crate::domain::request::WithdrawReason::AnsweredInTerminal);
    let r = admit::press(&f, &ended, 0, Some(0), &alice, 0).unwrap_err();
    assert_eq!(r.action, AuditAction::Late);
    assert!(matches!(
        r.why,
        Refused::Ended {
            withdrawn: Some(crate::domain::request::WithdrawReason::AnsweredInTerminal),
            ..
        }
    ));
}

#[test]
fn a_label_that_needs_the_word_asks_for_it_instead_of_settling() {
    let mut policy = Policy::default();
    policy.confirm.labels = vec!["Allow".into()];
    let req = approval_request();
    let q = &req.questions[0];
    let allow = Settlement::choice(0);
    let deny = Settlement::choice(1);
    assert_eq!(
        confirm::asks_word(&policy, q, &allow, Pressed::Choice),
        Some(WordFor::Choice(0))
    );
    assert_eq!(
        confirm::asks_word(&policy, q, &allow, Pressed::Submit),
        Some(WordFor::Draft)
    );
    assert_eq!(
        confirm::asks_word(&policy, q, &allow, Pressed::Grant(1)),
        Some(WordFor::Grant(1))
    );
    assert_eq!(confirm::asks_word(&policy, q, &deny, Pressed::Choice), None);
    // The word, trimmed, case and all.
    assert_eq!(confirm::word(&policy, &req), "approve");
    assert!(confirm::check(&policy, &req, "  approve ").is_ok());
    assert_eq!(confirm::check(&policy, &req, "Approve"), Err("approve"));
    // A note cannot carry the word.
    assert_eq!(
        confirm::note_needs_word(&policy, &req, q, &allow),
        Some((vec!["Allow"], "approve"))
    );
    assert_eq!(confirm::note_needs_word(&policy, &req, q, &deny), None);
}

#[test]
fn a_written_grant_is_checked_then_kept_until_saved() {
    let policy = Policy {
        grant_secs: vec![1800, 3600],
        ..Policy::default()
    };
    let s = grant::settlement(&policy, 1).unwrap();
    assert_eq!(s.selected, vec![0]);
    assert_eq!(s.terms.as_ref().unwrap().grant.as_ref().unwrap().secs, 3600);
    assert!(grant::settlement(&policy, 2).is_none(), "no such grant");
    let saved = grant::saved(&policy, 0, "cargo test *".into()).unwrap();
    let terms = saved.terms.unwrap().grant.unwrap();
    assert_eq!(
        (terms.secs, terms.pattern.as_deref()),
        (1800, Some("cargo test *"))
    );
    let secs = &policy.grant_secs;
    let command = Some("cargo test --all");
    assert_eq!(grant::check(command, secs, "1h", "cargo test *"), Ok(1));
    assert_eq!(
        grant::check(None, secs, "1h", "cargo test *"),
        Err(PatternRefused::NotApproval)
    );
    assert_eq!(
        grant::check(command, secs, "2h", "cargo test *"),
        Err(PatternRefused::Length)
    );
    assert!(matches!(
        grant::check(command, secs, "30m", "rm *"),
        Err(PatternRefused::NotAGrant(_))
    ));
    assert!(matches!(
        grant::check(command, secs, "30m", "cargo\ntest"),
        Err(PatternRefused::Line(_)) | Err(PatternRefused::NotAGrant(_))
    ));
}

#[test]
fn a_pattern_is_offered_where_its_word_fits_and_previewed_as_facts() {
    let approval = Approval {
        tool: "Bash".into(),
        command: "git clean -n --dry-run".into(),
        session: Some("s1".into()),
        editable: false,
    };
    let a = Some(&approval);
    assert!(grant::offers_pattern(&[1800], a, false, false));
    assert!(!grant::offers_pattern(&[], a, false, true), "no grants");
    assert!(
        !grant::offers_pattern(&[1800], None, false, true),
        "no approval"
    );
    // A label that needs the word: only a form with room for the word beside the pattern.
    assert!(!grant::offers_pattern(&[1800], a, true, false));
    assert!(grant::offers_pattern(&[1800], a, true, true));
    let chained = Approval {
        command: "make; rm -rf /".into(),
        ..approval.clone()
    };
    assert!(!grant::offers_pattern(&[1800], Some(&chained), false, true));

    let mut req = approval_request();
    req.context = Some(Arc::new(Context {
        approval: Some(approval),
        ..Context::default()
    }));
    req.peer.uid = Some(1000);
    let p = grant::preview(&req, &[1800, 28_800], "8h", "  git * --dry-run ").unwrap();
    assert_eq!(
        (p.pattern.as_str(), p.g, p.secs, p.kind, p.tool.as_str()),
        ("git * --dry-run", 1, 28_800, "pattern", "Bash")
    );
    assert_eq!(p.runs_other.as_ref().map(|r| r.0.as_str()), Some("git"));
    assert_eq!(
        p.requester.describe(|s| format!("<{s}>")),
        "uid 1000 in session <s1>"
    );
    assert_eq!(
        grant::preview(&req, &[1800], "8h", "git *"),
        Err(PatternRefused::Length)
    );
    assert_eq!(grant::short_length(5400), "1h30m");
}

#[test]
fn one_persons_grant_previews_never_push_out_anyone_elses() {
    let w_of = |pattern: &str, g| Waiting {
        pattern: pattern.to_owned(),
        g,
        typed: None,
    };
    let mut w = WaitingPatterns::default();
    w.insert("t-alice", "1", w_of("cargo test *", 0));
    for i in 0..5_000 {
        w.insert(&format!("t-{i}"), "2", w_of(&format!("p{i}"), 1));
    }
    assert_eq!(w.take("t-alice", "1"), Some(w_of("cargo test *", 0)));
    // Mallory keeps only her newest.
    assert_eq!(w.0["2"].len(), MAX_WAITING_PATTERNS_PER_PERSON);
    assert_eq!(w.take("t-4999", "2"), Some(w_of("p4999", 1)));
    assert_eq!(w.take("t-0", "2"), None);
    // A preview is taken once, by its own author, and a new one replaces an older one.
    assert_eq!(w.take("t-alice", "1"), None);
    w.insert("t", "3", w_of("a", 0));
    w.insert("t", "3", w_of("b", 1));
    assert_eq!(w.take("t", "2"), None);
    assert_eq!(w.take("t", "3"), Some(w_of("b", 1)));
    assert!(!w.0.contains_key("3"));
}

#[test]
fn an_edit_starts_from_the_last_voted_edit_and_unchanged_is_a_plain_allow() {
    let mut req = approval_request();
    req.context = Some(Arc::new(Context {
        text: None,
        files: Vec::new(),
        approval: Some(Approval {
            tool: "Bash".into(),
            command: "make deploy".into(),
            session: None,
            editable: true,
        }),
    }));
    assert_eq!(
        edit::starting_command(&req, 0, "make deploy"),
        "make deploy"
    );
    let edited = edit::edited(&req, "make deploy-staging".into());
    assert_eq!(
        edited.terms.as_ref().and_then(|t| t.edited.as_deref()),
        Some("make deploy-staging")
    );
    req.votes[0].push(Vote {
        person: "discord:alice".into(),
        via: "discord".into(),
        id: "alice".into(),
        name: "alice".into(),
        selected: vec![0],
        custom: None,
        at_ms: 1_500,
        terms: edited.terms.clone(),
    });
    assert_eq!(
        edit::starting_command(&req, 0, "make deploy"),
        "make deploy-staging"
    );
    let plain = edit::edited(&req, "make deploy".into());
    assert_eq!((plain.selected, plain.terms), (vec![0], None));
}

#[test]
fn a_draft_that_failed_to_save_is_remembered_until_one_saves() {
    let d = UnsavedDrafts::default();
    assert!(!d.unsaved(1, 0, "alice"));
    d.mark(1, 0, "alice", false);
    assert!(d.unsaved(1, 0, "alice"));
    assert!(!d.unsaved(1, 0, "bob") && !d.unsaved(1, 1, "alice"));
    d.mark(1, 0, "alice", true);
    assert!(!d.unsaved(1, 0, "alice"));
}

#[test]
fn a_batch_offers_and_checks_as_a_press_would() {
    let f = fake();
    let req = approval_request();
    let alice = person("alice", &[]);
    assert!(answerable(&f, &req, &alice, 0));
    assert!(!answerable(&f, &req, &person("mallory", &[]), 0));
    // Another platform's request is never offered.
    let mut elsewhere = req.clone();
    elsewhere.answerer = Some("terminal".into());
    elsewhere.answerers = vec!["terminal".into()];
    assert!(!answerable(&f, &elsewhere, &alice, 0));
    // A copy this platform shows of a request another answerer owns is.
    elsewhere.answerers.push("fake".into());
    assert!(answerable(&f, &elsewhere, &alice, 0));
    // The requester, on a route that excludes them, is not offered their own request.
    let excluding = Fake {
        policy: Policy {
            exclude_requester: true,
            identities: Arc::from(vec![Identity {
                name: "alice".into(),
                uids: vec![1000],
                hosts: Vec::new(),
                platform_ids: vec!["alice".into()],
                sessions: Vec::new(),
            }]),
            ..Policy::default()
        },
        ..fake()
    };
    assert!(!answerable(&excluding, &req, &alice, 0));
    // One selected request's checks: listed here, an approval, allowed, open.
    let check =
        |r: &Request, p: &Person, place: &str, v| super::batch::check(&f, r, p, place, v, 0);
    assert_eq!(check(&req, &alice, "here", Verdict::Deny), Ok(1));
    assert_eq!(
        check(&req, &alice, "there", Verdict::Allow),
        Err(Skipped::NotListed)
    );
    let yes_no = request("r", "t", vec![question(&["Yes", "No"])]);
    assert_eq!(
        check(&yes_no, &alice, "here", Verdict::Allow),
        Err(Skipped::NotApproval(Verdict::Allow))
    );
    let mut operator = person("olga", &[]);
    operator.operator = true;
    assert_eq!(
        check(&req, &operator, "there", Verdict::Allow),
        Err(Skipped::NotAllowed)
    );
    let mut ended = req.clone();
    ended.status = Status::Expired;
    assert_eq!(
        check(&ended, &alice, "here", Verdict::Allow),
        Err(Skipped::Ended(Status::Expired))
    );
    assert_eq!(Skipped::NotListed.action(), AuditAction::Stale);
}

fn post(channel: &str, answerer: &str) -> Post {
    Post {
        idx: 0,
        answerer: answerer.into(),
        slot: "".parse().unwrap(),
        channel: channel.into(),
        guild: None,
        nonce: "n".into(),
        message: Some("1".into()),
        attempts: 0,
        last_error: None,
        edited: crate::domain::request::EditState::None,
    }
}

#[test]
fn a_listing_shows_what_the_person_may_answer_where_they_are() {
    let f = fake();
    let posted_here = (approval_request(), vec![post("here", "fake")]);
    let posted_elsewhere = (approval_request(), vec![post("1234", "fake")]);
    let mut terminal = approval_request();
    terminal.answerer = Some("terminal".into());
    terminal.answerers = vec!["terminal".into()];
    let pending = vec![posted_here, posted_elsewhere, (terminal, Vec::new())];
    let alice = person("alice", &[]);
    assert!(listing::lists_here(&f, &alice, "here"));
    assert!(!listing::lists_here(&f, &alice, "there"));
    assert_eq!(
        listing::pending(&f, &alice, "here", false, &pending).len(),
        1
    );
    assert_eq!(
        listing::pending(&f, &alice, "here", true, &pending).len(),
        2
    );
    assert!(listing::pending(&f, &person("mallory", &[]), "here", true, &pending).is_empty());
    // Operators see every request of this platform, anywhere; never the terminal's.
    let mut olga = person("olga", &[]);
    olga.operator = true;
    assert!(listing::lists_here(&f, &olga, "there"));
    let listed = listing::pending(&f, &olga, "there", true, &pending);
    assert_eq!(listed.len(), 2);
    // The batch offers only what the operator may answer.
    assert!(super::batch::offered(&f, &olga, &listed, 0).is_empty());
    let listed = listing::pending(&f, &alice, "here", true, &pending);
    assert_eq!(super::batch::offered(&f, &alice, &listed, 0).len(), 2);
    let mut ended = approval_request();
    ended.status = Status::Answered;
    let recent = vec![(ended, Vec::new()), pending[0].clone()];
    assert_eq!(listing::history(&f, &alice, "here", &recent, 10).len(), 1);
    assert!(listing::history(&f, &alice, "here", &recent, 0).is_empty());
}

#[test]
fn a_store_failure_is_told_by_its_class_only() {
    assert_eq!(
        vote::failure_class("(code: 5) database is locked"),
        "askrelay's database was busy"
    );
    assert_eq!(
        vote::failure_class("disk I/O error at /var/lib/askrelay/askrelay.db"),
        "askrelay's database failed"
    );
}

#[test]
fn not_saved_names_the_class_of_the_cause_and_never_its_text() {
    let not_saved = vote::not_saved;
    let busy = not_saved(
        "the answer could not be saved (storage error: error returned from database: (code: 5) database is locked); nothing changed, try again",
    );
    assert_eq!(
        busy,
        "Your answer could not be saved, try again (askrelay's database was busy). Nothing was recorded."
    );
    assert!(not_saved("canceling statement due to lock timeout").contains("was busy"));
    let failed = not_saved("disk I/O error at /var/lib/askrelay/askrelay.db");
    assert!(failed.contains("askrelay's database failed"), "{failed}");
    assert!(!failed.contains("/var/lib"), "{failed}");
    assert_eq!(failed.lines().count(), 1);
    let late = not_saved(
        "the request could not be saved (storage error: the database did not answer within 5 s \
         (postgres.db_deadline_secs)); nothing changed, try again",
    );
    assert_eq!(
        late,
        "Your answer could not be saved, try again (askrelay's database did not answer in time). \
         Nothing was recorded."
    );
}

/// What `press` by alice on the approval comes to, with `draft` as her saved selection.
async fn step(
    kept: &Kept,
    policy: &Policy,
    press: Press,
    shown: Shown,
    draft: Result<Settlement, NotSubmitted>,
) -> Step {
    let req = approval_request();
    decide_with(kept, &req, 0, policy, "alice", press, shown, || async {
        draft
    })
    .await
}

#[tokio::test]
async fn a_press_comes_to_a_settlement_a_form_a_draft_or_a_refusal() {
    let kept = Kept::default();
    let policy = Policy {
        grant_secs: vec![1800],
        ..Policy::default()
    };
    let none = Shown::default();
    let draft = || Ok(Settlement::choice(1));
    let s = |p| step(&kept, &policy, p, Shown::default(), draft());
    assert_eq!(
        s(Press::Choose(1)).await,
        Step::Settle(Settlement::choice(1))
    );
    assert_eq!(
        s(Press::SelectOne(Some(vec![0]))).await,
        Step::Settle(Settlement::choice(0))
    );
    for bad in [
        Press::SelectOne(Some(vec![0, 1])),
        Press::SelectOne(None),
        Press::Draft(None),
    ] {
        assert_eq!(s(bad).await, Step::Refuse(PressRefused::BadSelection));
    }
    assert_eq!(
        s(Press::Draft(Some(vec![0, 1]))).await,
        Step::SaveDraft(vec![0, 1])
    );
    assert!(matches!(s(Press::Grant(0)).await, Step::Settle(g) if g.terms.is_some()));
    assert_eq!(
        s(Press::Grant(1)).await,
        Step::Refuse(PressRefused::NoSuchGrant)
    );
    assert_eq!(s(Press::Submit).await, Step::Settle(Settlement::choice(1)));
    assert_eq!(s(Press::Other).await, Step::Open(Form::Other));
    assert_eq!(s(Press::SubmitWithNote).await, Step::Open(Form::Note));
    // A draft that failed to save is never submitted in its place.
    assert_eq!(
        step(
            &kept,
            &policy,
            Press::Submit,
            none.clone(),
            Err(NotSubmitted::LastNotSaved)
        )
        .await,
        Step::NotSubmitted(NotSubmitted::LastNotSaved)
    );
    // Edit… and Allow matching… only where the question shows them.
    assert_eq!(
        s(Press::Edit).await,
        Step::Refuse(PressRefused::NotEditable)
    );
    assert_eq!(
        s(Press::GrantPattern).await,
        Step::Refuse(PressRefused::NoSuchGrant)
    );
    let shown = Shown {
        editable: Some("make deploy".into()),
        grantable: true,
    };
    assert_eq!(
        step(&kept, &policy, Press::Edit, shown.clone(), draft()).await,
        Step::Open(Form::Edit("make deploy".into()))
    );
    assert_eq!(
        step(&kept, &policy, Press::GrantPattern, shown, draft()).await,
        Step::Open(Form::GrantPattern)
    );
    // Save grant takes the pattern alice previewed, once.
    assert_eq!(
        s(Press::SaveGrant(0)).await,
        Step::Refuse(PressRefused::NoPatternWaiting)
    );
    kept.patterns.lock().unwrap().insert(
        "0123456789abcdef0123",
        "alice",
        Waiting {
            pattern: "cargo test *".into(),
            g: 0,
            typed: Some("approve".into()),
        },
    );
    assert!(matches!(
        s(Press::SaveGrant(0)).await,
        Step::SaveGrant { typed: Some(w), .. } if w == "approve"
    ));
    assert_eq!(
        s(Press::SaveGrant(0)).await,
        Step::Refuse(PressRefused::NoPatternWaiting)
    );
}

#[tokio::test]
async fn a_press_of_a_label_that_needs_the_word_asks_for_it() {
    let kept = Kept::default();
    let mut policy = Policy {
        grant_secs: vec![1800],
        ..Policy::default()
    };
    policy.confirm.labels = vec!["Allow".into()];
    let allow = || Ok(Settlement::choice(0));
    let s = |p| step(&kept, &policy, p, Shown::default(), allow());
    assert_eq!(s(Press::Choose(0)).await, Step::AskWord(WordFor::Choice(0)));
    assert_eq!(
        s(Press::Choose(1)).await,
        Step::Settle(Settlement::choice(1))
    );
    assert_eq!(s(Press::Submit).await, Step::AskWord(WordFor::Draft));
    assert_eq!(s(Press::Grant(0)).await, Step::AskWord(WordFor::Grant(0)));
    assert_eq!(
        s(Press::SubmitWithNote).await,
        Step::Refuse(PressRefused::NoteNeedsWord {
            labels: vec!["Allow".into()],
            word: "approve".into()
        })
    );
}

/// What alice's form `sent` on the approval comes to, with `draft` as her saved selection.
async fn sent(
    policy: &Policy,
    sent: Sent,
    text: Option<&str>,
    word: Option<&str>,
    draft: Result<Settlement, NotSubmitted>,
) -> FormStep {
    let req = approval_request();
    let (text, word) = (text.map(str::to_owned), word.map(str::to_owned));
    super::form::decide_with(&req, policy, sent, text, word, || async { draft }).await
}

#[tokio::test]
async fn a_form_comes_to_a_settlement_a_preview_or_a_refusal() {
    let p = Policy {
        grant_secs: vec![1800],
        ..Policy::default()
    };
    let draft = || Ok(Settlement::choice(1));
    let settle = |settlement, typed: Option<&str>| FormStep::Settle {
        settlement,
        typed: typed.map(str::to_owned),
    };
    assert_eq!(
        sent(&p, Sent::Other, Some("  "), None, draft()).await,
        FormStep::Empty
    );
    assert_eq!(
        sent(&p, Sent::Answer, Some("later"), None, draft()).await,
        settle(Settlement::text("later"), None)
    );
    let note = Settlement {
        custom: Some("why".into()),
        ..Settlement::choice(1)
    };
    assert_eq!(
        sent(&p, Sent::Note, Some("why"), None, draft()).await,
        settle(note, None)
    );
    assert_eq!(
        sent(
            &p,
            Sent::Note,
            Some("why"),
            None,
            Err(NotSubmitted::LastNotSaved)
        )
        .await,
        FormStep::NotSubmitted(NotSubmitted::LastNotSaved)
    );
    assert_eq!(
        sent(&p, Sent::GrantPattern, Some("cargo test *"), None, draft()).await,
        FormStep::Preview {
            pattern: "cargo test *".into(),
            typed: None
        }
    );
    // Where the allow label needs the word, the pattern's form carries it, checked here.
    let mut worded = p.clone();
    worded.confirm.labels = vec!["Allow".into()];
    let pattern = |word: Option<&'static str>| {
        let worded = worded.clone();
        async move {
            sent(
                &worded,
                Sent::GrantPattern,
                Some("cargo test *"),
                word,
                draft(),
            )
            .await
        }
    };
    assert_eq!(
        pattern(None).await,
        FormStep::WordMismatch("approve".into())
    );
    assert_eq!(
        pattern(Some("Approve")).await,
        FormStep::WordMismatch("approve".into())
    );
    assert_eq!(
        pattern(Some(" approve ")).await,
        FormStep::Preview {
            pattern: "cargo test *".into(),
            typed: Some(" approve ".into())
        }
    );
    // An edit carries the word of its second input; the confirm form is the word itself.
    assert!(matches!(
        sent(&p, Sent::Edit, Some("make"), Some("approve"), draft()).await,
        FormStep::Settle { typed: Some(w), .. } if w == "approve"
    ));
    assert_eq!(
        sent(
            &p,
            Sent::Word(WordFor::Choice(0)),
            Some("nope"),
            None,
            draft()
        )
        .await,
        FormStep::WordMismatch("approve".into())
    );
    assert_eq!(
        sent(
            &p,
            Sent::Word(WordFor::Choice(0)),
            Some(" approve"),
            None,
            draft()
        )
        .await,
        settle(Settlement::choice(0), Some(" approve"))
    );
    assert_eq!(
        sent(
            &p,
            Sent::Word(WordFor::Draft),
            Some("approve"),
            None,
            draft()
        )
        .await,
        settle(Settlement::choice(1), Some("approve"))
    );
    assert_eq!(
        sent(
            &p,
            Sent::Word(WordFor::Grant(3)),
            Some("approve"),
            None,
            draft()
        )
        .await,
        FormStep::NoSuchGrant
    );
}
