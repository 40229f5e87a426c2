//! The [`Store`] operations on PostgreSQL, each a statement or a transaction whose commit is
//! checked before its result is handed back.

use super::*;
use crate::domain::grant::Grant;
use crate::domain::once_grant::OnceGrant;
use crate::domain::store::OnceAudit;
use crate::store::sql;
use crate::store::sql::reads::{Bind, Reads};
use crate::store::sql::writes::{bind_post, Tx};

#[async_trait]
impl Store for PgStore {
    async fn acquire_lease(&self, me: &Holder) -> Result<()> {
        cluster::acquire(&self.shared, me).await?;
        let _ = self.cluster.set(Arc::new(PgCluster::new(
            self.shared.clone(),
            me.node.clone(),
        )));
        Ok(())
    }

    fn cluster(&self) -> Option<ClusterHandle> {
        self.cluster.get().cloned()
    }

    async fn create(
        &self,
        new: &NewRequest,
        posts: &[NewPost],
        audit: &AuditEntry,
    ) -> Result<Created> {
        let questions_json = serde_json::to_string(&*new.questions)?;
        let context_json = match &new.context {
            Some(c) => Some(serde_json::to_string(&**c)?),
            None => None,
        };
        let node = self.node().map(str::to_owned);
        // One statement for the request, its questions and its outbox rows, then its audit row
        // appended to the chain (which needs the key), in one transaction: written together or
        // not at all, and the notice goes out when it commits. When the id is taken nothing is
        // inserted, and no row comes back. The transaction's COMMIT is checked: the row comes
        // back before an auto-commit's own commit, whose failure would go unseen.
        let inserted: Option<i64> = write_tx!(self, |tx| {
            let keys: Vec<i64> = sqlx::query_scalar(
                "WITH r AS ( \
                     INSERT INTO requests (request_id, token, questions_json, caller_json, \
                         scope_json, answerer, route, peer_uid, peer_pid, created_at, expire_at, \
                         on_expire, context_json, node, answerers) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $21) \
                     ON CONFLICT (request_id) DO NOTHING RETURNING key), \
                 q AS ( \
                     INSERT INTO questions (request_key, idx, qid) \
                     SELECT r.key, j.ord - 1, j.value ->> 'id' \
                     FROM r, jsonb_array_elements($3::jsonb) WITH ORDINALITY AS j (value, ord)), \
                 p AS ( \
                     INSERT INTO posts (request_key, idx, answerer, slot, channel, guild, nonce) \
                     SELECT r.key, p.idx, p.answerer, p.slot, p.channel, p.guild, p.nonce \
                     FROM r, unnest($15::bigint[], $16::text[], $17::text[], $18::text[], \
                                    $19::text[], $20::text[]) \
                         AS p (idx, slot, channel, guild, nonce, answerer)) \
                 SELECT key, pg_notify('askrelay_outbox', COALESCE($14, ''))::text FROM r",
            )
            .bind(&new.request_id)
            .bind(&new.token)
            .bind(&questions_json)
            .bind(serde_json::to_string(&new.caller)?)
            .bind(serde_json::to_string(&new.scope)?)
            .bind(&new.answerer)
            .bind(&new.route)
            .bind(new.peer.uid.map(i64::from))
            .bind(new.peer.pid)
            .bind(new.created_at_ms)
            .bind(new.expiry.as_ref().map(|e| e.at_ms))
            .bind(
                new.expiry
                    .as_ref()
                    .map(|e| serde_json::to_string(&e.on_expire))
                    .transpose()?,
            )
            .bind(&context_json)
            .bind(&node)
            .bind(posts.iter().map(|p| p.post.idx as i64).collect::<Vec<_>>())
            .bind(
                posts
                    .iter()
                    .map(|p| p.post.slot.to_string())
                    .collect::<Vec<_>>(),
            )
            .bind(
                posts
                    .iter()
                    .map(|p| p.post.channel.clone())
                    .collect::<Vec<_>>(),
            )
            .bind(
                posts
                    .iter()
                    .map(|p| p.post.guild.clone())
                    .collect::<Vec<_>>(),
            )
            .bind(
                posts
                    .iter()
                    .map(|p| p.post.nonce.clone())
                    .collect::<Vec<_>>(),
            )
            .bind(posts.iter().map(|p| p.answerer.clone()).collect::<Vec<_>>())
            .bind(crate::store::sql::rows::answerers_text(&new.answerers))
            // Every row, so that the statement has finished before the next one.
            .fetch_all(&mut *tx)
            .await?;
            let key = keys.first().copied();
            if let Some(key) = key {
                let mut audit = audit.clone();
                audit.request_key = Some(key);
                audit.request_id = Some(new.request_id.clone());
                append_audit(&mut tx, &audit, new.created_at_ms).await?;
            }
            anyhow::Ok(key)
        })?;
        match inserted {
            Some(key) => {
                let mut req = Request::created(key, new);
                req.node = node;
                Ok(Created::New(req))
            }
            None => {
                let existing = self
                    .by_id(&new.request_id)
                    .await?
                    .context("a conflicting request vanished")?;
                Ok(Created::Existing(existing))
            }
        }
    }

