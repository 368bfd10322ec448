//! `cargo run -p olm-bundle --example render -- BUNDLE_DIR INSTALL_NS [CONFIG_JSON] [cert-manager|openshift-service-ca|none]`
//! prints the rendered manifests as a YAML stream, sorted by kind, namespace and name.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(dir), Some(ns)) = (args.first(), args.get(1)) else {
        eprintln!(
            "usage: render BUNDLE_DIR INSTALL_NS [CONFIG_JSON] [cert-manager|openshift-service-ca|none]"
        );
        std::process::exit(2);
    };
    let config = args.get(2).filter(|c| !c.is_empty()).map(String::as_str);
    let provider = match args.get(3).map(String::as_str) {
        Some("none") => None,
        Some("openshift-service-ca") => Some(olm_bundle::CertProvider::OpenshiftServiceCa),
        _ => Some(olm_bundle::CertProvider::CertManager),
    };
    let result = olm_bundle::Bundle::from_dir(dir)
        .map_err(|e| e.to_string())
        .and_then(|b| {
            olm_bundle::render_bundle(&b, ns, config, provider).map_err(|e| e.to_string())
        });
    match result {
        Ok(mut objs) => {
            olm_bundle::sort_manifests(&mut objs);
            print!("{}", olm_bundle::manifests_to_yaml(&objs));
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
