//! `[server.idempotency]`: the dedup store for idempotency keys (DESIGN §3.6), the third
//! stage of the admission pipeline.
//!
//! **Keys.** The client's `idempotency` mode ([`KeyMode`]) decides what key each attempt
//! carries: none; with `per-op`, the operation's unique id ([`OpTable::id`]) on every attempt
//! (a key made before the retry loop: correct); with `per-attempt`, a new key per attempt (the
//! classic bug: every retry looks new to the server). Without `[server.idempotency]` the server
//! ignores keys.
//!
//! **The store**, per key, like a lock taken with `SET NX` and kept with the result:
//!
//! | the key is | an arriving request with it |
//! |---|---|
//! | unknown (or expired) | executes: the key becomes *in progress*, the request goes on to the workers |
//! | in progress | `on_in_progress = "conflict"`: answered **409** at once (retryable by default); `"wait"`: **parked** until the request that executes finishes, then answered with its result; it never executes |
//! | done, less than `ttl` ago | answered at once with the **stored answer**, without executing: no worker, no side effect |
//!
//! When the executing request's work completes, the key is *done* and the store keeps the
//! work's result: a **success**, also when the request that executed it is answered with an
//! `after_effect` error (a gateway 504 or 429 after the worker committed: the error happened
//! outside the store, which saw the work succeed, so a retry learns that it did). A request
//! answered from the store, parked or not, passes back through the same gateway: if the faults
//! stage drew an `after_effect` error for it, that error is its answer instead.
//!
//! **Release.** If the executing request is never served (the full queue rejects it at
//! arrival, or `drop_expired` drops it from the queue), its work is lost: the key is released.
//! The first parked request, if any, becomes the one that executes (it takes the dropped
//! request's place at the head of the queue, see [`super::Server`]) and the others stay parked
//! behind it; without parked requests the key is forgotten, and the next request with it
//! executes. So a key is never executed twice while in progress, and never left in progress
//! with nobody executing it.
//!
//! **Memory** is bounded by the live keys: in progress, or done less than `ttl` ago. Done keys
//! expire lazily: each one is queued with its expiry time in a FIFO (expiry times only grow,
//! since the clock does and `ttl` is fixed), and every access first pops the expired ones, so
//! there is never a full scan. [`Store::peak`] is the most keys held at once
//! (`idempotency_keys_peak`). Parked requests live in a slab with a free list, chained per key:
//! no allocation per request in steady state.
//!
//! **Determinism.** The map is only looked up, never iterated: results do not depend on its
//! order (and its hasher is a fixed function, not seeded by the OS).
//!
//! [`OpTable::id`]: crate::model::ops::OpTable::id

use super::{Admission, Reply, Request};
use crate::engine::{Instant, Span};
use crate::policy::Outcome;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

/// The answer to a repeat while the first request with its key is in progress
/// (`on_in_progress = "conflict"`).
pub const CONFLICT: u16 = 409;

/// The idempotency key a request carries: the operation's unique id, and the attempt number
/// for `per-attempt` keys (0 for `per-op`). [`Key::NONE`] = no key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    id: u64,
    attempt: u32,
}

impl Key {
    pub const NONE: Key = Key { id: u64::MAX, attempt: u32::MAX };

    #[inline]
    pub fn is_none(self) -> bool {
        self == Key::NONE
    }
}

/// What keys a client's attempts carry (`client.idempotency`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KeyMode {
    /// No key.
    #[default]
    None,
    /// One key per logical operation, the same on every attempt.
    PerOp,
    /// A new key on every attempt.
    PerAttempt,
}

impl KeyMode {
    /// The key of attempt `attempt` (1-based) of the operation whose unique id is `op_id`.
    #[inline]
    pub fn key(self, op_id: u64, attempt: u32) -> Key {
        match self {
            KeyMode::None => Key::NONE,
            KeyMode::PerOp => Key { id: op_id, attempt: 0 },
            KeyMode::PerAttempt => Key { id: op_id, attempt },
        }
    }
}

