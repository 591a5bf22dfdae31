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
//! **Locks that expire** (`lock_ttl`). The in-progress mark is a lock, `SET lock:<key> NX PX
//! <lock_ttl>` taken when the request passes the store (its wait in the queue counts), with a
//! [`Grant`] number per key that the request carries to its worker. Without `lock_ttl` it lasts
//! until its request finishes or is dropped. With it, a repeat that finds the lock expired
//! takes a new grant and goes on to execute, while the earlier holder may still be working
//! ([`Store::locks_expired`]). When a holder finishes or is dropped it releases the lock as
//! [`Release`] says: `Delete` removes whoever's lock is there (a later holder's too),
//! `CompareAndDelete` only its own. With `fencing`, the resource compares the completing
//! holder's grant with the key's latest: an older one is refused ([`Completion::Fenced`]): no
//! effect, no stored result, answered 409. A stored result and a later holder's lock can
//! coexist (an expired holder without fencing stores its result while the later one works);
//! a request then gets the stored answer. A key is forgotten only when it has no result, no
//! lock and no holder still at the server, so its grants keep increasing while any holder may
//! still finish. Expiring locks are modelled with `"conflict"` only (refused with `"wait"`).
//!
//! **Release.** If the executing request is never served (the full queue rejects it at
//! arrival, or `drop_expired` drops it from the queue), its work is lost: the key is released.
//! The first parked request, if any, becomes the one that executes (it takes the dropped
//! request's place at the head of the queue, see [`super::Server`]) and the others stay parked
//! behind it; without parked requests the key is forgotten, and the next request with it
//! executes. So a key is never executed twice while in progress, and never left in progress
//! with nobody executing it.
//!
//! **Memory** is bounded by the live keys: in progress, or done less than `ttl` ago. Stored
//! results expire lazily: each one is queued with its expiry time in a FIFO (expiry times only grow,
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
/// for `per-attempt` keys (for `per-op`, the number of re-drives that asked for a new key: 0
/// but after such a re-drive). [`Key::NONE`] = no key.
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
    /// The key of attempt `attempt` (1-based) of the operation whose unique id is `op_id`,
    /// after `new_keys` new keys (re-drives or application passes that asked for one;
    /// attempt numbers keep increasing through them, so `per-attempt` keys are new anyway).
    #[inline]
    pub fn key(self, op_id: u64, attempt: u32, new_keys: u8) -> Key {
        match self {
            KeyMode::None => Key::NONE,
            KeyMode::PerOp => Key { id: op_id, attempt: new_keys as u32 },
            KeyMode::PerAttempt => Key { id: op_id, attempt },
        }
    }
}

/// A grant of a key's lock: the fencing token (Kleppmann, "How to do distributed locking",
/// 2016), numbered from 1 per key. A request that takes the lock carries its grant to the
/// worker, and the resource compares it with the key's latest grant when the work completes.
/// It is kept modulo 2^16 so that requests stay 32 bytes: a holder would be mistaken for the
/// latest only after 65,536 later grants of its own key while it is still at the server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Grant(u16);

impl Grant {
    /// A key's first grant.
    pub const FIRST: Grant = Grant(1);

    /// The grant after this one.
    #[inline]
    pub fn next(self) -> Grant {
        Grant(self.0.wrapping_add(1))
    }
}

/// The key a request carries, in 8 bytes so that requests stay 32: the high half of its
/// operation's unique id ([`OpTable::id`]: the generation of the operation's slot), the low
/// half being the slot the request already holds, the client's key mode, the number of
/// re-drives that gave the operation a new key, and the lock grant the request took (if it
/// executes the key).
///
/// [`OpTable::id`]: crate::model::ops::OpTable::id
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyTag {
    id_high: u32,
    /// The grant this request took at the store (set when it executes the key).
    pub grant: Grant,
    mode: KeyMode,
    new_keys: u8,
}

