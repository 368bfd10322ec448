//! Layers (tar streams, plain or gzip, built from generated entries or taken as raw bytes)
//! unpacked into an empty directory: unpacking never panics, nothing is created, changed or
//! linked outside that directory, and no symlink left inside it resolves to a place outside it
//! (following every link on the way as the kernel does).
//!
//! Generated entries draw path components from a small alphabet (`a`, `b`, `..`, `.`,
//! whiteouts, …) so that links, parents and climbs meet each other often.
#![no_main]

use std::collections::VecDeque;
use std::fs;
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use olm_image::Sizes;
use olm_image::unpack::{Filter, decompress, unpack_layers};

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Part {
    A,
    B,
    C,
    Dot,
    DotDot,
    Empty,
    Whiteout,
    Opaque,
    Named(u8),
}

#[derive(Arbitrary, Debug)]
struct FuzzPath {
    absolute: bool,
    parts: Vec<Part>,
    trailing_slash: bool,
}

impl FuzzPath {
    fn text(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if self.absolute {
            out.push(b'/');
        }
        for (i, p) in self.parts.iter().enumerate() {
            if i > 0 {
                out.push(b'/');
            }
            match p {
                Part::A => out.push(b'a'),
                Part::B => out.push(b'b'),
                Part::C => out.extend_from_slice(b"configs"),
                Part::Dot => out.push(b'.'),
                Part::DotDot => out.extend_from_slice(b".."),
                Part::Empty => {}
                Part::Whiteout => out.extend_from_slice(b".wh.a"),
                Part::Opaque => out.extend_from_slice(b".wh..wh..opq"),
                Part::Named(n) => out.extend_from_slice(format!("n{}", n % 8).as_bytes()),
            }
        }
        if self.trailing_slash {
            out.push(b'/');
        }
        out
    }
}

#[derive(Arbitrary, Debug)]
enum Kind {
    File(Vec<u8>),
    Dir,
    Symlink(FuzzPath),
    HardLink(FuzzPath),
    Fifo,
    Other(u8),
}

#[derive(Arbitrary, Debug)]
struct Entry {
    path: FuzzPath,
    kind: Kind,
    mode: u16,
}

