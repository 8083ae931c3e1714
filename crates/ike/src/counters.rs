//! strongSwan's IKE counters, as its `counters` plugin keeps them and
//! vici's `get-counters` returns them (strongSwan 5.9
//! `plugins/counters/counters_listener.c`, names from
//! `plugins/vici/vici_query.c`): the messages of each exchange by
//! direction and kind, IKE and CHILD_SA rekeys, invalid messages and
//! unknown SPIs; in total and per connection (the one an IKE SA was made
//! with). A message is counted once, when it is made or when it is read
//! whole and checked (fragments and retransmissions are not counted
//! again), as charon's message hook does for plain messages.

use std::collections::BTreeMap;

use flowsec_wire::iana::ExchangeType;

/// charon's counter names, in its order.
pub const NAMES: [&str; 21] = [
    "ike-rekey-init",
    "ike-rekey-resp",
    "child-rekey",
    "invalid",
    "invalid-spi",
    "ike-init-in-req",
    "ike-init-in-resp",
    "ike-init-out-req",
    "ike-init-out-resp",
    "ike-auth-in-req",
    "ike-auth-in-resp",
    "ike-auth-out-req",
    "ike-auth-out-resp",
    "create-child-in-req",
    "create-child-in-resp",
    "create-child-out-req",
    "create-child-out-resp",
    "info-in-req",
    "info-in-resp",
    "info-out-req",
    "info-out-resp",
];

/// One set of counters, by [`NAMES`]' index.
pub type Counts = [u64; NAMES.len()];

/// What is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counter {
    /// An IKE SA rekey we started, completed.
    IkeRekeyInit,
    /// An IKE SA rekey the peer started, completed.
    IkeRekeyResp,
    /// A CHILD_SA rekey completed.
    ChildRekey,
    /// A message that does not parse, or fails its integrity check.
    Invalid,
    /// A message for an IKE SA we do not have.
    InvalidSpi,
    /// A message of `exchange`: received (`incoming`) or sent, a request
    /// or a response. Exchanges charon does not count are not counted.
    Message {
        exchange: ExchangeType,
        incoming: bool,
        request: bool,
    },
}

impl Counter {
    /// A message of `exchange` that came in.
    pub(crate) fn incoming(exchange: ExchangeType, response: bool) -> Counter {
        Counter::Message {
            exchange,
            incoming: true,
            request: !response,
        }
    }

    /// A message of `exchange` we made.
    pub(crate) fn outgoing(exchange: ExchangeType, response: bool) -> Counter {
        Counter::Message {
            exchange,
            incoming: false,
            request: !response,
        }
    }

    /// Its index in [`NAMES`].
    fn index(self) -> Option<usize> {
        Some(match self {
            Counter::IkeRekeyInit => 0,
            Counter::IkeRekeyResp => 1,
            Counter::ChildRekey => 2,
            Counter::Invalid => 3,
            Counter::InvalidSpi => 4,
            Counter::Message {
                exchange,
                incoming,
                request,
            } => {
                let base = match exchange {
                    ExchangeType::IKE_SA_INIT => 5,
                    ExchangeType::IKE_AUTH => 9,
                    ExchangeType::CREATE_CHILD_SA => 13,
                    ExchangeType::INFORMATIONAL => 17,
                    _ => return None,
                };
                base + 2 * usize::from(!incoming) + usize::from(!request)
            }
        })
    }
}

/// The counters in total and per connection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    total: Counts,
    /// By connection name; a name stays once counted (as charon's),
    /// and names come from the configuration, so the map is bounded by it.
    named: BTreeMap<String, Counts>,
}

impl Counters {
    /// Count `c`, in total and for connection `conn`.
    pub(crate) fn count(&mut self, conn: Option<&str>, c: Counter) {
        let Some(i) = c.index() else { return };
        self.total[i] += 1;
        if let Some(name) = conn {
            self.count_named(name, c);
        }
    }

    /// Count `c` for connection `conn` only (its total counted before the
    /// connection was known).
    pub(crate) fn count_named(&mut self, conn: &str, c: Counter) {
        let Some(i) = c.index() else { return };
        match self.named.get_mut(conn) {
            Some(n) => n[i] += 1,
            None => {
                let mut n = [0; NAMES.len()];
                n[i] = 1;
                self.named.insert(conn.to_string(), n);
            }
        }
    }

    /// The totals.
    pub fn total(&self) -> &Counts {
        &self.total
    }

    /// Connection `conn`'s, if it counted anything.
    pub fn of(&self, conn: &str) -> Option<&Counts> {
        self.named.get(conn)
    }

    /// Every connection that counted something, by name.
    pub fn named(&self) -> impl Iterator<Item = (&str, &Counts)> {
        self.named.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Back to zero: connection `conn`'s, or the totals (`None`).
    pub fn reset(&mut self, conn: Option<&str>) {
        match conn {
            Some(name) => {
                self.named.remove(name);
            }
            None => self.total = [0; NAMES.len()],
        }
    }

    /// Every counter back to zero.
    pub fn reset_all(&mut self) {
        *self = Counters::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_land_under_charons_names() {
        let mut c = Counters::default();
        let msg = |exchange, incoming, request| Counter::Message {
            exchange,
            incoming,
            request,
        };
        c.count(None, msg(ExchangeType::IKE_SA_INIT, true, true));
        c.count(Some("gw"), msg(ExchangeType::IKE_AUTH, false, false));
        c.count(Some("gw"), msg(ExchangeType::INFORMATIONAL, true, false));
        c.count(Some("gw"), Counter::ChildRekey);
        // IKE_INTERMEDIATE and others: charon has no counter for them.
        c.count(Some("gw"), msg(ExchangeType::from(43u8), true, true));
        let by_name = |counts: &Counts| -> Vec<(&str, u64)> {
            NAMES
                .iter()
                .zip(counts)
                .filter(|(_, n)| **n > 0)
                .map(|(k, n)| (*k, *n))
                .collect()
        };
        assert_eq!(
            by_name(c.total()),
            [
                ("child-rekey", 1),
                ("ike-init-in-req", 1),
                ("ike-auth-out-resp", 1),
                ("info-in-resp", 1)
            ]
        );
        assert_eq!(
            by_name(c.of("gw").unwrap()),
            [
                ("child-rekey", 1),
                ("ike-auth-out-resp", 1),
                ("info-in-resp", 1)
            ]
        );
        c.reset(Some("gw"));
        assert!(c.of("gw").is_none());
        assert_eq!(c.total()[2], 1);
        c.reset(None);
        assert_eq!(c.total(), &[0; 21]);
    }
}
