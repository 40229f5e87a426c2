//! The lines waiting to be written to one connection, in order: a queue with many senders (the
//! connection loop and its asks) and one receiver (the connection's writer).
//!
//! The queue holds at most a byte budget (`limits.max_output_bytes`). A client that sends
//! requests but never reads the replies would otherwise make the daemon buffer without end;
//! past the budget the queue is dropped and marked overflowed, and the connection is closed.
//!
//! A small one of our own instead of tokio's mpsc, for memory: that one takes about 1.3 KiB per
//! channel (cache-padded counters and a first block of 32 slots) and every waiting agent holds a
//! connection; this one is a mutex, a `VecDeque` that allocates once lines flow, and a `Notify`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

struct Queue {
    state: Mutex<State>,
    ready: Notify,
    /// Cancelled when the budget overflows, so that a writer blocked on a full socket and the
    /// connection's reader both stop at once.
    overflow: CancellationToken,
}

struct State {
    lines: VecDeque<String>,
    /// Bytes in `lines`.
    bytes: usize,
    budget: usize,
    overflowed: bool,
    senders: usize,
    receiver_gone: bool,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A new queue that holds at most `budget` bytes.
pub fn send_queue(budget: usize) -> (LineTx, LineRx) {
    let queue = Arc::new(Queue {
        state: Mutex::new(State {
            lines: VecDeque::new(),
            bytes: 0,
            budget,
            overflowed: false,
            senders: 1,
            receiver_gone: false,
        }),
        ready: Notify::new(),
        overflow: CancellationToken::new(),
    });
    (LineTx(queue.clone()), LineRx(queue))
}

/// Queues lines; cheap to clone.
pub struct LineTx(Arc<Queue>);

impl LineTx {
    /// Queues one line; `Err` gives it back when the receiver is gone or the client stopped
    /// reading (the budget overflowed).
    pub fn send(&self, line: String) -> Result<(), String> {
        {
            let mut st = self.0.lock();
            if st.receiver_gone || st.overflowed {
                return Err(line);
            }
            if st.bytes + line.len() > st.budget && !st.lines.is_empty() {
                st.overflowed = true;
                st.lines = VecDeque::new();
                st.bytes = 0;
                drop(st);
                self.0.overflow.cancel();
                self.0.ready.notify_one();
                return Err(line);
            }
            st.bytes += line.len();
            st.lines.push_back(line);
        }
        self.0.ready.notify_one();
        Ok(())
    }
}

impl LineTx {
    /// Cancelled once the client went over its budget.
    pub fn overflow(&self) -> CancellationToken {
        self.0.overflow.clone()
    }
}

impl Clone for LineTx {
    fn clone(&self) -> Self {
        self.0.lock().senders += 1;
        LineTx(self.0.clone())
    }
}

impl Drop for LineTx {
    fn drop(&mut self) {
        let last = {
            let mut st = self.0.lock();
            st.senders -= 1;
            st.senders == 0
        };
        if last {
            self.0.ready.notify_one();
        }
    }
}

/// What the writer gets next.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    Line(String),
    /// Every sender is gone and the queue is empty.
    Closed,
    /// The client did not read its replies and went over the budget.
    Overflowed,
}

/// Takes lines in order.
pub struct LineRx(Arc<Queue>);

impl LineRx {
    /// The next line, or why there is none.
    pub async fn recv(&mut self) -> Next {
        loop {
            {
                let mut st = self.0.lock();
                if st.overflowed {
                    return Next::Overflowed;
                }
                if let Some(line) = st.lines.pop_front() {
                    st.bytes -= line.len();
                    if st.lines.is_empty() && st.lines.capacity() > 16 {
                        st.lines = VecDeque::new();
                    }
                    return Next::Line(line);
                }
                if st.senders == 0 {
                    return Next::Closed;
                }
            }
            // A send between the check and here left a permit: this returns at once.
            self.0.ready.notified().await;
        }
    }
}

impl Drop for LineRx {
    fn drop(&mut self) {
        let mut st = self.0.lock();
        st.receiver_gone = true;
        st.lines.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_arrive_in_order_and_end_with_the_last_sender() {
        let (tx, mut rx) = send_queue(1024);
        let tx2 = tx.clone();
        tx.send("a".into()).unwrap();
        tx2.send("b".into()).unwrap();
        drop(tx);
        assert_eq!(rx.recv().await, Next::Line("a".into()));
        let waiter = tokio::spawn(async move {
            let mut got = Vec::new();
            while let Next::Line(l) = rx.recv().await {
                got.push(l);
            }
            got
        });
        tokio::task::yield_now().await;
        tx2.send("c".into()).unwrap();
        drop(tx2);
        assert_eq!(
            waiter.await.unwrap(),
            vec!["b".to_string(), "c".to_string()]
        );
    }

    #[tokio::test]
    async fn sending_after_the_receiver_is_gone_fails() {
        let (tx, rx) = send_queue(1024);
        drop(rx);
        assert_eq!(tx.send("x".into()), Err("x".to_string()));
    }

    #[tokio::test]
    async fn a_client_that_does_not_read_overflows_the_budget() {
        let (tx, mut rx) = send_queue(10);
        // One line over the budget still goes out when nothing else waits.
        tx.send("0123456789abc".into()).unwrap();
        assert_eq!(rx.recv().await, Next::Line("0123456789abc".into()));
        tx.send("01234".into()).unwrap();
        tx.send("56789".into()).unwrap();
        assert!(tx.send("x".into()).is_err());
        assert_eq!(rx.recv().await, Next::Overflowed);
        assert!(tx.send("y".into()).is_err());
    }
}