#[derive(Arbitrary, Debug)]
enum Layer {
    Entries { entries: Vec<Entry>, gzip: bool },
    Raw(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
struct Input {
    layers: Vec<Layer>,
    under_configs: bool,
}

/// A tar header block with raw name bytes (the `tar` builder refuses the hostile ones).
fn header(name: &[u8], link: &[u8], kind: tar::EntryType, mode: u32, size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    let n = name.len().min(100);
    h.as_old_mut().name[..n].copy_from_slice(&name[..n]);
    let l = link.len().min(100);
    h.as_old_mut().linkname[..l].copy_from_slice(&link[..l]);
    h.set_entry_type(kind);
    h.set_mode(mode);
    h.set_size(size);
    h.set_mtime(0);
    h.set_cksum();
    h
}

fn push_block(out: &mut Vec<u8>, h: &tar::Header, data: &[u8]) {
    out.extend_from_slice(h.as_bytes());
    out.extend_from_slice(data);
    out.resize(out.len() + (512 - data.len() % 512) % 512, 0);
}

/// Names over 100 bytes go in a GNU long-name entry first, as GNU tar writes them.
fn push_long(out: &mut Vec<u8>, kind: tar::EntryType, text: &[u8]) {
    if text.len() > 100 {
        let mut data = text.to_vec();
        data.push(0);
        let h = header(b"././@LongLink", b"", kind, 0o644, data.len() as u64);
        push_block(out, &h, &data);
    }
}

fn tarball(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in entries {
        let name = e.path.text();
        let mode = u32::from(e.mode) & 0o7777;
        let (kind, link, data): (tar::EntryType, Vec<u8>, &[u8]) = match &e.kind {
            Kind::File(d) => (tar::EntryType::Regular, Vec::new(), d),
            Kind::Dir => (tar::EntryType::Directory, Vec::new(), b""),
            Kind::Symlink(t) => (tar::EntryType::Symlink, t.text(), b""),
            Kind::HardLink(t) => (tar::EntryType::Link, t.text(), b""),
            Kind::Fifo => (tar::EntryType::Fifo, Vec::new(), b""),
            Kind::Other(b) => (tar::EntryType::new(*b), Vec::new(), b""),
        };
        push_long(&mut out, tar::EntryType::GNULongLink, &link);
        push_long(&mut out, tar::EntryType::GNULongName, &name);
        let h = header(&name, &link, kind, mode, data.len() as u64);
        push_block(&mut out, &h, data);
    }
    out.resize(out.len() + 1024, 0);
    out
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).expect("in memory");
    enc.finish().expect("in memory")
}

/// Where `link` (a symlink inside `dest`) ends up when the kernel follows it and every link on
/// the way; `Err` names the first place outside `dest` it reaches. A dangling or looping link is
/// fine as long as it never left `dest`.
fn follow(dest: &Path, link: &Path) -> Result<(), PathBuf> {
    let mut cur = link.parent().expect("inside dest").to_path_buf();
    let mut todo: VecDeque<PathBuf> = VecDeque::new();
    let target = fs::read_link(link).expect("a symlink");
    if target.is_absolute() {
        return Err(target);
    }
    todo.extend(target.components().map(|c| PathBuf::from(c.as_os_str())));
    let mut hops = 0;
    while let Some(c) = todo.pop_front() {
        match Path::new(&c).components().next() {
            Some(Component::ParentDir) => {
                cur.pop();
                if !cur.starts_with(dest) {
                    return Err(cur);
                }
            }
            Some(Component::Normal(n)) => {
                let next = cur.join(n);
                match fs::symlink_metadata(&next) {
                    Ok(m) if m.file_type().is_symlink() => {
                        hops += 1;
                        if hops > 40 {
                            return Ok(()); // ELOOP: the kernel gives up too
                        }
                        let t = fs::read_link(&next).expect("a symlink");
                        if t.is_absolute() {
                            return Err(t);
                        }
                        for (i, tc) in t.components().enumerate() {
                            todo.insert(i, PathBuf::from(tc.as_os_str()));
                        }
                    }
                    Ok(_) => cur = next,
                    Err(_) => return Ok(()), // dangling from here on, and still inside
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        out.push(p.clone());
        if is_dir {
            walk(&p, out);
        }
    }
}

static RUN: AtomicU64 = AtomicU64::new(0);

fuzz_target!(|input: Input| {
    // A memory file system when there is one: the target is mostly file system calls.
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let root = base.join(format!(
        "olm-fuzz-unpack-{}-{}",
        std::process::id(),
        RUN.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_dir_all(&root);
    // Climbs out of `dest` land in `up`, beside a file and a directory that must stay as they are.
    let up = root.join("a").join("b");
    // `unpack_layers` makes `dest` itself (and removes it again when it refuses the layers).
    let dest = up.join("dest");
    fs::create_dir_all(&up).expect("temp dir");
    fs::write(up.join("outside"), b"outside").expect("temp file");
    fs::create_dir(up.join("sibling")).expect("temp dir");

    let streams: Vec<Vec<u8>> = input
        .layers
        .iter()
        .map(|l| match l {
            Layer::Entries { entries, gzip: z } => {
                let t = tarball(entries);
                if *z { gzip(&t) } else { t }
            }
            Layer::Raw(b) => b.clone(),
        })
        .collect();
    let filter = if input.under_configs {
        Filter::Under(PathBuf::from("configs"))
    } else {
        Filter::All
    };
    let readers = streams
        .iter()
        .filter_map(|s| decompress(std::io::Cursor::new(s.as_slice())).ok());
    // Small limits, so that size refusals are met often and every input stays fast.
    let sizes = Sizes {
        total: 256 * 1024,
        file: 64 * 1024,
    };
    let unpacked = unpack_layers(readers, &dest, &filter, sizes);
    if unpacked.is_err() {
        assert!(!dest.exists(), "a refused unpack left {}", dest.display());
    }

    // Nothing but what was there before outside `dest`.
    let mut all = Vec::new();
    walk(&root, &mut all);
    // Within the limits: no file over the per-file one, all of them (a hard link read as the
    // file it names) within the total.
    let mut held = 0u64;
    for p in all.iter().filter(|p| p.starts_with(&dest)) {
        if let Ok(m) = fs::symlink_metadata(p)
            && m.is_file()
        {
            assert!(
                m.len() <= sizes.file,
                "{} holds {} bytes",
                p.display(),
                m.len()
            );
            held += m.len();
        }
    }
    assert!(held <= sizes.total, "the unpacked files hold {held} bytes");
    for p in &all {
        if p.starts_with(&dest) {
            continue;
        }
        let expected = [
            root.join("a"),
            up.clone(),
            up.join("outside"),
            up.join("sibling"),
        ];
        assert!(
            expected.contains(p),
            "unpacking created {} outside the target",
            p.display()
        );
    }
    let outside = up.join("outside");
    let meta = fs::symlink_metadata(&outside).expect("the outside file is still there");
    assert!(meta.is_file(), "the outside file was replaced");
    {
        use std::os::unix::fs::MetadataExt;
        assert_eq!(
            meta.nlink(),
            1,
            "the outside file was hard-linked into the target"
        );
    }
    assert_eq!(
        fs::read(&outside).expect("readable"),
        b"outside",
        "the outside file changed"
    );
    // No link inside leads out.
    for p in &all {
        if !p.starts_with(&dest) {
            continue;
        }
        if fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
            && let Err(to) = follow(&dest, p)
        {
            panic!(
                "{} resolves outside the target, to {}",
                p.strip_prefix(&dest).unwrap_or(p).display(),
                to.display()
            );
        }
    }
    // Make sure the tree can be removed whatever modes it got.
    for p in &all {
        if fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()) {
            use std::os::unix::fs::PermissionsExt;
            let _ = fs::set_permissions(p, fs::Permissions::from_mode(0o700));
        }
    }
    let _ = fs::remove_dir_all(&root);
});