    async fn by_id(&self, request_id: &str) -> Result<Option<Request>> {
        read!(self, |conn| Reads::<sqlx::Postgres>(conn)
            .request("request_id = $1", Bind::Text(request_id))
            .await)
    }

    async fn by_key(&self, key: i64) -> Result<Option<Request>> {
        read!(self, |conn| Reads::<sqlx::Postgres>(conn)
            .request("key = $1", Bind::Int(key))
            .await)
    }

    async fn voted_pending(&self) -> Result<Vec<i64>> {
        read!(self, |conn| Reads::<sqlx::Postgres>(conn)
            .voted_pending()
            .await)
    }

    async fn by_token(&self, token: &str) -> Result<Option<(Request, Vec<Post>)>> {
        read!(self, |conn| Reads::<sqlx::Postgres>(conn)
            .with_posts("token = $1", Bind::Text(token))
            .await)
    }

    async fn all_pending(&self) -> Result<Vec<(Request, Vec<Post>)>> {
        let sql = select(
            Dialect::Postgres,
            FULL,
            "WHERE status = 'pending' AND node IS NOT DISTINCT FROM $1 ORDER BY key",
        );
        let node = self.node();
        let rows = read!(self, |conn| Ok(sqlx::query(&sql)
            .bind(node)
            .fetch_all(conn)
            .await?))?;
        rows.iter().map(with_posts_of).collect()
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
        let won = write_tx!(self, |tx| {
            // The request's row lock first (see the module comment): the count of open
            // questions below then sees every answer committed before this one.
            let locked: Option<(String, Option<String>)> = sqlx::query_as(
                "SELECT status, node FROM requests WHERE key = $1 FOR NO KEY UPDATE",
            )
            .bind(key)
            .fetch_optional(&mut *tx)
            .await?;
            let Some((status, node)) = locked else {
                return anyhow::Ok(None);
            };
            if status != Status::Pending.as_str() {
                return anyhow::Ok(None);
            }
            // The one conditional UPDATE that decides first-wins, with the notices in the same
            // statement (the audit row is appended last, below). The count is of the other open questions: the
            // statement's snapshot does not see its own update.
            let open_after: Option<i64> = sqlx::query_scalar(
                "WITH won AS ( \
                     UPDATE questions SET answered_at = $1, answered_by = $2, \
                         answered_via = $3, answered_id = $4, answered_note = $5, \
                         selected_json = $6, custom = $7, terms_json = $12 \
                     WHERE request_key = $8 AND idx = $9 AND answered_at IS NULL \
                     AND EXISTS (SELECT 1 FROM requests WHERE key = $8 AND status = 'pending') \
                     RETURNING request_key, idx) \
                 SELECT (SELECT count(*) FROM questions q WHERE q.request_key = $8 \
                         AND q.answered_at IS NULL AND q.idx <> $9), \
                        pg_notify('askrelay_outbox', $11)::text, \
                        pg_notify('askrelay_ended', $10)::text \
                 FROM won",
            )
            .bind(at_ms)
            .bind(&actor.name)
            .bind(actor.via.as_str())
            .bind(&actor.id)
            .bind(&actor.note)
            .bind(&selected_json)
            .bind(&settlement.custom)
            .bind(key)
            .bind(idx as i64)
            .bind(notices::ended_payload(key, node.as_deref()))
            .bind(self.node().unwrap_or_default())
            .bind(&terms_json)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(open_after) = open_after else {
                return anyhow::Ok(None);
            };
            if let Some(g) = grant {
                Tx(&mut *tx).insert_grant(g).await?;
            }
            let mut won = audit.clone();
            won.request_key = Some(key);
            won.question_idx = Some(idx);
            won.accepted = true;
            if open_after > 0 {
                append_audit(&mut tx, &won, at_ms).await?;
                return anyhow::Ok(Some(SettleOutcome::Won { result: None }));
            }
            // The last open question: the request is answered in the same transaction.
            let result = match &result_if_last {
                Some(result) => result.clone(),
                None => finish(&Tx(&mut *tx).settlements(key).await?),
            };
            Tx(&mut *tx).answer_request(key, &result, at_ms).await?;
            append_audit(&mut tx, &won, at_ms).await?;
            anyhow::Ok(Some(SettleOutcome::Won {
                result: Some(result),
            }))
        })?;
        if let Some(won) = won {
            return Ok(won);
        }
        // It did not count: audit that, and say why (the rare path).
        let mut lost = audit.clone();
        lost.accepted = false;
        self.audit(&lost).await?;
        read!(self, |conn| Reads::<sqlx::Postgres>(conn)
            .why_lost(key, idx)
            .await)
    }