impl KeyTag {
    /// No key.
    pub const NONE: KeyTag = KeyTag { id_high: 0, grant: Grant(0), mode: KeyMode::None, new_keys: 0 };

    /// The tag of a request of the operation whose unique id is `op_id`, with `new_keys`
    /// new keys ([`KeyMode::key`]).
    #[inline]
    pub fn new(mode: KeyMode, op_id: u64, new_keys: u8) -> KeyTag {
        KeyTag { id_high: (op_id >> 32) as u32, grant: Grant(0), mode, new_keys }
    }

    /// The key of attempt `attempt` of the operation in slot `op`.
    #[inline]
    pub fn key(self, op: u32, attempt: u32) -> Key {
        self.mode.key(((self.id_high as u64) << 32) | op as u64, attempt, self.new_keys)
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

/// What the store holds for one key: a stored result, a lock, or both (a holder whose lock
/// was taken over may store its result while the later holder still works).
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// The stored (success) answer is kept until then; `None`: no result stored.
    done_until: Option<Instant>,
    /// The lock is held until then (`Instant::NEVER` without `lock_ttl`); `None`: not held.
    lock_until: Option<Instant>,
    /// The grant that holds the lock (meaningful while `lock_until` is `Some`).
    lock_grant: Grant,
    /// The latest grant of the key: the fencing token a holder must still carry to apply
    /// its effect.
    latest: Grant,
    /// Requests that took a grant of the key and are still at the server (waiting or in
    /// service). The entry outlives them, so that grants keep increasing while any of them
    /// may still finish.
    holders: u32,
    /// Requests parked on the lock (`"wait"`), chained from `head` to `tail` in the slab.
    head: u32,
    tail: u32,
}

impl Entry {
    /// Nothing left to remember: no result, no lock, no request that may still finish.
    #[inline]
    fn is_empty(&self) -> bool {
        self.done_until.is_none() && self.lock_until.is_none() && self.holders == 0
    }
}

#[derive(Clone, Copy, Debug)]
struct Parked {
    req: Request,
    next: u32,
}

pub struct Store {
    ttl: Span,
    wait: bool,
    /// How long a grant holds the lock (`None`: until its request finishes or is dropped).
    lock_ttl: Option<Span>,
    release: Release,
    fencing: bool,
    entries: HashMap<Key, Entry, BuildHasherDefault<KeyHasher>>,
    /// Stored results in the order they expire.
    expiry: VecDeque<(Instant, Key)>,
    parked: Vec<Parked>,
    free: Vec<u32>,
    /// Parked requests answered by a completion, waiting to be sent back.
    answered: VecDeque<Request>,
    peak: usize,
    /// Grants whose lock expired while their request was still at the server.
    locks_expired: u64,
    /// Completions refused by fencing.
    fenced: u64,
}

/// What a repeat of a key still in progress gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WhileInProgress {
    /// Answered 409 at once.
    Conflict,
    /// Parked until the key's first request is answered, then answered the same.
    Wait,
}

/// How a holder lets go of the lock when its request finishes or is dropped (the `finally`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Release {
    /// `DEL lock:<key>`: whoever holds it now, even a later holder that took it after this
    /// one's expired.
    Delete,
    /// Delete only if this holder still holds it (the Redis documentation's Lua
    /// compare-and-delete).
    #[default]
    CompareAndDelete,
}

/// The dedup store's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreParams {
    /// How long a finished key's answer is kept.
    pub ttl: Span,
    pub on_in_progress: WhileInProgress,
    /// How long a grant holds the lock; `None`: until its request finishes or is dropped.
    pub lock_ttl: Option<Span>,
    pub release: Release,
    /// The resource checks the holder's grant: a holder whose key was granted again since
    /// cannot apply its effect.
    pub fencing: bool,
}

/// What became of the work of a request that executed its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completion {
    /// Its effect happened (and its result is stored).
    Applied,
    /// Fencing refused it: a later grant of the key exists. No effect, nothing stored; the
    /// request is answered 409.
    Fenced,
}

