//! A Kubernetes Deployment's `RollingUpdate` as a schedule (DESIGN §3.4): which replica slot
//! is running an old pod, a new pod starting, a new pod ready, or nothing, from when.
//!
//! The rule is the deployment controller's (`pkg/controller/deployment/rolling.go`), run at
//! every instant something changes:
//!
//! - scale up: new pods are created while there are fewer than `replicas` of them and fewer
//!   than `replicas + max_surge` pods in all;
//! - scale down: old pods are deleted while the available pods (old ones and ready new ones)
//!   stay at least `replicas - max_unavailable` (`maxScaledDown = allPods - minAvailable -
//!   newUnavailable`).
//!
//! A new pod is ready (available) `ready_after` after it is created (its start-up and
//! readiness delays); deleting an old pod is instantaneous (the model's restart: everything it
//! held is dropped). Counts are resolved as Kubernetes does ([`resolve`]): `max_surge`
//! rounded up, `max_unavailable` rounded down, and 1 unavailable when both come to 0.
//!
//! Slots: the `replicas` pods run in slots `0 .. replicas`; `max_surge` more slots hold
//! the extra pods. A new pod takes the lowest empty slot; old pods are deleted lowest slot
//! first. The schedule is deterministic: the delays are constants.

use crate::engine::{Instant, Span};

/// What a slot holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotState {
    /// A pod that serves (an old one, or a new one that is ready).
    Up,
    /// A new pod still starting: a host the balancer knows, not ready (it takes no requests).
    Starting,
    /// No pod: not a host at all.
    Vacant,
}

/// `max_unavailable` or `max_surge`: a count, or a percentage of `replicas`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CountOrPercent {
    Count(u32),
    Percent(f64),
}

/// Kubernetes' `ResolveFenceposts`: `max_surge` rounded up, `max_unavailable` rounded down,
/// and when both come to 0, one replica unavailable (so that the update can progress).
/// Returns (max_surge, max_unavailable).
pub fn resolve(replicas: u32, max_surge: CountOrPercent, max_unavailable: CountOrPercent) -> (u32, u32) {
    let count = |v: CountOrPercent, up: bool| match v {
        CountOrPercent::Count(n) => n,
        CountOrPercent::Percent(p) => {
            let x = p / 100.0 * f64::from(replicas);
            // A tiny tolerance: 10 % of 40 is 4, not 4.000000000000001 rounded up to 5.
            (if up { (x - 1e-9).ceil() } else { (x + 1e-9).floor() }).max(0.0) as u32
        }
    };
    let surge = count(max_surge, true);
    let unavailable = count(max_unavailable, false);
    if surge == 0 && unavailable == 0 { (0, 1) } else { (surge, unavailable) }
}

/// One rolling update, counts resolved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RollingUpdate {
    pub replicas: u32,
    pub max_surge: u32,
    pub max_unavailable: u32,
    /// From a new pod's creation to its readiness.
    pub ready_after: Span,
}

/// The schedule of one update: per slot, its changes in time order, each `(instant, state
/// from then on)`; `end` is when the last new pod is ready.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    pub slots: Vec<Vec<(Instant, SlotState)>>,
    pub end: Instant,
}

/// Every deploy of a run, one after the other, over `replicas + the largest max_surge` slots
/// (the pods start in slots `0 .. replicas`): per slot its changes in time order, and each
/// deploy's `(start, end)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub slots: Vec<Vec<(Instant, SlotState)>>,
    pub spans: Vec<(Instant, Instant)>,
}