    async fn end(
        &self,
        key: i64,
        status: Status,
        error: &AskError,
        withdrawn: Option<WithdrawReason>,
        audit: &AuditEntry,
    ) -> Result<bool> {
        let at = now_ms();
        write_tx!(self, |tx| {
            let ended: Option<Option<String>> = sqlx::query_scalar(
                "UPDATE requests SET status = $1, error_code = $2, error_message = $3, \
                 ended_at = $4, withdrawn = $6 WHERE key = $5 AND status = 'pending' \
                 RETURNING node",
            )
            .bind(status.as_str())
            .bind(error.code.as_str())
            .bind(&error.message)
            .bind(at)
            .bind(key)
            .bind(withdrawn.map(WithdrawReason::as_str))
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(node) = &ended {
                sqlx::query(
                    "SELECT pg_notify('askrelay_outbox', $2), pg_notify('askrelay_ended', $1)",
                )
                .bind(notices::ended_payload(key, node.as_deref()))
                .bind(self.node().unwrap_or_default())
                .execute(&mut *tx)
                .await?;
            }
            let mut audit = audit.clone();
            audit.accepted = ended.is_some();
            append_audit(&mut tx, &audit, at).await?;
            anyhow::Ok(ended.is_some())
        })
    }

    async fn audit(&self, entry: &AuditEntry) -> Result<()> {
        let at = now_ms();
        write_tx!(self, |tx| { append_audit(&mut tx, entry, at).await })
    }

    async fn audit_start(&self, since_ms: Option<i64>) -> Result<ChainStart> {
        read!(self, |conn| Reads::<sqlx::Postgres>(conn)
            .audit_start(since_ms)
            .await)
    }

    async fn audit_chain(&self, after: i64, limit: u32) -> Result<AuditPage> {
        read!(self, |conn| Reads::<sqlx::Postgres>(conn)
            .audit_chain(after, limit)
            .await)
    }

    async fn audit_rows(&self, request_key: Option<i64>) -> Result<Vec<AuditRow>> {
        read!(self, |conn| Reads::<sqlx::Postgres>(conn)
            .audit_rows(request_key)
            .await)
    }

    async fn posts(&self, keys: &[i64]) -> Result<HashMap<i64, Vec<Post>>> {
        let mut out: HashMap<i64, Vec<Post>> = HashMap::new();
        if keys.is_empty() {
            return Ok(out);
        }
        // Slots in byte order, as SQLite compares text.
        let sql = format!(
            "SELECT {POST_COLUMNS} FROM posts WHERE request_key = ANY($1) \
             ORDER BY request_key, idx, slot COLLATE \"C\""
        );
        let rows: Vec<PostRow> = read!(self, |conn| Ok(sqlx::query_as(&sql)
            .bind(keys)
            .fetch_all(conn)
            .await?))?;
        for r in rows {
            out.entry(r.request_key).or_default().push(r.into_post());
        }
        Ok(out)
    }

    async fn plan_posts(&self, key: i64, answerer: &str, posts: &[PlannedPost]) -> Result<()> {
        write_tx!(self, |tx| {
            self.shared.fence(&mut tx).await?;
            insert_posts(&mut tx, key, answerer, posts).await
        })
    }