impl Store {
    pub fn new(params: &StoreParams) -> Store {
        Store {
            ttl: params.ttl,
            wait: params.on_in_progress == WhileInProgress::Wait,
            lock_ttl: params.lock_ttl,
            release: params.release,
            fencing: params.fencing,
            entries: HashMap::default(),
            expiry: VecDeque::new(),
            parked: Vec::new(),
            free: Vec::new(),
            answered: VecDeque::new(),
            peak: 0,
            locks_expired: 0,
            fenced: 0,
        }
    }

    /// The most keys held at once so far.
    pub fn peak(&self) -> usize {
        self.peak
    }

    /// Grants whose lock expired while their request was still at the server (counted when a
    /// later request takes the expired lock, or when the holder finishes or is dropped).
    pub fn locks_expired(&self) -> u64 {
        self.locks_expired
    }

    /// Completions fencing refused.
    pub fn fenced(&self) -> u64 {
        self.fenced
    }

    /// Keys held now (with a result, a lock or a request still at the server, as of the last
    /// access).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// When a lock granted at `now` expires.
    #[inline]
    fn lock_until(&self, now: Instant) -> Instant {
        self.lock_ttl.map_or(Instant::NEVER, |ttl| now + ttl)
    }

    /// The stage (see the table in [the module docs](self)). A request without a key goes on;
    /// one that takes the key's lock carries its grant on (`req`'s key tag).
    #[inline]
    pub fn admit(&mut self, req: &mut Request, now: Instant) -> Admission {
        let key = req.key();
        if key.is_none() {
            return Admission::Continue;
        }
        self.expire(now);
        let lock_until = self.lock_until(now);
        let Some(entry) = self.entries.get_mut(&key) else {
            self.entries.insert(
                key,
                Entry {
                    done_until: None,
                    lock_until: Some(lock_until),
                    lock_grant: Grant::FIRST,
                    latest: Grant::FIRST,
                    holders: 1,
                    head: NIL,
                    tail: NIL,
                },
            );
            req.key_tag.grant = Grant::FIRST;
            self.peak = self.peak.max(self.entries.len());
            return Admission::Continue;
        };
        if entry.done_until.is_some() {
            return Admission::Replay(replay(req, Reply::SUCCESS));
        }
        match entry.lock_until {
            Some(until) if until > now => {
                if !self.wait {
                    return Admission::Answer(Reply::of(Outcome::Status(CONFLICT)));
                }
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
                if entry.tail == NIL {
                    entry.head = slot;
                } else {
                    self.parked[entry.tail as usize].next = slot;
                }
                entry.tail = slot;
                Admission::Park
            }
            expired_or_free => {
                // An expired lock's holder is still at the server (it releases the lock when it
                // finishes or is dropped): its TTL ran out before its work finished.
                self.locks_expired += expired_or_free.is_some() as u64;
                debug_assert!(
                    entry.head == NIL,
                    "requests parked on a lock that expired (lock_ttl with \"wait\")"
                );
                req.key_tag.grant = entry.take_lock(lock_until);
                Admission::Continue
            }
        }
    }

    /// The work of the request that executed `key` with grant `grant` completed at `now`:
    /// unless fencing refuses it, its effect happens and the key's result is stored (the
    /// requests parked on it are then answered, [`Store::pop_answered`]); then the holder
    /// lets go of the lock as `release` says.
    #[inline(never)]
    pub fn complete(&mut self, key: Key, grant: Grant, now: Instant) -> Completion {
        if key.is_none() {
            return Completion::Applied;
        }
        self.expire(now);
        let expires = now + self.ttl;
        let Some(entry) = self.entries.get_mut(&key) else {
            debug_assert!(false, "a request executed a key the store does not hold");
            return Completion::Applied;
        };
        debug_assert!(entry.holders > 0);
        entry.holders -= 1;
        self.locks_expired += entry.holds_expired(grant, now) as u64;
        let completion = if self.fencing && grant != entry.latest {
            self.fenced += 1;
            Completion::Fenced
        } else {
            entry.done_until = Some(expires);
            self.expiry.push_back((expires, key));
            if entry.lock_grant == grant {
                let mut at = entry.head;
                while at != NIL {
                    let Parked { mut req, next } = self.parked[at as usize];
                    req.answer = replay(&req, Reply::SUCCESS);
                    self.answered.push_back(req);
                    self.free.push(at);
                    at = next;
                }
                (entry.head, entry.tail) = (NIL, NIL);
            }
            Completion::Applied
        };
        entry.release(self.release, grant);
        if entry.is_empty() {
            self.entries.remove(&key);
        }
        completion
    }

