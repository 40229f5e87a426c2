//! `askrelay audit export` and `askrelay audit verify`: the audit chain as JSON Lines, fetched
//! page by page over the socket (`audit_export`), and its check, which needs no daemon for a
//! file (the chain itself is [`crate::domain::audit`]).

use super::views::parse_since;
use super::{connect, unexpected};
use crate::client::{Client, Target};
use crate::domain::audit::{verify, ChainEnd, ChainStart, ExportLine, Verdict};
use crate::protocol::{Event, Op};
use anyhow::Result;
use std::io::Read;
use std::path::Path;

/// Fetches the chain from `since_ms` (or its newest checkpoint), handing each line to `each`
/// in order: the start, the rows, then the end, made from the head the last page was read
/// with. `Err(code)` when the daemon refused.
async fn fetch(
    client: &mut Client,
    since_ms: Option<i64>,
    mut each: impl FnMut(ExportLine) -> Result<()>,
) -> Result<Result<(), i32>> {
    let mut after = None;
    let mut begun: Option<ChainStart> = None;
    let (mut count, mut last) = (0u64, String::new());
    loop {
        let first = after.is_none();
        let reply = client
            .call(&Op::AuditExport {
                since_ms: if first { since_ms } else { None },
                limit: None,
                after: after.take(),
            })
            .await?;
        let Event::Audit {
            start,
            rows,
            next,
            head,
        } = reply
        else {
            return Ok(Err(unexpected(&reply)));
        };
        if first {
            let Some(start) = start else {
                anyhow::bail!("the daemon's first page of the audit log has no start");
            };
            last = start.hash.clone();
            begun = Some(start.clone());
            each(ExportLine::Start(start))?;
        }
        for row in rows {
            count += 1;
            last = row.hash.clone();
            each(ExportLine::Row(row))?;
        }
        match next {
            Some(n) => after = Some(n),
            None => {
                let (Some(start), Some(head)) = (begun, head) else {
                    anyhow::bail!(
                        "the daemon did not say the audit chain's head (an askrelay daemon older \
                         than this client?); the export would have no end line"
                    );
                };
                each(ExportLine::End(ChainEnd::new(&start, count, &last, head)))?;
                return Ok(Ok(()));
            }
        }
    }
}

fn since_ms(since: Option<&str>) -> Result<Option<i64>, String> {
    since
        .map(|s| {
            parse_since(s).map(|t| {
                t.duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as i64)
            })
        })
        .transpose()
}

/// `askrelay audit export [--since DATE]`: JSON Lines on stdout.
pub(super) async fn export(target: &Target, since: Option<&str>) -> Result<i32> {
    let since = match since_ms(since) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("askrelay: {e}");
            return Ok(2);
        }
    };
    let mut client = match connect(target).await {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let done = fetch(&mut client, since, |line| {
        crate::outln!("{}", serde_json::to_string(&line)?);
        Ok(())
    })
    .await?;
    Ok(done.err().unwrap_or(0))
}

/// Prints the verdict and returns the exit code: 0 intact, 1 broken, 2 not an export.
fn report(verdict: &Verdict) -> i32 {
    match verdict {
        Verdict::Intact { .. } => {
            crate::outln!("{verdict}");
            0
        }
        Verdict::BrokenLink { .. }
        | Verdict::BadHash { .. }
        | Verdict::Truncated { .. }
        | Verdict::BadEnd { .. }
        | Verdict::CutTail { .. } => {
            crate::outln!("{verdict}");
            1
        }
        Verdict::NotAnExport { .. } => {
            eprintln!("askrelay: {verdict}");
            2
        }
    }
}

/// `askrelay audit verify FILE`: offline; `-` is standard input.
pub(super) fn verify_file(path: &Path) -> i32 {
    let mut text = String::new();
    let read = if path == Path::new("-") {
        std::io::stdin().read_to_string(&mut text)
    } else {
        std::fs::File::open(path).and_then(|mut f| f.read_to_string(&mut text))
    };
    if let Err(e) = read {
        eprintln!("askrelay: cannot read {}: {e}", path.display());
        return 2;
    }
    report(&verify(text.lines()))
}

/// `askrelay audit verify`: exports the daemon's chain and checks it.
pub(super) async fn verify_daemon(target: &Target) -> Result<i32> {
    let mut client = match connect(target).await {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let mut lines = Vec::new();
    if let Err(code) = fetch(&mut client, None, |line| {
        lines.push(serde_json::to_string(&line)?);
        Ok(())
    })
    .await?
    {
        return Ok(code);
    }
    Ok(report(&verify(lines.iter().map(String::as_str))))
}
