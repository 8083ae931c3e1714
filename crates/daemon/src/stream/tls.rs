//! The TLS layer of RFC 9329's streams (Appendix A): TLS 1.3 through
//! rustls, there to pass middleboxes that let only TLS through. IKE
//! authenticates the peers, not TLS: each daemon serves a self-signed
//! certificate made at start, and a client takes any server's certificate
//! (checking only that the handshake is signed by it); the server asks for
//! no client certificate (Appendix B.1: "SHOULD NOT").

use core::fmt;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, ServerConfig, SignatureScheme};

/// Both ends' TLS settings.
#[derive(Clone)]
pub struct TlsConfigs {
    pub client: Arc<ClientConfig>,
    pub server: Arc<ServerConfig>,
}

/// Why the TLS settings could not be made.
#[derive(Debug)]
#[non_exhaustive]
pub enum TlsError {
    /// The self-signed certificate could not be made.
    Certificate(rcgen::Error),
    /// rustls refused the settings.
    Config(rustls::Error),
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsError::Certificate(e) => write!(f, "a self-signed certificate: {e}"),
            TlsError::Config(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for TlsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TlsError::Certificate(e) => Some(e),
            TlsError::Config(e) => Some(e),
        }
    }
}

/// TLS 1.3 with aws-lc-rs; a fresh self-signed ECDSA P-256 certificate.
pub fn configs() -> Result<TlsConfigs, TlsError> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let made = rcgen::generate_simple_self_signed(vec!["flowsec".to_string()])
        .map_err(TlsError::Certificate)?;
    let cert: CertificateDer<'static> = made.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.key_pair.serialize_der()));
    let server = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(TlsError::Config)?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .map_err(TlsError::Config)?;
    let client = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(TlsError::Config)?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyServer(provider)))
        .with_no_client_auth();
    Ok(TlsConfigs {
        client: Arc::new(client),
        server: Arc::new(server),
    })
}

/// Takes any certificate: the peer is authenticated by IKE_AUTH inside
/// the stream (RFC 9329 Appendix A: TLS adds no security of its own).
#[derive(Debug)]
struct AnyServer(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyServer {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A client and a server handshake in memory and carry bytes both
    /// ways.
    #[test]
    fn a_handshake_in_memory() {
        let c = configs().unwrap();
        let name = ServerName::IpAddress(std::net::Ipv4Addr::new(192, 0, 2, 1).into());
        let mut client = rustls::ClientConnection::new(Arc::clone(&c.client), name).unwrap();
        let mut server = rustls::ServerConnection::new(Arc::clone(&c.server)).unwrap();
        client.writer().write_all(b"IKETCP").unwrap();
        for _ in 0..10 {
            let mut wire = Vec::new();
            while client.wants_write() {
                client.write_tls(&mut wire).unwrap();
            }
            server.read_tls(&mut wire.as_slice()).unwrap();
            server.process_new_packets().unwrap();
            let mut back = Vec::new();
            while server.wants_write() {
                server.write_tls(&mut back).unwrap();
            }
            client.read_tls(&mut back.as_slice()).unwrap();
            client.process_new_packets().unwrap();
        }
        let mut got = [0u8; 6];
        server.reader().read_exact(&mut got).unwrap();
        assert_eq!(&got, b"IKETCP");
        assert_eq!(
            client.protocol_version(),
            Some(rustls::ProtocolVersion::TLSv1_3)
        );
    }
}
