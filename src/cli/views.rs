//! The commands that read: `pending`, `history` (and its export with `--since`) and `health`,
//! printed for people (every agent text escaped) or as the protocol's JSON.

use super::{connect, unexpected, EXIT_UNREACHABLE};
use crate::client::{Client, Target};
use crate::domain::text::Escaped;
use crate::protocol::{Event, Op, RequestView};
use anyhow::Result;

/// Every page of the pending list, and the outbox backlog the first page reported.
pub(super) async fn all_pending(
    client: &mut Client,
) -> Result<Result<(Vec<RequestView>, Option<crate::protocol::OutboxBacklog>), Event>> {
    let mut out = Vec::new();
    let mut backlog = None;
    let mut after = None;
    loop {
        let op = Op::Pending {
            request_id: None,
            limit: None,
            after: after.take(),
        };
        match client.call(&op).await? {
            Event::Pending {
                requests,
                next,
                outbox,
            } => {
                out.extend(requests);
                backlog = backlog.or(outbox);
                match next {
                    Some(n) => after = Some(n),
                    None => return Ok(Ok((out, backlog))),
                }
            }
            other => return Ok(Err(other)),
        }
    }
}

pub(super) async fn pending(target: &Target, as_json: bool) -> Result<i32> {
    let mut client = match connect(target).await {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let (requests, backlog) = match all_pending(&mut client).await? {
        Ok(r) => r,
        Err(other) => return Ok(unexpected(&other)),
    };
    if let Some(b) = backlog.filter(|b| b.overdue > 0) {
        eprintln!(
            "askrelay: {} outbox item(s) overdue, the oldest for {} s: questions not posted or \
             messages not edited yet (is Discord down?); they are retried",
            b.overdue, b.oldest_secs
        );
    }
    if as_json {
        crate::outln!("{}", serde_json::to_string_pretty(&requests)?);
        return Ok(0);
    }
    if requests.is_empty() {
        crate::outln!("No pending requests.");
        return Ok(0);
    }
    let mut rows = Vec::new();
    for r in &requests {
        let mut id = Escaped(&r.request_id).to_string();
        if let Some(node) = &r.node {
            id.push_str(&format!("\non node {}", Escaped(node)));
        }
        let n = r.questions.len();
        for (i, q) in r.questions.iter().enumerate() {
            let unposted = q.post.as_ref().is_some_and(|p| !p.posted);
            let mut state = if q.answered.is_some() {
                "answered"
            } else if unposted {
                "unposted"
            } else {
                "open"
            }
            .to_owned();
            if i == 0 {
                state.push_str(&format!(
                    "\nvia {}",
                    r.answerer.as_deref().unwrap_or("(not yet)")
                ));
            }
            let kind = if q.options.is_empty() {
                "free text"
            } else if q.multi_select {
                "pick any"
            } else {
                "pick one"
            };
            let header = q
                .header
                .as_deref()
                .map(|h| format!("[{}] ", Escaped(h)))
                .unwrap_or_default();
            let of = if n > 1 {
                format!(", {} of {n}", i + 1)
            } else {
                String::new()
            };
            let mut cell = vec![format!(
                "{}: {header}{} ({kind}{of})",
                Escaped(&q.id),
                one_line(&q.question)
            )];
            for (j, o) in q.options.iter().enumerate() {
                cell.push(format!("{}. {}", j + 1, Escaped(o)));
                if let Some(d) = q.descriptions.get(j).and_then(Option::as_deref) {
                    cell.push(format!("   {}", Escaped(d)));
                }
            }
            if let Some(post) = q.post.as_ref().filter(|_| unposted) {
                cell.push(format!(
                    "not posted yet to channel {} after {} attempt(s): {}",
                    Escaped(&post.channel),
                    post.attempts,
                    Escaped(
                        post.last_error
                            .as_deref()
                            .unwrap_or("waiting for the first attempt")
                    )
                ));
            }
            if let Some(a) = &q.answered {
                cell.push(format!("answered by {}", answered_by(a)));
            }
            if i + 1 == n && !r.scope.is_empty() {
                let labels: Vec<String> = r
                    .scope
                    .iter()
                    .map(|(k, v)| format!("{}={}", Escaped(k), Escaped(v)))
                    .collect();
                cell.push(format!("scope: {}", labels.join(" ")));
            }
            rows.push(vec![
                if i == 0 { id.clone() } else { String::new() },
                state,
                cell.join("\n"),
            ]);
        }
    }
    print_rows(&["REQUEST", "STATE", "QUESTION"], rows, "pending");
    print_contexts(&requests);
    Ok(0)
}

/// The table of `pending` or `history` (`command`), its ids shortened when they would squeeze
/// the questions unreadable; then where the whole ids are.
fn print_rows(header: &[&str], mut rows: Vec<Vec<String>>, command: &str) {
    let cut = super::out::fit_ids(&mut rows);
    let mut table = super::out::table(header, 2);
    for row in rows {
        table.add_row(row);
    }
    super::out::print_table(&table);
    if cut {
        crate::outln!(
            "(ids ending in … are cut to fit; `askrelay {command} --json` has them whole)"
        );
    }
}

/// Each request's context below the table, headed by its id: a diff is read line by line.
fn print_contexts(requests: &[RequestView]) {
    for r in requests {
        if let Some(c) = &r.context {
            crate::outln!("");
            crate::outln!("{}:", Escaped(&r.request_id));
            print_context(c);
        }
    }
}

/// What is being approved, as Discord shows it with the question: the context's text and
/// each of its files (a command, a diff), line by line, every line escaped for the terminal.
fn print_context(c: &crate::protocol::ContextView) {
    let block = |title: &str, t: &crate::protocol::ContextText| {
        let size = if t.truncated {
            format!(" (the first {} of {} bytes)", t.content.len(), t.bytes)
        } else {
            String::new()
        };
        crate::outln!("    ── {title}{size} ──");
        for line in t.content.lines() {
            crate::outln!("    │ {}", Escaped(line));
        }
    };
    if let Some(t) = &c.text {
        block("context", t);
    }
    for f in &c.files {
        block(&Escaped(&f.name).to_string(), &f.text);
    }
}

fn answered_by(a: &crate::protocol::AnsweredView) -> String {
    let mut s = match a.via.as_str() {
        "terminal" => format!(
            "{} via terminal",
            Escaped(&crate::domain::request::local_user(&a.by, &a.id))
        ),
        "policy" => "the expiry policy".to_owned(),
        via => format!("{} via {}", Escaped(&a.by), Escaped(via)),
    };
    if let Some(n) = &a.note {
        s.push_str(&format!(", note “{}”", Escaped(n)));
    }
    s
}

fn one_line(s: &str) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let flat = Escaped(&flat).to_string();
    if flat.chars().count() > 80 {
        let cut: String = flat.chars().take(79).collect();
        format!("{cut}…")
    } else {
        flat
    }
}

