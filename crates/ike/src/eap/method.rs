//! EAP-MSCHAPv2 conversations, sans-I/O: the server (the gateway asks the
//! peer's identity, challenges it, checks the NT-Response against the
//! password it holds for that name, proves it knows the password too with
//! `S=…`, and ends with EAP-Success) and the peer (the road warrior
//! answering each request). Both end with the MSK that keys IKE's AUTH
//! (RFC 7296 §2.16). A message out of turn or malformed ends the
//! conversation (EAP-Failure from the server).

use flowsec_crypto::{MsChapV2, Provider};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use super::mschapv2 as ms;
use super::packet::*;

/// What the server does next.
pub enum ServerStep {
    /// Send this EAP request (or EAP-Success, with the MSK and the
    /// user name that authenticated, when done).
    Send(Vec<u8>),
    /// Authenticated: send EAP-Success; the MSK and the user.
    Success {
        /// The EAP-Success packet.
        packet: Vec<u8>,
        /// The MSK.
        msk: Zeroizing<Vec<u8>>,
        /// The user name the password belonged to.
        user: Vec<u8>,
    },
    /// Refused: send EAP-Failure; why.
    Failure {
        /// The EAP-Failure packet.
        packet: Vec<u8>,
        /// Why, for the log.
        why: &'static str,
    },
}

enum ServerState {
    Identity,
    Challenge {
        user: Vec<u8>,
        challenge: [u8; 16],
    },
    Confirm {
        msk: Zeroizing<Vec<u8>>,
        user: Vec<u8>,
    },
    Done,
}

/// Finds the password of a user name (cleared when dropped).
pub type Passwords<'a> = dyn Fn(&[u8]) -> Option<Zeroizing<Vec<u8>>> + 'a;

/// The EAP-MSCHAPv2 server side.
pub struct Server {
    id: u8,
    state: ServerState,
    /// MD4 and DES, `None` if the crypto provider has none.
    mschap: Option<&'static dyn MsChapV2>,
}

/// Why a conversation ends when the crypto provider has no MD4 and DES.
const NO_MSCHAPV2: &str = "MS-CHAPv2 is not in the crypto provider";

/// The authenticator name in the Challenge.
const HOST_NAME: &[u8] = b"flowsec";

impl Server {
    /// A new conversation and its first request (`id`: the first
    /// identifier, random): EAP-Identity, or, when the user is known
    /// already (`user`: the IKE identity, strongSwan's default when
    /// `eap_id` is not set), the MS-CHAPv2 Challenge with `challenge`.
    /// MD4 and DES are `provider`'s.
    pub fn start(
        provider: &Provider,
        id: u8,
        user: Option<Vec<u8>>,
        challenge: [u8; 16],
    ) -> (Server, Vec<u8>) {
        let mschap = provider.mschapv2();
        match user {
            None => {
                let s = Server {
                    id,
                    state: ServerState::Identity,
                    mschap,
                };
                (s, Packet::new(REQUEST, id, IDENTITY, Vec::new()).emit())
            }
            Some(user) => {
                let mut s = Server {
                    id: id.wrapping_sub(1),
                    state: ServerState::Done,
                    mschap,
                };
                let req = s.challenge(user, challenge);
                (s, req)
            }
        }
    }

    /// The MS-CHAPv2 Challenge for `user`, with the next identifier.
    fn challenge(&mut self, mut user: Vec<u8>, challenge: [u8; 16]) -> Vec<u8> {
        user.truncate(MAX_NAME);
        self.id = self.id.wrapping_add(1);
        let mut rest = vec![16];
        rest.extend_from_slice(&challenge);
        rest.extend_from_slice(HOST_NAME);
        let m = MsChap {
            op: OP_CHALLENGE,
            ms_id: self.id,
            rest,
        };
        self.state = ServerState::Challenge { user, challenge };
        Packet::new(REQUEST, self.id, MSCHAPV2, m.emit()).emit()
    }

    fn fail(&mut self, why: &'static str) -> ServerStep {
        self.state = ServerState::Done;
        ServerStep::Failure {
            packet: Packet::result(FAILURE, self.id).emit(),
            why,
        }
    }

