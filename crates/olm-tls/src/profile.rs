//! Upstream's profiles and its four flags, resolved to what a rustls server offers.
//!
//! The built-in profiles are upstream's: `modern` and `intermediate` from Mozilla's server-side
//! TLS guidelines 6.0, `old` from version 5.8 (upstream keeps it after Mozilla dropped it). The
//! custom profile is `--tls-custom-version` with `--tls-custom-ciphers` and `--tls-custom-curves`;
//! an empty list keeps the default, as an empty list leaves Go's `crypto/tls` with its own.
//!
//! How a list applies follows Go's `crypto/tls`, which upstream configures:
//!
//! * the cipher list restricts TLS 1.2 only: TLS 1.3 always offers its three suites (Go has no
//!   way to restrict them), so a TLS 1.3 name in the list changes nothing;
//! * the curve list restricts both versions, in its order; the post-quantum hybrids are TLS 1.3
//!   key exchanges, so a TLS 1.2 client needs a plain curve from the list;
//! * `prime256v1` and `secp256r1` are one curve.
//!
//! Where olm's TLS library cannot do what upstream's can, resolving fails, naming the flag and
//! the value ([`Unsupported`]); nothing is silently left out of what a flag asks for. The
//! defaults that Go fills an empty list with are the one place something is left out: the
//! custom profile's default TLS 1.2 suites are the six of `intermediate` (Go's default adds four
//! CBC suites rustls does not implement), and its default curves are Go 1.26's less `secp521r1`.

use std::sync::Arc;

use rustls::crypto::{CryptoProvider, SupportedKxGroup};
use rustls::version::{TLS12, TLS13};
use rustls::{ServerConfig, SupportedCipherSuite, SupportedProtocolVersion};

use crate::hybrid;
use crate::names::{Cipher, Curve, ProfileName, Version};

/// What upstream's four TLS flags say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flags {
    /// `--tls-profile` (default `intermediate`).
    pub profile: ProfileName,
    /// `--tls-custom-version` (default `TLSv1.2`); read with the custom profile only.
    pub custom_version: Version,
    /// `--tls-custom-ciphers` (default none: the defaults); read with the custom profile only.
    pub custom_ciphers: Vec<Cipher>,
    /// `--tls-custom-curves` (default none: the defaults); read with the custom profile only.
    pub custom_curves: Vec<Curve>,
}

impl Default for Flags {
    fn default() -> Flags {
        Flags {
            profile: ProfileName::Intermediate,
            custom_version: Version::Tls12,
            custom_ciphers: Vec::new(),
            custom_curves: Vec::new(),
        }
    }
}

/// A value upstream accepts that olm cannot serve: `olm run` refuses to start with it rather than
/// serve something other than what was asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unsupported {
    /// A built-in profile (only `old` is one): it allows TLS 1.0 and legacy suites.
    #[error(
        "--tls-profile={0}: olm cannot serve this profile: it allows TLS 1.0 and 1.1 and cipher suites with CBC, RSA key exchange or 3DES, which rustls, olm's TLS library, does not implement (intermediate allows TLS 1.2 and up)"
    )]
    Profile(ProfileName),
    /// A minimum version below TLS 1.2.
    #[error(
        "--tls-custom-version={0}: olm cannot serve it: rustls, olm's TLS library, implements TLS 1.2 and 1.3 only"
    )]
    Version(Version),
    /// A TLS 1.2 suite other than ECDHE with AES-GCM or ChaCha20-Poly1305.
    #[error(
        "--tls-custom-ciphers: olm cannot serve {0}: over TLS 1.2, rustls, olm's TLS library, implements only ECDHE key exchange with AES-GCM or ChaCha20-Poly1305"
    )]
    Cipher(Cipher),
    /// `secp521r1`.
    #[error(
        "--tls-custom-curves: olm cannot serve {0}: ring, olm's cryptography library, has no P-521 key exchange"
    )]
    Curve(Curve),
}

/// A profile as upstream holds it: the lowest version, the suites and the curves, in order.
struct Spec {
    min: Version,
    ciphers: Vec<Cipher>,
    curves: Vec<Curve>,
}

