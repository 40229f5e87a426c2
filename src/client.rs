//! A client connection to the daemon's socket, used by the CLI and the tests.

use crate::server::framing::{Frame, LineReader};
use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::path::Path;
use tokio::io::AsyncWriteExt;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::UnixStream;

/// Replies are bounded too, but generously: a `history` reply can be large.
const MAX_REPLY_BYTES: usize = 64 * 1024 * 1024;

pub struct Client {
    reader: LineReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
}

impl Client {
    pub async fn connect(path: &Path) -> std::io::Result<Client> {
        let stream = UnixStream::connect(path).await?;
        let (rd, wr) = stream.into_split();
        Ok(Client {
            reader: LineReader::new(rd, MAX_REPLY_BYTES),
            writer: wr,
        })
    }

    /// Sends one line.
    pub async fn send(&mut self, value: &Value) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(value)?;
        line.push(b'\n');
        self.writer.write_all(&line).await
    }

    /// Sends raw bytes, for tests of bad input.
    pub async fn send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.writer.write_all(bytes).await
    }

    /// The next event line as raw text, or `None` when the daemon closed the connection.
    pub async fn recv_line(&mut self) -> Result<Option<String>> {
        match self.reader.next().await? {
            Frame::Line(l) => Ok(Some(
                String::from_utf8(l).context("the daemon sent a line that is not UTF-8")?,
            )),
            Frame::TooLong => bail!("the daemon sent a line longer than {MAX_REPLY_BYTES} bytes"),
            Frame::Eof => Ok(None),
            Frame::TimedOut => bail!("the daemon stalled in the middle of a line"),
        }
    }

    /// The next event, parsed, or `None` when the daemon closed the connection.
    pub async fn recv(&mut self) -> Result<Option<Value>> {
        match self.recv_line().await? {
            Some(l) => Ok(Some(
                serde_json::from_str(&l).context("the daemon sent a line that is not JSON")?,
            )),
            None => Ok(None),
        }
    }

    /// Sends one operation and reads its one reply.
    pub async fn call(&mut self, op: &Value) -> Result<Value> {
        self.send(op).await?;
        self.recv()
            .await?
            .context("the daemon closed the connection before replying")
    }
}