pub(super) async fn history(target: &Target, limit: u32, as_json: bool) -> Result<i32> {
    let mut client = match connect(target).await {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let mut requests = Vec::new();
    let mut before = None;
    // Pages of at most the protocol's maximum, until `limit` requests or the oldest.
    while requests.len() < limit as usize {
        let want = (limit as usize - requests.len()).min(crate::protocol::PAGE_MAX as usize);
        match client
            .call(&Op::History {
                limit: Some(want as u32),
                before: before.take(),
            })
            .await?
        {
            Event::History {
                requests: page,
                next,
            } => {
                requests.extend(page);
                match next {
                    Some(n) => before = Some(n),
                    None => break,
                }
            }
            other => return Ok(unexpected(&other)),
        }
    }
    if as_json {
        crate::outln!("{}", serde_json::to_string_pretty(&requests)?);
        return Ok(0);
    }
    print_history(&requests)?;
    Ok(0)
}

/// The history table.
fn print_history(requests: &[RequestView]) -> Result<()> {
    if requests.is_empty() {
        crate::outln!("No requests yet.");
        return Ok(());
    }
    let mut rows = Vec::new();
    for r in requests {
        let outcome = if let Some(result) = &r.result {
            Escaped(&serde_json::to_string(result)?).to_string()
        } else if let Some(e) = &r.error {
            format!("{}: {}", e.code, Escaped(&e.message))
        } else {
            let open = r.questions.iter().filter(|q| q.answered.is_none()).count();
            format!("{open} question(s) open")
        };
        let mut id = Escaped(&r.request_id).to_string();
        if let Some(node) = &r.node {
            id.push_str(&format!("\non node {}", Escaped(node)));
        }
        let mut cell = Vec::new();
        for q in &r.questions {
            cell.push(format!("{}: {}", Escaped(&q.id), one_line(&q.question)));
            if let Some(a) = &q.answered {
                cell.push(format!("  answered by {} at {}", answered_by(a), a.at));
            }
        }
        cell.push(format!("→ {outcome}"));
        rows.push(vec![
            id,
            format!("{}\n{}", r.status, r.created_at),
            cell.join("\n"),
        ]);
    }
    print_rows(
        &["REQUEST", "STATUS, ASKED", "QUESTIONS AND OUTCOME"],
        rows,
        "history",
    );
    print_contexts(requests);
    Ok(())
}

/// `askrelay health`: the daemon's `health` reply as lines (or JSON); 0 when healthy, 1 when
/// degraded, 7 when the daemon cannot be reached.
pub(super) async fn health(target: &Target, as_json: bool) -> Result<i32> {
    let mut client = match connect(target).await {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let h = match client.call(&Op::Health).await {
        Ok(Event::Health(h)) => h,
        Ok(other) => return Ok(unexpected(&other)),
        Err(e) => {
            eprintln!(
                "askrelay: cannot reach the daemon at {}: {e:#}",
                target.socket.display()
            );
            return Ok(EXIT_UNREACHABLE);
        }
    };
    if as_json {
        crate::outln!("{}", serde_json::to_string(&h)?);
    } else {
        crate::outln!("status: {}", h.status.as_str());
        crate::outln!("store: {}", Escaped(&h.store.to_string()));
        crate::outln!("gateway: {}", h.gateway.as_str());
        for (name, state) in &h.connections {
            crate::outln!("  {}: {}", Escaped(name), state.as_str());
        }
        crate::outln!("answerers: {}", h.answerers.join(", "));
        crate::outln!("pending: {}", h.pending);
        if let Some(c) = &h.cluster {
            crate::outln!(
                "cluster: node {} is {}; leader: {} (epoch {}, last renewed {})",
                Escaped(&c.node),
                c.role,
                c.leader
                    .as_deref()
                    .map_or("none".into(), |l| Escaped(l).to_string()),
                c.epoch,
                c.leader_heartbeat_ms
                    .map_or("never seen".into(), |ms| format!(
                        "{:.1} s ago",
                        ms as f64 / 1000.0
                    ))
            );
        }
        crate::outln!(
            "outbox overdue: {} (oldest {} s)",
            h.outbox.overdue,
            h.outbox.oldest_secs
        );
        crate::outln!("version: {}", h.version);
    }
    if h.failing.is_empty() {
        Ok(0)
    } else {
        let parts: Vec<&str> = h.failing.iter().map(|p| p.as_str()).collect();
        eprintln!("askrelay: degraded: {} failing", parts.join(", "));
        Ok(1)
    }
}

/// The start of `DATE` (`YYYY-MM-DD`, or RFC 3339), UTC; or how long before now: `30m`, `1h`,
/// `7d`, `2w` (jiff's friendly spans, so `1h30m`, `2 days` and `1h ago` too).
pub(super) fn parse_since(date: &str) -> Result<std::time::SystemTime, String> {
    since_at(date, jiff::Timestamp::now())
}

/// [`parse_since`] as of `now`.
fn since_at(date: &str, now: jiff::Timestamp) -> Result<std::time::SystemTime, String> {
    let d = date.trim();
    // A time with its offset (`Z`, `+01:00`), else a date or a time without one, in UTC.
    let at = d
        .parse::<jiff::Timestamp>()
        .or_else(|_| {
            d.parse::<jiff::civil::DateTime>()
                .or_else(|_| d.parse::<jiff::civil::Date>().map(|day| day.at(0, 0, 0, 0)))
                .and_then(|t| t.to_zoned(jiff::tz::TimeZone::UTC))
                .map(|z| z.timestamp())
        })
        .or_else(|_| ago(d, now).ok_or(()))
        .map_err(|_| {
            format!(
                "--since {d:?}: expected how long ago (30m, 1h, 7d, 2w), a date like 2026-11-01 \
                 (UTC) or a time like 2026-11-01T12:00:00Z or 2026-11-01T13:00:00+01:00"
            )
        })?;
    Ok(std::time::SystemTime::from(at))
}

/// `now` less a span such as `1h` or `7d`: a day is 24 hours (UTC), a week 7 days. A span is
/// always a time ago, so `-1h` and `1h ago` mean what `1h` does. ISO 8601 durations (`P1D`) are
/// left to the date parsers' error: a span needs a digit first.
fn ago(d: &str, now: jiff::Timestamp) -> Option<jiff::Timestamp> {
    if !d
        .trim_start_matches('-')
        .starts_with(|c: char| c.is_ascii_digit())
    {
        return None;
    }
    let span = d.parse::<jiff::Span>().ok()?.abs();
    now.to_zoned(jiff::tz::TimeZone::UTC)
        .checked_sub(span)
        .ok()
        .map(|z| z.timestamp())
}

/// `askrelay history --since DATE`: every request asked since DATE, newest first, page by page;
/// with `--json` one JSON object per line (JSON Lines), for backups and analysis.
pub(super) async fn export_history(
    target: &Target,
    since: &str,
    limit: Option<u32>,
    as_json: bool,
) -> Result<i32> {
    let since = match parse_since(since) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("askrelay: {e}");
            return Ok(2);
        }
    };
    let mut client = match connect(target).await {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let limit = limit.map_or(usize::MAX, |l| l as usize);
    let mut shown = 0usize;
    let mut before = None;
    let mut table = Vec::new();
    'pages: loop {
        let page = match client
            .call(&Op::History {
                limit: Some(crate::protocol::PAGE_MAX),
                before: before.take(),
            })
            .await?
        {
            Event::History { requests, next } => (requests, next),
            other => return Ok(unexpected(&other)),
        };
        for r in page.0 {
            // Newest first: the first one older than DATE ends the export.
            let asked = r
                .created_at
                .parse::<jiff::Timestamp>()
                .ok()
                .map(std::time::SystemTime::from)
                .unwrap_or(std::time::UNIX_EPOCH);
            if asked < since || shown >= limit {
                break 'pages;
            }
            shown += 1;
            if as_json {
                crate::outln!("{}", serde_json::to_string(&r)?);
            } else {
                table.push(r);
            }
        }
        match page.1 {
            Some(n) => before = Some(n),
            None => break,
        }
    }
    if !as_json {
        print_history(&table)?;
    }
    Ok(0)
}

