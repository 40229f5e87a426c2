//! The [`Store`] operations on SQLite, each a statement or a transaction whose commit is
//! checked before its result is handed back (the module comment of [`super`] says why).

use super::*;
use crate::domain::grant::Grant;
use crate::domain::once_grant::OnceGrant;
use crate::domain::store::OnceAudit;
use crate::store::sql;
use crate::store::sql::reads::{Bind, Reads};
use crate::store::sql::writes::{bind_post, Tx};

#[async_trait]
impl Store for SqliteStore {
    async fn acquire_lease(&self, me: &Holder) -> Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let lock_path = lock_path(path);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&lock_path)
            .with_context(|| format!("cannot open the lock file {}", lock_path.display()))?;
        let mut file =
            match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
                Ok(f) => f,
                Err((mut file, _)) => {
                    let mut holder = String::new();
                    let _ = file.read_to_string(&mut holder);
                    let holder = holder.trim();
                    bail!(
                        "the database {} is in use by another askrelay daemon ({}); stop it \
                         first, or give this daemon its own database_url",
                        path.display(),
                        if holder.is_empty() {
                            "its pid and host are unknown".to_owned()
                        } else {
                            holder.to_owned()
                        }
                    );
                }
            };
        file.set_len(0)?;
        file.rewind()?;
        writeln!(file, "pid {} on host {}", me.pid, me.host)?;
        file.flush()?;
        *self.lease.lock().unwrap() = Some(file);
        Ok(())
    }

    async fn create(
        &self,
        new: &NewRequest,
        posts: &[NewPost],
        audit: &AuditEntry,
    ) -> Result<Created> {
        let questions_json = serde_json::to_string(&*new.questions)?;
        let caller_json = serde_json::to_string(&new.caller)?;
        let scope_json = serde_json::to_string(&new.scope)?;
        let context_json = match &new.context {
            Some(c) => Some(serde_json::to_string(&**c)?),
            None => None,
        };
        let planned: Vec<serde_json::Value> = posts
            .iter()
            .map(|NewPost { answerer, post: p }| {
                serde_json::json!({"idx": p.idx, "slot": p.slot.to_string(), "channel": p.channel,
                                   "guild": p.guild, "nonce": p.nonce, "answerer": answerer})
            })
            .collect();
        // One call to the connection's worker thread, one transaction whose COMMIT is checked
        // (in auto-commit the row RETURNING gives back comes before the statement's own
        // commit, whose failure, a full disk, went unseen): the INSERT, whose trigger
        // `requests_created` writes the questions and the outbox rows from the same row (see
        // migrations/0018_copies.sql: each row under its answerer), then the audit row if the INSERT was not a
        // conflict, hashed beforehand after the tip with the key the store gives, then COMMIT.
        let planned_json = serde_json::to_string(&planned)?;
        let on_expire = new
            .expiry
            .as_ref()
            .map(|e| serde_json::to_string(&e.on_expire))
            .transpose()?;
        let turn = self.tip().await?;
        let key = turn.tip.next_key;
        let mut entry = audit.clone();
        entry.request_key = Some(key);
        entry.request_id = Some(new.request_id.clone());
        let row = turn.tip.head.next(&entry.content(new.created_at_ms));
        let query = sqlx::query(concat!(
            "BEGIN IMMEDIATE; ",
            "INSERT INTO requests (key, request_id, token, questions_json, caller_json, \
             scope_json, answerer, route, peer_uid, peer_pid, created_at, planned_json, \
             expire_at, on_expire, context_json, answerers) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
             ON CONFLICT (request_id) DO NOTHING RETURNING key; ",
            insert_audit!(),
            " WHERE changes() > 0; COMMIT"
        ))
        .bind(key)
        .bind(&new.request_id)
        .bind(&new.token)
        .bind(&questions_json)
        .bind(&caller_json)
        .bind(&scope_json)
        .bind(&new.answerer)
        .bind(&new.route)
        .bind(new.peer.uid.map(i64::from))
        .bind(new.peer.pid)
        .bind(new.created_at_ms)
        .bind(&planned_json)
        .bind(new.expiry.as_ref().map(|e| e.at_ms))
        .bind(&on_expire)
        .bind(&context_json)
        .bind(crate::store::sql::rows::answerers_text(&new.answerers));
        let inserted = !self.commit_one(bind_row(query, &row)).await?.is_empty();
        if inserted {
            let mut tip = turn.tip.after(&row);
            tip.next_key = key + 1;
            turn.done(tip);
            Ok(Created::New(Request::created(key, new)))
        } else {
            // A conflict wrote nothing: the tip is as it was.
            let tip = turn.tip.clone();
            turn.done(tip);
            let existing = self
                .by_id(&new.request_id)
                .await?
                .context("a conflicting request vanished")?;
            Ok(Created::Existing(existing))
        }
    }

    async fn by_id(&self, request_id: &str) -> Result<Option<Request>> {
        Reads::<sqlx::Sqlite>(&mut *self.pool.acquire().await?)
            .request("request_id = $1", Bind::Text(request_id))
            .await
    }

    async fn by_key(&self, key: i64) -> Result<Option<Request>> {
        Reads::<sqlx::Sqlite>(&mut *self.pool.acquire().await?)
            .request("key = $1", Bind::Int(key))
            .await
    }

    async fn by_token(&self, token: &str) -> Result<Option<(Request, Vec<Post>)>> {
        Reads::<sqlx::Sqlite>(&mut *self.pool.acquire().await?)
            .with_posts("token = $1", Bind::Text(token))
            .await
    }

    async fn all_pending(&self) -> Result<Vec<(Request, Vec<Post>)>> {
        let rows = sqlx::query(&format!(
            "SELECT {REQUEST_COLUMNS}, context_json FROM requests WHERE status = 'pending' \
             ORDER BY key"
        ))
        .fetch_all(&self.pool)
        .await?;
        let reqs = self.hydrate_all(rows).await?;
        self.with_posts(reqs).await
    }

    async fn voted_pending(&self) -> Result<Vec<i64>> {
        Reads::<sqlx::Sqlite>(&mut *self.pool.acquire().await?)
            .voted_pending()
            .await
    }

    async fn pending(&self, who: Visibility, page: Page) -> Result<Vec<Request>> {
        self.listing(who, page, true, false).await
    }

    async fn history(&self, who: Visibility, page: Page) -> Result<Vec<Request>> {
        self.listing(who, page, false, true).await
    }

    async fn settle(&self, answer: NewAnswer<'_>) -> Result<SettleOutcome> {
        let NewAnswer {
            key,
            idx,
            settlement,
            actor,
            at_ms,
            audit,
            result_if_last,
            finish,
            grant,
        } = answer;
        let selected_json = serde_json::to_string(&settlement.selected)?;
        let terms_json = settlement
            .terms
            .as_ref()
            .map(serde_json::to_string)
            .transpose()?;
        // One transaction, whose COMMIT is checked before anyone is told: the conditional
        // UPDATE decides first-wins, and its trigger writes, when `result_if_last` is given and
        // no question is left open, the request's final result; the audit row follows it,
        // accepted or refused as the UPDATE decided, both hashed beforehand after the tip. With
        // `result_if_last`, one call to the connection's worker thread (the COMMIT goes with
        // them); without, a second call for the COMMIT, after finishing the request here if
        // the answer turns out to be its last.
        macro_rules! settle_sql {
            ($end:literal) => {
                concat!(
                    "BEGIN IMMEDIATE; ",
                    "UPDATE questions SET answered_at = ?, answered_by = ?, answered_via = ?, \
                     answered_id = ?, answered_note = ?, selected_json = ?, custom = ?, \
                     terms_json = ?, result_if_last = ? \
                     WHERE request_key = ? AND idx = ? AND answered_at IS NULL \
                     AND (SELECT status FROM requests WHERE key = ?) = 'pending' \
                     RETURNING (SELECT count(*) FROM questions q \
                                WHERE q.request_key = questions.request_key \
                                AND q.answered_at IS NULL); ",
                    insert_audit_outcome!(),
                    $end
                )
            };
        }
        let turn = self.tip().await?;
        let mut entry = audit.clone();
        entry.request_key = Some(key);
        entry.question_idx = Some(idx);
        let (won, lost) = outcomes(&turn.tip.head, &entry, at_ms);
        // A grant is written only if the answer wins: after the first call, before the COMMIT.
        let last_known = result_if_last.is_some() && grant.is_none();
        let query = sqlx::query(if last_known {
            settle_sql!("; COMMIT")
        } else {
            settle_sql!("")
        })
        .bind(at_ms)
        .bind(&actor.name)
        .bind(actor.via.as_str())
        .bind(&actor.id)
        .bind(&actor.note)
        .bind(&selected_json)
        .bind(&settlement.custom)
        .bind(&terms_json)
        .bind(&result_if_last)
        .bind(key)
        .bind(idx as i64)
        .bind(key);
        let settled = async {
            let mut tx = TxConn::acquire(self).await?;
            let open_after: Option<i64> = bind_outcomes(query, &won, &lost)
                .fetch_all(&mut **tx)
                .await?
                .first()
                .map(|r| r.get(0));
            let settled = match (open_after, &result_if_last) {
                (Some(0), Some(result)) => Settled::Won(Some(result.clone())),
                (Some(0), None) => {
                    // The other questions were answered since the caller read the request:
                    // finish it here. Only the last winner sees no open question.
                    let mut steps = Tx(&mut **tx);
                    let result = finish(&steps.settlements(key).await?);
                    steps.answer_request(key, &result, at_ms).await?;
                    Settled::Won(Some(result))
                }
                (Some(_), _) => Settled::Won(None),
                // It did not count (the rare path): audited as such.
                (None, _) => Settled::Lost,
            };
            if !last_known {
                if let (Settled::Won(_), Some(g)) = (&settled, grant) {
                    Tx(&mut **tx).insert_grant(g).await?;
                }
                sqlx::query("COMMIT").execute(&mut **tx).await?;
            }
            tx.finished();
            // Back to its pool (at the end of this block) before anything else is read: the store
            // has one write connection, and holding it while waiting for another connection could
            // wait for ever.
            anyhow::Ok(settled)
        }
        .await
        .inspect_err(|e| self.full.noticed(e))?;
        let appended = match settled {
            Settled::Won(_) => &won,
            Settled::Lost => &lost,
        };
        let tip = turn.tip.after(appended);
        turn.done(tip);
        match settled {
            Settled::Won(result) => Ok(SettleOutcome::Won { result }),
            Settled::Lost => {
                // Say why it did not count.
                Reads::<sqlx::Sqlite>(&mut *self.pool.acquire().await?)
                    .why_lost(key, idx)
                    .await
            }
        }
    }

    async fn end(
        &self,
        key: i64,
        status: Status,
        error: &AskError,
        withdrawn: Option<WithdrawReason>,
        audit: &AuditEntry,
    ) -> Result<bool> {
        let at = crate::domain::clock::now_ms();
        let turn = self.tip().await?;
        let (won, lost) = outcomes(&turn.tip.head, audit, at);
        let query = sqlx::query(concat!(
            "BEGIN IMMEDIATE; ",
            "UPDATE requests SET status = ?, error_code = ?, error_message = ?, withdrawn = ?, \
             ended_at = ? WHERE key = ? AND status = 'pending' RETURNING 1; ",
            insert_audit_outcome!(),
            "; COMMIT"
        ))
        .bind(status.as_str())
        .bind(error.code.as_str())
        .bind(&error.message)
        .bind(withdrawn.map(WithdrawReason::as_str))
        .bind(at)
        .bind(key);
        let ended = !self
            .commit_one(bind_outcomes(query, &won, &lost))
            .await?
            .is_empty();
        let tip = turn.tip.after(if ended { &won } else { &lost });
        turn.done(tip);
        Ok(ended)
    }

    async fn audit(&self, entry: &AuditEntry) -> Result<()> {
        let at = crate::domain::clock::now_ms();
        let turn = self.tip().await?;
        let row = turn.tip.head.next(&entry.content(at));
        self.commit_one(bind_row(
            sqlx::query(concat!("BEGIN IMMEDIATE; ", insert_audit!(), "; COMMIT")),
            &row,
        ))
        .await?;
        let tip = turn.tip.after(&row);
        turn.done(tip);
        Ok(())
    }

    async fn audit_start(&self, since_ms: Option<i64>) -> Result<ChainStart> {
        Reads::<sqlx::Sqlite>(&mut *self.pool.acquire().await?)
            .audit_start(since_ms)
            .await
    }

    async fn audit_chain(&self, after: i64, limit: u32) -> Result<AuditPage> {
        Reads::<sqlx::Sqlite>(&mut *self.pool.acquire().await?)
            .audit_chain(after, limit)
            .await
    }

    async fn audit_rows(&self, request_key: Option<i64>) -> Result<Vec<AuditRow>> {
        Reads::<sqlx::Sqlite>(&mut *self.pool.acquire().await?)
            .audit_rows(request_key)
            .await
    }

    async fn posts(&self, keys: &[i64]) -> Result<HashMap<i64, Vec<Post>>> {
        let mut out: HashMap<i64, Vec<Post>> = HashMap::new();
        if keys.is_empty() {
            return Ok(out);
        }
        let sql = if keys.len() == 1 {
            format!("SELECT {POST_COLUMNS} FROM posts WHERE request_key = ?1 ORDER BY idx, slot")
        } else {
            format!(
                "SELECT {POST_COLUMNS} FROM posts WHERE request_key IN \
                 (SELECT value FROM json_each(?1)) ORDER BY request_key, idx, slot"
            )
        };
        let q = sqlx::query(&sql);
        let q = if keys.len() == 1 {
            q.bind(keys[0].to_string())
        } else {
            q.bind(serde_json::to_string(keys)?)
        };
        for r in q.fetch_all(&self.pool).await? {
            let r = PostRow::from_row(&r)?;
            out.entry(r.request_key).or_default().push(r.into_post());
        }
        Ok(out)
    }

    async fn plan_posts(&self, key: i64, answerer: &str, posts: &[PlannedPost]) -> Result<()> {
        write_tx!(self, |tx| {
            insert_posts(&mut tx, key, answerer, posts).await
        })
    }

    async fn record_post(
        &self,
        post: &PostKey<'_>,
        message: &str,
        channel: Option<&str>,
        guild: Option<&str>,
    ) -> Result<()> {
        let query = sqlx::query(sql::RECORD_POST.committed())
            .bind(message)
            .bind(crate::domain::clock::now_ms())
            .bind(guild)
            .bind(channel);
        self.commit_one(bind_post(query, post)).await.map(drop)
    }

    async fn record_post_failure(&self, post: &PostKey<'_>, error: &str) -> Result<()> {
        let query = sqlx::query(sql::RECORD_POST_FAILURE.committed()).bind(error);
        self.commit_one(bind_post(query, post)).await.map(drop)
    }

    async fn place_post(&self, post: &PostKey<'_>, channel: &str) -> Result<()> {
        let query = sqlx::query(sql::PLACE_POST.committed()).bind(channel);
        self.commit_one(bind_post(query, post)).await.map(drop)
    }

    async fn session_thread(&self, at: &SessionPlace<'_>) -> Result<Option<String>> {
        Reads::<sqlx::Sqlite>(&mut *self.pool.acquire().await?)
            .session_thread(at)
            .await
    }

    async fn keep_session_thread(&self, at: &SessionPlace<'_>, thread: &str) -> Result<()> {
        self.commit_one(
            sqlx::query(sql::KEEP_SESSION_THREAD.committed())
                .bind(at.answerer)
                .bind(at.channel)
                .bind(at.agent)
                .bind(at.session)
                .bind(thread)
                .bind(crate::domain::clock::now_ms()),
        )
        .await
        .map(drop)
    }

    async fn claim_post(&self, _post: &PostKey<'_>) -> Result<()> {
        // One daemon holds the file: there is no other leader to fence out.
        Ok(())
    }

    async fn record_edit(&self, post: &PostKey<'_>, edit: EditState) -> Result<()> {
        let query = sqlx::query(sql::RECORD_EDIT.committed()).bind(edit.as_str());
        self.commit_one(bind_post(query, post)).await.map(drop)
    }

    async fn outbox_due(&self, answerer: Option<&str>) -> Result<Vec<DuePost>> {
        Reads::<sqlx::Sqlite>(&mut *self.pool.acquire().await?)
            .outbox_due(answerer)
            .await
    }

    async fn timers(&self, answerer: &str) -> Result<Vec<Timer>> {
        Reads::<sqlx::Sqlite>(&mut *self.pool.acquire().await?)
            .timers(answerer)
            .await
    }

    async fn advance_timer(
        &self,
        key: i64,
        answerer: &str,
        from: Option<u32>,
        to: &Timer,
        posts: &[PlannedPost],
    ) -> Result<bool> {
        write_tx!(self, |tx| {
            let pending: Option<i64> =
                sqlx::query_scalar("SELECT 1 FROM requests WHERE key = ? AND status = 'pending'")
                    .bind(key)
                    .fetch_optional(&mut *tx)
                    .await?;
            if pending.is_none() {
                return anyhow::Ok(false);
            }
            let moved = Tx(&mut *tx).move_timer(key, answerer, from, to).await?;
            if moved == 0 {
                return anyhow::Ok(false);
            }
            insert_posts(&mut tx, key, answerer, posts).await?;
            anyhow::Ok(true)
        })
    }

    async fn with_posts_by_key(&self, key: i64) -> Result<Option<(Request, Vec<Post>)>> {
        Reads::<sqlx::Sqlite>(&mut *self.pool.acquire().await?)
            .with_posts("key = $1", Bind::Int(key))
            .await
    }

    async fn vote(
        &self,
        key: i64,
        idx: usize,
        expected: Option<&str>,
        votes_json: &str,
        audit: &AuditEntry,
    ) -> Result<bool> {
        let at_ms = crate::domain::clock::now_ms();
        // One call: the compare-and-swap, the audit row if it swapped, the COMMIT.
        let turn = self.tip().await?;
        let row = turn.tip.head.next(&audit.content(at_ms));
        let query = sqlx::query(concat!(
            "BEGIN IMMEDIATE; ",
            "UPDATE questions SET votes_json = ? \
             WHERE request_key = ? AND idx = ? AND answered_at IS NULL AND votes_json IS ? \
             AND (SELECT status FROM requests WHERE key = ?) = 'pending' RETURNING 1; ",
            insert_audit!(),
            " WHERE changes() > 0; COMMIT"
        ))
        .bind(votes_json)
        .bind(key)
        .bind(idx as i64)
        .bind(expected)
        .bind(key);
        let swapped = !self.commit_one(bind_row(query, &row)).await?.is_empty();
        let tip = if swapped {
            turn.tip.after(&row)
        } else {
            turn.tip.clone()
        };
        turn.done(tip);
        Ok(swapped)
    }

    async fn save_draft(&self, key: i64, idx: usize, user: &str, selected: &[usize]) -> Result<()> {
        let selected = serde_json::to_string(selected)?;
        let at = crate::domain::clock::now_ms();
        self.commit_one(
            sqlx::query(sql::SAVE_DRAFT.committed())
                .bind(key)
                .bind(idx as i64)
                .bind(user)
                .bind(&selected)
                .bind(at),
        )
        .await
        .map(drop)
    }

    async fn draft(&self, key: i64, idx: usize, user: &str) -> Result<Option<Draft>> {
        Reads::<sqlx::Sqlite>(&mut *self.pool.acquire().await?)
            .draft(key, idx, user)
            .await
    }

    async fn schedule_due(&self, name: &str) -> Result<Option<i64>> {
        Reads::<sqlx::Sqlite>(&mut *self.pool.acquire().await?)
            .schedule_due(name)
            .await
    }

    async fn advance_schedule(&self, name: &str, from: Option<i64>, to: i64) -> Result<bool> {
        let moved = write_tx!(self, |tx| {
            Tx(&mut *tx).move_schedule(name, from, to).await
        })?;
        Ok(moved == 1)
    }

    async fn live_grants(&self, route: &str, uid: u32, now_ms: i64) -> Result<Vec<Grant>> {
        Reads::<sqlx::Sqlite>(&mut *self.pool.acquire().await?)
            .grants_for(route, uid, now_ms)
            .await
    }

    async fn grants(&self, now_ms: i64, limit: u32) -> Result<Vec<Grant>> {
        Reads::<sqlx::Sqlite>(&mut *self.pool.acquire().await?)
            .grants_live(now_ms, limit)
            .await
    }

    async fn grant(&self, id: &str) -> Result<Option<Grant>> {
        Reads::<sqlx::Sqlite>(&mut *self.pool.acquire().await?)
            .grant_by_id(id)
            .await
    }

    async fn revoke_grant(
        &self,
        id: &str,
        by: &str,
        at_ms: i64,
        audit: &AuditEntry,
    ) -> Result<bool> {
        // One call, as every audited write: the update, the audit row (accepted or refused
        // as the update decided, both hashed beforehand after the tip) and the COMMIT.
        let turn = self.tip().await?;
        let (won, lost) = outcomes(&turn.tip.head, audit, at_ms);
        let query = sqlx::query(concat!(
            "BEGIN IMMEDIATE; ",
            "UPDATE grants SET revoked_at = ?, revoked_by = ? \
             WHERE id = ? AND revoked_at IS NULL AND ends_at > ? RETURNING 1; ",
            insert_audit_outcome!(),
            "; COMMIT"
        ))
        .bind(at_ms)
        .bind(by)
        .bind(id)
        .bind(at_ms);
        let revoked = !self
            .commit_one(bind_outcomes(query, &won, &lost))
            .await?
            .is_empty();
        let tip = turn.tip.after(if revoked { &won } else { &lost });
        turn.done(tip);
        Ok(revoked)
    }

    async fn mint_once_grant(&self, g: &OnceGrant, audit: &AuditEntry) -> Result<bool> {
        // One call: the insert (nothing when the request has one already), the audit row
        // accepted or refused as the insert decided, and the COMMIT.
        let turn = self.tip().await?;
        let (won, lost) = outcomes(&turn.tip.head, audit, g.created_at_ms);
        let query = sqlx::query(concat!(
            "BEGIN IMMEDIATE; ",
            "INSERT INTO once_grants (id, session, call, tool, uid, approver, request_key, \
             request_id, created_at, ends_at, used_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL) \
             ON CONFLICT (request_key) DO NOTHING RETURNING 1; ",
            insert_audit_outcome!(),
            "; COMMIT"
        ))
        .bind(&g.id)
        .bind(&g.session)
        .bind(&g.call)
        .bind(&g.tool)
        .bind(i64::from(g.uid))
        .bind(&g.approver)
        .bind(g.request_key)
        .bind(&g.request_id)
        .bind(g.created_at_ms)
        .bind(g.ends_at_ms);
        let minted = !self
            .commit_one(bind_outcomes(query, &won, &lost))
            .await?
            .is_empty();
        let tip = turn.tip.after(if minted { &won } else { &lost });
        turn.done(tip);
        Ok(minted)
    }

    async fn use_once_grant(
        &self,
        uid: u32,
        session: &str,
        call: &str,
        now_ms: i64,
        audit: OnceAudit<'_>,
    ) -> Result<Option<OnceGrant>> {
        // The grant is read first (its id goes in the audit row), then used by a conditional
        // update of that id, with its audit row if it changed a row, in one call. A grant that
        // another use took in between is looked for again.
        for _ in 0..3 {
            let Some(g) = Reads::<sqlx::Sqlite>(&mut *self.pool.acquire().await?)
                .once_grant_live(uid, session, call, now_ms)
                .await?
            else {
                return Ok(None);
            };
            let turn = self.tip().await?;
            let mut entry = audit(&g);
            entry.accepted = true;
            let row = turn.tip.head.next(&entry.content(now_ms));
            let query = sqlx::query(concat!(
                "BEGIN IMMEDIATE; ",
                "UPDATE once_grants SET used_at = ? \
                 WHERE id = ? AND used_at IS NULL AND ends_at > ? RETURNING 1; ",
                insert_audit!(),
                " WHERE changes() > 0; COMMIT"
            ))
            .bind(now_ms)
            .bind(&g.id)
            .bind(now_ms);
            let used = !self.commit_one(bind_row(query, &row)).await?.is_empty();
            let tip = if used {
                turn.tip.after(&row)
            } else {
                turn.tip.clone()
            };
            turn.done(tip);
            if used {
                return Ok(Some(OnceGrant {
                    used_at_ms: Some(now_ms),
                    ..g
                }));
            }
        }
        Ok(None)
    }

    async fn once_grant_of(&self, request_key: i64) -> Result<Option<OnceGrant>> {
        Reads::<sqlx::Sqlite>(&mut *self.pool.acquire().await?)
            .once_grant_of(request_key)
            .await
    }

    async fn writable(&self) -> Result<()> {
        // A store that found the disk full is failing until its WAL could be checkpointed
        // (`full`): tried here first, as every write does.
        if self.full.is_set() {
            drop(self.write_conn().await?);
        }
        // Then two checks, as neither is enough alone. A committed write that needs a page
        // fails on a full disk while the WAL has to grow; but once a checkpoint has reset the
        // WAL, writes reuse its space and the probe passes, so the free space is read too.
        if let Some(path) = &self.path {
            disk_room(path)?;
        }
        self.commit_one(
            sqlx::query(committed!(
                "INSERT INTO settings (name, value) VALUES ('health_probe', ?) \
                 ON CONFLICT (name) DO UPDATE SET value = excluded.value"
            ))
            .bind(crate::domain::clock::now_ms()),
        )
        .await
        .map(drop)
    }

    async fn prune(
        &self,
        ended_before_ms: Option<i64>,
        audit_before_ms: Option<i64>,
    ) -> Result<Pruned> {
        let mut pruned = Pruned::default();
        if let Some(before) = ended_before_ms {
            pruned.requests = write_tx!(self, |tx| {
                // Children first (foreign keys); the requests last, by the same condition.
                let ended = "SELECT key FROM requests WHERE status != 'pending' AND ended_at < ?";
                for table in ["drafts", "timers", "posts", "questions"] {
                    sqlx::query(&format!(
                        "DELETE FROM {table} WHERE request_key IN ({ended})"
                    ))
                    .bind(before)
                    .execute(&mut *tx)
                    .await?;
                }
                let gone =
                    sqlx::query("DELETE FROM requests WHERE status != 'pending' AND ended_at < ?")
                        .bind(before)
                        .execute(&mut *tx)
                        .await?
                        .rows_affected();
                anyhow::Ok(gone)
            })?;
        }
        if let Some(before) = audit_before_ms {
            // What goes, and how it gets past the audit log's DELETE trigger: `prune_audit`.
            pruned.audit = write_tx!(self, |tx| { Tx(&mut *tx).prune_audit(before).await })?;
        }
        Ok(pruned)
    }

    async fn close(&self) {
        self.checkpoint_conn.close().await;
        self.writer.close().await;
        self.pool.close().await;
        self.lease.lock().unwrap().take();
    }
}