    /// A parked request answered by a completion, to be sent back (in the order they parked).
    #[inline]
    pub fn pop_answered(&mut self) -> Option<Request> {
        self.answered.pop_front()
    }

    /// The request executing `key` with grant `grant` will never be served (rejected by the
    /// full queue, or dropped at `now`): the first request parked on the key, if any, takes
    /// the lock and is returned (the caller serves it); otherwise the holder lets go of the
    /// lock as `release` says, and the key is forgotten when nothing else holds it.
    pub fn abandon(&mut self, key: Key, grant: Grant, now: Instant) -> Option<Request> {
        if key.is_none() {
            return None;
        }
        let lock_until = self.lock_until(now);
        let Some(entry) = self.entries.get_mut(&key) else {
            debug_assert!(false, "an abandoned key is not held");
            return None;
        };
        debug_assert!(entry.holders > 0);
        entry.holders -= 1;
        self.locks_expired += entry.holds_expired(grant, now) as u64;
        if entry.lock_grant == grant && entry.lock_until.is_some() && entry.head != NIL {
            let first = entry.head;
            let Parked { mut req, next } = self.parked[first as usize];
            entry.head = next;
            if next == NIL {
                entry.tail = NIL;
            }
            self.free.push(first);
            req.key_tag.grant = entry.take_lock(lock_until);
            return Some(req);
        }
        entry.release(self.release, grant);
        if entry.is_empty() {
            self.entries.remove(&key);
        }
        None
    }

    /// Forgets the stored results whose `ttl` has passed by `now`, and the keys left empty.
    #[inline]
    fn expire(&mut self, now: Instant) {
        while let Some(&(at, key)) = self.expiry.front() {
            if at > now {
                break;
            }
            self.expiry.pop_front();
            // The result may have been stored again since (by a later holder, or after the key
            // was forgotten and executed again): only a result with this very expiry time goes.
            if let Some(entry) = self.entries.get_mut(&key)
                && entry.done_until == Some(at)
            {
                entry.done_until = None;
                if entry.is_empty() {
                    self.entries.remove(&key);
                }
            }
        }
    }
}

impl Entry {
    /// A new grant takes the lock (free, or expired) until `until`; returns it.
    #[inline]
    fn take_lock(&mut self, until: Instant) -> Grant {
        self.latest = self.latest.next();
        self.lock_grant = self.latest;
        self.lock_until = Some(until);
        self.holders += 1;
        self.latest
    }

    /// Whether `grant` still holds the lock, expired by `now` (then counted once: its holder
    /// is finishing, so the lock goes next).
    #[inline]
    fn holds_expired(&self, grant: Grant, now: Instant) -> bool {
        self.lock_grant == grant && self.lock_until.is_some_and(|until| until <= now)
    }

    /// The holder of `grant` lets go of the lock.
    #[inline]
    fn release(&mut self, release: Release, grant: Grant) {
        if release == Release::Delete || self.lock_grant == grant {
            debug_assert!(
                self.head == NIL || self.lock_grant == grant,
                "a lock with parked requests deleted by another holder"
            );
            self.lock_until = None;
        }
    }
}

