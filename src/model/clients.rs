//! The client side shared by every server model: operations, their retry loop, the closed
//! workload's per-client sequencing and the run's measurements.

use super::ops::{Op, OpTable};
use super::workload::Workload;
use crate::engine::rng::{Stream, derive};
use crate::engine::{Instant, Span};
use crate::metrics::recovery::FaultSpan;
use crate::metrics::{RunMetrics, RunRecorder};
use crate::policy::{Decision, Outcome, RetryPolicy};
use rand::SeedableRng;
use rand_xoshiro::SplitMix64;

/// What the model must do after an operation's attempt failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterFailure {
    /// Send the next attempt after this delay.
    Retry(Span),
    /// The operation ended (failed); maybe a closed-workload client starts its next one.
    Ended(Option<NextOp>),
}

/// A closed-workload client's next operation, to be started at `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NextOp {
    pub client: u32,
    pub at: Instant,
}

/// An attempt just sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// 1-based attempt number within the operation.
    pub number: u32,
    /// When the client stops waiting for it ([`Instant::NEVER`] = never).
    pub gives_up_at: Instant,
}

pub struct Clients {
    pub ops: OpTable,
    pub policy: RetryPolicy,
    pub rec: RunRecorder,
    /// Root of the jitter streams; `None` when the backoff draws nothing.
    jitter_root: Option<u64>,
    /// Operations started so far (an open workload's per-operation jitter stream label).
    started: u64,
    /// Closed workload: operations each client has yet to start.
    remaining: Vec<u32>,
    think: Span,
}

impl Clients {
    pub fn new(workload: &Workload, policy: RetryPolicy, run_seed: u64, rec: RunRecorder) -> Clients {
        // Streams nobody reads are not made.
        let jitter_root = policy.backoff.is_random().then(|| derive(run_seed, Stream::Jitter as u64));
        let (remaining, think, capacity) = match *workload {
            Workload::Closed { clients, ops_per_client, think, .. } => {
                (vec![ops_per_client; clients as usize], think, clients as usize)
            }
            Workload::Open { .. } => (Vec::new(), Span::ZERO, 1024),
        };
        Clients {
            ops: OpTable::with_capacity(capacity),
            policy,
            rec,
            jitter_root,
            started: 0,
            remaining,
            think,
        }
    }

    /// Starts an operation of `client` at `now`; returns its slot. The caller sends the first
    /// attempt with [`Clients::send`].
    #[inline]
    pub fn start(&mut self, client: u32, now: Instant) -> u32 {
        // Each operation draws its jitter from its own stream, labelled by its client and an
        // index unique within that client: in a closed workload the number of operations the
        // client has left after this one, in an open one the arrival number. The same
        // operation gets the same draws under every strategy, whatever the interleaving, and
        // the state lives in the operation (one cache line per event).
        let index = match self.remaining.get_mut(client as usize) {
            Some(left) => {
                *left -= 1;
                *left as u64
            }
            None => self.started,
        };
        self.started += 1;
        let jitter = SplitMix64::seed_from_u64(
            self.jitter_root.map_or(0, |root| derive(derive(root, client as u64), index)),
        );
        self.rec.op_started(now);
        self.ops.insert(Op {
            started: now,
            client,
            attempts: 0,
            waiting_for: 0,
            executions: 0,
            refs: 0,
            ended: false,
            backoff: self.policy.backoff.initial_state(),
            jitter,
        })
    }

    /// Records an attempt leaving the client at `now`.
    #[inline]
    pub fn send(&mut self, slot: u32, now: Instant) -> Attempt {
        let op = self.ops.get(slot);
        op.attempts += 1;
        op.waiting_for = op.attempts;
        let a = Attempt { number: op.attempts, gives_up_at: self.policy.gives_up_at(op.started, now) };
        self.rec.call_sent(now);
        a
    }

    /// Whether the client is still waiting for this attempt's answer.
    #[inline]
    pub fn is_waiting(&mut self, slot: u32, attempt: u32) -> bool {
        let op = self.ops.get(slot);
        !op.ended && op.waiting_for == attempt
    }

    /// The operation succeeded at `now`.
    #[inline]
    pub fn succeed(&mut self, slot: u32, now: Instant) -> Option<NextOp> {
        let op = self.ops.get(slot);
        let (started, client, attempts) = (op.started, op.client, op.attempts);
        self.rec.op_succeeded(started, attempts, now);
        self.ops.end(slot);
        self.next_op(client, now)
    }

    /// The attempt the client was waiting for failed with `outcome` at `now`.
    #[inline]
    pub fn fail(&mut self, slot: u32, outcome: Outcome, now: Instant) -> AfterFailure {
        let op = self.ops.get(slot);
        op.waiting_for = 0;
        match self.policy.after_failure(
            outcome,
            op.attempts,
            op.started,
            now,
            &mut op.backoff,
            &mut op.jitter,
        ) {
            Decision::Retry { delay } => AfterFailure::Retry(delay),
            Decision::Stop(reason) => {
                let (started, client, attempts) = (op.started, op.client, op.attempts);
                self.rec.op_failed(reason, started, attempts, now);
                self.ops.end(slot);
                AfterFailure::Ended(self.next_op(client, now))
            }
        }
    }

    /// Closes the run at the horizon: operations still pending fail as `unfinished`.
    pub fn finish(self, events: u64, faults: Option<FaultSpan>, horizon: Instant) -> RunMetrics {
        let mut rec = self.rec;
        for op in self.ops.pending() {
            rec.unfinished(op.started, op.attempts, horizon);
        }
        rec.finish(events, faults, horizon)
    }

    #[inline]
    fn next_op(&self, client: u32, now: Instant) -> Option<NextOp> {
        match self.remaining.get(client as usize) {
            Some(&r) if r > 0 => Some(NextOp { client, at: now + self.think }),
            _ => None,
        }
    }
}