/// The curves of every built-in profile.
const PROFILE_CURVES: [Curve; 4] = [
    Curve::X25519MlKem768,
    Curve::X25519,
    Curve::P256,
    Curve::P384,
];

/// The TLS 1.3 suites, in Go's order of preference.
const TLS13_CIPHERS: [Cipher; 3] = [
    Cipher::TLS13_AES_128_GCM_SHA256,
    Cipher::TLS13_AES_256_GCM_SHA384,
    Cipher::TLS13_CHACHA20_POLY1305_SHA256,
];

/// The TLS 1.2 suites of `intermediate`, in Mozilla's order.
const INTERMEDIATE_TLS12_CIPHERS: [Cipher; 6] = [
    Cipher::ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    Cipher::ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    Cipher::ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    Cipher::ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    Cipher::ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    Cipher::ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
];

/// Go 1.26's default curves, which an empty `--tls-custom-curves` leaves, less `secp521r1`.
const DEFAULT_CURVES: [Curve; 6] = [
    Curve::X25519MlKem768,
    Curve::SecP256r1MlKem768,
    Curve::SecP384r1MlKem1024,
    Curve::X25519,
    Curve::P256,
    Curve::P384,
];

/// The IANA numbers of `old`'s 21 suites, in the order of Mozilla's guidelines 5.8.
const OLD_CIPHERS: [u16; 21] = [
    0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc023, 0xc027, 0xc009,
    0xc013, 0xc00a, 0xc014, 0x009c, 0x009d, 0x003c, 0x002f, 0x0035, 0x000a,
];

impl Spec {
    fn builtin(profile: ProfileName) -> Option<Spec> {
        let curves = PROFILE_CURVES.to_vec();
        match profile {
            ProfileName::Modern => Some(Spec {
                min: Version::Tls13,
                ciphers: TLS13_CIPHERS.to_vec(),
                curves,
            }),
            ProfileName::Intermediate => Some(Spec {
                min: Version::Tls12,
                ciphers: [&TLS13_CIPHERS[..], &INTERMEDIATE_TLS12_CIPHERS[..]].concat(),
                curves,
            }),
            ProfileName::Old => Some(Spec {
                min: Version::Tls10,
                ciphers: Cipher::all()
                    .filter(|c| OLD_CIPHERS.contains(&c.id()))
                    .collect(),
                curves,
            }),
            ProfileName::Custom => None,
        }
    }

    /// What a rustls server offers for this spec, or the first value it cannot serve.
    fn resolve(&self) -> Result<TlsProfile, Unsupported> {
        if self.min < Version::Tls12 {
            return Err(Unsupported::Version(self.min));
        }
        let mut tls12_ciphers = Vec::new();
        for &c in &self.ciphers {
            if c.is_tls13() {
                continue;
            }
            if tls12_suite(c).is_none() {
                return Err(Unsupported::Cipher(c));
            }
            if !tls12_ciphers.contains(&c) {
                tls12_ciphers.push(c);
            }
        }
        if self.ciphers.is_empty() {
            tls12_ciphers = INTERMEDIATE_TLS12_CIPHERS.to_vec();
        }
        if self.min == Version::Tls13 {
            tls12_ciphers.clear();
        }
        let mut curves = Vec::new();
        for &c in &self.curves {
            if kx_group(c).is_none() {
                return Err(Unsupported::Curve(c));
            }
            if !curves.contains(&c) {
                curves.push(c);
            }
        }
        if curves.is_empty() {
            curves = DEFAULT_CURVES.to_vec();
        }
        Ok(TlsProfile {
            min_version: self.min,
            tls12_ciphers,
            curves,
        })
    }
}

impl Flags {
    /// What a rustls server offers for these flags. The `--tls-custom-*` flags are read only with
    /// `--tls-profile=custom`, as upstream reads them.
    ///
    /// Errors: a value olm cannot serve ([`Unsupported`]): the `old` profile, a custom version
    /// below TLS 1.2, a TLS 1.2 suite rustls does not implement, `secp521r1`.
    pub fn resolve(&self) -> Result<TlsProfile, Unsupported> {
        match Spec::builtin(self.profile) {
            Some(spec) => spec
                .resolve()
                .map_err(|_| Unsupported::Profile(self.profile)),
            None => Spec {
                min: self.custom_version,
                ciphers: self.custom_ciphers.clone(),
                curves: self.custom_curves.clone(),
            }
            .resolve(),
        }
    }
}