    async fn claim_post(&self, post: &PostKey<'_>) -> Result<()> {
        write_tx!(self, |tx| {
            self.shared.fence(&mut tx).await?;
            let query = sqlx::query(
                "UPDATE posts SET claimed_epoch = $1 \
                 WHERE request_key = $2 AND idx = $3 AND answerer = $4 AND slot = $5",
            )
            .bind(self.shared.epoch());
            bind_post(query, post).execute(&mut *tx).await?;
            anyhow::Ok(())
        })
    }

    async fn record_post(
        &self,
        post: &PostKey<'_>,
        message: &str,
        channel: Option<&str>,
        guild: Option<&str>,
    ) -> Result<()> {
        write_tx!(self, |tx| {
            self.shared.fence(&mut tx).await?;
            let query = sqlx::query(sql::RECORD_POST.text())
                .bind(message)
                .bind(now_ms())
                .bind(guild)
                .bind(channel);
            bind_post(query, post).execute(&mut *tx).await?;
            anyhow::Ok(())
        })
    }

    async fn place_post(&self, post: &PostKey<'_>, channel: &str) -> Result<()> {
        write_tx!(self, |tx| {
            self.shared.fence(&mut tx).await?;
            let query = sqlx::query(sql::PLACE_POST.text()).bind(channel);
            bind_post(query, post).execute(&mut *tx).await?;
            anyhow::Ok(())
        })
    }

    async fn session_thread(&self, at: &SessionPlace<'_>) -> Result<Option<String>> {
        read!(self, |conn| Reads::<sqlx::Postgres>(conn)
            .session_thread(at)
            .await)
    }

    async fn keep_session_thread(&self, at: &SessionPlace<'_>, thread: &str) -> Result<()> {
        write_tx!(self, |tx| {
            self.shared.fence(&mut tx).await?;
            sqlx::query(sql::KEEP_SESSION_THREAD.text())
                .bind(at.answerer)
                .bind(at.channel)
                .bind(at.agent)
                .bind(at.session)
                .bind(thread)
                .bind(now_ms())
                .execute(&mut *tx)
                .await?;
            anyhow::Ok(())
        })
    }

    async fn record_post_failure(&self, post: &PostKey<'_>, error: &str) -> Result<()> {
        write_tx!(self, |tx| {
            self.shared.fence(&mut tx).await?;
            let query = sqlx::query(sql::RECORD_POST_FAILURE.text()).bind(error);
            bind_post(query, post).execute(&mut *tx).await?;
            anyhow::Ok(())
        })
    }

    async fn record_edit(&self, post: &PostKey<'_>, edit: EditState) -> Result<()> {
        write_tx!(self, |tx| {
            self.shared.fence(&mut tx).await?;
            let query = sqlx::query(sql::RECORD_EDIT.text()).bind(edit.as_str());
            bind_post(query, post).execute(&mut *tx).await?;
            anyhow::Ok(())
        })
    }

