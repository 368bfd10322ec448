//! The values upstream's four flags take, spelled as upstream spells them, and the errors upstream
//! gives for any other: profile names (any case), `TLSv1.x` versions, Go's cipher suite names
//! (`crypto/tls`'s `CipherSuites()` and `InsecureCipherSuites()`) and its curve names. Being a
//! name upstream knows is all these check; whether olm can serve it is
//! [`crate::Flags::resolve`]'s question.

use std::fmt;
use std::str::FromStr;

use olm_goenc::quote;

use crate::csv::{CsvError, first_record};

/// Why a flag's value is not one upstream accepts, in upstream's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// Not a profile name.
    #[error("unknown TLS profile: {}", quote(.0))]
    Profile(String),
    /// Not a version name.
    #[error("unknown TLS version: {}", quote(.0))]
    Version(String),
    /// Not one of Go's cipher suite names.
    #[error("unknown cipher {}", quote(.0))]
    Cipher(String),
    /// Not one of upstream's curve names.
    #[error("unknown curve {}", quote(.0))]
    Curve(String),
    /// A list that does not read as comma-separated values.
    #[error("{0}")]
    List(#[from] CsvError),
}

/// A `--tls-profile`: Mozilla's server-side TLS compatibility levels, or the `--tls-custom-*`
/// flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProfileName {
    /// TLS 1.3 only.
    Modern,
    /// TLS 1.2 and 1.3 with forward-secret AEAD suites; upstream's default.
    #[default]
    Intermediate,
    /// Down to TLS 1.0, with legacy suites.
    Old,
    /// What `--tls-custom-version`, `--tls-custom-ciphers` and `--tls-custom-curves` say.
    Custom,
}

impl ProfileName {
    /// Every profile, in the order upstream's help lists them (sorted by name).
    pub const ALL: [ProfileName; 4] = [
        ProfileName::Custom,
        ProfileName::Intermediate,
        ProfileName::Modern,
        ProfileName::Old,
    ];

    /// The name, in lower case.
    pub fn name(self) -> &'static str {
        match self {
            ProfileName::Modern => "modern",
            ProfileName::Intermediate => "intermediate",
            ProfileName::Old => "old",
            ProfileName::Custom => "custom",
        }
    }

    /// Reads a name in any case, as upstream looks profiles up.
    pub fn parse(s: &str) -> Result<ProfileName, ParseError> {
        let lower = s.to_lowercase();
        ProfileName::ALL
            .into_iter()
            .find(|p| p.name() == lower)
            .ok_or_else(|| ParseError::Profile(s.to_owned()))
    }
}

impl fmt::Display for ProfileName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ProfileName {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ProfileName::parse(s)
    }
}

/// A `--tls-custom-version`: the lowest TLS version served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Version {
    /// TLS 1.0.
    Tls10,
    /// TLS 1.1.
    Tls11,
    /// TLS 1.2; the default of the custom profile.
    Tls12,
    /// TLS 1.3.
    Tls13,
}

impl Version {
    /// Every version, oldest first (the order upstream's help lists them in).
    pub const ALL: [Version; 4] = [
        Version::Tls10,
        Version::Tls11,
        Version::Tls12,
        Version::Tls13,
    ];

    /// The name, as `TLSv1.2`.
    pub fn name(self) -> &'static str {
        match self {
            Version::Tls10 => "TLSv1.0",
            Version::Tls11 => "TLSv1.1",
            Version::Tls12 => "TLSv1.2",
            Version::Tls13 => "TLSv1.3",
        }
    }

    /// Reads a name exactly as [`Version::name`] spells it.
    pub fn parse(s: &str) -> Result<Version, ParseError> {
        Version::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| ParseError::Version(s.to_owned()))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Version {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Version::parse(s)
    }
}

/// A cipher suite Go's `crypto/tls` knows by name (its IANA name), identified by its IANA
/// number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cipher(u16);