/// The plan of `updates` (each with its start, in file order, all of `replicas`). `Err(i)`:
/// update `i` starts before the one before it has ended.
pub fn plan(replicas: u32, updates: &[(Instant, RollingUpdate)]) -> Result<Plan, usize> {
    let slot_count = replicas + updates.iter().map(|(_, u)| u.max_surge).max().unwrap_or(0);
    let mut occupied: Vec<bool> = (0..slot_count).map(|s| s < replicas).collect();
    let mut plan = Plan { slots: vec![Vec::new(); slot_count as usize], spans: Vec::new() };
    for (i, (start, u)) in updates.iter().enumerate() {
        if plan.spans.last().is_some_and(|&(_, end)| *start < end) {
            return Err(i);
        }
        let s = u.schedule(*start, &occupied);
        for (slot, changes) in s.slots.into_iter().enumerate() {
            if let Some(&(_, last)) = changes.last() {
                occupied[slot] = last != SlotState::Vacant;
            }
            plan.slots[slot].extend(changes);
        }
        plan.spans.push((*start, s.end));
    }
    Ok(plan)
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Pod {
    Old,
    New { ready_at: Instant },
    Empty,
}

impl RollingUpdate {
    /// The schedule of the update starting at `start`, the old pods in the `occupied` slots
    /// (`replicas` of them, among at least `replicas + max_surge`).
    pub fn schedule(&self, start: Instant, occupied: &[bool]) -> Schedule {
        debug_assert!(occupied.len() as u32 >= self.replicas + self.max_surge);
        let mut pods: Vec<Pod> = occupied.iter().map(|&o| if o { Pod::Old } else { Pod::Empty }).collect();
        let mut slots = vec![Vec::new(); pods.len()];
        let mut now = start;
        loop {
            for (slot, pod) in pods.iter().enumerate() {
                if let Pod::New { ready_at } = *pod
                    && ready_at == now
                {
                    slots[slot].push((now, SlotState::Up));
                }
            }
            self.reconcile(&mut pods, &mut slots, now);
            let next = pods
                .iter()
                .filter_map(|p| match *p {
                    Pod::New { ready_at } if ready_at > now => Some(ready_at),
                    _ => None,
                })
                .min();
            match next {
                Some(t) => now = t,
                None => {
                    debug_assert!(pods.iter().all(|p| *p != Pod::Old), "an update always progresses");
                    return Schedule { slots, end: now };
                }
            }
        }
    }

    /// The controller's scale-up then scale-down at `now`, repeated until nothing changes
    /// (deleting old pods makes room for new ones at once).
    fn reconcile(&self, pods: &mut [Pod], slots: &mut [Vec<(Instant, SlotState)>], now: Instant) {
        let n = self.replicas;
        loop {
            let old = pods.iter().filter(|p| **p == Pod::Old).count() as u32;
            let new = pods.iter().filter(|p| matches!(p, Pod::New { .. })).count() as u32;
            let ready =
                pods.iter().filter(|p| matches!(p, Pod::New { ready_at } if *ready_at <= now)).count() as u32;
            let create = (n - new).min((n + self.max_surge).saturating_sub(old + new));
            let delete = (old + ready).saturating_sub(n - self.max_unavailable.min(n)).min(old);
            if create == 0 && delete == 0 {
                return;
            }
            for _ in 0..create {
                let slot = pods.iter().position(|p| *p == Pod::Empty).expect("old + new < slots");
                pods[slot] = Pod::New { ready_at: now + self.ready_after };
                set(&mut slots[slot], now, SlotState::Starting);
                if self.ready_after.is_zero() {
                    set(&mut slots[slot], now, SlotState::Up);
                }
            }
            for _ in 0..delete {
                let slot = pods.iter().position(|p| *p == Pod::Old).expect("delete <= old");
                pods[slot] = Pod::Empty;
                set(&mut slots[slot], now, SlotState::Vacant);
            }
        }
    }
}

/// Records that `slot` is in `state` from `now`: a change at the same instant replaces the
/// one before it (a slot emptied and filled at once is restarting, never vacant).
fn set(slot: &mut Vec<(Instant, SlotState)>, now: Instant, state: SlotState) {
    if let Some(last) = slot.last_mut()
        && last.0 == now
    {
        // Deleted then re-created at once: the slot restarts; never Up -> Vacant -> Starting.
        last.1 = state;
        return;
    }
    slot.push((now, state));
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn t(s: u64) -> Instant {
        Instant::from_ns(s * S)
    }

    fn update(replicas: u32, surge: u32, unavailable: u32, ready_s: u64) -> RollingUpdate {
        RollingUpdate {
            replicas,
            max_surge: surge,
            max_unavailable: unavailable,
            ready_after: Span::from_secs(ready_s),
        }
    }

    /// The state of every slot just after each change, checked against the invariants: never
    /// fewer than `replicas - max_unavailable` slots up, never more than `replicas +
    /// max_surge` pods, and `replicas` up at the end.
    /// The first `replicas` of `replicas + surge` slots occupied.
    fn first(u: &RollingUpdate) -> Vec<bool> {
        (0..u.replicas + u.max_surge).map(|s| s < u.replicas).collect()
    }

    fn check_invariants(u: &RollingUpdate, s: &Schedule) {
        let mut instants: Vec<Instant> = s.slots.iter().flatten().map(|c| c.0).collect();
        instants.sort();
        instants.dedup();
        let state_at = |slot: usize, at: Instant| {
            let initial = if slot < u.replicas as usize { SlotState::Up } else { SlotState::Vacant };
            s.slots[slot].iter().take_while(|c| c.0 <= at).last().map_or(initial, |c| c.1)
        };
        for at in instants {
            let up = (0..s.slots.len()).filter(|&k| state_at(k, at) == SlotState::Up).count() as u32;
            let pods = (0..s.slots.len()).filter(|&k| state_at(k, at) != SlotState::Vacant).count() as u32;
            assert!(up + u.max_unavailable.min(u.replicas) >= u.replicas, "{u:?} at {at:?}: {up} up");
            assert!(pods <= u.replicas + u.max_surge, "{u:?} at {at:?}: {pods} pods");
        }
        let up_at_end = (0..s.slots.len()).filter(|&k| state_at(k, s.end) == SlotState::Up).count() as u32;
        assert_eq!(up_at_end, u.replicas);
    }

    /// Kubernetes' rounding: surge up, unavailable down; 25 % / 25 % of 10 is 3 and 2; both 0
    /// resolve to one unavailable.
    #[test]
    fn counts_resolve_as_kubernetes_rounds_them() {
        let p = CountOrPercent::Percent;
        assert_eq!(resolve(10, p(25.0), p(25.0)), (3, 2));
        assert_eq!(resolve(40, p(25.0), p(25.0)), (10, 10));
        assert_eq!(resolve(40, p(10.0), p(10.0)), (4, 4));
        assert_eq!(resolve(3, p(1.0), p(1.0)), (1, 0));
        assert_eq!(resolve(3, p(0.0), p(1.0)), (0, 1));
        assert_eq!(resolve(40, CountOrPercent::Count(0), p(100.0)), (0, 40));
        assert_eq!(resolve(5, CountOrPercent::Count(2), CountOrPercent::Count(1)), (2, 1));
    }

    /// One at a time, no surge: slot k restarts at 10 s x k and is up again 10 s later.
    #[test]
    fn one_at_a_time_restarts_each_slot_in_turn() {
        let u = update(4, 0, 1, 10);
        let s = u.schedule(t(100), &first(&u));
        for k in 0..4u64 {
            assert_eq!(
                s.slots[k as usize],
                vec![(t(100 + 10 * k), SlotState::Starting), (t(110 + 10 * k), SlotState::Up)]
            );
        }
        assert_eq!(s.end, t(140));
        check_invariants(&u, &s);
    }

    /// All at once: every slot restarts at the start, all up after one start-up.
    #[test]
    fn all_at_once_restarts_every_slot_together() {
        let u = update(40, 0, 40, 30);
        let s = u.schedule(t(0), &first(&u));
        assert!(s.slots.iter().all(|c| *c == vec![(t(0), SlotState::Starting), (t(30), SlotState::Up)]));
        assert_eq!(s.end, t(30));
    }

    /// Surge 1, unavailable 0: a new pod in the surge slot first; when it is ready an old pod
    /// goes, and its slot takes the next new pod, so one slot is vacant at the end.
    #[test]
    fn surge_without_unavailability_keeps_every_replica_up() {
        let u = update(3, 1, 0, 5);
        let s = u.schedule(t(0), &first(&u));
        assert_eq!(s.slots[3], vec![(t(0), SlotState::Starting), (t(5), SlotState::Up)]);
        assert_eq!(s.slots[0], vec![(t(5), SlotState::Starting), (t(10), SlotState::Up)]);
        assert_eq!(s.slots[1], vec![(t(10), SlotState::Starting), (t(15), SlotState::Up)]);
        assert_eq!(s.slots[2], vec![(t(15), SlotState::Vacant)]);
        assert_eq!(s.end, t(15));
        check_invariants(&u, &s);
    }

    /// Two deploys one after the other: the second starts from where the first left the pods
    /// (slot 2 vacant, the surge slot 3 up); a third that overlaps the second is refused.
    #[test]
    fn deploys_follow_each_other_from_where_the_last_left_the_pods() {
        let u = update(3, 1, 0, 5);
        let p = plan(3, &[(t(0), u), (t(20), u)]).unwrap();
        assert_eq!(p.spans, vec![(t(0), t(15)), (t(20), t(35))]);
        // The second deploy's surge pod goes to the vacant slot 2.
        assert_eq!(&p.slots[2][1..], &[(t(20), SlotState::Starting), (t(25), SlotState::Up)]);
        assert_eq!(plan(3, &[(t(0), u), (t(20), u), (t(30), u)]), Err(2));
    }

    /// Kubernetes' defaults (25 % / 25 %) over many sizes, and other mixes: the invariants hold
    /// at every change.
    #[test]
    fn never_more_unavailable_nor_more_pods_than_allowed() {
        let p = CountOrPercent::Percent;
        for replicas in 1..=41 {
            for (surge, unavailable) in
                [(p(25.0), p(25.0)), (p(0.0), p(10.0)), (p(50.0), p(0.0)), (p(100.0), p(100.0))]
            {
                let (surge, unavailable) = resolve(replicas, surge, unavailable);
                for ready in [0, 7] {
                    let u = update(replicas, surge, unavailable, ready);
                    check_invariants(&u, &u.schedule(t(3), &first(&u)));
                }
            }
        }
    }
}