/// What every TLS server of olm offers: the lowest TLS version, the TLS 1.2 suites (TLS 1.3's
/// three are always offered) and the key exchange groups, in order. Made by [`Flags::resolve`];
/// the default is upstream's default, the `intermediate` profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsProfile {
    min_version: Version,
    tls12_ciphers: Vec<Cipher>,
    curves: Vec<Curve>,
}

impl Default for TlsProfile {
    fn default() -> TlsProfile {
        TlsProfile {
            min_version: Version::Tls12,
            tls12_ciphers: INTERMEDIATE_TLS12_CIPHERS.to_vec(),
            curves: PROFILE_CURVES.to_vec(),
        }
    }
}

impl TlsProfile {
    /// The lowest version served: TLS 1.2 or 1.3.
    pub fn min_version(&self) -> Version {
        self.min_version
    }

    /// The TLS 1.2 suites served, in order of preference; none when the lowest version is 1.3.
    pub fn tls12_ciphers(&self) -> &[Cipher] {
        &self.tls12_ciphers
    }

    /// The key exchange groups, in order of preference.
    pub fn curves(&self) -> &[Curve] {
        &self.curves
    }

    /// The protocol versions served, newest first.
    pub fn protocol_versions(&self) -> &'static [&'static SupportedProtocolVersion] {
        static TLS13_ONLY: [&SupportedProtocolVersion; 1] = [&TLS13];
        static TLS12_AND_13: [&SupportedProtocolVersion; 2] = [&TLS13, &TLS12];
        match self.min_version {
            Version::Tls13 => &TLS13_ONLY,
            _ => &TLS12_AND_13,
        }
    }

    /// ring's provider with this profile's suites and groups.
    pub fn crypto_provider(&self) -> CryptoProvider {
        let tls13 = TLS13_CIPHERS.iter().filter_map(|&c| tls13_suite(c));
        let tls12 = self.tls12_ciphers.iter().filter_map(|&c| tls12_suite(c));
        CryptoProvider {
            cipher_suites: tls13.chain(tls12).collect(),
            kx_groups: self.curves.iter().filter_map(|&c| kx_group(c)).collect(),
            ..rustls::crypto::ring::default_provider()
        }
    }

    /// A server config builder with this profile's provider and versions, for the caller to
    /// give its certificate and client verifier.
    ///
    /// Errors: rustls's consistency checks, which every profile [`Flags::resolve`] makes passes
    /// (at least one suite and one group, an ECDHE group for every ECDHE suite).
    pub fn server_config_builder(
        &self,
    ) -> Result<rustls::ConfigBuilder<ServerConfig, rustls::WantsVerifier>, rustls::Error> {
        ServerConfig::builder_with_provider(Arc::new(self.crypto_provider()))
            .with_protocol_versions(self.protocol_versions())
    }
}

fn tls13_suite(c: Cipher) -> Option<SupportedCipherSuite> {
    ring_suite(c).filter(|s| s.version() == &TLS13)
}

fn tls12_suite(c: Cipher) -> Option<SupportedCipherSuite> {
    ring_suite(c).filter(|s| s.version() == &TLS12)
}

fn ring_suite(c: Cipher) -> Option<SupportedCipherSuite> {
    let id = rustls::CipherSuite::from(c.id());
    rustls::crypto::ring::ALL_CIPHER_SUITES
        .iter()
        .copied()
        .find(|s| s.suite() == id)
}

fn kx_group(c: Curve) -> Option<&'static dyn SupportedKxGroup> {
    use rustls::crypto::ring::kx_group;
    match c {
        Curve::X25519MlKem768 => Some(hybrid::X25519_MLKEM768),
        Curve::SecP256r1MlKem768 => Some(hybrid::SECP256R1_MLKEM768),
        Curve::SecP384r1MlKem1024 => Some(hybrid::SECP384R1_MLKEM1024),
        Curve::X25519 => Some(kx_group::X25519),
        Curve::P256 => Some(kx_group::SECP256R1),
        Curve::P384 => Some(kx_group::SECP384R1),
        Curve::P521 => None,
    }
}