    /// The peer's response `resp`; `challenge` is 16 random octets for
    /// the Challenge, `password` finds the password of a user name.
    pub fn step(
        &mut self,
        resp: &[u8],
        challenge: [u8; 16],
        password: &Passwords<'_>,
    ) -> ServerStep {
        let Some(p) = Packet::parse(resp) else {
            return self.fail("malformed EAP message");
        };
        if p.code != RESPONSE || p.id != self.id {
            return self.fail("EAP message out of turn");
        }
        let state = std::mem::replace(&mut self.state, ServerState::Done);
        match (state, p.ty) {
            (ServerState::Identity, Some(IDENTITY)) => {
                ServerStep::Send(self.challenge(p.data.clone(), challenge))
            }
            (ServerState::Challenge { user, challenge }, Some(MSCHAPV2)) => {
                let Some(m) = MsChap::parse(&p.data).filter(|m| m.op == OP_RESPONSE) else {
                    return self.fail("not an MS-CHAPv2 Response");
                };
                let Some((peer, nt, name)) = response_of(&m) else {
                    return self.fail("malformed MS-CHAPv2 Response");
                };
                // The name answered must be the identity given (a domain
                // before it allowed).
                if ms::user_name(name) != ms::user_name(&user) {
                    return self.fail("MS-CHAPv2 name is not the EAP identity");
                }
                let Some(pw) = password(&user) else {
                    return self.fail("no EAP secret for that user");
                };
                let Some(mschap) = self.mschap else {
                    return self.fail(NO_MSCHAPV2);
                };
                let want = ms::nt_response(mschap, &challenge, &peer, name, &pw);
                if !bool::from(want.ct_eq(&nt)) {
                    return self.fail("wrong password (NT-Response)");
                }
                let auth = ms::authenticator_response(mschap, &pw, &nt, &peer, &challenge, name);
                let mut msg = ms::authenticator_string(&auth).into_bytes();
                msg.extend_from_slice(b" M=Welcome");
                self.id = self.id.wrapping_add(1);
                let m = MsChap {
                    op: OP_SUCCESS,
                    ms_id: m.ms_id,
                    rest: msg,
                };
                self.state = ServerState::Confirm {
                    msk: ms::msk(mschap, &pw, &nt),
                    user,
                };
                ServerStep::Send(Packet::new(REQUEST, self.id, MSCHAPV2, m.emit()).emit())
            }
            (ServerState::Confirm { msk, user }, Some(MSCHAPV2)) => match MsChap::parse(&p.data) {
                Some(m) if m.op == OP_SUCCESS => ServerStep::Success {
                    packet: Packet::result(SUCCESS, self.id).emit(),
                    msk,
                    user,
                },
                _ => self.fail("the peer did not accept our authenticator response"),
            },
            (_, Some(NAK)) => self.fail("the peer wants another EAP method"),
            _ => self.fail("EAP message out of turn"),
        }
    }
}

/// What the peer does next.
pub enum PeerStep {
    /// Send this EAP response.
    Send(Vec<u8>),
    /// EAP-Success came: the MSK for AUTH.
    Done(Zeroizing<Vec<u8>>),
    /// EAP-Failure, or the server failed to prove it knows the password.
    Failed(&'static str),
}

/// The EAP-MSCHAPv2 peer side.
pub struct Peer {
    /// MD4 and DES, `None` if the crypto provider has none.
    mschap: Option<&'static dyn MsChapV2>,
    identity: Vec<u8>,
    password: Zeroizing<Vec<u8>>,
    /// After our Response: what the server's `S=` must be, and the MSK.
    expect: Option<(String, Zeroizing<Vec<u8>>)>,
    msk: Option<Zeroizing<Vec<u8>>>,
}

impl Peer {
    /// A peer with its EAP identity and password; MD4 and DES are
    /// `provider`'s.
    pub fn new(provider: &Provider, identity: Vec<u8>, password: Zeroizing<Vec<u8>>) -> Peer {
        Peer {
            mschap: provider.mschapv2(),
            identity,
            password,
            expect: None,
            msk: None,
        }
    }

