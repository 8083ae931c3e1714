//! IKE_INTERMEDIATE (RFC 9242) carrying RFC 9370's additional key
//! exchanges (§2.2.2): between IKE_SA_INIT and IKE_AUTH, one exchange per
//! ADDKE the responder chose, in slot order. Each one's secret updates
//! every key of the IKE SA, and IntAuth chains the messages into what
//! both AUTH payloads cover, so that IKE_AUTH authenticates them too.
//!
//! ```text
//! HDR(IKE_INTERMEDIATE, MID n), SK{KEi(n)}  -->            keys SK_*(n-1)
//!                          <--  HDR(IKE_INTERMEDIATE, MID n), SK{KEr(n)}
//! IntAuth_in = prf(SK_pi(n-1), IntAuth_i(n-1) | A | P)     RFC 9242 §3.3.2,
//! IntAuth_rn = prf(SK_pr(n-1), IntAuth_r(n-1) | A | P)     A | P: below
//! SKEYSEED(n) = prf(SK_d(n-1), SK(n) | Ni | Nr)            RFC 9370 §2.2.2
//! {SK_d(n) | SK_ai(n) | … | SK_pr(n)} = prf+(SKEYSEED(n), Ni | Nr | SPIi | SPIr)
//! ```
//!
//! A is the IKE header and the SK payload's header with their lengths as
//! if the message had no IV, padding or ICV (and were not fragmented),
//! P the SK payload's inner payloads in the clear: the same bytes whether
//! the message went whole or in fragments (RFC 7383). No unencrypted
//! payload goes before SK (strongSwan assumes none). IntAuth of exchange
//! n is computed with the SK_p in force before its key update, as
//! strongSwan and libreswan do.
//!
//! Refusals (a KE payload missing, of another method than the slot's, or
//! failing its checks: FIPS 203 §7.2 for ML-KEM) answer INVALID_SYNTAX
//! (draft-ietf-ipsecme-ikev2-mlkem §2.2) and end the half-open SA, as a
//! failed IKE_AUTH would (RFC 9242 §3.4).

use flowsec_wire::iana::{DhGroup, ExchangeType, NotifyType, PayloadType};
use flowsec_wire::ike::{emit_payloads, first_type, Header, Ke, Message, Payload, HEADER_LEN};

use crate::config::IkeChosen;
use crate::context::Cx;
use crate::crypto::{self, KeyExchange};
use crate::error::NegotiationError;
use crate::exchange::auth::AwaitingAuth;
use crate::exchange::{Awaiting, Exchange, InitMessages, Kind};
use crate::host::{error_notify, notify};
use crate::sa::IkeSa;
use crate::table::{SaMut, Then};

/// What the IKE_INTERMEDIATE exchanges add to both AUTH payloads' octets
/// (RFC 9242 §3.3.2).
#[derive(Default)]
pub(crate) struct IntAuth {
    /// IntAuth_iN: over the initiator's requests.
    pub i: Vec<u8>,
    /// IntAuth_rN: over the responder's answers.
    pub r: Vec<u8>,
    /// The message ID of the first IKE_AUTH request.
    pub auth_mid: Option<u32>,
}

impl IntAuth {
    /// `IntAuth_iN | IntAuth_rN | IKE_AUTH_MID` (the ID as 4 octets in
    /// network order).
    pub fn tail(&self) -> Vec<u8> {
        let mid = self.auth_mid.unwrap_or_default().to_be_bytes();
        [&self.i[..], &self.r[..], &mid[..]].concat()
    }

    /// One exchange more: `request` and `response` are the A | P octets
    /// of its two messages, `sa`'s keys still those it was protected with.
    fn advance(&mut self, cx: &Cx<'_>, sa: &IkeSa, request: &[u8], response: &[u8]) -> bool {
        let Some(keys) = &sa.keys else {
            return false;
        };
        let Some(prf) = cx.host.provider.prf(keys.suite.prf) else {
            return false;
        };
        self.i = prf.prf(&keys.sk_pi, &[&self.i, request]).to_vec();
        self.r = prf.prf(&keys.sk_pr, &[&self.r, response]).to_vec();
        true
    }
}