#[cfg(test)]
mod tests {
    //! The profiles of upstream's `internal/shared/util/tlsprofiles` (`mozilla_data.json`,
    //! `old_profile.go`; `TestOldProfileMinVersion`, `TestOldProfileCiphers`,
    //! `TestProfilesMapCompleteness`, `TestGetTLSConfigFunc`).

    use super::*;
    use crate::names::{parse_ciphers, parse_curves};

    fn names<T: std::fmt::Display>(items: &[T]) -> Vec<String> {
        items.iter().map(ToString::to_string).collect()
    }

    fn custom(version: &str, ciphers: &str, curves: &str) -> Flags {
        Flags {
            profile: ProfileName::Custom,
            custom_version: Version::parse(version).unwrap(),
            custom_ciphers: parse_ciphers(ciphers).unwrap(),
            custom_curves: parse_curves(curves).unwrap(),
        }
    }

    /// Upstream's profiles by name, as its embedded data lists them.
    #[test]
    fn builtin_profiles_are_upstreams() {
        let modern = Spec::builtin(ProfileName::Modern).unwrap();
        assert_eq!(modern.min, Version::Tls13);
        assert_eq!(
            names(&modern.ciphers),
            [
                "TLS_AES_128_GCM_SHA256",
                "TLS_AES_256_GCM_SHA384",
                "TLS_CHACHA20_POLY1305_SHA256"
            ]
        );
        assert_eq!(
            names(&modern.curves),
            ["X25519MLKEM768", "X25519", "prime256v1", "secp384r1"]
        );
        let intermediate = Spec::builtin(ProfileName::Intermediate).unwrap();
        assert_eq!(intermediate.min, Version::Tls12);
        assert_eq!(
            names(&intermediate.ciphers),
            [
                "TLS_AES_128_GCM_SHA256",
                "TLS_AES_256_GCM_SHA384",
                "TLS_CHACHA20_POLY1305_SHA256",
                "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
                "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
                "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
                "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
            ]
        );
        assert_eq!(intermediate.curves, modern.curves);
        let old = Spec::builtin(ProfileName::Old).unwrap();
        assert_eq!(old.min, Version::Tls10);
        assert_eq!(old.ciphers.len(), 21);
        for name in [
            "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
            "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
            "TLS_AES_128_GCM_SHA256",
        ] {
            assert!(
                old.ciphers.contains(&Cipher::parse(name).unwrap()),
                "{name}"
            );
        }
        assert_eq!(old.curves, modern.curves);
        assert!(Spec::builtin(ProfileName::Custom).is_none());
    }

    /// The default flags resolve to the default profile, and modern and intermediate lose
    /// nothing on the way to rustls.
    #[test]
    fn modern_and_intermediate_are_served_whole() {
        assert_eq!(Flags::default().resolve(), Ok(TlsProfile::default()));
        for profile in [ProfileName::Modern, ProfileName::Intermediate] {
            let spec = Spec::builtin(profile).unwrap();
            let resolved = Flags {
                profile,
                ..Flags::default()
            }
            .resolve()
            .unwrap();
            assert_eq!(resolved.curves(), spec.curves.as_slice());
            let tls12: Vec<_> = spec.ciphers.into_iter().filter(|c| !c.is_tls13()).collect();
            assert_eq!(resolved.tls12_ciphers(), tls12.as_slice());
            assert_eq!(resolved.min_version(), spec.min);
            let provider = resolved.crypto_provider();
            assert_eq!(provider.kx_groups.len(), 4);
            assert_eq!(provider.cipher_suites.len(), 3 + tls12.len());
            assert!(resolved.server_config_builder().is_ok());
        }
    }

    #[test]
    fn custom_flags_are_read_only_with_the_custom_profile() {
        let flags = Flags {
            profile: ProfileName::Modern,
            ..custom("TLSv1.0", "TLS_RSA_WITH_RC4_128_SHA", "secp521r1")
        };
        assert_eq!(flags.resolve().unwrap().min_version(), Version::Tls13);
    }