/// The key a request carries, in 8 bytes so that requests stay 32: the high half of its
/// operation's unique id ([`OpTable::id`]: the generation of the operation's slot), the low
/// half being the slot the request already holds, and the client's key mode.
///
/// [`OpTable::id`]: crate::model::ops::OpTable::id
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyTag {
    id_high: u32,
    mode: KeyMode,
}

impl KeyTag {
    /// No key.
    pub const NONE: KeyTag = KeyTag { id_high: 0, mode: KeyMode::None };

    /// The tag of a request of the operation whose unique id is `op_id`.
    #[inline]
    pub fn new(mode: KeyMode, op_id: u64) -> KeyTag {
        KeyTag { id_high: (op_id >> 32) as u32, mode }
    }

    /// The key of attempt `attempt` of the operation in slot `op`.
    #[inline]
    pub fn key(self, op: u32, attempt: u32) -> Key {
        self.mode.key(((self.id_high as u64) << 32) | op as u64, attempt)
    }
}

/// FxHash's multiply-rotate: fast on integer keys and a fixed function (no per-process seed).
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    #[inline]
    fn write_u32(&mut self, x: u32) {
        self.write_u64(x as u64);
    }
    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// No parked request (end of a chain).
const NIL: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
enum Entry {
    /// A request with the key is executing; requests parked on it (`"wait"`) are chained from
    /// `head` to `tail` in the slab.
    InProgress { head: u32, tail: u32 },
    /// Executed; repeats get `answer` until `expires`.
    Done { answer: Reply, expires: Instant },
}

#[derive(Clone, Copy, Debug)]
struct Parked {
    req: Request,
    next: u32,
}

pub struct Store {
    ttl: Span,
    wait: bool,
    entries: HashMap<Key, Entry, BuildHasherDefault<KeyHasher>>,
    /// Done keys in the order they expire.
    expiry: VecDeque<(Instant, Key)>,
    parked: Vec<Parked>,
    free: Vec<u32>,
    /// Parked requests answered by a completion, waiting to be sent back.
    answered: VecDeque<Request>,
    peak: usize,
}

/// What a repeat of a key still in progress gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WhileInProgress {
    /// Answered 409 at once.
    Conflict,
    /// Parked until the key's first request is answered, then answered the same.
    Wait,
}

/// The dedup store's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreParams {
    /// How long a finished key's answer is kept.
    pub ttl: Span,
    pub on_in_progress: WhileInProgress,
}

impl Store {
    pub fn new(params: &StoreParams) -> Store {
        Store {
            ttl: params.ttl,
            wait: params.on_in_progress == WhileInProgress::Wait,
            entries: HashMap::default(),
            expiry: VecDeque::new(),
            parked: Vec::new(),
            free: Vec::new(),
            answered: VecDeque::new(),
            peak: 0,
        }
    }

    /// The most keys held at once so far.
    pub fn peak(&self) -> usize {
        self.peak
    }

    /// Keys held now (in progress or done and not expired as of the last access).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The stage (see the table in [the module docs](self)). A request without a key goes on.
    #[inline]
    pub fn admit(&mut self, req: &Request, now: Instant) -> Admission {
        let key = req.key();
        if key.is_none() {
            return Admission::Continue;
        }
        self.expire(now);
        match self.entries.get_mut(&key) {
            None => {
                self.entries.insert(key, Entry::InProgress { head: NIL, tail: NIL });
                self.peak = self.peak.max(self.entries.len());
                Admission::Continue
            }
            Some(Entry::Done { answer, .. }) => Admission::Replay(replay(req, *answer)),
            Some(Entry::InProgress { .. }) if !self.wait => {
                Admission::Answer(Reply::of(Outcome::Status(CONFLICT)))
            }
            Some(Entry::InProgress { head, tail }) => {
                let slot = match self.free.pop() {
                    Some(i) => {
                        self.parked[i as usize] = Parked { req: *req, next: NIL };
                        i
                    }
                    None => {
                        self.parked.push(Parked { req: *req, next: NIL });
                        (self.parked.len() - 1) as u32
                    }
                };
                if *tail == NIL {
                    *head = slot;
                } else {
                    self.parked[*tail as usize].next = slot;
                }
                *tail = slot;
                Admission::Park
            }
        }
    }

