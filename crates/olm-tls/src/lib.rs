//! The TLS parameters every server of `olm run` uses, chosen as upstream's catalogd and
//! operator-controller choose theirs: `--tls-profile` (`intermediate`, `modern`, `old` or
//! `custom`) with `--tls-custom-version`, `--tls-custom-ciphers` and `--tls-custom-curves`.
//!
//! * [`ProfileName`], [`Version`], [`Cipher`], [`Curve`], [`parse_ciphers`], [`parse_curves`]:
//!   the flags' values as upstream spells them, refused with upstream's messages
//!   ([`ParseError`]).
//! * [`Flags::resolve`]: the four flags to a [`TlsProfile`], or [`Unsupported`] naming the flag
//!   and the value olm's TLS library cannot serve (the `old` profile, TLS 1.0 and 1.1, suites
//!   other than ECDHE with AES-GCM or ChaCha20-Poly1305, `secp521r1`).
//! * [`TlsProfile::server_config_builder`]: the one place a rustls server's versions, suites and
//!   key exchange groups are set; callers add the certificate and the client verifier.
//! * [`serving`]: a server's certificate and key, checked to match, reloaded when their files
//!   change, and the rustls server config every listener is given.
//!
//! The post-quantum hybrid key exchanges of upstream's lists (`X25519MLKEM768`,
//! `SecP256r1MLKEM768`, `SecP384r1MLKEM1024`) are built here on ring's curves and the `ml-kem`
//! crate, as rustls's ring provider has none.
//!
//! What it is not for: issuing certificates (`olm-security`, `olm-cluster`), clients' TLS, or
//! command-line parsing (the `olm` binary's).

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod csv;
mod hybrid;
mod names;
mod profile;
pub mod serving;

pub use csv::{CsvError, QuoteFault};
pub use names::{Cipher, Curve, ParseError, ProfileName, Version, parse_ciphers, parse_curves};
pub use profile::{Flags, TlsProfile, Unsupported};

/// The hybrid key exchange groups, for clients in tests that must offer exactly one of them.
pub mod kx_groups {
    pub use crate::hybrid::{SECP256R1_MLKEM768, SECP384R1_MLKEM1024, X25519_MLKEM768};
}