    async fn timers(&self, answerer: &str) -> Result<Vec<Timer>> {
        read!(self, |conn| Reads::<sqlx::Postgres>(conn)
            .timers(answerer)
            .await)
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
            self.shared.fence(&mut tx).await?;
            // Shares the request's row lock, so it cannot end until this step is written.
            let pending: Option<i32> = sqlx::query_scalar(
                "SELECT 1 FROM requests WHERE key = $1 AND status = 'pending' FOR SHARE",
            )
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

    async fn outbox_due(&self, answerer: Option<&str>) -> Result<Vec<DuePost>> {
        read!(self, |conn| Reads::<sqlx::Postgres>(conn)
            .outbox_due(answerer)
            .await)
    }

    async fn with_posts_by_key(&self, key: i64) -> Result<Option<(Request, Vec<Post>)>> {
        read!(self, |conn| Reads::<sqlx::Postgres>(conn)
            .with_posts("key = $1", Bind::Int(key))
            .await)
    }

    async fn vote(
        &self,
        key: i64,
        idx: usize,
        expected: Option<&str>,
        votes_json: &str,
        audit: &AuditEntry,
    ) -> Result<bool> {
        write_tx!(self, |tx| {
            let swapped = sqlx::query(
                "UPDATE questions SET votes_json = $1 \
                 WHERE request_key = $2 AND idx = $3 AND answered_at IS NULL \
                 AND votes_json IS NOT DISTINCT FROM $4 \
                 AND EXISTS (SELECT 1 FROM requests WHERE key = $2 AND status = 'pending')",
            )
            .bind(votes_json)
            .bind(key)
            .bind(idx as i64)
            .bind(expected)
            .execute(&mut *tx)
            .await?
            .rows_affected()
                == 1;
            if swapped {
                append_audit(&mut tx, audit, now_ms()).await?;
            }
            anyhow::Ok(swapped)
        })
    }

    async fn save_draft(&self, key: i64, idx: usize, user: &str, selected: &[usize]) -> Result<()> {
        write_tx!(self, |tx| {
            sqlx::query(sql::SAVE_DRAFT.text())
                .bind(key)
                .bind(idx as i64)
                .bind(user)
                .bind(serde_json::to_string(selected)?)
                .bind(now_ms())
                .execute(&mut *tx)
                .await?;
            anyhow::Ok(())
        })
    }

    async fn draft(&self, key: i64, idx: usize, user: &str) -> Result<Option<Draft>> {
        read!(self, |conn| Reads::<sqlx::Postgres>(conn)
            .draft(key, idx, user)
            .await)
    }

    async fn schedule_due(&self, name: &str) -> Result<Option<i64>> {
        read!(self, |conn| Reads::<sqlx::Postgres>(conn)
            .schedule_due(name)
            .await)
    }

    async fn advance_schedule(&self, name: &str, from: Option<i64>, to: i64) -> Result<bool> {
        let moved = write_tx!(self, |tx| {
            self.shared.fence(&mut tx).await?;
            Tx(&mut *tx).move_schedule(name, from, to).await
        })?;
        Ok(moved == 1)
    }

    async fn live_grants(&self, route: &str, uid: u32, now_ms: i64) -> Result<Vec<Grant>> {
        read!(self, |conn| Reads::<sqlx::Postgres>(conn)
            .grants_for(route, uid, now_ms)
            .await)
    }

    async fn grants(&self, now_ms: i64, limit: u32) -> Result<Vec<Grant>> {
        read!(self, |conn| Reads::<sqlx::Postgres>(conn)
            .grants_live(now_ms, limit)
            .await)
    }

    async fn grant(&self, id: &str) -> Result<Option<Grant>> {
        read!(self, |conn| Reads::<sqlx::Postgres>(conn)
            .grant_by_id(id)
            .await)
    }

    async fn revoke_grant(
        &self,
        id: &str,
        by: &str,
        at_ms: i64,
        audit: &AuditEntry,
    ) -> Result<bool> {
        write_tx!(self, |tx| {
            let revoked = sqlx::query(
                "UPDATE grants SET revoked_at = $1, revoked_by = $2 \
                 WHERE id = $3 AND revoked_at IS NULL AND ends_at > $4",
            )
            .bind(at_ms)
            .bind(by)
            .bind(id)
            .bind(at_ms)
            .execute(&mut *tx)
            .await?
            .rows_affected()
                == 1;
            let mut audit = audit.clone();
            audit.accepted = revoked;
            append_audit(&mut tx, &audit, at_ms).await?;
            anyhow::Ok(revoked)
        })
    }

    async fn mint_once_grant(&self, g: &OnceGrant, audit: &AuditEntry) -> Result<bool> {
        write_tx!(self, |tx| {
            let minted = sqlx::query(
                "INSERT INTO once_grants (id, session, call, tool, uid, approver, request_key, \
                 request_id, created_at, ends_at, used_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULL) \
                 ON CONFLICT (request_key) DO NOTHING",
            )
            .bind(&g.id)
            .bind(&g.session)
            .bind(&g.call)
            .bind(&g.tool)
            .bind(i64::from(g.uid))
            .bind(&g.approver)
            .bind(g.request_key)
            .bind(&g.request_id)
            .bind(g.created_at_ms)
            .bind(g.ends_at_ms)
            .execute(&mut *tx)
            .await?
            .rows_affected()
                == 1;
            let mut audit = audit.clone();
            audit.accepted = minted;
            append_audit(&mut tx, &audit, g.created_at_ms).await?;
            anyhow::Ok(minted)
        })
    }

    async fn use_once_grant(
        &self,
        uid: u32,
        session: &str,
        call: &str,
        now_ms: i64,
        audit: OnceAudit<'_>,
    ) -> Result<Option<OnceGrant>> {
        write_tx!(self, |tx| {
            // The oldest live one, locked: a concurrent use waits, then finds it used.
            let row: Option<sql::rows::OnceGrantRow> = sqlx::query_as(&format!(
                "SELECT {} FROM once_grants \
                 WHERE uid = $1 AND session = $2 AND call = $3 AND used_at IS NULL \
                 AND ends_at > $4 ORDER BY created_at LIMIT 1 FOR UPDATE",
                sql::rows::ONCE_GRANT_COLUMNS
            ))
            .bind(i64::from(uid))
            .bind(session)
            .bind(call)
            .bind(now_ms)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(g) = row.map(sql::rows::OnceGrantRow::into_once_grant) else {
                return anyhow::Ok(None);
            };
            sqlx::query("UPDATE once_grants SET used_at = $1 WHERE id = $2")
                .bind(now_ms)
                .bind(&g.id)
                .execute(&mut *tx)
                .await?;
            let mut entry = audit(&g);
            entry.accepted = true;
            append_audit(&mut tx, &entry, now_ms).await?;
            anyhow::Ok(Some(OnceGrant {
                used_at_ms: Some(now_ms),
                ..g
            }))
        })
    }

    async fn once_grant_of(&self, request_key: i64) -> Result<Option<OnceGrant>> {
        read!(self, |conn| Reads::<sqlx::Postgres>(conn)
            .once_grant_of(request_key)
            .await)
    }

    async fn writable(&self) -> Result<()> {
        // A real write, committed: it fails on a read-only server (a standby) and, as it needs
        // room in the WAL and the table, on a full disk (migrations/postgres/0002).
        let node = self.node().unwrap_or_default().to_owned();
        write_tx!(self, |tx| {
            sqlx::query(
                "INSERT INTO health_probe (node, at) VALUES ($1, $2) \
                 ON CONFLICT (node) DO UPDATE SET at = EXCLUDED.at",
            )
            .bind(&node)
            .bind(now_ms())
            .execute(&mut *tx)
            .await?;
            anyhow::Ok(())
        })
    }

    async fn prune(
        &self,
        ended_before_ms: Option<i64>,
        audit_before_ms: Option<i64>,
    ) -> Result<Pruned> {
        let mut pruned = Pruned::default();
        // Pruning may delete a great many rows at once: it is given the statement timeout
        // rather than the deadline of a call that someone waits for.
        let long = self
            .shared
            .deadlines
            .limit()
            .max(self.shared.connect.statement_timeout);
        if let Some(before) = ended_before_ms {
            pruned.requests = write_tx!(self, long, |tx| {
                // The requests first, locked (every transaction locks a request before its
                // rows); then their rows (foreign keys), then the requests.
                let keys: Vec<i64> = sqlx::query_scalar(
                    "SELECT key FROM requests WHERE status <> 'pending' AND ended_at < $1 \
                     FOR UPDATE",
                )
                .bind(before)
                .fetch_all(&mut *tx)
                .await?;
                if keys.is_empty() {
                    return anyhow::Ok(0);
                }
                for table in ["drafts", "timers", "posts", "questions"] {
                    sqlx::query(&format!("DELETE FROM {table} WHERE request_key = ANY($1)"))
                        .bind(&keys)
                        .execute(&mut *tx)
                        .await?;
                }
                let gone = sqlx::query("DELETE FROM requests WHERE key = ANY($1)")
                    .bind(&keys)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                anyhow::Ok(gone)
            })?;
        }
        if let Some(before) = audit_before_ms {
            // What goes, and how it gets past the audit log's DELETE trigger: `prune_audit`.
            pruned.audit = write_tx!(self, long, |tx| { Tx(&mut *tx).prune_audit(before).await })?;
        }
        Ok(pruned)
    }

    async fn close(&self) {
        self.shared.closed.cancel();
        self.shared.tasks.close();
        self.shared.tasks.wait().await;
        cluster::release(&self.shared).await;
        // A connection still in use when its database went silent is closed by its own
        // deadline; this bound only keeps shutdown from waiting on anything else.
        let limit = self.shared.deadlines.limit();
        if tokio::time::timeout(limit, self.shared.pool.close())
            .await
            .is_err()
        {
            tracing::warn!("the database connections did not close in time; leaving them");
        }
    }
}