    /// The server's request `req`; `peer_challenge` is 16 random octets.
    pub fn step(&mut self, req: &[u8], peer_challenge: [u8; 16]) -> PeerStep {
        let Some(p) = Packet::parse(req) else {
            return PeerStep::Failed("malformed EAP message");
        };
        match (p.code, p.ty) {
            (SUCCESS, _) => match self.msk.take() {
                Some(msk) => PeerStep::Done(msk),
                None => PeerStep::Failed("EAP-Success before the server proved itself"),
            },
            (FAILURE, _) => PeerStep::Failed("EAP-Failure (wrong user or password)"),
            (REQUEST, Some(IDENTITY)) => {
                PeerStep::Send(Packet::new(RESPONSE, p.id, IDENTITY, self.identity.clone()).emit())
            }
            (REQUEST, Some(MSCHAPV2)) => self.mschap(&p, peer_challenge),
            // Another method: a Nak naming MS-CHAPv2 (RFC 3748 §5.3.1).
            (REQUEST, Some(_)) => {
                PeerStep::Send(Packet::new(RESPONSE, p.id, NAK, vec![MSCHAPV2]).emit())
            }
            _ => PeerStep::Failed("EAP message out of turn"),
        }
    }

    fn mschap(&mut self, p: &Packet, peer_challenge: [u8; 16]) -> PeerStep {
        let Some(m) = MsChap::parse(&p.data) else {
            return PeerStep::Failed("malformed MS-CHAPv2 message");
        };
        match m.op {
            OP_CHALLENGE => {
                let Some((challenge, _name)) = challenge_of(&m) else {
                    return PeerStep::Failed("malformed MS-CHAPv2 Challenge");
                };
                let Some(mschap) = self.mschap else {
                    return PeerStep::Failed(NO_MSCHAPV2);
                };
                let (identity, password) = (&self.identity, &self.password);
                let nt = ms::nt_response(mschap, &challenge, &peer_challenge, identity, password);
                let auth = ms::authenticator_response(
                    mschap,
                    &self.password,
                    &nt,
                    &peer_challenge,
                    &challenge,
                    &self.identity,
                );
                self.expect = Some((
                    ms::authenticator_string(&auth),
                    ms::msk(mschap, &self.password, &nt),
                ));
                let mut rest = vec![49];
                rest.extend_from_slice(&peer_challenge);
                rest.extend_from_slice(&[0; 8]);
                rest.extend_from_slice(&nt);
                rest.push(0);
                rest.extend_from_slice(&self.identity);
                let r = MsChap {
                    op: OP_RESPONSE,
                    ms_id: m.ms_id,
                    rest,
                };
                PeerStep::Send(Packet::new(RESPONSE, p.id, MSCHAPV2, r.emit()).emit())
            }
            OP_SUCCESS => {
                let Some((want, msk)) = self.expect.take() else {
                    return PeerStep::Failed("MS-CHAPv2 Success out of turn");
                };
                let got = m.rest.get(..want.len()).unwrap_or_default();
                if !bool::from(got.ct_eq(want.as_bytes())) {
                    return PeerStep::Failed("the server's authenticator response is wrong");
                }
                self.msk = Some(msk);
                PeerStep::Send(
                    Packet::new(RESPONSE, p.id, MSCHAPV2, MsChap::short(OP_SUCCESS)).emit(),
                )
            }
            // The server refused our response (E=691 …; it may offer a
            // retry, which we do not take: the password would be the same):
            // answer Failure, and EAP-Failure ends it (draft §2.4.4).
            OP_FAILURE => PeerStep::Send(
                Packet::new(RESPONSE, p.id, MSCHAPV2, MsChap::short(OP_FAILURE)).emit(),
            ),
            _ => PeerStep::Failed("unknown MS-CHAPv2 OpCode"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider() -> Provider {
        Provider::fastest()
    }

    fn run(server_pw: &[u8], peer_pw: &[u8]) -> Result<(Vec<u8>, Vec<u8>), &'static str> {
        let (mut s, mut req) = Server::start(&provider(), 42, None, [0x5a; 16]);
        let mut p = Peer::new(
            &provider(),
            b"carol".to_vec(),
            Zeroizing::new(peer_pw.to_vec()),
        );
        let pw = |u: &[u8]| (u == b"carol").then(|| Zeroizing::new(server_pw.to_vec()));
        for round in 0u8..5 {
            let resp = match p.step(&req, [round; 16]) {
                PeerStep::Send(r) => r,
                PeerStep::Done(_) => return Err("done early"),
                PeerStep::Failed(w) => return Err(w),
            };
            match s.step(&resp, [0x5a; 16], &pw) {
                ServerStep::Send(r) => req = r,
                ServerStep::Success { packet, msk, user } => {
                    assert_eq!(user, b"carol");
                    return match p.step(&packet, [0; 16]) {
                        PeerStep::Done(m) => Ok((msk.to_vec(), m.to_vec())),
                        _ => Err("peer did not finish"),
                    };
                }
                ServerStep::Failure { packet, why } => {
                    assert!(matches!(p.step(&packet, [0; 16]), PeerStep::Failed(_)));
                    return Err(why);
                }
            }
        }
        Err("too many rounds")
    }

    #[test]
    fn both_ends_agree_on_the_msk_and_a_wrong_password_fails() {
        let (a, b) = run(b"secret", b"secret").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.len(), 64);
        assert_eq!(
            run(b"secret", b"guess"),
            Err("wrong password (NT-Response)")
        );
    }

    #[test]
    fn a_known_user_gets_the_challenge_at_once() {
        let (mut s, req) = Server::start(&provider(), 7, Some(b"carol".to_vec()), [0x5a; 16]);
        let mut p = Peer::new(
            &provider(),
            b"carol".to_vec(),
            Zeroizing::new(b"pw".to_vec()),
        );
        let pw = |u: &[u8]| (u == b"carol").then(|| Zeroizing::new(b"pw".to_vec()));
        let PeerStep::Send(resp) = p.step(&req, [1; 16]) else {
            panic!("no response to the challenge");
        };
        assert!(matches!(s.step(&resp, [0; 16], &pw), ServerStep::Send(_)));
        // Another name in the response than the user: refused.
        let (mut s, req) = Server::start(&provider(), 7, Some(b"carol".to_vec()), [0x5a; 16]);
        let mut p = Peer::new(
            &provider(),
            b"mallory".to_vec(),
            Zeroizing::new(b"pw".to_vec()),
        );
        let PeerStep::Send(resp) = p.step(&req, [1; 16]) else {
            panic!("no response to the challenge");
        };
        assert!(matches!(
            s.step(&resp, [0; 16], &pw),
            ServerStep::Failure {
                why: "MS-CHAPv2 name is not the EAP identity",
                ..
            }
        ));
    }

    #[test]
    fn without_md4_and_des_in_the_provider_both_ends_fail() {
        let none = Provider::fastest().with_mschapv2(None);
        let pw = |_: &[u8]| Some(Zeroizing::new(b"pw".to_vec()));
        let (_, req) = Server::start(&provider(), 7, Some(b"carol".to_vec()), [0x5a; 16]);
        let mut p = Peer::new(&none, b"carol".to_vec(), Zeroizing::new(b"pw".to_vec()));
        assert!(matches!(
            p.step(&req, [1; 16]),
            PeerStep::Failed(NO_MSCHAPV2)
        ));
        let (mut s, req) = Server::start(&none, 7, Some(b"carol".to_vec()), [0x5a; 16]);
        let mut p = Peer::new(
            &provider(),
            b"carol".to_vec(),
            Zeroizing::new(b"pw".to_vec()),
        );
        let PeerStep::Send(resp) = p.step(&req, [1; 16]) else {
            panic!("no response to the challenge");
        };
        assert!(matches!(
            s.step(&resp, [0; 16], &pw),
            ServerStep::Failure {
                why: NO_MSCHAPV2,
                ..
            }
        ));
    }

    #[test]
    fn out_of_turn_and_malformed_messages_end_it() {
        let (mut s, _) = Server::start(&provider(), 1, None, [0; 16]);
        let pw = |_: &[u8]| None;
        let r = s.step(&[2, 9, 0, 5, 1], [0; 16], &pw);
        assert!(matches!(
            r,
            ServerStep::Failure {
                why: "EAP message out of turn",
                ..
            }
        ));
        let (mut s, _) = Server::start(&provider(), 1, None, [0; 16]);
        assert!(matches!(
            s.step(&[2, 1, 0], [0; 16], &pw),
            ServerStep::Failure { .. }
        ));
        let mut p = Peer::new(&provider(), b"x".to_vec(), Zeroizing::new(b"y".to_vec()));
        assert!(matches!(
            p.step(&[3, 1, 0, 4], [0; 16]),
            PeerStep::Failed(_)
        ));
    }
}
