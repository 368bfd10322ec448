//! The certificates and keys one throw-away control plane needs, made fresh for every start.
//!
//! Every start gets its own CA so that two control planes on one machine can never accept each
//! other's clients. ECDSA P-256 is used throughout (the `ring` backend of rcgen cannot generate RSA
//! keys); kube-apiserver and kube-controller-manager accept EC keys for service-account tokens (ES256).

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

use crate::Error;
use crate::fsutil::write_file;

/// PEM files written by [`Pki::generate`], plus the PEM text the kubeconfig embeds.
#[derive(Debug, Clone)]
pub(crate) struct Pki {
    pub ca_cert: PathBuf,
    pub ca_key: PathBuf,
    pub serving_cert: PathBuf,
    pub serving_key: PathBuf,
    pub sa_key: PathBuf,
    pub sa_pub: PathBuf,
    pub ca_pem: String,
    pub admin_cert_pem: String,
    pub admin_key_pem: String,
}

impl Pki {
    /// Generates a CA, a serving certificate for the apiserver on loopback, an admin client
    /// certificate in `system:masters` (which bypasses RBAC, so the harness and the components never
    /// need role bindings) and a service-account signing key pair, and writes them under `dir`.
    pub(crate) fn generate(dir: &Path) -> Result<Pki, Error> {
        let ca_key = KeyPair::generate()?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params.distinguished_name = name("olm-testenv-ca", None);
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_cert = ca_params.self_signed(&ca_key)?;
        let ca = Issuer::new(ca_params, &ca_key);

        let serving_key = KeyPair::generate()?;
        let mut serving_params = CertificateParams::new(vec![
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
            "localhost".to_owned(),
            "kubernetes".to_owned(),
            "kubernetes.default".to_owned(),
            "kubernetes.default.svc".to_owned(),
        ])?;
        serving_params.distinguished_name = name("kube-apiserver", None);
        serving_params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        serving_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let serving_cert = serving_params.signed_by(&serving_key, &ca)?;

        let admin_key = KeyPair::generate()?;
        let mut admin_params = CertificateParams::new(Vec::<String>::new())?;
        admin_params.distinguished_name = name("admin", Some("system:masters"));
        admin_params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        admin_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let admin_cert = admin_params.signed_by(&admin_key, &ca)?;

        let sa_key = KeyPair::generate()?;

        let pki = Pki {
            ca_cert: dir.join("ca.crt"),
            ca_key: dir.join("ca.key"),
            serving_cert: dir.join("apiserver.crt"),
            serving_key: dir.join("apiserver.key"),
            sa_key: dir.join("sa.key"),
            sa_pub: dir.join("sa.pub"),
            ca_pem: ca_cert.pem(),
            admin_cert_pem: admin_cert.pem(),
            admin_key_pem: admin_key.serialize_pem(),
        };
        write_file(&pki.ca_cert, pki.ca_pem.as_bytes())?;
        write_file(&pki.ca_key, ca_key.serialize_pem().as_bytes())?;
        write_file(&pki.serving_cert, serving_cert.pem().as_bytes())?;
        write_file(&pki.serving_key, serving_key.serialize_pem().as_bytes())?;
        write_file(&pki.sa_key, sa_key.serialize_pem().as_bytes())?;
        write_file(&pki.sa_pub, sa_key.public_key_pem().as_bytes())?;
        Ok(pki)
    }
}

fn name(common_name: &str, organization: Option<&str>) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    if let Some(org) = organization {
        dn.push(DnType::OrganizationName, org);
    }
    dn
}
