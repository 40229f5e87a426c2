//! What `/askrelay pending`, `history` and `grants` list, and for whom. A route's requests are
//! listed only where the route posts, to those who may answer on it there, so that a listing
//! never shows more than the route's own messages there do; `pending` without `all` lists
//! only the requests with a message at that place. Operators see every route's requests,
//! anywhere. A request this platform was never asked is never listed. Which of the listed
//! approvals a batch offers is `batch.rs`'s.

use super::{Person, Platform};
use crate::domain::grant::Grant;
use crate::domain::request::{Post, Request, Status};

/// Whether a listing at `place` shows `req` to `person`: a request this platform shows (its
/// owner's or a copy) through a route that posts there and that they may answer on
/// (operators: every such request).
pub fn sees(platform: &dyn Platform, person: &Person, place: &str, req: &Request) -> bool {
    req.shown_by(platform.name()) && (person.operator || platform.shows(req, person, place))
}

/// Whether `person` may have anything listed at `place`: an operator, or someone who may
/// answer on a route there.
pub fn lists_here(platform: &dyn Platform, person: &Person, place: &str) -> bool {
    person.operator || platform.answers_at(person, place, None)
}

/// The pending requests `pending` lists for `person` at `place`: those they see there, and
/// (without `all`) only those with a message of this platform's at that place.
pub fn pending<'a>(
    platform: &dyn Platform,
    person: &Person,
    place: &str,
    all: bool,
    pending: &'a [(Request, Vec<Post>)],
) -> Vec<&'a (Request, Vec<Post>)> {
    pending
        .iter()
        .filter(|(req, posts)| {
            sees(platform, person, place, req)
                && (all
                    || posts.iter().any(|p| {
                        p.answerer == platform.name() && !p.is_note() && p.channel == place
                    }))
        })
        .collect()
}

/// The ended requests of `recent` that `history` lists for `person` at `place`, at most `n`.
pub fn history<'a>(
    platform: &dyn Platform,
    person: &Person,
    place: &str,
    recent: &'a [(Request, Vec<Post>)],
    n: usize,
) -> Vec<&'a Request> {
    recent
        .iter()
        .filter(|(req, _)| req.status != Status::Pending && sees(platform, person, place, req))
        .take(n)
        .map(|(req, _)| req)
        .collect()
}

/// The live grants `grants` lists for `person` at `place`: those of a route they may answer
/// on there (operators: all).
pub fn grants<'a>(
    platform: &dyn Platform,
    person: &Person,
    place: &str,
    grants: &'a [Grant],
) -> Vec<&'a Grant> {
    grants
        .iter()
        .filter(|g| person.operator || platform.answers_at(person, place, Some(&g.route)))
        .collect()
}