/// The octets of one IKE_INTERMEDIATE message IntAuth covers (RFC 9242
/// §3.3.2): A, the IKE header (Next Payload SK, Length as if the message
/// were A | P) and the SK payload header (Next Payload the first inner
/// payload, Payload Length 4 + len(P)); then P, the inner payloads.
fn signed_part(header: &Header, payloads: &[Payload]) -> Vec<u8> {
    const SK_HEADER_LEN: usize = 4;
    let inner = emit_payloads(payloads);
    let sk_len = SK_HEADER_LEN + inner.len();
    let mut h = header.clone();
    h.next_payload = PayloadType::SK;
    h.length = (HEADER_LEN + sk_len) as u32;
    let mut out = vec![0u8; HEADER_LEN];
    h.emit(&mut out);
    out.extend_from_slice(&[first_type(payloads).0, 0]);
    out.extend_from_slice(&(sk_len as u16).to_be_bytes());
    out.extend_from_slice(&inner);
    out
}

/// The header of an IKE_INTERMEDIATE message of `sa` with message ID
/// `mid`: the initiator's request or the responder's answer.
fn header_of(sa: &IkeSa, from_initiator: bool, mid: u32) -> Header {
    Header {
        spi_i: sa.spi_i,
        spi_r: sa.spi_r,
        next_payload: PayloadType::SK,
        major_version: 2,
        minor_version: 0,
        exchange: ExchangeType::IKE_INTERMEDIATE,
        initiator: from_initiator,
        response: !from_initiator,
        message_id: mid,
        length: 0,
    }
}

/// The IKE SA's keys after an additional key exchange with secret `sk`
/// (RFC 9370 §2.2.2): SKEYSEED from the old SK_d with the IKE_SA_INIT
/// nonces, every key again from it. `false`: derivation failed.
fn update_keys(
    cx: &Cx<'_>,
    sa: &mut IkeSa,
    chosen: &IkeChosen,
    init: &InitMessages,
    sk: &[u8],
) -> bool {
    let Some(keys) = &sa.keys else {
        return false;
    };
    let nonces = (&init.ni[..], &init.nr[..]);
    let seed = crypto::rekey_skeyseed(
        &cx.host.provider,
        keys.suite.prf,
        &keys.sk_d,
        sk,
        nonces,
        &[],
    );
    let Ok(seed) = seed else {
        return false;
    };
    let spis = (sa.spi_i, sa.spi_r);
    let fresh =
        crate::exchange::init::keys_from_seed(cx.host, chosen, &seed, nonces, spis, sa.initiator);
    match fresh {
        Some(k) => {
            sa.keys = Some(k);
            true
        }
        None => false,
    }
}

/// Where the initiator stands: what IKE_AUTH needs, and the additional
/// key exchanges still to run.
struct Progress {
    init: InitMessages,
    first_child: Option<usize>,
    chosen: IkeChosen,
    /// The methods still to run, next first.
    pending: Vec<DhGroup>,
    chain: IntAuth,
}

/// Initiator: run the additional key exchanges `chosen` names, one
/// IKE_INTERMEDIATE each, then IKE_AUTH.
pub(crate) fn start(
    cx: &mut Cx<'_>,
    sa: &mut SaMut<'_>,
    init: InitMessages,
    first_child: Option<usize>,
    chosen: IkeChosen,
) -> Then {
    let pending = chosen.additional();
    let progress = Progress {
        init,
        first_child,
        chosen,
        pending,
        chain: IntAuth::default(),
    };
    next(cx, sa, progress)
}

