//! Which connections a listener keeps when clients compete for them: the decisions behind the
//! accept loop of [`super::serve_with`], kept here free of sockets and clocks so that they
//! are plain tests.
//!
//! A listener serves at most [`Caps::max_connections`] connections, and one client (one source
//! address) at most [`Caps::per_client`] of them. A connection is either *answering* (a request
//! head was read and its response is not done with) or *waiting* (accepted, idle between
//! requests, or still sending its request head or TLS handshake) — and waiting connections are
//! what slow clients are made of: a client that trickles its headers, or opens connections and
//! sends nothing, holds only waiting ones.
//!
//! The expected flow of [`Connections::admit`], for a connection just accepted from `client`:
//!
//! 1. `client` already holds its share: its own connection that has been idle longest since
//!    answering a request gives way ([`Admit::ServeShedding`]), as an HTTP client expects of an
//!    idle connection; when it has none, the new one is not served ([`Admit::Refuse`]) — its
//!    other connections are answering or still sending their first request, which a client
//!    that trickles its headers (slowloris) would like to see replaced. One client never takes
//!    more than its share, and never takes anything from another client.
//! 2. The listener is full: the waiting connection of the client holding the most connections
//!    is shed, the one of that client that has waited longest ([`Admit::ServeShedding`]). So a
//!    complete request is served at once even while slow clients fill every slot, and a client
//!    with one connection (a probe, an installer) loses it only when nobody holds more. When
//!    every connection is answering, the new one is held until one closes or stops answering
//!    ([`Admit::Wait`]), as before a cap existed: a slow answer rather than an error.
//! 3. Otherwise it is served ([`Admit::Serve`]).
//!
//! Guarantees: the answer is a function of the table and `client` only; ties are broken by
//! address and then by accept order, never by hash order. No connection that is answering a
//! request is ever shed.
//!
//! Assumptions: a client is its source address (an IPv4-mapped IPv6 address counts as the IPv4
//! one). Clients behind one NAT, proxy or `kubectl port-forward` share one share.
//!
//! Caveats: a connection whose request head arrives at the moment it is shed loses that request
//! (HTTP clients retry an idempotent request on a connection closed before it was answered). A
//! connection is counted as waiting once its response body is done with, which may be before
//! its last bytes (at most the write buffer) reached a client that reads slowly. Clients that
//! do not read their answers hold answering connections, which are never shed: the per-client
//! share bounds what one of them holds, and the write timeout how long.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::time::Instant;

/// A connection, numbered in accept order by the listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnId(pub u64);

/// What bounds one listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Connections served at once.
    pub max_connections: usize,
    /// Connections one client (source address) may hold at once.
    pub per_client: usize,
}

/// What to do with a connection just accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Serve it.
    Serve,
    /// Serve it, and close this waiting connection to make room.
    ServeShedding(ConnId),
    /// Close it: its client holds its whole share, every connection of it answering.
    Refuse,
    /// Hold it until a connection closes or stops answering: the listener is full and every
    /// connection is answering.
    Wait,
}

/// The connections a listener serves, by client, with since when each is waiting.
#[derive(Debug, Clone)]
pub struct Connections {
    caps: Caps,
    open: BTreeMap<ConnId, Open>,
    clients: BTreeMap<IpAddr, Client>,
}

#[derive(Debug, Clone)]
struct Open {
    client: IpAddr,
    /// `None` while answering.
    waiting_since: Option<Instant>,
    /// Whether it answered a request before.
    answered: bool,
}

#[derive(Debug, Clone, Default)]
struct Client {
    open: usize,
    /// Its waiting connections, longest waiting first.
    waiting: BTreeSet<(Instant, ConnId)>,
    /// Those of them that answered a request before: idle between requests.
    idle: BTreeSet<(Instant, ConnId)>,
}

/// The client a source address stands for.
pub fn client_of(addr: IpAddr) -> IpAddr {
    addr.to_canonical()
}

impl Connections {
    /// An empty table bounded by `caps`.
    pub fn new(caps: Caps) -> Connections {
        Connections {
            caps,
            open: BTreeMap::new(),
            clients: BTreeMap::new(),
        }
    }