/// Go's names and numbers: `CipherSuites()` (the first 13) then `InsecureCipherSuites()`, as Go
/// 1.26 lists them.
const CIPHERS: [(&str, u16); 25] = [
    ("TLS_AES_128_GCM_SHA256", 0x1301),
    ("TLS_AES_256_GCM_SHA384", 0x1302),
    ("TLS_CHACHA20_POLY1305_SHA256", 0x1303),
    ("TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", 0xc009),
    ("TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", 0xc00a),
    ("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", 0xc013),
    ("TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", 0xc014),
    ("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", 0xc02b),
    ("TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", 0xc02c),
    ("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", 0xc02f),
    ("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", 0xc030),
    ("TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", 0xcca8),
    ("TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", 0xcca9),
    ("TLS_RSA_WITH_RC4_128_SHA", 0x0005),
    ("TLS_RSA_WITH_3DES_EDE_CBC_SHA", 0x000a),
    ("TLS_RSA_WITH_AES_128_CBC_SHA", 0x002f),
    ("TLS_RSA_WITH_AES_256_CBC_SHA", 0x0035),
    ("TLS_RSA_WITH_AES_128_CBC_SHA256", 0x003c),
    ("TLS_RSA_WITH_AES_128_GCM_SHA256", 0x009c),
    ("TLS_RSA_WITH_AES_256_GCM_SHA384", 0x009d),
    ("TLS_ECDHE_ECDSA_WITH_RC4_128_SHA", 0xc007),
    ("TLS_ECDHE_RSA_WITH_RC4_128_SHA", 0xc011),
    ("TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA", 0xc012),
    ("TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256", 0xc023),
    ("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256", 0xc027),
];

impl Cipher {
    /// `TLS_AES_128_GCM_SHA256`.
    pub const TLS13_AES_128_GCM_SHA256: Cipher = Cipher(0x1301);
    /// `TLS_AES_256_GCM_SHA384`.
    pub const TLS13_AES_256_GCM_SHA384: Cipher = Cipher(0x1302);
    /// `TLS_CHACHA20_POLY1305_SHA256`.
    pub const TLS13_CHACHA20_POLY1305_SHA256: Cipher = Cipher(0x1303);
    /// `TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256`.
    pub const ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: Cipher = Cipher(0xc02b);
    /// `TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384`.
    pub const ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: Cipher = Cipher(0xc02c);
    /// `TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`.
    pub const ECDHE_RSA_WITH_AES_128_GCM_SHA256: Cipher = Cipher(0xc02f);
    /// `TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384`.
    pub const ECDHE_RSA_WITH_AES_256_GCM_SHA384: Cipher = Cipher(0xc030);
    /// `TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256`.
    pub const ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: Cipher = Cipher(0xcca8);
    /// `TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256`.
    pub const ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: Cipher = Cipher(0xcca9);

    /// Every suite Go knows by name, in Go's order.
    pub fn all() -> impl Iterator<Item = Cipher> {
        CIPHERS.iter().map(|&(_, id)| Cipher(id))
    }

    /// The suite of a Go name.
    pub fn parse(s: &str) -> Result<Cipher, ParseError> {
        CIPHERS
            .iter()
            .find(|(name, _)| *name == s)
            .map(|&(_, id)| Cipher(id))
            .ok_or_else(|| ParseError::Cipher(s.to_owned()))
    }

    /// Go's name.
    pub fn name(self) -> &'static str {
        CIPHERS
            .iter()
            .find(|&&(_, id)| id == self.0)
            .map_or("", |&(name, _)| name)
    }

    /// The IANA number.
    pub fn id(self) -> u16 {
        self.0
    }

    /// Whether it is a TLS 1.3 suite, which upstream's list does not restrict (Go's
    /// `Config.CipherSuites` applies to TLS 1.2 and older only).
    pub fn is_tls13(self) -> bool {
        (0x1301..=0x1303).contains(&self.0)
    }
}