/// The next IKE_INTERMEDIATE, or IKE_AUTH once none is left.
fn next(cx: &mut Cx<'_>, sa: &mut SaMut<'_>, mut p: Progress) -> Then {
    if p.pending.is_empty() {
        p.init.intermediate = Some(p.chain);
        return crate::exchange::auth::send_auth(cx, sa, p.init, p.first_child);
    }
    let method = p.pending.remove(0);
    let ke = match crypto::key_exchange(&cx.host.provider, method, cx.host.rng.as_mut()) {
        Ok(ke) => ke,
        Err(e) => {
            let why = NegotiationError::AdditionalKeyExchange(format!("{method}: {e}"));
            return crate::host::fail(cx, sa, why);
        }
    };
    let payloads = vec![Payload::Ke(Ke {
        group: method,
        data: ke.public_value().to_vec(),
    })];
    let mid = sa.exch.peek_mid();
    let sent = signed_part(&header_of(sa, true, mid), &payloads);
    let task = Box::new(Intermediate {
        progress: p,
        ke,
        sent,
        mid,
    });
    cx.request(sa, ExchangeType::IKE_INTERMEDIATE, payloads, task);
    Then::Stay
}

/// Initiator: an IKE_INTERMEDIATE of ours in flight.
pub(crate) struct Intermediate {
    progress: Progress,
    /// This exchange's key exchange.
    ke: Box<dyn KeyExchange>,
    /// A | P of our request.
    sent: Vec<u8>,
    /// Its message ID (the answer's).
    mid: u32,
}

impl Exchange for Intermediate {
    fn kind(&self) -> Kind {
        Kind::Intermediate
    }

    fn first_child(&self) -> Option<usize> {
        self.progress.first_child
    }

    /// The responder's KE: the secret, IntAuth, the new keys, and the
    /// next exchange.
    fn process(self: Box<Self>, cx: &mut Cx<'_>, sa: &mut SaMut<'_>, msg: Message) -> Then {
        let Intermediate {
            mut progress,
            ke,
            sent,
            mid,
        } = *self;
        let failed = |why: String| NegotiationError::AdditionalKeyExchange(why);
        if let Some(n) = error_notify(&msg) {
            let why = failed(format!("the peer answered {}", n.ty));
            return crate::host::fail(cx, sa, why);
        }
        let secret = match crate::host::parts(&msg).ke {
            Some(ker) if ker.group == ke.group() => ke.shared_secret(&ker.data),
            Some(ker) => {
                let why = failed(format!("answered with {} for {}", ker.group, ke.group()));
                return crate::host::fail(cx, sa, why);
            }
            None => return crate::host::fail(cx, sa, failed("no KE payload in the answer".into())),
        };
        let Ok(secret) = secret else {
            let why = failed(format!("the peer's {} data fails its checks", ke.group()));
            return crate::host::fail(cx, sa, why);
        };
        let received = signed_part(&header_of(sa, false, mid), &msg.payloads);
        let p = &mut progress;
        if !p.chain.advance(cx, sa, &sent, &received)
            || !update_keys(cx, sa, &p.chosen, &p.init, &secret)
        {
            return crate::host::fail(cx, sa, NegotiationError::KeyDerivation);
        }
        next(cx, sa, progress)
    }
}

/// Responder: our IKE_SA_INIT answer chose additional key exchanges;
/// waits for the initiator's next IKE_INTERMEDIATE.
pub(crate) struct AwaitingIntermediate {
    init: InitMessages,
    chosen: IkeChosen,
    /// The methods still to run, the expected one first.
    pending: Vec<DhGroup>,
    chain: IntAuth,
}

impl AwaitingIntermediate {
    /// The wait after IKE_SA_INIT: `additional` from `chosen`, in order.
    pub(crate) fn new(init: InitMessages, chosen: IkeChosen, additional: Vec<DhGroup>) -> Self {
        AwaitingIntermediate {
            init,
            chosen,
            pending: additional,
            chain: IntAuth::default(),
        }
    }
}

impl Awaiting for AwaitingIntermediate {
    fn exchange(&self) -> ExchangeType {
        ExchangeType::IKE_INTERMEDIATE
    }