    /// What to do with a connection just accepted from `client`; see the module documentation.
    pub fn admit(&self, client: IpAddr) -> Admit {
        let client = client_of(client);
        let own = self.clients.get(&client);
        if own.is_some_and(|c| c.open >= self.caps.per_client) {
            return match own.and_then(|c| c.idle.first()) {
                Some(&(_, id)) => Admit::ServeShedding(id),
                None => Admit::Refuse,
            };
        }
        if self.open.len() < self.caps.max_connections {
            return Admit::Serve;
        }
        // The client with the most connections, then the one whose connection waited longest,
        // then the lowest address: a total order, so the choice never depends on map order.
        let victim = self
            .clients
            .iter()
            .filter_map(|(addr, c)| c.waiting.first().map(|first| (c.open, *first, *addr)))
            .max_by(
                |(open_a, (since_a, id_a), addr_a), (open_b, (since_b, id_b), addr_b)| {
                    open_a
                        .cmp(open_b)
                        .then(since_b.cmp(since_a))
                        .then(id_b.cmp(id_a))
                        .then(addr_b.cmp(addr_a))
                },
            );
        match victim {
            Some((_, (_, id), _)) => Admit::ServeShedding(id),
            None => Admit::Wait,
        }
    }

    /// `id` from `client` is served from `now`, waiting for its first request.
    pub fn opened(&mut self, id: ConnId, client: IpAddr, now: Instant) {
        let client = client_of(client);
        self.closed(id);
        let entry = self.clients.entry(client).or_default();
        entry.open += 1;
        entry.waiting.insert((now, id));
        self.open.insert(
            id,
            Open {
                client,
                waiting_since: Some(now),
                answered: false,
            },
        );
    }

    /// `id` is answering a request. Returns whether it is still served (it may have been shed
    /// in between).
    pub fn answering(&mut self, id: ConnId) -> bool {
        let Some(open) = self.open.get_mut(&id) else {
            return false;
        };
        open.answered = true;
        if let Some(since) = open.waiting_since.take()
            && let Some(client) = self.clients.get_mut(&open.client)
        {
            client.waiting.remove(&(since, id));
            client.idle.remove(&(since, id));
        }
        true
    }

    /// `id` is done answering and waits for its next request from `now`.
    pub fn waiting(&mut self, id: ConnId, now: Instant) {
        let Some(open) = self.open.get_mut(&id) else {
            return;
        };
        if open.waiting_since.is_some() {
            return;
        }
        open.waiting_since = Some(now);
        if let Some(client) = self.clients.get_mut(&open.client) {
            client.waiting.insert((now, id));
            if open.answered {
                client.idle.insert((now, id));
            }
        }
    }

    /// `id` is closed (or shed); unknown ids are ignored.
    pub fn closed(&mut self, id: ConnId) {
        let Some(open) = self.open.remove(&id) else {
            return;
        };
        let Some(client) = self.clients.get_mut(&open.client) else {
            return;
        };
        if let Some(since) = open.waiting_since {
            client.waiting.remove(&(since, id));
            client.idle.remove(&(since, id));
        }
        client.open = client.open.saturating_sub(1);
        if client.open == 0 {
            self.clients.remove(&open.client);
        }
    }

    /// Connections served.
    pub fn len(&self) -> usize {
        self.open.len()
    }