/// `askrelay grants`: the live grants as a table (or JSON), or `--revoke GRANT`.
pub(super) async fn grants(target: &Target, revoke: Option<String>, as_json: bool) -> Result<i32> {
    let mut client = match connect(target).await {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    if let Some(id) = revoke {
        let reply = client.call(&Op::RevokeGrant { grant: id }).await?;
        let Event::Revoked { grant } = reply else {
            return Ok(unexpected(&reply));
        };
        if as_json {
            crate::outln!("{}", serde_json::to_string_pretty(&grant)?);
        } else {
            crate::outln!(
                "Revoked {}: {} {} ({}) for uid {} no longer runs without asking.",
                grant.id,
                Escaped(&grant.tool),
                Escaped(&grant.pattern),
                grant.kind(),
                grant.uid
            );
        }
        return Ok(0);
    }
    let reply = client.call(&Op::Grants).await?;
    let Event::Grants { grants } = reply else {
        return Ok(unexpected(&reply));
    };
    if as_json {
        crate::outln!("{}", serde_json::to_string_pretty(&grants)?);
        return Ok(0);
    }
    if grants.is_empty() {
        crate::outln!("No live grants.");
        return Ok(0);
    }
    let mut table = super::out::table(&["GRANT", "ROUTE", "ALLOWS", "FOR", "BY", "UNTIL"], 1);
    for g in &grants {
        let mut who = format!("uid {}", g.uid);
        if let Some(h) = &g.host {
            who.push_str(&format!(" on {}", Escaped(h)));
        }
        if let Some(s) = &g.session {
            who.push_str(&format!("\nsession {}", Escaped(s)));
        }
        table.add_row(vec![
            g.id.clone(),
            Escaped(&g.route).to_string(),
            format!(
                "{} {}\n({})",
                Escaped(&g.tool),
                Escaped(&g.pattern),
                g.kind()
            ),
            who,
            Escaped(&g.approver).to_string(),
            crate::domain::clock::rfc3339(g.ends_at_ms),
        ]);
    }
    super::out::print_table(&table);
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::{parse_since, since_at};
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn since_takes_a_date_a_utc_time_or_a_time_with_its_offset() {
        let at = |s: &str| parse_since(s).unwrap().duration_since(UNIX_EPOCH).unwrap();
        let noon = Duration::from_secs(1_793_534_400); // 2026-11-01T12:00:00Z
        assert_eq!(at("2026-11-01T12:00:00Z"), noon);
        assert_eq!(at("2026-11-01T13:00:00+01:00"), noon);
        assert_eq!(at("2026-11-01T07:00:00-05:00"), noon);
        assert_eq!(at("2026-11-01T12:00:00"), noon);
        assert_eq!(at("2026-11-01"), noon - Duration::from_secs(12 * 3600));
        let err = parse_since("yesterday").unwrap_err();
        assert!(err.starts_with("--since \"yesterday\": expected"), "{err}");
    }

    #[test]
    fn since_takes_how_long_ago() {
        let now: jiff::Timestamp = "2026-11-15T12:00:00Z".parse().unwrap();
        let at = |s: &str| {
            since_at(s, now)
                .unwrap()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_secs()
        };
        let now_s = now.as_second() as u64;
        assert_eq!(at("30m"), now_s - 30 * 60);
        assert_eq!(at("1h"), now_s - 3600);
        assert_eq!(at("7d"), now_s - 7 * 86_400);
        assert_eq!(at("2w"), now_s - 14 * 86_400);
        assert_eq!(at("1h30m"), now_s - 5400);
        assert_eq!(at("-1h"), now_s - 3600);
        assert_eq!(at("1h ago"), now_s - 3600);
        assert_eq!(at(" 2 days "), now_s - 2 * 86_400);
        for bad in ["h", "1x", "P1D", "-", "1h 2026-11-01"] {
            assert!(since_at(bad, now).is_err(), "{bad}");
        }
    }
}
