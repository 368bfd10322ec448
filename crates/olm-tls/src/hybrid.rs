//! The hybrid post-quantum key exchanges of upstream's curve list — `X25519MLKEM768`,
//! `SecP256r1MLKEM768` and `SecP384r1MLKEM1024` (draft-ietf-tls-ecdhe-mlkem) — for rustls, whose
//! ring provider has no ML-KEM. Each pairs one of ring's elliptic-curve groups with ML-KEM from
//! the `ml-kem` crate: the key shares are the two shares side by side and the secret is the two
//! secrets side by side, ML-KEM first for `X25519MLKEM768` and last for the other two.
//!
//! The server side (`start_and_complete`) is what `olm run` uses: it checks the client's
//! encapsulation key as FIPS 203 asks (`ml-kem` refuses a key whose coefficients are out of
//! range), encapsulates to it, and completes the elliptic-curve exchange with ring. The client
//! side (`start`) exists for tests and for completeness. Like the draft, these groups are TLS 1.3
//! only.

use rustls::crypto::ring::kx_group;
use rustls::crypto::{ActiveKeyExchange, CompletedKeyExchange, SharedSecret, SupportedKxGroup};
use rustls::{Error, NamedGroup, PeerMisbehaved, ProtocolVersion};

use ml_kem::kem::common::getrandom::{SysRng, rand_core::UnwrapErr};
use ml_kem::{Decapsulate, Encapsulate, Generate, KeyExport, TryKeyInit};

/// `X25519MLKEM768` (0x11ec).
pub static X25519_MLKEM768: &dyn SupportedKxGroup = &Hybrid {
    classical: kx_group::X25519,
    kem: Kem::MlKem768,
    name: NamedGroup::X25519MLKEM768,
    kem_first: true,
};

/// `SecP256r1MLKEM768` (0x11eb).
pub static SECP256R1_MLKEM768: &dyn SupportedKxGroup = &Hybrid {
    classical: kx_group::SECP256R1,
    kem: Kem::MlKem768,
    name: NamedGroup::secp256r1MLKEM768,
    kem_first: false,
};

/// `SecP384r1MLKEM1024` (0x11ed), which rustls has no name for.
pub static SECP384R1_MLKEM1024: &dyn SupportedKxGroup = &Hybrid {
    classical: kx_group::SECP384R1,
    kem: Kem::MlKem1024,
    name: NamedGroup::Unknown(0x11ed),
    kem_first: false,
};

#[derive(Debug, Clone, Copy)]
enum Kem {
    MlKem768,
    MlKem1024,
}

impl Kem {
    /// The length of an encapsulation key (the client's share).
    fn key_len(self) -> usize {
        match self {
            Kem::MlKem768 => 1184,
            Kem::MlKem1024 => 1568,
        }
    }

    /// The length of a ciphertext (the server's share).
    fn ciphertext_len(self) -> usize {
        match self {
            Kem::MlKem768 => 1088,
            Kem::MlKem1024 => 1568,
        }
    }

    /// Encapsulates a fresh secret to the client's key: the ciphertext and the secret.
    fn encapsulate(self, key: &[u8]) -> Result<(Vec<u8>, Vec<u8>), Error> {
        // A failing system random source makes the `ml-kem` crate panic here; ring, beside it,
        // reads the same source for the elliptic-curve half.
        let mut rng = UnwrapErr(SysRng);
        let invalid = |_| Error::PeerMisbehaved(PeerMisbehaved::InvalidKeyShare);
        Ok(match self {
            Kem::MlKem768 => {
                let ek =
                    ml_kem::ml_kem_768::EncapsulationKey::new_from_slice(key).map_err(invalid)?;
                let (ct, secret) = ek.encapsulate_with_rng(&mut rng);
                (ct.to_vec(), secret.to_vec())
            }
            Kem::MlKem1024 => {
                let ek =
                    ml_kem::ml_kem_1024::EncapsulationKey::new_from_slice(key).map_err(invalid)?;
                let (ct, secret) = ek.encapsulate_with_rng(&mut rng);
                (ct.to_vec(), secret.to_vec())
            }
        })
    }

    /// A fresh key pair: the private half and the encapsulation key.
    fn generate(self) -> Result<(DecapsulationKey, Vec<u8>), Error> {
        let random = |_| Error::FailedToGetRandomBytes;
        Ok(match self {
            Kem::MlKem768 => {
                let dk = ml_kem::ml_kem_768::DecapsulationKey::try_generate_from_rng(&mut SysRng)
                    .map_err(random)?;
                let ek = dk.encapsulation_key().to_bytes().to_vec();
                (DecapsulationKey::MlKem768(Box::new(dk)), ek)
            }
            Kem::MlKem1024 => {
                let dk = ml_kem::ml_kem_1024::DecapsulationKey::try_generate_from_rng(&mut SysRng)
                    .map_err(random)?;
                let ek = dk.encapsulation_key().to_bytes().to_vec();
                (DecapsulationKey::MlKem1024(Box::new(dk)), ek)
            }
        })
    }
}

enum DecapsulationKey {
    MlKem768(Box<ml_kem::ml_kem_768::DecapsulationKey>),
    MlKem1024(Box<ml_kem::ml_kem_1024::DecapsulationKey>),
}

