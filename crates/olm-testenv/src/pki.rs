//! The certificates and keys one throw-away control plane needs, made fresh for every start.
//!
//! Every start gets its own CA so that two control planes on one machine can never accept each
//! other's clients. ECDSA P-256 is used throughout (the `ring` backend of rcgen cannot generate RSA
//! keys); kube-apiserver and kube-controller-manager accept EC keys for service-account tokens (ES256).

use std::path::{Path, PathBuf};

use std::net::{IpAddr, Ipv4Addr};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};

use crate::Error;
use crate::fsutil::write_file;

/// The `kubernetes` Service's cluster IP: the first address of the Service range.
pub(crate) const KUBERNETES_SERVICE_IP: Ipv4Addr = Ipv4Addr::new(10, 96, 0, 1);

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
    /// The admin certificate and key as files: the API server's client identity towards a
    /// kubelet (logs, exec, port-forward).
    pub admin_cert: PathBuf,
    pub admin_key: PathBuf,
    /// A real node's certificates; `None` without a host address for them to name.
    pub node: Option<NodePki>,
    /// The front-proxy CA, apart from the cluster CA as kubeadm and kind keep it: what extension
    /// API servers (behind APIServices) check the aggregator's client certificate against.
    pub front_proxy_ca: PathBuf,
    /// The aggregator's client certificate (`front-proxy-client`, signed by the front-proxy CA)
    /// and key.
    pub front_proxy_client_cert: PathBuf,
    pub front_proxy_client_key: PathBuf,
}

/// The name the aggregator's client certificate carries, and the only one extension API
/// servers accept forwarded identities from (`--requestheader-allowed-names`), as kubeadm's.
pub(crate) const FRONT_PROXY_CLIENT: &str = "front-proxy-client";

/// What a real node's parts present: the kubelet's serving certificate (for the node's
/// address), and the client identities of the kubelet (`system:node:<name>` in `system:nodes`,
/// which the Node authorizer grants what a kubelet needs) and of kube-proxy (`system:kube-proxy`,
/// bound by default to `system:node-proxier`), as PEM text for their kubeconfigs.
#[derive(Debug, Clone)]
pub(crate) struct NodePki {
    pub kubelet_serving_cert: PathBuf,
    pub kubelet_serving_key: PathBuf,
    pub kubelet_client: (String, String),
    pub proxy_client: (String, String),
}

impl Pki {
    /// Generates a CA, a serving certificate for the apiserver on loopback, an admin client
    /// certificate in `system:masters` (which bypasses RBAC, so the harness and the components never
    /// need role bindings) and a service-account signing key pair, and writes them under `dir`.
    ///
    /// With `node` (the machine's address and the node's name), the apiserver's certificate also
    /// names that address and the `kubernetes` Service's cluster IP (how pods reach it), and a
    /// real node's certificates are made too.
    pub(crate) fn generate(dir: &Path, node: Option<(Ipv4Addr, &str)>) -> Result<Pki, Error> {
        let (ca_params, ca_key, ca_cert) = new_ca("olm-testenv-ca")?;
        let ca = Issuer::new(ca_params, &ca_key);

        let serving_key = KeyPair::generate()?;
        let mut serving_params = CertificateParams::new(vec![
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
            "localhost".to_owned(),
            "kubernetes".to_owned(),
            "kubernetes.default".to_owned(),
            "kubernetes.default.svc".to_owned(),
            "kubernetes.default.svc.cluster.local".to_owned(),
        ])?;
        if let Some((address, _)) = node {
            for ip in [address, KUBERNETES_SERVICE_IP] {
                serving_params
                    .subject_alt_names
                    .push(SanType::IpAddress(IpAddr::V4(ip)));
            }
        }
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

        let (front_proxy_params, front_proxy_key, front_proxy_cert) =
            new_ca("olm-testenv-front-proxy-ca")?;
        let front_proxy = Issuer::new(front_proxy_params, &front_proxy_key);
        let (front_proxy_client_pem, front_proxy_client_key_pem) =
            client(&front_proxy, FRONT_PROXY_CLIENT, None)?;

        let sa_key = KeyPair::generate()?;
        let node = match node {
            Some((address, name)) => Some(NodePki::generate(dir, &ca, address, name)?),
            None => None,
        };

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
            admin_cert: dir.join("admin.crt"),
            admin_key: dir.join("admin.key"),
            node,
            front_proxy_ca: dir.join("front-proxy-ca.crt"),
            front_proxy_client_cert: dir.join("front-proxy-client.crt"),
            front_proxy_client_key: dir.join("front-proxy-client.key"),
        };
        write_file(&pki.front_proxy_ca, front_proxy_cert.pem().as_bytes())?;
        write_file(
            &pki.front_proxy_client_cert,
            front_proxy_client_pem.as_bytes(),
        )?;
        write_file(
            &pki.front_proxy_client_key,
            front_proxy_client_key_pem.as_bytes(),
        )?;
        write_file(&pki.admin_cert, pki.admin_cert_pem.as_bytes())?;
        write_file(&pki.admin_key, pki.admin_key_pem.as_bytes())?;
        write_file(&pki.ca_cert, pki.ca_pem.as_bytes())?;
        write_file(&pki.ca_key, ca_key.serialize_pem().as_bytes())?;
        write_file(&pki.serving_cert, serving_cert.pem().as_bytes())?;
        write_file(&pki.serving_key, serving_key.serialize_pem().as_bytes())?;
        write_file(&pki.sa_key, sa_key.serialize_pem().as_bytes())?;
        write_file(&pki.sa_pub, sa_key.public_key_pem().as_bytes())?;
        Ok(pki)
    }
}

impl NodePki {
    fn generate(
        dir: &Path,
        ca: &Issuer<'_, &KeyPair>,
        address: Ipv4Addr,
        name: &str,
    ) -> Result<NodePki, Error> {
        let serving_key = KeyPair::generate()?;
        let mut serving = CertificateParams::new(vec![name.to_owned(), "localhost".to_owned()])?;
        serving
            .subject_alt_names
            .push(SanType::IpAddress(IpAddr::V4(address)));
        serving
            .subject_alt_names
            .push(SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        serving.distinguished_name = self::name(name, None);
        serving.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let serving_cert = serving.signed_by(&serving_key, ca)?;
        let pki = NodePki {
            kubelet_serving_cert: dir.join("kubelet.crt"),
            kubelet_serving_key: dir.join("kubelet.key"),
            kubelet_client: client(ca, &format!("system:node:{name}"), Some("system:nodes"))?,
            proxy_client: client(ca, "system:kube-proxy", None)?,
        };
        write_file(&pki.kubelet_serving_cert, serving_cert.pem().as_bytes())?;
        write_file(
            &pki.kubelet_serving_key,
            serving_key.serialize_pem().as_bytes(),
        )?;
        Ok(pki)
    }
}

/// A new self-signed CA named `common_name`: what issues with it, its key and its certificate.
fn new_ca(common_name: &str) -> Result<(CertificateParams, KeyPair, rcgen::Certificate), Error> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name = name(common_name, None);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let cert = params.self_signed(&key)?;
    Ok((params, key, cert))
}

/// A client certificate and key (PEM) for `common_name` in `organization`.
fn client(
    ca: &Issuer<'_, &KeyPair>,
    common_name: &str,
    organization: Option<&str>,
) -> Result<(String, String), Error> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name = name(common_name, organization);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, ca)?;
    Ok((cert.pem(), key.serialize_pem()))
}

fn name(common_name: &str, organization: Option<&str>) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    if let Some(org) = organization {
        dn.push(DnType::OrganizationName, org);
    }
    dn
}