    /// The e2e suite's settings (`test/e2e/features/tls.feature`).
    #[test]
    fn e2e_settings() {
        let p = custom("TLSv1.3", "", "").resolve().unwrap();
        assert_eq!(p.protocol_versions(), &[&TLS13]);
        assert!(p.tls12_ciphers().is_empty());

        let p = custom(
            "TLSv1.2",
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            "prime256v1",
        )
        .resolve()
        .unwrap();
        assert_eq!(p.protocol_versions(), &[&TLS13, &TLS12]);
        assert_eq!(
            names(p.tls12_ciphers()),
            ["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"]
        );
        assert_eq!(names(p.curves()), ["prime256v1"]);
        assert_eq!(p.crypto_provider().cipher_suites.len(), 4);

        let alias = custom(
            "TLSv1.2",
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            "secp256r1",
        );
        assert_eq!(alias.resolve(), Ok(p));

        let p = custom(
            "TLSv1.2",
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            "SecP256r1MLKEM768,secp256r1,prime256v1",
        )
        .resolve()
        .unwrap();
        assert_eq!(names(p.curves()), ["SecP256r1MLKEM768", "prime256v1"]);
    }

    /// Empty lists keep the defaults; TLS 1.3 names restrict nothing; a list of TLS 1.3 names
    /// alone leaves TLS 1.2 without a suite, as in Go.
    #[test]
    fn custom_defaults_and_tls13_names() {
        let p = custom("TLSv1.2", "", "").resolve().unwrap();
        assert_eq!(p.tls12_ciphers(), INTERMEDIATE_TLS12_CIPHERS);
        assert_eq!(
            names(p.curves()),
            [
                "X25519MLKEM768",
                "SecP256r1MLKEM768",
                "SecP384r1MLKEM1024",
                "X25519",
                "prime256v1",
                "secp384r1"
            ]
        );
        let p = custom("TLSv1.2", "TLS_AES_256_GCM_SHA384", "X25519")
            .resolve()
            .unwrap();
        assert!(p.tls12_ciphers().is_empty());
        assert_eq!(p.crypto_provider().cipher_suites.len(), 3);
        assert!(p.server_config_builder().is_ok());
    }

    /// What olm cannot serve stops it, naming the flag and the value.
    #[test]
    fn unsupported_values_are_named() {
        let err = |f: Flags| f.resolve().unwrap_err().to_string();
        assert_eq!(
            err(Flags {
                profile: ProfileName::Old,
                ..Flags::default()
            }),
            "--tls-profile=old: olm cannot serve this profile: it allows TLS 1.0 and 1.1 and cipher suites with CBC, RSA key exchange or 3DES, which rustls, olm's TLS library, does not implement (intermediate allows TLS 1.2 and up)"
        );
        for v in ["TLSv1.0", "TLSv1.1"] {
            assert_eq!(
                err(custom(v, "", "")),
                format!(
                    "--tls-custom-version={v}: olm cannot serve it: rustls, olm's TLS library, implements TLS 1.2 and 1.3 only"
                )
            );
        }
        for c in Cipher::all() {
            let supported = ring_suite(c).is_some();
            let resolved = custom("TLSv1.2", c.name(), "").resolve();
            assert_eq!(resolved.is_ok(), supported, "{c}");
            if !supported {
                assert_eq!(
                    resolved.unwrap_err().to_string(),
                    format!(
                        "--tls-custom-ciphers: olm cannot serve {c}: over TLS 1.2, rustls, olm's TLS library, implements only ECDHE key exchange with AES-GCM or ChaCha20-Poly1305"
                    )
                );
            }
        }
        assert_eq!(
            Cipher::all().filter(|&c| ring_suite(c).is_some()).count(),
            9
        );
        assert_eq!(
            err(custom("TLSv1.3", "", "X25519,secp521r1")),
            "--tls-custom-curves: olm cannot serve secp521r1: ring, olm's cryptography library, has no P-521 key exchange"
        );
        for c in Curve::ALL {
            assert_eq!(kx_group(c).is_some(), c != Curve::P521, "{c}");
            if let Some(group) = kx_group(c) {
                assert_eq!(u16::from(group.name()), c.id(), "{c}");
            }
        }
    }
}
