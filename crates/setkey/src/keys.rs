//! Algorithm options and their keys: `-E ealgo key`, `-A aalgo key`,
//! `-C calgo [-R]` (setkey(8) "algorithm"). A key is a `"quoted string"`
//! or `0x` hex; it is checked by building the transform with the
//! parser's provider, so the data path's own rules decide.

use flowsec_crypto::esp::is_aead;
use flowsec_crypto::{CryptoError, EncrId, IntegId};
use flowsec_wire::iana::IpcompId;
use zeroize::Zeroizing;

use crate::algorithms::{self, Alg, Lookup};
use crate::error::{AlgOption, ErrorKind, ParseError, Pos};
use crate::lexer::{Token, TokenKind};
use crate::parser::Parser;

impl<'a> Parser<'a> {
    fn alg_name<Id: Copy>(
        &mut self,
        option: AlgOption,
        lookup: fn(&str) -> Result<Alg<Id>, Lookup>,
    ) -> Result<(Alg<Id>, Token<'a>), ParseError> {
        let t = self.word("an algorithm")?;
        let name = t.text.to_string();
        match lookup(t.text) {
            Ok(a) => Ok((a, t)),
            Err(Lookup::Unknown) => {
                Err(self.err(t.pos, ErrorKind::UnknownAlgorithm { option, name }))
            }
            Err(Lookup::Unsupported(why)) => {
                Err(self.err(t.pos, ErrorKind::UnsupportedAlgorithm { option, name, why }))
            }
        }
    }

    pub(crate) fn encr_alg(&mut self) -> Result<(EncrId, Zeroizing<Vec<u8>>), ParseError> {
        let (alg, name_token) = self.alg_name(AlgOption::Encr, algorithms::encr)?;
        let (key, key_pos) = self.key(alg.takes_key, alg.name, &name_token)?;
        let check = if is_aead(alg.id) {
            // AES-GMAC is AES-GCM-16 that encrypts nothing (RFC 4543).
            let id = if alg.id == EncrId::NULL_AUTH_AES_GMAC {
                EncrId::AES_GCM_16
            } else {
                alg.id
            };
            self.provider.aead(id, &key).map(drop)
        } else {
            self.provider.cipher(alg.id, &key).map(drop)
        };
        check.map_err(|error| self.bad_key(key_pos, alg.name, error))?;
        Ok((alg.id, key))
    }

    pub(crate) fn auth_alg(&mut self) -> Result<(IntegId, Zeroizing<Vec<u8>>), ParseError> {
        let (alg, name_token) = self.alg_name(AlgOption::Auth, algorithms::auth)?;
        let (key, key_pos) = self.key(alg.takes_key, alg.name, &name_token)?;
        if alg.id != IntegId::NONE {
            self.provider
                .integrity(alg.id, &key)
                .map_err(|error| self.bad_key(key_pos, alg.name, error))?;
        }
        Ok((alg.id, key))
    }

    /// The error for a key `algorithm`'s transform refused, at `pos`.
    fn bad_key(&self, pos: Pos, algorithm: &'static str, error: CryptoError) -> ParseError {
        self.err(pos, ErrorKind::BadKey { algorithm, error })
    }

    /// `-C deflate [-R]`. `-R` (use the SPI as the CPI on the wire) is
    /// what flowsec always does, as Linux does: accepted, no effect.
    pub(crate) fn comp_alg(&mut self) -> Result<IpcompId, ParseError> {
        let (alg, _) = self.alg_name(AlgOption::Comp, algorithms::comp)?;
        if self.peek_word().is_some_and(|t| t.text == "-R") {
            self.at += 1;
        }
        Ok(alg.id)
    }

    /// A key, or none for algorithms that take none. Returns where it is.
    fn key(
        &mut self,
        takes_key: bool,
        algorithm: &'static str,
        name: &Token<'_>,
    ) -> Result<(Zeroizing<Vec<u8>>, Pos), ParseError> {
        let next = self.peek().cloned();
        if !takes_key {
            return match next {
                Some(t) if is_key_like(&t) => {
                    Err(self.err(t.pos, ErrorKind::KeyNotAllowed { algorithm }))
                }
                _ => Ok((Zeroizing::new(Vec::new()), name.end)),
            };
        }
        let t = match next {
            None => return Err(self.err(self.eof, ErrorKind::UnexpectedEnd { expected: "a key" })),
            Some(t) => t,
        };
        self.at += 1;
        match t.kind {
            TokenKind::Quoted => Ok((Zeroizing::new(t.text.as_bytes().to_vec()), t.pos)),
            TokenKind::Semi => Err(self.unexpected(&t, "a key")),
            TokenKind::Word => match t.text.strip_prefix("0x").or(t.text.strip_prefix("0X")) {
                Some(hex) => decode_hex(hex)
                    .map(|k| (k, t.pos))
                    .map_err(|(offset, why)| {
                        self.err(t.pos_at(offset + 2), ErrorKind::BadHex { why })
                    }),
                None => Err(self.err(t.pos, ErrorKind::BadKeySyntax)),
            },
        }
    }
}

fn is_key_like(t: &Token<'_>) -> bool {
    t.kind == TokenKind::Quoted || (t.kind == TokenKind::Word && t.text.starts_with("0x"))
}

/// Hex digits to bytes. An odd number of digits is refused: ipsec-tools
/// pads a leading zero nibble, but an odd length is far more often a
/// digit dropped while copying a key than a key meant that way.
fn decode_hex(hex: &str) -> Result<Zeroizing<Vec<u8>>, (usize, &'static str)> {
    if hex.is_empty() {
        return Err((0, "no hex digits after 0x"));
    }
    let mut out = Zeroizing::new(Vec::with_capacity(hex.len() / 2));
    let mut high = None;
    for (i, c) in hex.chars().enumerate() {
        let nibble = c.to_digit(16).ok_or((i, "not a hex digit"))? as u8;
        match high.take() {
            None => high = Some(nibble),
            Some(h) => out.push((h << 4) | nibble),
        }
    }
    if high.is_some() {
        return Err((0, "odd number of hex digits"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_keys() {
        assert_eq!(&decode_hex("00ff10").unwrap()[..], &[0, 255, 16]);
        assert_eq!(decode_hex("abc").unwrap_err().1, "odd number of hex digits");
        assert_eq!(decode_hex("abxd").unwrap_err(), (2, "not a hex digit"));
        assert!(decode_hex("").is_err());
    }
}
