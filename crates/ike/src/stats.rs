//! The core's counters ([`IkeStats`]): what arrived, what was refused
//! and why, what was sent.

/// What the core counted (never per packet on the data path: this is the
/// control plane). Every dropped message has its reason here.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IkeStats {
    /// Messages received.
    pub received: u64,
    /// Messages sent, retransmissions included.
    pub sent: u64,
    /// Retransmissions of our requests.
    pub retransmits: u64,
    /// Responses replayed for a retransmitted request.
    pub replayed: u64,
    /// Retransmitted requests not answered again: the same answer went
    /// out less than a second before, or eight times already.
    pub resend_limited: u64,
    /// Dropped: not an IKE message, bad lengths, bad payloads.
    pub malformed: u64,
    /// Dropped: no IKE SA with that SPI.
    pub unknown_spi: u64,
    /// Dropped: integrity check failed.
    pub bad_integrity: u64,
    /// Dropped: message ID out of the window, or a response to nothing.
    pub bad_message_id: u64,
    /// IKE_SA_INIT answered with a COOKIE request.
    pub cookies_sent: u64,
    /// IKE_SA_INIT dropped: too many SAs or half-open SAs.
    pub refused_limit: u64,
    /// IKE_SA_INIT dropped: its address holds `block_threshold` half-open
    /// SAs already.
    pub blocked_source: u64,
    /// IKE_AUTH failed (either role): the IKE SA was destroyed at once.
    pub auth_failed: u64,
    /// IKE_AUTH requests that carried INITIAL_CONTACT (RFC 7296 §2.4):
    /// the peer said it holds no other IKE SA with us.
    pub initial_contacts: u64,
    /// IKE_SA_INIT answered with INVALID_KE_PAYLOAD.
    pub invalid_ke_sent: u64,
    /// IKE_SA_INIT refused: no connection for the addresses, or no
    /// proposal in common (NO_PROPOSAL_CHOSEN, without state).
    pub no_proposal: u64,
    /// Peers declared dead (no answer after all retransmissions).
    pub peers_dead: u64,
    /// Dropped: a message for an IKE SA over UDP that came over TCP, or
    /// the other way round (RFC 9329 §5).
    pub wrong_transport: u64,
    /// IKE_SA_INITs over UDP given up for TCP (`tcp_encap = fallback`).
    pub tcp_fallbacks: u64,
    /// CHILD_SA rekeys completed, either role.
    pub child_rekeys: u64,
    /// Of those, the ones handed over loss-free (`rekey_switch =
    /// loss-free`: the responder keeps sending on the old SA until the
    /// initiator's DELETE, the old inbound SA lingers).
    pub loss_free_handovers: u64,
    /// TCP connections we originated, lost and opened again with their
    /// IKE SAs kept (RFC 9329 §6.1).
    pub reconnects: u64,
    /// Messages we sent as fragments (RFC 7383).
    pub fragmented: u64,
    /// Fragments received that verified.
    pub fragments_received: u64,
    /// Fragments dropped: not announced (`fragmentation = no`), of a
    /// message not expected, malformed, stale or past the bounds.
    pub fragments_dropped: u64,
    /// Messages put back together from fragments.
    pub reassembled: u64,
    /// Peer certificates that did not parse (or were too large).
    pub cert_malformed: u64,
    /// Peer certificates whose path did not validate to a trusted CA,
    /// or that did not hold the peer's identity.
    pub cert_untrusted: u64,
    /// Peer certificates revoked by a CRL we hold.
    pub cert_revoked: u64,
    /// Signatures (AUTH) that did not verify, or used a scheme we do not
    /// accept.
    pub bad_signature: u64,
    /// Established peers deleted because a reload's credentials no longer
    /// let them in (a CRL, a CA removed, an EAP user deleted).
    pub peers_revoked: u64,
    /// IKE SAs authenticated again in an old one's place (`reauth_time`).
    pub reauthentications: u64,
    /// Protected messages (or fragments) that verified under an IKE SA's
    /// keys: the daemon tells a stream's authenticated messages by it
    /// (`Ike::stream_authenticated`).
    pub verified: u64,
    /// IKE_FOLLOWUP_KE exchanges done (RFC 9370 §2.2.4), either role.
    pub followups: u64,
    /// IKE_FOLLOWUP_KE requests refused: no exchange waits for them or
    /// it expired (STATE_NOT_FOUND), their KE is missing, of another
    /// method or fails its checks.
    pub followup_refused: u64,
    /// MOBIKE address updates done (RFC 4555 §3.5), either role.
    pub mobike_updates: u64,
    /// UPDATE_SA_ADDRESSES not followed (MOBIKE not agreed, or from the
    /// original responder), and answers to ours without our COOKIE2.
    pub mobike_refused: u64,
    /// Clients we redirected (RFC 5685), in any phase.
    pub redirects: u64,
    /// Redirects we followed as a client.
    pub redirected: u64,
    /// REDIRECTs not followed: an IKE_SA_INIT one without our nonce, past
    /// the loop limit, or to a name that does not resolve.
    pub redirect_refused: u64,
}

impl IkeStats {
    /// Every counter with its name, for `flowsec ctl stats`.
    pub fn named(&self) -> [(&'static str, u64); 40] {
        [
            ("received", self.received),
            ("sent", self.sent),
            ("retransmits", self.retransmits),
            ("replayed", self.replayed),
            ("resend_limited", self.resend_limited),
            ("malformed", self.malformed),
            ("unknown_spi", self.unknown_spi),
            ("bad_integrity", self.bad_integrity),
            ("bad_message_id", self.bad_message_id),
            ("cookies_sent", self.cookies_sent),
            ("refused_limit", self.refused_limit),
            ("blocked_source", self.blocked_source),
            ("auth_failed", self.auth_failed),
            ("invalid_ke_sent", self.invalid_ke_sent),
            ("initial_contacts", self.initial_contacts),
            ("no_proposal", self.no_proposal),
            ("peers_dead", self.peers_dead),
            ("wrong_transport", self.wrong_transport),
            ("tcp_fallbacks", self.tcp_fallbacks),
            ("reconnects", self.reconnects),
            ("fragmented", self.fragmented),
            ("fragments_received", self.fragments_received),
            ("fragments_dropped", self.fragments_dropped),
            ("reassembled", self.reassembled),
            ("cert_malformed", self.cert_malformed),
            ("cert_untrusted", self.cert_untrusted),
            ("cert_revoked", self.cert_revoked),
            ("bad_signature", self.bad_signature),
            ("peers_revoked", self.peers_revoked),
            ("reauthentications", self.reauthentications),
            ("child_rekeys", self.child_rekeys),
            ("loss_free_handovers", self.loss_free_handovers),
            ("verified", self.verified),
            ("followups", self.followups),
            ("followup_refused", self.followup_refused),
            ("mobike_updates", self.mobike_updates),
            ("mobike_refused", self.mobike_refused),
            ("redirects", self.redirects),
            ("redirected", self.redirected),
            ("redirect_refused", self.redirect_refused),
        ]
    }

    /// A CHILD_SA rekey completed with this handover.
    pub(crate) fn count_rekey(&mut self, switch: crate::config::RekeySwitch) {
        self.child_rekeys += 1;
        if switch == crate::config::RekeySwitch::LossFree {
            self.loss_free_handovers += 1;
        }
    }
}