impl fmt::Display for Cipher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A key exchange group upstream knows by name (`--tls-custom-curves`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Curve {
    /// `X25519MLKEM768`: ML-KEM-768 with X25519.
    X25519MlKem768,
    /// `SecP256r1MLKEM768`: P-256 with ML-KEM-768.
    SecP256r1MlKem768,
    /// `SecP384r1MLKEM1024`: P-384 with ML-KEM-1024.
    SecP384r1MlKem1024,
    /// `X25519`.
    X25519,
    /// `prime256v1`, also named `secp256r1` (its IANA name): P-256.
    P256,
    /// `secp384r1`: P-384.
    P384,
    /// `secp521r1`: P-521.
    P521,
}

impl Curve {
    /// Every curve, the post-quantum hybrids first, as Go prefers them.
    pub const ALL: [Curve; 7] = [
        Curve::X25519MlKem768,
        Curve::SecP256r1MlKem768,
        Curve::SecP384r1MlKem1024,
        Curve::X25519,
        Curve::P256,
        Curve::P384,
        Curve::P521,
    ];

    /// Every name upstream accepts, sorted (as upstream's help lists them).
    pub const NAMES: [&'static str; 8] = [
        "SecP256r1MLKEM768",
        "SecP384r1MLKEM1024",
        "X25519",
        "X25519MLKEM768",
        "prime256v1",
        "secp256r1",
        "secp384r1",
        "secp521r1",
    ];

    /// The name (P-256's is `prime256v1`, the name Mozilla's profiles use).
    pub fn name(self) -> &'static str {
        match self {
            Curve::X25519MlKem768 => "X25519MLKEM768",
            Curve::SecP256r1MlKem768 => "SecP256r1MLKEM768",
            Curve::SecP384r1MlKem1024 => "SecP384r1MLKEM1024",
            Curve::X25519 => "X25519",
            Curve::P256 => "prime256v1",
            Curve::P384 => "secp384r1",
            Curve::P521 => "secp521r1",
        }
    }

    /// Reads a name, exactly as upstream spells it.
    pub fn parse(s: &str) -> Result<Curve, ParseError> {
        match s {
            "secp256r1" => Ok(Curve::P256),
            _ => Curve::ALL
                .into_iter()
                .find(|c| c.name() == s)
                .ok_or_else(|| ParseError::Curve(s.to_owned())),
        }
    }

    /// The TLS `NamedGroup` number.
    pub fn id(self) -> u16 {
        match self {
            Curve::X25519MlKem768 => 0x11ec,
            Curve::SecP256r1MlKem768 => 0x11eb,
            Curve::SecP384r1MlKem1024 => 0x11ed,
            Curve::X25519 => 0x001d,
            Curve::P256 => 0x0017,
            Curve::P384 => 0x0018,
            Curve::P521 => 0x0019,
        }
    }
}

impl fmt::Display for Curve {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Reads a `--tls-custom-ciphers` value: comma-separated Go names (the empty value is none).
pub fn parse_ciphers(s: &str) -> Result<Vec<Cipher>, ParseError> {
    list(s)?.iter().map(|c| Cipher::parse(c)).collect()
}

/// Reads a `--tls-custom-curves` value: comma-separated curve names (the empty value is none).
pub fn parse_curves(s: &str) -> Result<Vec<Curve>, ParseError> {
    list(s)?.iter().map(|c| Curve::parse(c)).collect()
}

fn list(s: &str) -> Result<Vec<String>, ParseError> {
    if s.is_empty() {
        return Ok(Vec::new());
    }
    Ok(first_record(s)?)
}

#[cfg(test)]
mod tests {
    //! The vectors of upstream's `internal/shared/util/tlsprofiles/tlsprofiles_test.go`
    //! (`TestSetProfileName`, `TestSetCustomCipher`, `TestSetCustomCurves`,
    //! `TestSecp256r1AliasesPrime256v1`, `TestSetCustomVersion`, `TestCipherStuiteId`), and the
    //! messages of its `flags.go` and `tlsprofiles.go`.

    use super::*;

    #[test]
    fn profile_names() {
        for (name, ok) in [
            ("modern", true),
            ("intermediate", true),
            ("old", true),
            ("custom", true),
            ("does-not-exist", false),
        ] {
            assert_eq!(ProfileName::parse(name).is_ok(), ok, "{name}");
        }
        assert_eq!(ProfileName::parse("Modern"), Ok(ProfileName::Modern));
        assert_eq!(
            ProfileName::parse("INTERMEDIATE"),
            Ok(ProfileName::Intermediate)
        );
        assert_eq!(ProfileName::default(), ProfileName::Intermediate);
        assert_eq!(
            ProfileName::parse("does-not-exist").map_err(|e| e.to_string()),
            Err("unknown TLS profile: \"does-not-exist\"".to_owned())
        );
    }