    /// The work of the request that executes `key` completed at `now`: the key is done with a
    /// success, and the requests parked on it are answered ([`Store::pop_answered`]).
    #[inline(never)]
    pub fn complete(&mut self, key: Key, now: Instant) {
        if key.is_none() {
            return;
        }
        self.expire(now);
        let answer = Reply::SUCCESS;
        let expires = now + self.ttl;
        let Some(entry) = self.entries.get_mut(&key) else {
            debug_assert!(false, "a request executed a key the store does not hold");
            return;
        };
        let Entry::InProgress { head, .. } = *entry else {
            debug_assert!(false, "a key completed twice");
            return;
        };
        *entry = Entry::Done { answer, expires };
        self.expiry.push_back((expires, key));
        let mut at = head;
        while at != NIL {
            let Parked { mut req, next } = self.parked[at as usize];
            req.answer = replay(&req, answer);
            self.answered.push_back(req);
            self.free.push(at);
            at = next;
        }
    }

    /// A parked request answered by a completion, to be sent back (in the order they parked).
    #[inline]
    pub fn pop_answered(&mut self) -> Option<Request> {
        self.answered.pop_front()
    }

    /// The request executing `key` will never be served (rejected by the full queue, or
    /// dropped): the first request parked on the key, if any, now executes it and is returned
    /// (the caller serves it); otherwise the key is forgotten.
    pub fn abandon(&mut self, key: Key) -> Option<Request> {
        if key.is_none() {
            return None;
        }
        match self.entries.get_mut(&key) {
            Some(Entry::InProgress { head, tail }) if *head != NIL => {
                let first = *head;
                let Parked { req, next } = self.parked[first as usize];
                *head = next;
                if next == NIL {
                    *tail = NIL;
                }
                self.free.push(first);
                Some(req)
            }
            Some(Entry::InProgress { .. }) => {
                self.entries.remove(&key);
                None
            }
            _ => {
                debug_assert!(false, "an abandoned key is not in progress");
                None
            }
        }
    }

    /// Forgets the done keys whose `ttl` has passed by `now`.
    #[inline]
    fn expire(&mut self, now: Instant) {
        while let Some(&(at, key)) = self.expiry.front() {
            if at > now {
                break;
            }
            self.expiry.pop_front();
            // The key may have been forgotten and executed again since: only a done entry with
            // this very expiry time goes.
            if let Some(Entry::Done { expires, .. }) = self.entries.get(&key)
                && *expires == at
            {
                self.entries.remove(&key);
            }
        }
    }
}

