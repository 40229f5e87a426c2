//! Newline-delimited framing with a size limit.
//!
//! A line over the limit is reported once and then skipped up to its newline, so one oversized
//! line costs the client an error, not its connection (and none of its other asks).

use std::io;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::time::Instant;

#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// One line, without its `\n` (and without a trailing `\r`).
    Line(Vec<u8>),
    /// A line longer than the limit; its bytes are being discarded.
    TooLong,
    /// The peer closed its side.
    Eof,
    /// A line was started but not finished within the line timeout.
    TimedOut,
}

/// What a buffer grows by when less than half of it is free for the next read.
const READ_CHUNK: usize = 8192;

/// A byte stream that can wait for bytes without a buffer to put them in.
pub trait Source: AsyncRead + Unpin {
    /// Ready when a read would not block (bytes, end of stream or an error). By default at
    /// once.
    fn poll_ready(&self, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl Source for tokio::net::unix::OwnedReadHalf {
    fn poll_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Polled, not awaited: a `readable()` future would sit in every idle connection's task.
        self.as_ref().poll_read_ready(cx)
    }
}

impl Source for &[u8] {}

pub struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// Bytes of `buf` already known to hold no newline.
    scanned: usize,
    max: usize,
    discarding: bool,
    /// How long a started line may take to finish.
    line_timeout: Option<Duration>,
    /// When the current unfinished line started.
    started: Option<Instant>,
}

impl<R: Source> LineReader<R> {
    pub fn new(inner: R, max: usize) -> Self {
        LineReader {
            inner,
            buf: Vec::new(),
            scanned: 0,
            max,
            discarding: false,
            line_timeout: None,
            started: None,
        }
    }

    /// Cuts off a client that starts a line and then stalls (a slow-loris).
    pub fn with_line_timeout(mut self, timeout: Duration) -> Self {
        self.line_timeout = Some(timeout);
        self
    }

    /// Reads the next frame. Cancel-safe: bytes read so far stay buffered.
    pub async fn next(&mut self) -> io::Result<Frame> {
        loop {
            if let Some(pos) = self.buf[self.scanned..].iter().position(|&b| b == b'\n') {
                let end = self.scanned + pos;
                let mut line: Vec<u8> = self.buf.drain(..=end).collect();
                self.scanned = 0;
                self.started = (!self.buf.is_empty()).then(Instant::now);
                line.pop();
                if self.discarding {
                    self.discarding = false;
                    continue;
                }
                if line.len() > self.max {
                    return Ok(Frame::TooLong);
                }
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Ok(Frame::Line(line));
            }
            self.scanned = self.buf.len();
            if self.discarding {
                self.buf.clear();
                self.scanned = 0;
            } else if self.buf.len() > self.max {
                self.buf.clear();
                self.scanned = 0;
                self.discarding = true;
                return Ok(Frame::TooLong);
            }
            if self.buf.is_empty() && self.started.is_none() {
                // Thousands of agents may wait on idle connections: between lines a connection
                // holds no buffer. It waits for bytes first and takes one only when they came.
                self.buf = Vec::new();
                std::future::poll_fn(|cx| self.inner.poll_ready(cx)).await?;
            }
            if self.buf.capacity() - self.buf.len() < READ_CHUNK / 2 {
                self.buf.reserve(READ_CHUNK);
            }
            let read = self.inner.read_buf(&mut self.buf);
            let n = match (self.line_timeout, self.started) {
                // Boxed: a timer is large, and only a connection in the middle of a line
                // needs one; an idle one waits on the read alone.
                (Some(limit), Some(start)) => {
                    match Box::pin(tokio::time::timeout_at(start + limit, read)).await {
                        Ok(r) => r?,
                        Err(_) => return Ok(Frame::TimedOut),
                    }
                }
                _ => read.await?,
            };
            if n > 0 && self.started.is_none() {
                self.started = Some(Instant::now());
            }
            if n == 0 {
                if !self.discarding && !self.buf.iter().all(u8::is_ascii_whitespace) {
                    // A last line without its newline still counts.
                    let line = std::mem::take(&mut self.buf);
                    self.scanned = 0;
                    if line.len() > self.max {
                        return Ok(Frame::TooLong);
                    }
                    return Ok(Frame::Line(line));
                }
                return Ok(Frame::Eof);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize) -> Vec<Frame> {
        let mut r = LineReader::new(input, max);
        let mut out = Vec::new();
        loop {
            let f = r.next().await.unwrap();
            let eof = f == Frame::Eof;
            out.push(f);
            if eof {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn splits_lines_and_skips_oversized_ones() {
        let long = vec![b'x'; 50];
        let mut input = b"{\"a\":1}\r\n\n".to_vec();
        input.extend_from_slice(&long);
        input.extend_from_slice(b"\nok\nlast");
        assert_eq!(
            frames(&input, 20).await,
            vec![
                Frame::Line(b"{\"a\":1}".to_vec()),
                Frame::TooLong,
                Frame::Line(b"ok".to_vec()),
                Frame::Line(b"last".to_vec()),
                Frame::Eof
            ]
        );
    }

    #[tokio::test]
    async fn an_idle_socket_reader_holds_no_buffer_and_reads_lines_split_across_writes() {
        use tokio::io::AsyncWriteExt;
        let (a, mut b) = tokio::net::UnixStream::pair().unwrap();
        let (rd, _wr) = a.into_split();
        let mut r = LineReader::new(rd, 1024).with_line_timeout(Duration::from_secs(60));
        b.write_all(b"{\"op\":").await.unwrap();
        let reading = tokio::spawn(async move {
            let f = r.next().await.unwrap();
            (r, f)
        });
        b.write_all(b"\"health\"}\n").await.unwrap();
        let (mut r, f) = reading.await.unwrap();
        assert_eq!(f, Frame::Line(b"{\"op\":\"health\"}".to_vec()));
        // Waiting for the next line: nothing buffered, and no buffer held.
        let waiting = tokio::time::timeout(Duration::from_millis(1), r.next()).await;
        assert!(waiting.is_err(), "no line was sent");
        assert_eq!(r.buf.capacity(), 0);
        b.write_all(b"next\n").await.unwrap();
        assert_eq!(r.next().await.unwrap(), Frame::Line(b"next".to_vec()));
        drop(b);
        assert_eq!(r.next().await.unwrap(), Frame::Eof);
    }

    #[tokio::test]
    async fn a_huge_line_is_reported_once_without_buffering_it() {
        let mut input = vec![b'y'; 100_000];
        input.extend_from_slice(b"\nnext\n");
        assert_eq!(
            frames(&input, 1024).await,
            vec![Frame::TooLong, Frame::Line(b"next".to_vec()), Frame::Eof]
        );
    }
}