    #[test]
    fn custom_ciphers() {
        for (value, ok) in [
            ("TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", true),
            ("unknown-cipher", false),
            ("TLS_RSA_WITH_3DES_EDE_CBC_SHA", true),
            ("DHE-RSA-AES128-SHA256", false),
            (
                "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,TLS_RSA_WITH_3DES_EDE_CBC_SHA",
                true,
            ),
        ] {
            let parsed = parse_ciphers(value);
            assert_eq!(parsed.is_ok(), ok, "{value}");
            if let Ok(parsed) = parsed {
                let names: Vec<_> = parsed.iter().map(|c| c.name()).collect();
                assert_eq!(names.join(","), value);
            }
        }
        assert_eq!(
            Cipher::parse("TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA").map(Cipher::id),
            Ok(0xC009)
        );
        assert_eq!(
            Cipher::parse("TLS_RSA_WITH_3DES_EDE_CBC_SHA").map(Cipher::id),
            Ok(0x000A)
        );
        assert_eq!(
            parse_ciphers("TLS_AES_128_GCM_SHA256,unknown-cipher").map_err(|e| e.to_string()),
            Err("unknown cipher \"unknown-cipher\"".to_owned())
        );
        assert_eq!(parse_ciphers(""), Ok(vec![]));
        assert_eq!(
            parse_ciphers("a\"b").map_err(|e| e.to_string()),
            Err("parse error on line 1, column 2: bare \" in non-quoted-field".to_owned())
        );
        // A name is taken as written: no trimming, as encoding/csv does none.
        assert!(parse_ciphers("TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384").is_err());
    }

    #[test]
    fn custom_curves() {
        for (value, ok) in [
            ("X25519MLKEM768", true),
            ("SecP256r1MLKEM768", true),
            ("SecP384r1MLKEM1024", true),
            ("X25519", true),
            ("prime256v1", true),
            ("secp256r1", true),
            ("secp384r1", true),
            ("secp521r1", true),
            ("unknown-curve", false),
            ("X448", false),
            ("X25519,prime256v1", true),
        ] {
            assert_eq!(parse_curves(value).is_ok(), ok, "{value}");
        }
        assert_eq!(Curve::parse("secp256r1"), Curve::parse("prime256v1"));
        assert_eq!(Curve::parse("secp256r1").map(Curve::id), Ok(0x0017));
        assert_eq!(
            parse_curves("X448").map_err(|e| e.to_string()),
            Err("unknown curve \"X448\"".to_owned())
        );
        let mut names: Vec<_> = Curve::ALL.iter().map(|c| c.name()).collect();
        names.push("secp256r1");
        names.sort_unstable();
        assert_eq!(names, Curve::NAMES);
        for name in Curve::NAMES {
            assert!(Curve::parse(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn custom_versions() {
        for (value, ok) in [
            ("TLSv1.0", true),
            ("TLSv1.1", true),
            ("TLSv1.2", true),
            ("TLSv1.3", true),
            ("unknown-version", false),
        ] {
            let parsed = Version::parse(value);
            assert_eq!(parsed.is_ok(), ok, "{value}");
            if let Ok(v) = parsed {
                assert_eq!(v.name(), value);
            }
        }
        assert_eq!(
            Version::parse("tlsv1.2").map_err(|e| e.to_string()),
            Err("unknown TLS version: \"tlsv1.2\"".to_owned())
        );
    }

    /// Every Go name reads back to itself; the TLS 1.3 suites are the three `is_tls13` names.
    #[test]
    fn cipher_table_round_trips() {
        assert_eq!(Cipher::all().count(), 25);
        for c in Cipher::all() {
            assert_eq!(Cipher::parse(c.name()), Ok(c));
            assert_eq!(c.is_tls13(), !c.name().contains("_WITH_"), "{c}");
        }
    }
}