    /// Whether none is served.
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// Connections `client` holds.
    pub fn of(&self, client: IpAddr) -> usize {
        self.clients.get(&client_of(client)).map_or(0, |c| c.open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    /// Where a connection of a test table is.
    #[derive(Clone, Copy)]
    enum At {
        /// Waiting for its first request since this many seconds after t0.
        New(u64),
        /// Idle after answering a request, since this many seconds after t0.
        Idle(u64),
        Answering,
    }
    use At::{Answering, Idle, New};

    /// A table with connections `(id, client, where)`.
    fn table(caps: Caps, t0: Instant, conns: &[(u64, u8, At)]) -> Connections {
        let mut t = Connections::new(caps);
        let secs = |s| t0 + Duration::from_secs(s);
        for &(id, client, at) in conns {
            let id = ConnId(id);
            match at {
                New(since) => t.opened(id, ip(client), secs(since)),
                Idle(since) => {
                    t.opened(id, ip(client), t0);
                    assert!(t.answering(id));
                    t.waiting(id, secs(since));
                }
                Answering => {
                    t.opened(id, ip(client), t0);
                    assert!(t.answering(id));
                }
            }
        }
        t
    }

    const CAPS: Caps = Caps {
        max_connections: 4,
        per_client: 3,
    };

    /// Each row: the connections served, who connects, what is done.
    #[test]
    fn who_is_served_and_who_is_shed() {
        let t0 = Instant::now();
        type Row = (&'static str, &'static [(u64, u8, At)], u8, Admit);
        let rows: &[Row] = &[
            ("room left", &[(1, 1, New(0))], 2, Admit::Serve),
            (
                "room left, even while others wait",
                &[(1, 1, New(0)), (2, 1, Idle(1)), (3, 2, Answering)],
                3,
                Admit::Serve,
            ),
            (
                "a client at its share gives up its own longest idle",
                &[(1, 1, Idle(5)), (2, 1, Idle(2)), (3, 1, New(0))],
                1,
                Admit::ServeShedding(ConnId(2)),
            ),
            (
                "a client at its share, none idle, is not served",
                &[(1, 1, New(0)), (2, 1, New(1)), (3, 1, Answering)],
                1,
                Admit::Refuse,
            ),
            (
                "a client at its share, all answering, is not served",
                &[(1, 1, Answering), (2, 1, Answering), (3, 1, Answering)],
                1,
                Admit::Refuse,
            ),
            (
                "a client at its share never takes another's connection",
                &[
                    (1, 1, Answering),
                    (2, 1, Answering),
                    (3, 1, Answering),
                    (4, 2, Idle(0)),
                ],
                1,
                Admit::Refuse,
            ),
            (
                "full: the client with the most connections gives one up",
                &[
                    (1, 1, New(9)),
                    (2, 1, Idle(8)),
                    (3, 2, New(0)),
                    (4, 3, Answering),
                ],
                4,
                Admit::ServeShedding(ConnId(2)),
            ),
            (
                "full: among equals, the one that waited longest",
                &[
                    (1, 1, Idle(3)),
                    (2, 1, Answering),
                    (3, 2, New(1)),
                    (4, 2, Answering),
                ],
                5,
                Admit::ServeShedding(ConnId(3)),
            ),
            (
                "full: a client whose connections all answer is passed over",
                &[
                    (1, 1, Answering),
                    (2, 1, Answering),
                    (3, 1, Answering),
                    (4, 2, New(7)),
                ],
                5,
                Admit::ServeShedding(ConnId(4)),
            ),
            (
                "full: the newcomer's own client may be the one that gives up",
                &[
                    (1, 1, New(1)),
                    (2, 1, New(2)),
                    (3, 2, Answering),
                    (4, 3, Answering),
                ],
                1,
                Admit::ServeShedding(ConnId(1)),
            ),
            (
                "full, every connection answering: wait",
                &[
                    (1, 1, Answering),
                    (2, 2, Answering),
                    (3, 3, Answering),
                    (4, 4, Answering),
                ],
                5,
                Admit::Wait,
            ),
            (
                "full: ties of count and time go to accept order",
                &[
                    (1, 1, New(0)),
                    (2, 2, New(0)),
                    (3, 3, Answering),
                    (4, 4, Answering),
                ],
                5,
                Admit::ServeShedding(ConnId(1)),
            ),
        ];
        for (what, conns, client, want) in rows {
            let t = table(CAPS, t0, conns);
            assert_eq!(t.admit(ip(*client)), *want, "{what}");
        }
    }

    /// Answering takes a connection out of the running until it waits again; a shed one is
    /// gone, and a late report about it changes nothing.
    #[test]
    fn states_follow_the_connection() {
        let t0 = Instant::now();
        let caps = Caps {
            max_connections: 2,
            per_client: 2,
        };
        let mut t = table(caps, t0, &[(1, 1, New(0)), (2, 2, New(1))]);
        assert_eq!(t.admit(ip(3)), Admit::ServeShedding(ConnId(1)));
        assert!(t.answering(ConnId(1)));
        assert_eq!(t.admit(ip(3)), Admit::ServeShedding(ConnId(2)));
        assert!(t.answering(ConnId(2)));
        assert_eq!(t.admit(ip(3)), Admit::Wait);
        t.waiting(ConnId(1), t0 + Duration::from_secs(5));
        assert_eq!(t.admit(ip(3)), Admit::ServeShedding(ConnId(1)));
        t.closed(ConnId(1));
        assert!(!t.answering(ConnId(1)));
        t.waiting(ConnId(1), t0);
        assert_eq!((t.len(), t.of(ip(1)), t.of(ip(2))), (1, 0, 1));
        assert_eq!(t.admit(ip(3)), Admit::Serve);
        t.closed(ConnId(2));
        assert!(t.is_empty());
    }

    /// An IPv4 client is one client whether it arrives over IPv4 or IPv6.
    #[test]
    fn a_mapped_address_is_its_ipv4_client() {
        let t0 = Instant::now();
        let caps = Caps {
            max_connections: 8,
            per_client: 1,
        };
        let mut t = Connections::new(caps);
        t.opened(ConnId(1), IpAddr::from([192, 0, 2, 1]), t0);
        assert!(t.answering(ConnId(1)));
        let mapped: IpAddr = "::ffff:192.0.2.1".parse().expect("address");
        assert_eq!(t.of(mapped), 1);
        assert_eq!(t.admit(mapped), Admit::Refuse);
    }
}