    fn init(&self) -> Option<&InitMessages> {
        Some(&self.init)
    }

    /// The initiator's KE for the next slot: answered with ours (under
    /// the keys before it), then IntAuth and the keys updated; the next
    /// wait is for another IKE_INTERMEDIATE or for IKE_AUTH.
    fn answer(
        self: Box<Self>,
        cx: &mut Cx<'_>,
        sa: &mut SaMut<'_>,
        mid: u32,
        msg: Message,
    ) -> Then {
        let AwaitingIntermediate {
            init,
            chosen,
            mut pending,
            mut chain,
        } = *self;
        let method = pending.remove(0);
        let answered = match crate::host::parts(&msg).ke {
            Some(kei) if kei.group == method => {
                crypto::respond(&cx.host.provider, method, cx.host.rng.as_mut(), &kei.data).ok()
            }
            _ => None,
        };
        let Some((ours, secret)) = answered else {
            cx.host.stats.malformed += 1;
            let n = notify(NotifyType::INVALID_SYNTAX, vec![]);
            cx.respond(sa, ExchangeType::IKE_INTERMEDIATE, mid, vec![n]);
            let why = format!("the initiator's KE for {method} is missing or fails its checks");
            return crate::host::fail(cx, sa, NegotiationError::AdditionalKeyExchange(why));
        };
        let payloads = vec![Payload::Ke(Ke {
            group: method,
            data: ours.public_value().to_vec(),
        })];
        let request = signed_part(&header_of(sa, true, mid), &msg.payloads);
        let response = signed_part(&header_of(sa, false, mid), &payloads);
        cx.respond(sa, ExchangeType::IKE_INTERMEDIATE, mid, payloads);
        if !chain.advance(cx, sa, &request, &response)
            || !update_keys(cx, sa, &chosen, &init, &secret)
        {
            return crate::host::fail(cx, sa, NegotiationError::KeyDerivation);
        }
        if pending.is_empty() {
            let mut init = init;
            init.intermediate = Some(chain);
            sa.exch
                .await_request(Box::new(AwaitingAuth { init, eap: None }));
        } else {
            sa.exch.await_request(Box::new(AwaitingIntermediate {
                init,
                chosen,
                pending,
                chain,
            }));
        }
        Then::Stay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 9242 §3.3.2's A | P for a request carrying one KE payload of
    /// ML-KEM-768's size: IKE Length 28 + 4 + 1192 = 1224, SK Payload
    /// Length 4 + 1192 = 1196 (the figures strongSwan's dump shows for
    /// such a message).
    #[test]
    fn the_signed_part_has_adjusted_lengths_and_no_iv_or_icv() {
        let header = Header {
            spi_i: 0x0102030405060708,
            spi_r: 0x1112131415161718,
            next_payload: PayloadType::SK,
            major_version: 2,
            minor_version: 0,
            exchange: ExchangeType::IKE_INTERMEDIATE,
            initiator: true,
            response: false,
            message_id: 1,
            length: 0,
        };
        let ke = vec![Payload::Ke(Ke {
            group: DhGroup::ML_KEM_768,
            data: vec![0xab; 1184],
        })];
        let a = signed_part(&header, &ke);
        assert_eq!(a.len(), 1224);
        assert_eq!(&a[24..28], &1224u32.to_be_bytes());
        assert_eq!(a[16], PayloadType::SK.0);
        assert_eq!(a[18], 43);
        assert_eq!(a[19], 0x08, "I flag, not R");
        assert_eq!(&a[28..32], &[PayloadType::KE.0, 0, 0x04, 0xac]);
        // The KE payload: no next payload, length 8 + 1184, the method.
        assert_eq!(&a[32..38], &[0, 0, 0x04, 0xa8, 0x00, 0x24]);
        let tail = IntAuth {
            i: vec![1; 4],
            r: vec![2; 4],
            auth_mid: Some(3),
        }
        .tail();
        assert_eq!(tail, [1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 0, 3]);
    }
}
