//! Unpacking and building layers: the hot paths of catalog pulls (catalogd unpacks every new
//! catalog digest) and of `olm image push-catalog`.
//!
//! Inputs: the real `community-v4.21` catalog (33 files, 14 MB, a 1.4 MB gzip layer) and a
//! synthetic layer of 20,000 small files in 200 directories, which stresses per-entry cost.

use std::path::{Path, PathBuf};

use olm_image::unpack::{Filter, apply_layer, decompress};
use olm_image::{Image, catalog_image};

fn main() {
    divan::main();
}

fn community() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/catalogs/community-v4.21")
}

fn community_image() -> Image {
    catalog_image(&community()).expect("build community-v4.21")
}

fn many_files_image() -> Image {
    let dir = tempfile::tempdir().expect("tempdir");
    for d in 0..200 {
        let sub = dir.path().join(format!("pkg-{d:03}"));
        std::fs::create_dir_all(&sub).expect("mkdir");
        for f in 0..100 {
            std::fs::write(
                sub.join(format!("f{f:03}.json")),
                format!("{{\"n\":{f}}}\n"),
            )
            .expect("write");
        }
    }
    catalog_image(dir.path()).expect("build")
}

fn unpack(image: &Image) {
    let dest = tempfile::tempdir().expect("tempdir");
    let data = image.layers()[0].data().to_vec();
    let reader = decompress(std::io::Cursor::new(data)).expect("gzip");
    apply_layer(reader, dest.path(), &Filter::All).expect("unpack");
}

#[divan::bench(sample_count = 20)]
fn unpack_community_catalog(bencher: divan::Bencher) {
    let image = community_image();
    bencher.bench_local(|| unpack(&image));
}

#[divan::bench(sample_count = 10)]
fn unpack_20k_small_files(bencher: divan::Bencher) {
    let image = many_files_image();
    bencher.bench_local(|| unpack(&image));
}

#[divan::bench(sample_count = 10)]
fn build_community_catalog_image(bencher: divan::Bencher) {
    let dir = community();
    bencher.bench_local(|| catalog_image(&dir).expect("build"));
}
