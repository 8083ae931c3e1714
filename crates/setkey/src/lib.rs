//! Manual keying in KAME/ipsec-tools `setkey(8)` syntax: a sans-I/O
//! parser from file text to flowsec SAD/SPD commands, and `setkey -D` /
//! `-DP` style dumps.
//!
//! ```text
//! add 192.0.2.1 192.0.2.2 esp 0x1001 -m transport -r 64
//!     -E aes-cbc 0x00112233445566778899aabbccddeeff
//!     -A hmac-sha256 "0123456789abcdef0123456789abcdef";
//! spdadd 192.0.2.1 192.0.2.2 any -P out ipsec esp/transport//require;
//! ```
//!
//! [`parse`] reads a whole file and either returns every command or the
//! first error, with file, line and column: nothing of a file with an
//! error is meant to be applied. Nothing here reads files, resolves names
//! or talks to the daemon.
//!
//! # Decisions, and where they come from
//!
//! Grammar and meanings follow setkey(8) of ipsec-tools 0.8 ("Configuration
//! syntax", "Meta-arguments", "Algorithms") and its `parse.y`/`token.l`,
//! and ipsec_set_policy(3) (libipsec `policy_parse.y`) for policies.
//!
//! - **Statements** end with `;` and may span lines; `#` starts a comment
//!   to the end of the line. Supported: `add`, `get`, `delete`,
//!   `deleteall`, `flush`, `dump`, `spdadd`, `spddelete`, `spdflush`,
//!   `spddump`. `getspi`, `update`, `spdupdate`, `spdadd tagged`, `-ctx`
//!   labels, `esp-old`/`ah-old`/`tcp` and the NAT-OA of `esp-udp` are
//!   refused as unsupported, by name.
//! - **Addresses** are numeric only (setkey resolves host names; a sans-I/O
//!   parser cannot). `-4`/`-6` restrict the family, `-n` is a no-op.
//! - **SPI** (meta-argument `spi`): decimal or `0x` hex; 0..=255 refused
//!   ("reserved for future use by IANA", RFC 4303 §2.1). An IPComp CPI is
//!   256..=65535 (16 bits, RFC 3173 §2.2; below 256 are transform ids).
//!   `-C deflate -R` is accepted; the SPI is always the CPI on the wire,
//!   as on Linux.
//! - **Keys** (`algorithm`): `0x` hex or a `"quoted string"` used byte for
//!   byte. An odd number of hex digits is refused (ipsec-tools pads a
//!   leading zero; a dropped digit is the likelier story). Lengths are
//!   checked by building the transform with the RustCrypto provider, so
//!   the rules are exactly the data path's (weak 3DES/DES keys included).
//!   As the manual's note says, `aes-ctr`, `aes-gcm-*`, `aes-gmac` (and
//!   `chacha20-poly1305`, RFC 7634) keys end with a 4-byte salt/nonce;
//!   `aes-ccm-*` with 3 bytes (RFC 4309).
//! - **`-r size`**: the manual says "window size of bytes" (KAME's bitmap
//!   size: 8 packets a byte), but ipsec-tools on Linux hands the number to
//!   the kernel as `sadb_sa_replay`, which Linux's af_key reads as packets.
//!   flowsec follows Linux: `-r` is in **packets**, 0 (or no `-r`) turns
//!   replay checking off as the manual says, and anything else must be
//!   32..=4096 (RFC 4303 §3.4.3's minimum of 32; flowsec's maximum).
//! - **`-m any`** (the default) is transport mode.
//! - **`-lh`/`-ls`** are hard/soft lifetimes in seconds since the SA was
//!   added, **`-bh`/`-bs`** in bytes (PF_KEY `addtime` and `bytes`); 0 is
//!   no limit. A soft limit above the hard one is refused.
//! - **`-f`** padding/sequence flags are accepted and ignored: flowsec pads
//!   as RFC 4303 §2.4 says and never cycles sequence numbers; Linux
//!   ignores them too.
//! - **`-cpu N`** (flowsec's own, not in ipsec-tools; Linux has it as
//!   `ip xfrm state ... pcpu-num N`): the SA is worker N's per-resource SA
//!   (RFC 9611): in `flowsec up --parallel flow`, worker N (modulo the
//!   number of workers) seals with it, and no other worker does. Several
//!   outbound SAs between the same endpoints with different `-cpu` make a
//!   policy's set; an SA without `-cpu` is the set's fallback, sealed by
//!   the worker that owns the endpoint pair. For ESP and AH; `-D` shows it
//!   as `cpu=N`. Inbound it changes nothing: the kernel steers an SA's
//!   packets to worker `SPI mod workers`, so give a set's SAs consecutive
//!   SPIs.
//! - **Options** may come in any order (setkey wants extensions before
//!   algorithms); each at most once.
//! - **`hmac-sha256/384/512`** are RFC 4868 (128/192/256-bit ICVs). Linux
//!   PF_KEY keys `hmac-sha256` with the pre-RFC 96-bit truncation, so an
//!   SA keyed that way on a Linux peer will not verify against flowsec.
//! - **Selectors** (`src_range`, `upperspec`): a `[port]` other than
//!   `[any]` is only allowed with `tcp`, `udp` or `sctp` (setkey accepts
//!   it with `any`, where it means nothing). `icmp`/`icmp6 TYPE,CODE` go in
//!   the port fields (RFC 4301 §4.4.1.1), 0 being a wildcard as the manual
//!   says. Upperspec 255 is `any`.
//! - **Policies**: `none` is BYPASS, `discard` DISCARD, `ipsec` PROTECT with
//!   the rules innermost first, as setkey orders them. Level `default` or
//!   none is `require` (Linux's af_key makes every level but `use`
//!   mandatory); `unique:N` (1..=32767) sets the template's reqid. Tunnel
//!   rules need `A-B` of one family; transport rules must leave it empty.
//!   `[port]`s on tunnel endpoints (NAT-T, as the manual's example) are
//!   accepted and ignored, like Linux's xfrm templates. `prio` follows
//!   libipsec (`prio N`, `prio -N`, `prio def|high|low [+|-] N`) mapped to
//!   flowsec's "lower first" priority with `def` at 0.
//! - **Within one file**, an SA added twice and a policy that the SPD
//!   would refuse (same selector and direction, or overlapping at the same
//!   priority) are errors at parse time (see `check`).
//!
//! Linux setkey in its default RFC mode also installs a `fwd` policy for
//! every `in` policy; this crate returns exactly what the file says.
#![forbid(unsafe_code)]
#![cfg_attr(not(test), warn(missing_docs))]

mod addr;
pub mod algorithms;
mod check;
mod dump;
mod error;
mod keys;
mod lexer;
mod model;
mod parser;
mod policy;

pub use dump::{format_policy, format_rule, format_sa, SaLive};
pub use error::{AlgOption, ErrorKind, ParseError, Pos};
pub use model::{Command, Statement};

use flowsec_crypto::Provider;

/// Parse a whole setkey file (or what `-c` read from standard input).
/// `source_name` is only used in errors. Either every command, in order,
/// or the first error.
pub fn parse(source_name: &str, text: &str) -> Result<Vec<Command>, ParseError> {
    Ok(parse_statements(source_name, text)?
        .into_iter()
        .map(|s| s.command)
        .collect())
}

/// Like [`parse`], keeping each command's position so that errors found
/// while applying it can name its line.
pub fn parse_statements(source_name: &str, text: &str) -> Result<Vec<Statement>, ParseError> {
    let tokens = lexer::tokenize(source_name, text)?;
    let mut parser = parser::Parser {
        file: source_name,
        tokens,
        at: 0,
        eof: lexer::end_pos(text),
        provider: Provider::rustcrypto(),
    };
    let statements = parser.statements()?;
    check::check(source_name, &statements)?;
    Ok(statements)
}