impl DecapsulationKey {
    fn decapsulate(&self, ciphertext: &[u8]) -> Result<Vec<u8>, Error> {
        let invalid = |_| Error::PeerMisbehaved(PeerMisbehaved::InvalidKeyShare);
        Ok(match self {
            DecapsulationKey::MlKem768(dk) => dk.decapsulate_slice(ciphertext).map_err(invalid)?,
            DecapsulationKey::MlKem1024(dk) => dk.decapsulate_slice(ciphertext).map_err(invalid)?,
        }
        .to_vec())
    }
}

#[derive(Debug, Clone, Copy)]
struct Hybrid {
    classical: &'static dyn SupportedKxGroup,
    kem: Kem,
    name: NamedGroup,
    /// Whether the ML-KEM half comes first in the shares and the secret.
    kem_first: bool,
}

impl Hybrid {
    /// Splits a peer's share into its ML-KEM and elliptic-curve halves.
    fn split<'a>(&self, share: &'a [u8], kem_len: usize) -> Result<(&'a [u8], &'a [u8]), Error> {
        if share.len() <= kem_len {
            return Err(Error::PeerMisbehaved(PeerMisbehaved::InvalidKeyShare));
        }
        Ok(if self.kem_first {
            share.split_at(kem_len)
        } else {
            let (classical, kem) = share.split_at(share.len() - kem_len);
            (kem, classical)
        })
    }

    /// The two halves side by side, in this group's order.
    fn join(&self, kem: &[u8], classical: &[u8]) -> Vec<u8> {
        let (first, second) = if self.kem_first {
            (kem, classical)
        } else {
            (classical, kem)
        };
        [first, second].concat()
    }
}

impl SupportedKxGroup for Hybrid {
    fn start(&self) -> Result<Box<dyn ActiveKeyExchange>, Error> {
        let classical = self.classical.start()?;
        let (dk, ek) = self.kem.generate()?;
        let pub_key = self.join(&ek, classical.pub_key());
        Ok(Box::new(Started {
            group: *self,
            classical,
            dk,
            pub_key,
        }))
    }

    fn start_and_complete(&self, client_share: &[u8]) -> Result<CompletedKeyExchange, Error> {
        let (key, classical_share) = self.split(client_share, self.kem.key_len())?;
        let (ciphertext, kem_secret) = self.kem.encapsulate(key)?;
        let classical = self.classical.start_and_complete(classical_share)?;
        Ok(CompletedKeyExchange {
            group: self.name,
            pub_key: self.join(&ciphertext, &classical.pub_key),
            secret: SharedSecret::from(self.join(&kem_secret, classical.secret.secret_bytes())),
        })
    }

    fn name(&self) -> NamedGroup {
        self.name
    }

    fn usable_for_version(&self, version: ProtocolVersion) -> bool {
        version == ProtocolVersion::TLSv1_3
    }
}

/// The client's half-done exchange: its key share sent, the server's awaited.
struct Started {
    group: Hybrid,
    classical: Box<dyn ActiveKeyExchange>,
    dk: DecapsulationKey,
    pub_key: Vec<u8>,
}

impl ActiveKeyExchange for Started {
    fn complete(self: Box<Self>, server_share: &[u8]) -> Result<SharedSecret, Error> {
        let (ciphertext, classical_share) = self
            .group
            .split(server_share, self.group.kem.ciphertext_len())?;
        let kem_secret = self.dk.decapsulate(ciphertext)?;
        let classical = self.classical.complete(classical_share)?;
        Ok(SharedSecret::from(
            self.group.join(&kem_secret, classical.secret_bytes()),
        ))
    }

    fn pub_key(&self) -> &[u8] {
        &self.pub_key
    }

    fn group(&self) -> NamedGroup {
        self.group.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both sides agree, shares have the draft's lengths, and the halves sit where the draft
    /// puts them: a share whose ML-KEM half is swapped with its curve half does not complete.
    #[test]
    fn client_and_server_agree() {
        for (group, client_len, server_len) in [
            (X25519_MLKEM768, 1184 + 32, 1088 + 32),
            (SECP256R1_MLKEM768, 65 + 1184, 65 + 1088),
            (SECP384R1_MLKEM1024, 97 + 1568, 97 + 1568),
        ] {
            let client = group.start().unwrap();
            assert_eq!(client.pub_key().len(), client_len, "{:?}", group.name());
            let server = group.start_and_complete(client.pub_key()).unwrap();
            assert_eq!(server.pub_key.len(), server_len);
            assert_eq!(server.group, group.name());
            let server_secret = server.secret.secret_bytes().to_vec();
            let client_secret = client.complete(&server.pub_key).unwrap();
            assert_eq!(client_secret.secret_bytes(), server_secret.as_slice());
            assert!(!group.usable_for_version(ProtocolVersion::TLSv1_2));
        }
    }

    #[test]
    fn malformed_shares_are_refused() {
        let share = X25519_MLKEM768.start().unwrap().pub_key().to_vec();
        let swapped = [&share[1184..], &share[..1184]].concat();
        assert!(X25519_MLKEM768.start_and_complete(&swapped).is_err());
        assert!(X25519_MLKEM768.start_and_complete(&share[..1184]).is_err());
        assert!(X25519_MLKEM768.start_and_complete(&[]).is_err());
        // An encapsulation key with a coefficient out of range (all bits set) fails FIPS 203's
        // check.
        let mut bad = share.clone();
        bad[..3].copy_from_slice(&[0xff, 0xff, 0xff]);
        assert!(X25519_MLKEM768.start_and_complete(&bad).is_err());
        assert!(X25519_MLKEM768.start_and_complete(&share).is_ok());
    }
}
