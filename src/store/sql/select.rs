//! A read of requests with the answers of their questions (and, when asked, their outbox
//! rows) in one query, as both backends make it: the text ([`select`]) differs only in how
//! the database folds rows into a JSON array, and the row is read back by [`request_of`] and
//! [`with_posts_of`].

use super::rows::{answers_from_json, posts_from_json, RequestRow, POST_COLUMNS};
use super::Dialect;
use crate::domain::request::{Post, Request};
use anyhow::Result;
use sqlx::{ColumnIndex, Decode, FromRow, Row, Type};

/// The columns of `requests` every read of a request takes (PostgreSQL adds `node`).
pub(in crate::store) const REQUEST_COLUMNS: &str =
    "key, request_id, token, questions_json, caller_json, scope_json, status, answerer, answerers, \
     route, peer_uid, peer_pid, created_at, ended_at, result_json, error_code, error_message, \
     expire_at, on_expire, withdrawn";

/// The columns of `questions` that [`answers_from_json`] reads, in its order.
const ANSWER_COLUMNS: &str = "idx, answered_at, answered_by, answered_via, answered_id, \
     answered_note, selected_json, custom, votes_json, terms_json";

/// Options for [`select`]: what to read besides the request and its answers.
#[derive(Clone, Copy)]
pub(in crate::store) struct With {
    /// The context (what answerers and listings show).
    pub(in crate::store) context: bool,
    /// The outbox rows, as `posts_json`.
    pub(in crate::store) posts: bool,
}

/// The request with its context.
pub(in crate::store) const CONTEXT: With = With {
    context: true,
    posts: false,
};

/// The request with its context and its outbox rows.
pub(in crate::store) const FULL: With = With {
    context: true,
    posts: true,
};

/// The rows of `table` that belong to the request, `columns` of each, as one JSON array (text,
/// `[]` when there are none).
fn json_rows(dialect: Dialect, columns: &str, table: &str) -> String {
    let array = match dialect {
        Dialect::Sqlite => format!("json_group_array(json_array({columns}))"),
        Dialect::Postgres => {
            format!("COALESCE(json_agg(json_build_array({columns})), '[]')::text")
        }
    };
    format!("(SELECT {array} FROM {table} WHERE request_key = requests.key)")
}

/// A read of requests with their answers (and what `with` asks for) in one query; `rest` is
/// the WHERE clause and the order.
pub(in crate::store) fn select(dialect: Dialect, with: With, rest: &str) -> String {
    let node = match dialect {
        Dialect::Sqlite => "",
        Dialect::Postgres => ", node",
    };
    let context = if with.context { ", context_json" } else { "" };
    let answers = json_rows(dialect, ANSWER_COLUMNS, "questions");
    let posts = if with.posts {
        format!(
            ", {} AS posts_json",
            json_rows(dialect, POST_COLUMNS, "posts")
        )
    } else {
        String::new()
    };
    format!(
        "SELECT {REQUEST_COLUMNS}{node}{context}, {answers} AS answers_json{posts} \
         FROM requests {rest}"
    )
}

/// The request of a row that [`select`] read.
pub(in crate::store) fn request_of<R>(row: &R) -> Result<Request>
where
    R: Row,
    for<'r> RequestRow: FromRow<'r, R>,
    for<'r> &'r str: Decode<'r, R::Database> + Type<R::Database>,
    &'static str: ColumnIndex<R>,
{
    let answers = answers_from_json(row.try_get("answers_json")?)?;
    RequestRow::from_row(row)?.into_request(answers)
}

/// The request and its outbox rows of a row that [`select`] read with [`FULL`].
pub(in crate::store) fn with_posts_of<R>(row: &R) -> Result<(Request, Vec<Post>)>
where
    R: Row,
    for<'r> RequestRow: FromRow<'r, R>,
    for<'r> &'r str: Decode<'r, R::Database> + Type<R::Database>,
    &'static str: ColumnIndex<R>,
{
    Ok((
        request_of(row)?,
        posts_from_json(row.try_get("posts_json")?)?,
    ))
}
