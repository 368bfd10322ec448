//! Unpacking and building layers: the hot paths of catalog pulls (catalogd unpacks every new
//! catalog digest) and of `olm image push-catalog`.
//!
//! Inputs: the real `community-v4.21` catalog (33 files, 14 MB, a 1.4 MB gzip layer) and a
//! synthetic layer of 20,000 small files in 200 directories, which stresses per-entry cost.
//!
//! Unpacking goes to `$OLM_BENCH_DIR`, else `/dev/shm` when it exists, else the temp dir: on a
//! virtual disk, file creation alone can cost a millisecond, which would measure the disk rather
//! than the unpacker. Set `OLM_BENCH_DIR=/tmp` to measure a real disk.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::{Path, PathBuf};

use olm_image::limits::{Budget, Sizes};
use olm_image::unpack::{Filter, apply_layer, decompress};
use olm_image::{Image, catalog_image};

fn main() {
    divan::main();
}

fn community() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/catalogs/community-v4.21")
}

fn scratch_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("OLM_BENCH_DIR") {
        return PathBuf::from(dir);
    }
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// 20,000 files of a few bytes in 200 directories, gzip-compressed, built in memory.
fn many_files_layer() -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    for d in 0..200 {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Directory);
        h.set_mode(0o755);
        h.set_size(0);
        tar.append_data(&mut h, format!("configs/pkg-{d:03}/"), std::io::empty())
            .expect("dir");
        for f in 0..100 {
            let body = format!("{{\"n\":{f}}}\n");
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Regular);
            h.set_mode(0o644);
            h.set_size(body.len() as u64);
            tar.append_data(
                &mut h,
                format!("configs/pkg-{d:03}/f{f:03}.json"),
                body.as_bytes(),
            )
            .expect("file");
        }
    }
    let mut gz = tar.into_inner().expect("tar");
    gz.flush().expect("flush");
    gz.finish().expect("gzip")
}

/// Decompresses and unpacks `layer` into a fresh directory; creating and removing that directory
/// happen outside the timed part (divan drops returned values after timing).
fn bench_unpack(bencher: divan::Bencher, layer: &[u8]) {
    bencher
        .with_inputs(|| tempfile::tempdir_in(scratch_root()).expect("tempdir"))
        .bench_local_values(|dest| {
            let reader = decompress(std::io::Cursor::new(layer)).expect("gzip");
            apply_layer(
                reader,
                dest.path(),
                &Filter::All,
                &mut Budget::new(Sizes::CATALOG),
            )
            .expect("unpack");
            dest
        });
}

#[divan::bench(sample_count = 20)]
fn unpack_community_catalog(bencher: divan::Bencher) {
    let image: Image = catalog_image(&community()).expect("build community-v4.21");
    bench_unpack(bencher, image.layers()[0].data());
}

#[divan::bench(sample_count = 10)]
fn unpack_20k_small_files(bencher: divan::Bencher) {
    bench_unpack(bencher, &many_files_layer());
}

#[divan::bench(sample_count = 10)]
fn build_community_catalog_image(bencher: divan::Bencher) {
    let dir = community();
    bencher.bench_local(|| catalog_image(&dir).expect("build"));
}
