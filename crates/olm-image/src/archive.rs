//! An [`Image`] as an OCI image-layout archive (a tar of `oci-layout`, `index.json` and
//! `blobs/sha256/…`): what `ctr images import` and other container tools load without a
//! registry, for a node that must have an image before any registry answers (a pause image).

use std::io;

use crate::assemble::{Image, OCI_MANIFEST_MEDIA_TYPE};

/// The archive of `image` named `name` (a full reference, `registry.k8s.io/pause:3.10`), written
/// in memory: the images this is for are small. The name is given both as the OCI ref-name
/// annotation and as containerd's image-name annotation, so containerd imports it under exactly
/// that name whatever its version prefers.
pub fn oci_archive(image: &Image, name: &str) -> io::Result<Vec<u8>> {
    let index = serde_json::json!({
        "schemaVersion": 2,
        "manifests": [{
            "mediaType": OCI_MANIFEST_MEDIA_TYPE,
            "digest": image.digest().as_str(),
            "size": image.manifest().len(),
            "annotations": {
                "io.containerd.image.name": name,
                "org.opencontainers.image.ref.name": name,
            },
        }],
    });
    let mut tar = tar::Builder::new(Vec::new());
    append(&mut tar, "oci-layout", br#"{"imageLayoutVersion":"1.0.0"}"#)?;
    append(&mut tar, "index.json", index.to_string().as_bytes())?;
    let blob = |digest: &str| format!("blobs/{}", digest.replacen(':', "/", 1));
    append(&mut tar, &blob(image.digest().as_str()), image.manifest())?;
    append(
        &mut tar,
        &blob(image.config_digest().as_str()),
        image.config(),
    )?;
    for layer in image.layers() {
        append(&mut tar, &blob(layer.digest().as_str()), layer.data())?;
    }
    tar.into_inner()
}

fn append(tar: &mut tar::Builder<Vec<u8>>, path: &str, data: &[u8]) -> io::Result<()> {
    let mut header = tar::Header::new_ustar();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_mode(0o644);
    header.set_mtime(0);
    header.set_size(data.len() as u64);
    tar.append_data(&mut header, path, data)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::io::Read as _;

    use super::*;
    use crate::assemble::{Entry, RunConfig, image_with_config, layer_from_entries};
    use crate::digest::Digest;

    #[test]
    fn every_blob_is_stored_under_its_digest_and_the_index_names_the_image() {
        let layer = layer_from_entries(&[Entry {
            path: "pause".to_owned(),
            content: Some(b"\x7fELF".to_vec()),
            mode: 0o755,
            owner: 0,
        }])
        .unwrap();
        let run = RunConfig {
            entrypoint: vec!["/pause".to_owned()],
            ..RunConfig::default()
        };
        let image = image_with_config(BTreeMap::new(), &run, vec![layer]);
        let bytes = oci_archive(&image, "registry.k8s.io/pause:3.10").unwrap();
        let mut archive = tar::Archive::new(bytes.as_slice());
        let mut files = BTreeMap::new();
        for entry in archive.entries().unwrap() {
            let mut entry = entry.unwrap();
            let path = entry.path().unwrap().display().to_string();
            let mut data = Vec::new();
            entry.read_to_end(&mut data).unwrap();
            files.insert(path, data);
        }
        for (path, data) in &files {
            if let Some(hex) = path.strip_prefix("blobs/sha256/") {
                assert_eq!(Digest::of(data).as_str(), format!("sha256:{hex}"));
            }
        }
        assert_eq!(files.len(), 5, "{:?}", files.keys());
        let index: serde_json::Value = serde_json::from_slice(&files["index.json"]).unwrap();
        let manifest = &index["manifests"][0];
        assert_eq!(manifest["digest"], image.digest().as_str());
        assert_eq!(
            manifest["annotations"]["io.containerd.image.name"],
            "registry.k8s.io/pause:3.10"
        );
    }
}
