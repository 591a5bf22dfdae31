//! A chain of proxy nodes ([`crate::model::graph::proxy`], a strategy's gateway `layers`)
//! wired to the queue model's events: the request hop ends at node 0 instead of the server;
//! each node sends the request down at once (and again at `ProxySend` after a backoff,
//! racing its own `ProxyTimeout`) until the last one calls the server, and answers flow back
//! up the same way. A request to the server names the last node's ticket and attempt
//! ([`proxy::pack`]) in its `attempt` field.
//!
//! Out of line throughout: a run without layers never calls into this file, and a plain run
//! has the calls compiled away (`has_proxies`).

use super::{Ev, QueueModel};
use crate::engine::{EventQueue, Instant, Scheduler};
use crate::model::graph::proxy::{self, Caller, Proxies, SERVER, Step};
use crate::model::server::{Reply, Request};

impl<const PLAIN: bool> QueueModel<PLAIN> {
    /// Whether the strategy has gateway layers (never, compiled for a plain run).
    #[inline(always)]
    pub(super) fn has_proxies(&self) -> bool {
        !PLAIN && self.proxies.is_some()
    }

    #[inline]
    fn proxies(&mut self) -> &mut Proxies {
        self.proxies.as_mut().expect("only called with gateway layers")
    }

    /// Node `node` receives a request of `op` from `caller`, and sends it down.
    #[inline(never)]
    pub(super) fn proxy_receive<Q: EventQueue<Ev>>(
        &mut self,
        op: u32,
        caller: Caller,
        node: u32,
        s: &mut Scheduler<Ev, Q>,
    ) {
        let ticket = self.proxies().open(op, node, caller, s.now());
        // The ticket holds the operation's slot: its requests name it until they are answered.
        self.clients.ops.get(op).refs += 1;
        self.proxy_send(ticket, s);
        self.proxy_release(ticket);
    }

    /// `ticket` sends its next attempt down: to the next node, or to the server.
    #[inline(never)]
    pub(super) fn proxy_send<Q: EventQueue<Ev>>(&mut self, ticket: u32, s: &mut Scheduler<Ev, Q>) {
        let p = self.proxies.as_mut().expect("only called with gateway layers");
        if let Some(reply) = p.refusal(ticket, s.now()) {
            // The route timed out during the backoff, or the proxy's own breaker refused: it
            // answers its caller itself.
            return self.proxy_step(ticket, Some(Step::Answer(reply)), s);
        }
        let (attempt, gives_up_at) = p.send(ticket, s.now());
        if !gives_up_at.is_never() {
            p.retain(ticket);
            s.schedule_at(gives_up_at, Ev::proxy_timeout(ticket, attempt));
        }
        // The request sent down holds the ticket until it is answered or lost.
        p.retain(ticket);
        let (op, to) = (p.get(ticket).op, p.callee(ticket));
        if to == SERVER {
            self.arrive(op, proxy::pack(ticket, attempt), gives_up_at, s);
        } else {
            self.proxy_receive(op, Caller::Proxy { ticket, attempt }, to, s);
        }
    }

    /// The answer to attempt `packed` ([`proxy::pack`]) of a ticket arrived from below.
    #[inline(never)]
    pub(super) fn proxy_answered<Q: EventQueue<Ev>>(
        &mut self,
        packed: u32,
        reply: Reply,
        s: &mut Scheduler<Ev, Q>,
    ) {
        let (ticket, attempt) = proxy::unpack(packed);
        let step = self.proxies().answered(ticket, attempt, reply, s.now());
        self.proxy_step(ticket, step, s);
        self.proxy_release(ticket);
    }

    /// Attempt `attempt` of `ticket` timed out.
    #[inline(never)]
    pub(super) fn proxy_timed_out<Q: EventQueue<Ev>>(
        &mut self,
        ticket: u32,
        attempt: u32,
        s: &mut Scheduler<Ev, Q>,
    ) {
        let step = self.proxies().timed_out(ticket, attempt, s.now());
        self.proxy_step(ticket, step, s);
        self.proxy_release(ticket);
    }

    /// What `ticket`'s proxy decided: retry after a backoff, or answer its caller.
    fn proxy_step<Q: EventQueue<Ev>>(&mut self, ticket: u32, step: Option<Step>, s: &mut Scheduler<Ev, Q>) {
        match step {
            None => {}
            Some(Step::RetryAt(at)) => {
                self.proxies().retain(ticket);
                s.schedule_at(at, Ev::proxy_send(ticket));
            }
            Some(Step::Answer(reply)) => {
                let p = self.proxies();
                p.finish(ticket, reply);
                let (op, caller) = (p.get(ticket).op, p.get(ticket).caller);
                match caller {
                    // The answer hop takes over the client's hold on its operation.
                    Caller::Client { attempt } => {
                        self.respond_to_client(Request::new(op, attempt, Instant::NEVER), reply, s)
                    }
                    Caller::Proxy { ticket, attempt } => {
                        self.proxy_answered(proxy::pack(ticket, attempt), reply, s)
                    }
                }
            }
        }
    }

    /// A pending event or request naming `ticket` is gone. A freed ticket lets go of its
    /// operation; one that hung up (it never answered) releases its caller too.
    pub(super) fn proxy_release(&mut self, ticket: u32) {
        let mut ticket = ticket;
        while let Some((op, hung)) = self.proxies().release(ticket) {
            self.clients.ops.release(op);
            match hung {
                None => return,
                Some(Caller::Client { .. }) => return self.clients.ops.release(op),
                Some(Caller::Proxy { ticket: above, .. }) => ticket = above,
            }
        }
    }
}