/// The answer to a holder whose work fencing refused: 409, unless the faults stage drew an
/// `after_effect` error for it (the gateway's error replaces whatever the server answered).
#[inline]
pub fn fenced_answer(req: &Request) -> Reply {
    replay(req, Reply::of(Outcome::Status(CONFLICT)))
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
        Store::new(&StoreParams {
            ttl: Span::from_ns(ttl_s * S),
            on_in_progress,
            lock_ttl: None,
            release: Release::CompareAndDelete,
            fencing: false,
        })
    }

    /// A store with a 24 h ttl, 409 while locked, and a lock that lasts `lock_ttl_s`.
    fn locking(lock_ttl_s: u64, release: Release, fencing: bool) -> Store {
        Store::new(&StoreParams {
            ttl: Span::from_ns(86_400 * S),
            on_in_progress: WhileInProgress::Conflict,
            lock_ttl: Some(Span::from_ns(lock_ttl_s * S)),
            release,
            fencing,
        })
    }

    /// `r` completes at `now` with the grant it took.
    fn complete(s: &mut Store, r: &Request, now: Instant) -> Completion {
        s.complete(r.key(), r.key_tag.grant, now)
    }

    fn req(op: u32, attempt: u32, mode: KeyMode) -> Request {
        let mut r = Request::new(op, attempt, Instant::NEVER);
        r.key_tag = KeyTag::new(mode, op as u64, 0);
        r
    }

    const CONFLICT_REPLY: Admission = Admission::Answer(Reply {
        outcome: Outcome::Status(409),
        retry_after: super::super::RetryAfterCode::NONE,
    });

    #[test]
    fn keys_by_mode() {
        assert!(KeyMode::None.key(7, 1, 0).is_none());
        assert!(KeyMode::None.key(7, 1, 1).is_none());
        assert_eq!(KeyMode::PerOp.key(7, 1, 0), KeyMode::PerOp.key(7, 2, 0));
        assert_ne!(KeyMode::PerAttempt.key(7, 1, 0), KeyMode::PerAttempt.key(7, 2, 0));
        assert_ne!(KeyMode::PerOp.key(7, 1, 0), KeyMode::PerOp.key(8, 1, 0));
        // A re-drive that asks for a new key gets one; the same re-drive's attempts share it.
        assert_ne!(KeyMode::PerOp.key(7, 1, 0), KeyMode::PerOp.key(7, 6, 1));
        assert_eq!(KeyMode::PerOp.key(7, 6, 1), KeyMode::PerOp.key(7, 7, 1));
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
            for redrive in [0, 1] {
                let tag = KeyTag::new(mode, t.id(slot), redrive);
                assert_eq!(tag.key(slot, 2), mode.key(t.id(slot), 2, redrive));
                assert_ne!(tag.key(slot, 2), KeyTag::new(mode, t.id(other), redrive).key(other, 2));
            }
        }
        assert!(KeyTag::NONE.key(slot, 1).is_none());
        assert_eq!(std::mem::size_of::<Request>(), 32);
    }

    #[test]
    fn no_key_passes() {
        let mut s = store(10, WhileInProgress::Conflict);
        let mut r = req(1, 1, KeyMode::None);
        assert_eq!(s.admit(&mut r, t(0)), Admission::Continue);
        assert_eq!(s.admit(&mut r, t(0)), Admission::Continue);
        assert_eq!(s.peak(), 0);
    }

    #[test]
    fn first_executes_repeat_conflicts_then_replays_then_expires() {
        let mut s = store(10, WhileInProgress::Conflict);
        let mut a1 = req(1, 1, KeyMode::PerOp);
        let mut a2 = req(1, 2, KeyMode::PerOp);
        assert_eq!(s.admit(&mut a1, t(0)), Admission::Continue, "the first executes");
        assert_eq!(s.admit(&mut a2, t(1)), CONFLICT_REPLY, "a repeat while in progress: 409");
        assert_eq!(complete(&mut s, &a1, t(2)), Completion::Applied);
        assert_eq!(s.admit(&mut a2, t(3)), Admission::Replay(Reply::SUCCESS), "done: the stored answer");
        assert_eq!(s.admit(&mut a2, t(11)), Admission::Replay(Reply::SUCCESS), "still within ttl (2 + 10)");
        assert_eq!(s.admit(&mut a2, t(12)), Admission::Continue, "expired: it executes again");
        assert_eq!(s.len(), 1);
        assert_eq!(s.peak(), 1);
    }

    #[test]
    fn per_attempt_keys_never_match() {
        let mut s = store(10, WhileInProgress::Conflict);
        for attempt in 1..=4 {
            let mut r = req(1, attempt, KeyMode::PerAttempt);
            assert_eq!(s.admit(&mut r, t(0)), Admission::Continue);
            complete(&mut s, &r, t(0));
        }
        assert_eq!(s.peak(), 4, "one key per attempt, all held");
    }

    #[test]
    fn an_after_effect_error_replaces_the_stored_answer() {
        let mut s = store(10, WhileInProgress::Conflict);
        let mut a1 = req(1, 1, KeyMode::PerOp);
        s.admit(&mut a1, t(0));
        complete(&mut s, &a1, t(0));
        let mut a2 = req(1, 2, KeyMode::PerOp);
        a2.answer = Reply::of(Outcome::Status(504));
        assert_eq!(s.admit(&mut a2, t(1)), Admission::Replay(Reply::of(Outcome::Status(504))));
    }

    #[test]
    fn waiters_are_answered_when_the_first_completes() {
        let mut s = store(10, WhileInProgress::Wait);
        let mut a1 = req(1, 1, KeyMode::PerOp);
        let mut other = req(2, 1, KeyMode::PerOp);
        assert_eq!(s.admit(&mut a1, t(0)), Admission::Continue);
        assert_eq!(s.admit(&mut other, t(0)), Admission::Continue);
        for attempt in 2..=4 {
            assert_eq!(s.admit(&mut req(1, attempt, KeyMode::PerOp), t(1)), Admission::Park);
        }
        assert!(s.pop_answered().is_none());
        complete(&mut s, &a1, t(2));
        let answered: Vec<_> = std::iter::from_fn(|| s.pop_answered()).collect();
        assert_eq!(answered.iter().map(|r| r.attempt).collect::<Vec<_>>(), vec![2, 3, 4], "in park order");
        assert!(answered.iter().all(|r| r.answer == Reply::SUCCESS));
        // The slab slots are reused.
        s.admit(&mut req(2, 2, KeyMode::PerOp), t(3));
        assert_eq!(s.parked.len(), 3);
    }

    #[test]
    fn an_abandoned_key_passes_to_the_first_waiter_or_is_forgotten() {
        let mut s = store(10, WhileInProgress::Wait);
        let mut a1 = req(1, 1, KeyMode::PerOp);
        s.admit(&mut a1, t(0));
        s.admit(&mut req(1, 2, KeyMode::PerOp), t(1));
        s.admit(&mut req(1, 3, KeyMode::PerOp), t(1));
        // The first is dropped: attempt 2 executes now, attempt 3 keeps waiting.
        let promoted = s.abandon(a1.key(), a1.key_tag.grant, t(1)).expect("a waiter takes over");
        assert_eq!(promoted.attempt, 2);
        assert_eq!(promoted.key_tag.grant, Grant::FIRST.next(), "a new grant");
        assert_eq!(s.admit(&mut req(1, 4, KeyMode::PerOp), t(2)), Admission::Park);
        // Attempt 2 is dropped too: attempt 3 executes.
        let third = s.abandon(promoted.key(), promoted.key_tag.grant, t(2)).expect("the next waiter");
        assert_eq!(third.attempt, 3);
        assert_eq!(complete(&mut s, &third, t(3)), Completion::Applied);
        let answered: Vec<_> = std::iter::from_fn(|| s.pop_answered()).map(|r| r.attempt).collect();
        assert_eq!(answered, vec![4], "the one still parked is answered; nothing executed twice");
        // Without waiters an abandoned key is forgotten: the next request executes.
        let mut b = req(9, 1, KeyMode::PerOp);
        s.admit(&mut b, t(4));
        assert!(s.abandon(b.key(), b.key_tag.grant, t(4)).is_none());
        assert_eq!(s.admit(&mut req(9, 2, KeyMode::PerOp), t(5)), Admission::Continue);
        assert_eq!(s.locks_expired(), 0, "locks without lock_ttl never expire");
    }

    #[test]
    fn expiry_is_lazy_and_bounded_by_live_keys() {
        let mut s = store(5, WhileInProgress::Conflict);
        // One operation per second, each done at once: at most 5 or 6 keys live at a time.
        for i in 0..1000u32 {
            let mut r = req(i, 1, KeyMode::PerOp);
            assert_eq!(s.admit(&mut r, t(i as u64)), Admission::Continue);
            complete(&mut s, &r, t(i as u64));
        }
        assert!(s.peak() <= 6, "peak {}", s.peak());
        assert!(s.expiry.len() <= 6);
        // A key re-executed after expiry keeps its new entry when the stale record pops.
        let mut s = store(5, WhileInProgress::Conflict);
        let mut r = req(1, 1, KeyMode::PerOp);
        s.admit(&mut r, t(0));
        complete(&mut s, &r, t(0));
        assert_eq!(s.admit(&mut r, t(5)), Admission::Continue, "expired at 5: executes again");
        complete(&mut s, &r, t(6));
        assert_eq!(s.admit(&mut r, t(10)), Admission::Replay(Reply::SUCCESS), "done again until 11");
        assert_eq!(s.admit(&mut r, t(11)), Admission::Continue);
    }

    /// Three requests with one key: the first takes the lock at 0 and works 45 s; the second
    /// comes at 35 s (the 30 s lock expired at 30 s) and works 25 s; the third comes at 50 s.
    /// Returns what the third got and the completions of the first two (at 45 and 60 s).
    fn three_holders(release: Release, fencing: bool) -> (Store, Admission, Completion, Completion) {
        let mut s = locking(30, release, fencing);
        let mut h1 = req(1, 1, KeyMode::PerOp);
        let mut h2 = req(1, 2, KeyMode::PerOp);
        assert_eq!(s.admit(&mut h1, t(0)), Admission::Continue);
        assert_eq!(s.admit(&mut req(1, 9, KeyMode::PerOp), t(29)), CONFLICT_REPLY, "locked until 30 s");
        assert_eq!(s.admit(&mut h2, t(35)), Admission::Continue, "the expired lock is taken");
        assert_eq!((h1.key_tag.grant, h2.key_tag.grant), (Grant::FIRST, Grant::FIRST.next()));
        assert_eq!(s.locks_expired(), 1);
        let c1 = complete(&mut s, &h1, t(45));
        let third = s.admit(&mut req(1, 3, KeyMode::PerOp), t(50));
        let c2 = complete(&mut s, &h2, t(60));
        (s, third, c1, c2)
    }

    #[test]
    fn an_expired_lock_lets_a_second_holder_execute() {
        // Without fencing the first holder's late work applies and stores the result, so the
        // third request gets it, whatever the release; the second's work applies too.
        for release in [Release::Delete, Release::CompareAndDelete] {
            let (s, third, c1, c2) = three_holders(release, false);
            assert_eq!((c1, c2), (Completion::Applied, Completion::Applied), "{release:?}");
            assert_eq!(third, Admission::Replay(Reply::SUCCESS), "{release:?}");
            assert_eq!((s.locks_expired(), s.fenced()), (1, 0));
        }
    }

    #[test]
    fn fencing_refuses_the_late_holder_and_delete_lets_a_third_in() {
        // compare-and-delete: the fenced first holder leaves the second's lock: the third gets
        // 409, and only the second's work applies.
        let (s, third, c1, c2) = three_holders(Release::CompareAndDelete, true);
        assert_eq!((c1, c2), (Completion::Fenced, Completion::Applied));
        assert_eq!(third, CONFLICT_REPLY);
        assert_eq!((s.locks_expired(), s.fenced()), (1, 1));
        // delete: the fenced first holder's `finally` deletes the second's lock, the third
        // takes it (grant 3), and the second is fenced in turn.
        let (mut s, third, c1, c2) = three_holders(Release::Delete, true);
        assert_eq!(third, Admission::Continue, "the third holder gets in");
        assert_eq!((c1, c2), (Completion::Fenced, Completion::Fenced));
        let mut h3 = req(1, 3, KeyMode::PerOp);
        h3.key_tag.grant = Grant::FIRST.next().next();
        assert_eq!(complete(&mut s, &h3, t(75)), Completion::Applied, "the latest grant applies");
        assert_eq!(s.admit(&mut req(1, 4, KeyMode::PerOp), t(76)), Admission::Replay(Reply::SUCCESS));
        assert_eq!((s.locks_expired(), s.fenced()), (1, 2));
    }

    #[test]
    fn a_lock_that_outlives_the_work_is_never_taken() {
        let mut s = locking(30, Release::Delete, true);
        let mut h1 = req(1, 1, KeyMode::PerOp);
        s.admit(&mut h1, t(0));
        assert_eq!(s.admit(&mut req(1, 2, KeyMode::PerOp), t(29)), CONFLICT_REPLY);
        assert_eq!(complete(&mut s, &h1, t(29)), Completion::Applied);
        assert_eq!(s.admit(&mut req(1, 3, KeyMode::PerOp), t(31)), Admission::Replay(Reply::SUCCESS));
        assert_eq!((s.locks_expired(), s.fenced()), (0, 0));
        // A lock that expires with nobody taking it: counted when its holder finishes, which
        // still applies (no later grant).
        let mut h = req(2, 1, KeyMode::PerOp);
        s.admit(&mut h, t(0));
        assert_eq!(complete(&mut s, &h, t(40)), Completion::Applied);
        assert_eq!((s.locks_expired(), s.fenced()), (1, 0));
    }

    #[test]
    fn a_dropped_late_holder_deletes_the_lock_only_with_delete() {
        for (release, third) in
            [(Release::Delete, Admission::Continue), (Release::CompareAndDelete, CONFLICT_REPLY)]
        {
            let mut s = locking(30, release, false);
            let mut h1 = req(1, 1, KeyMode::PerOp);
            let mut h2 = req(1, 2, KeyMode::PerOp);
            s.admit(&mut h1, t(0));
            s.admit(&mut h2, t(31));
            assert!(s.abandon(h1.key(), h1.key_tag.grant, t(32)).is_none());
            assert_eq!(s.admit(&mut req(1, 3, KeyMode::PerOp), t(33)), third, "{release:?}");
        }
    }

    #[test]
    fn a_key_is_held_while_a_late_holder_may_still_finish() {
        // delete: the second holder is dropped and deletes its own lock; the key has no
        // result and no lock, but the first holder still works: grants must go on from 2.
        let mut s = locking(30, Release::Delete, true);
        let mut h1 = req(1, 1, KeyMode::PerOp);
        let mut h2 = req(1, 2, KeyMode::PerOp);
        s.admit(&mut h1, t(0));
        s.admit(&mut h2, t(31));
        assert!(s.abandon(h2.key(), h2.key_tag.grant, t(32)).is_none());
        assert_eq!(s.len(), 1);
        let mut h3 = req(1, 3, KeyMode::PerOp);
        assert_eq!(s.admit(&mut h3, t(33)), Admission::Continue);
        assert_eq!(h3.key_tag.grant, Grant::FIRST.next().next());
        assert_eq!(complete(&mut s, &h1, t(45)), Completion::Fenced, "grant 1 is not the latest");
        assert_eq!(complete(&mut s, &h3, t(50)), Completion::Applied);
    }
}