/// The answer to a request answered from the store: the stored answer, unless the faults stage
/// drew an `after_effect` error for this request (the gateway's error replaces whatever the
/// server answered).
#[inline]
fn replay(req: &Request, stored: Reply) -> Reply {
    if req.answer.outcome == Outcome::Success { stored } else { req.answer }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn t(s: u64) -> Instant {
        Instant::from_ns(s * S)
    }

    fn store(ttl_s: u64, on_in_progress: WhileInProgress) -> Store {
        Store::new(&StoreParams { ttl: Span::from_ns(ttl_s * S), on_in_progress })
    }

    fn req(op: u32, attempt: u32, mode: KeyMode) -> Request {
        let mut r = Request::new(op, attempt, Instant::NEVER);
        r.key_tag = KeyTag::new(mode, op as u64);
        r
    }

    const CONFLICT_REPLY: Admission = Admission::Answer(Reply {
        outcome: Outcome::Status(409),
        retry_after: super::super::RetryAfterCode::NONE,
    });

    #[test]
    fn keys_by_mode() {
        assert!(KeyMode::None.key(7, 1).is_none());
        assert_eq!(KeyMode::PerOp.key(7, 1), KeyMode::PerOp.key(7, 2));
        assert_ne!(KeyMode::PerAttempt.key(7, 1), KeyMode::PerAttempt.key(7, 2));
        assert_ne!(KeyMode::PerOp.key(7, 1), KeyMode::PerOp.key(8, 1));
    }

    #[test]
    fn a_tag_rebuilds_the_operation_id() {
        use crate::model::ops::{Op, OpTable};
        let mut t = OpTable::default();
        let op = || Op::new(Instant::ZERO, 0, Default::default(), rand::SeedableRng::seed_from_u64(0));
        // Reuse slot 0 a few times so that its generation is not 0.
        for _ in 0..3 {
            let s = t.insert(op());
            t.end(s);
        }
        let slot = t.insert(op());
        let other = t.insert(op());
        for mode in [KeyMode::PerOp, KeyMode::PerAttempt] {
            assert_eq!(KeyTag::new(mode, t.id(slot)).key(slot, 2), mode.key(t.id(slot), 2));
            assert_ne!(
                KeyTag::new(mode, t.id(slot)).key(slot, 2),
                KeyTag::new(mode, t.id(other)).key(other, 2)
            );
        }
        assert!(KeyTag::NONE.key(slot, 1).is_none());
        assert_eq!(std::mem::size_of::<Request>(), 32);
    }

    #[test]
    fn no_key_passes() {
        let mut s = store(10, WhileInProgress::Conflict);
        let r = req(1, 1, KeyMode::None);
        assert_eq!(s.admit(&r, t(0)), Admission::Continue);
        assert_eq!(s.admit(&r, t(0)), Admission::Continue);
        assert_eq!(s.peak(), 0);
    }

    #[test]
    fn first_executes_repeat_conflicts_then_replays_then_expires() {
        let mut s = store(10, WhileInProgress::Conflict);
        let a1 = req(1, 1, KeyMode::PerOp);
        let a2 = req(1, 2, KeyMode::PerOp);
        assert_eq!(s.admit(&a1, t(0)), Admission::Continue, "the first executes");
        assert_eq!(s.admit(&a2, t(1)), CONFLICT_REPLY, "a repeat while in progress: 409");
        s.complete(a1.key(), t(2));
        assert_eq!(s.admit(&a2, t(3)), Admission::Replay(Reply::SUCCESS), "done: the stored answer");
        assert_eq!(s.admit(&a2, t(11)), Admission::Replay(Reply::SUCCESS), "still within ttl (2 + 10)");
        assert_eq!(s.admit(&a2, t(12)), Admission::Continue, "expired: it executes again");
        assert_eq!(s.len(), 1);
        assert_eq!(s.peak(), 1);
    }

    #[test]
    fn per_attempt_keys_never_match() {
        let mut s = store(10, WhileInProgress::Conflict);
        for attempt in 1..=4 {
            let r = req(1, attempt, KeyMode::PerAttempt);
            assert_eq!(s.admit(&r, t(0)), Admission::Continue);
            s.complete(r.key(), t(0));
        }
        assert_eq!(s.peak(), 4, "one key per attempt, all held");
    }

    #[test]
    fn an_after_effect_error_replaces_the_stored_answer() {
        let mut s = store(10, WhileInProgress::Conflict);
        let a1 = req(1, 1, KeyMode::PerOp);
        s.admit(&a1, t(0));
        s.complete(a1.key(), t(0));
        let mut a2 = req(1, 2, KeyMode::PerOp);
        a2.answer = Reply::of(Outcome::Status(504));
        assert_eq!(s.admit(&a2, t(1)), Admission::Replay(Reply::of(Outcome::Status(504))));
    }

    #[test]
    fn waiters_are_answered_when_the_first_completes() {
        let mut s = store(10, WhileInProgress::Wait);
        let a1 = req(1, 1, KeyMode::PerOp);
        let other = req(2, 1, KeyMode::PerOp);
        assert_eq!(s.admit(&a1, t(0)), Admission::Continue);
        assert_eq!(s.admit(&other, t(0)), Admission::Continue);
        for attempt in 2..=4 {
            assert_eq!(s.admit(&req(1, attempt, KeyMode::PerOp), t(1)), Admission::Park);
        }
        assert!(s.pop_answered().is_none());
        s.complete(a1.key(), t(2));
        let answered: Vec<_> = std::iter::from_fn(|| s.pop_answered()).collect();
        assert_eq!(answered.iter().map(|r| r.attempt).collect::<Vec<_>>(), vec![2, 3, 4], "in park order");
        assert!(answered.iter().all(|r| r.answer == Reply::SUCCESS));
        // The slab slots are reused.
        s.admit(&req(2, 2, KeyMode::PerOp), t(3));
        assert_eq!(s.parked.len(), 3);
    }

    #[test]
    fn an_abandoned_key_passes_to_the_first_waiter_or_is_forgotten() {
        let mut s = store(10, WhileInProgress::Wait);
        let a1 = req(1, 1, KeyMode::PerOp);
        s.admit(&a1, t(0));
        s.admit(&req(1, 2, KeyMode::PerOp), t(1));
        s.admit(&req(1, 3, KeyMode::PerOp), t(1));
        // The first is dropped: attempt 2 executes now, attempt 3 keeps waiting.
        let promoted = s.abandon(a1.key()).expect("a waiter takes over");
        assert_eq!(promoted.attempt, 2);
        assert_eq!(s.admit(&req(1, 4, KeyMode::PerOp), t(2)), Admission::Park);
        // Attempt 2 is dropped too: attempt 3 executes.
        assert_eq!(s.abandon(promoted.key()).map(|r| r.attempt), Some(3));
        s.complete(promoted.key(), t(3));
        let answered: Vec<_> = std::iter::from_fn(|| s.pop_answered()).map(|r| r.attempt).collect();
        assert_eq!(answered, vec![4], "the one still parked is answered; nothing executed twice");
        // Without waiters an abandoned key is forgotten: the next request executes.
        let b = req(9, 1, KeyMode::PerOp);
        s.admit(&b, t(4));
        assert!(s.abandon(b.key()).is_none());
        assert_eq!(s.admit(&req(9, 2, KeyMode::PerOp), t(5)), Admission::Continue);
    }

    #[test]
    fn expiry_is_lazy_and_bounded_by_live_keys() {
        let mut s = store(5, WhileInProgress::Conflict);
        // One operation per second, each done at once: at most 5 or 6 keys live at a time.
        for i in 0..1000u32 {
            let r = req(i, 1, KeyMode::PerOp);
            assert_eq!(s.admit(&r, t(i as u64)), Admission::Continue);
            s.complete(r.key(), t(i as u64));
        }
        assert!(s.peak() <= 6, "peak {}", s.peak());
        assert!(s.expiry.len() <= 6);
        // A key re-executed after expiry keeps its new entry when the stale record pops.
        let mut s = store(5, WhileInProgress::Conflict);
        let r = req(1, 1, KeyMode::PerOp);
        s.admit(&r, t(0));
        s.complete(r.key(), t(0));
        assert_eq!(s.admit(&r, t(5)), Admission::Continue, "expired at 5: executes again");
        s.complete(r.key(), t(6));
        assert_eq!(s.admit(&r, t(10)), Admission::Replay(Reply::SUCCESS), "done again until 11");
        assert_eq!(s.admit(&r, t(11)), Admission::Continue);
    }
}
