//! Heap profiles: jemalloc's own profiler, the allocator `olm` runs on. It records the stack of
//! one allocation every 512 KiB allocated on average (`lg_prof_sample` 19, Go's rate) and, on
//! request, dumps the live ones, which are symbolized in the process and written as pprof.
//!
//! jemalloc can only profile if told so when it starts (`prof:true`, compiled into the binary's
//! malloc configuration, `.cargo/config.toml`); it starts inactive (`prof_active:false`), which
//! costs allocations next to nothing, and [`activate`] switches it on in a process that serves
//! profiles, before its caches fill.

use std::collections::HashMap;

use tracing::{info, warn};

/// Why no heap profile.
#[derive(Debug, thiserror::Error)]
pub(super) enum Error {
    /// jemalloc runs without its profiler.
    #[error(
        "heap profiles are off: this olm's jemalloc was not started with prof:true (JEMALLOC_SYS_WITH_MALLOC_CONF)"
    )]
    Off,
    /// jemalloc could not write its profile, or it did not read.
    #[error("{0}")]
    Dump(String),
}

/// Whether jemalloc's profiler can be switched on (`opt.prof`).
fn available() -> bool {
    tikv_jemalloc_ctl::profiling::prof::read().unwrap_or(false)
}

/// Starts recording allocations for heap profiles; allocations made before are not in them. A
/// jemalloc without its profiler is logged and left alone: `/debug/pprof/heap` then says so.
pub async fn activate() {
    if !available() {
        warn!("{}", Error::Off);
        return;
    }
    jemalloc_pprof::activate_jemalloc_profiling().await;
    info!("recording allocations for heap profiles");
}

/// The live sampled allocations as a gzipped pprof profile of bytes in use, each stack ending
/// at the function that allocated.
pub(super) async fn dump() -> Result<Vec<u8>, Error> {
    if !available() {
        return Err(Error::Off);
    }
    let Some(ctl) = jemalloc_pprof::PROF_CTL.as_ref() else {
        return Err(Error::Off);
    };
    let mut ctl = ctl.clone().lock_owned().await;
    // jemalloc writes the profile to a temporary file, read back and symbolized: blocking work.
    let written = tokio::task::spawn_blocking(move || {
        let file = ctl.dump().map_err(|e| Error::Dump(format!("{e:#}")))?;
        drop(ctl);
        let mut profile =
            pprof_util::parse_jeheap(std::io::BufReader::new(file), mappings::MAPPINGS.as_deref())
                .map_err(|e| Error::Dump(format!("reading jemalloc's profile: {e:#}")))?;
        let mut code = HashMap::new();
        for (stack, _) in &mut profile.stacks {
            cut_allocator(&mut stack.addrs, |addr| {
                *code.entry(addr).or_insert_with(|| code_at(addr))
            });
        }
        Ok(profile.to_pprof(("inuse_space", "bytes"), ("space", "bytes"), None))
    });
    written.await.map_err(|e| Error::Dump(e.to_string()))?
}

/// Whose code an address of a stack is in, as far as [`cut_allocator`] is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Code {
    /// The program's.
    Program,
    /// A C function that is not one of the allocator's exported ones: one of jemalloc's own
    /// (`do_rallocx`) when next to them.
    C,
    /// The allocator's: jemalloc, the global allocator calling it, `alloc::alloc`.
    Allocator,
    /// A function of the program into which allocator code was inlined.
    InlinedAllocator,
}

/// How the functions of the allocator begin, demangled: jemalloc's API (`_rjem_` prefixed), the
/// global allocator that calls it, the shims the compiler routes every allocation through, and
/// `alloc::alloc`'s functions and `Global`, which call those. jemalloc's internal functions sit
/// below them on every stack and go with them.
const ALLOCATOR: [&str; 8] = [
    "_rjem_",
    "<tikv_jemallocator::Jemalloc as ",
    "__rust_alloc",
    "__rust_realloc",
    "__rustc::__rust_",
    "__rg_",
    "alloc::alloc::",
    "<alloc::alloc::Global as ",
];

fn is_allocator(name: &str) -> bool {
    ALLOCATOR.iter().any(|prefix| name.starts_with(prefix))
}

/// Whose code `addr` is in, by its symbols. An address without symbols (a stripped binary) is
/// the program's.
fn code_at(addr: usize) -> Code {
    let names = super::symbol_names(addr);
    match names.last() {
        Some(outer) if is_allocator(outer) => Code::Allocator,
        _ if names.iter().any(|n| is_allocator(n)) => Code::InlinedAllocator,
        // Rust's names are paths; C's are plain identifiers.
        Some(outer) if !outer.contains("::") => Code::C,
        _ => Code::Program,
    }
}

/// Cuts the allocator's frames off the leaf end of `addrs` (root first), from the outermost
/// allocator frame on, so that a stack ends at the function that allocated, as in Go's heap
/// profiles and jeprof's reports; otherwise every byte would be jemalloc's own sampling function's.
/// An allocator inlined into its caller leaves the caller's frame. The C functions just above the
/// outermost allocator frame go too: the global allocator and jemalloc's exported functions
/// tail-call jemalloc's internal ones, whose frames then sit right on the program's.
fn cut_allocator(addrs: &mut Vec<usize>, mut code: impl FnMut(usize) -> Code) {
    let Some((first, kind)) = addrs
        .iter()
        .enumerate()
        .find_map(|(i, &addr)| match code(addr) {
            Code::Program | Code::C => None,
            kind => Some((i, kind)),
        })
    else {
        return;
    };
    let end = if kind == Code::InlinedAllocator {
        first + 1
    } else {
        let jemalloc = addrs
            .get(..first)
            .unwrap_or_default()
            .iter()
            .rev()
            .take_while(|&&addr| code(addr) == Code::C)
            .count();
        first - jemalloc
    };
    addrs.truncate(end);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocator_frames_are_cut_from_the_leaf_end() {
        let code = |addr: usize| match addr {
            0..100 => Code::Program,
            100..200 => Code::Allocator,
            200..300 => Code::InlinedAllocator,
            _ => Code::C,
        };
        let cut = |mut addrs: Vec<usize>| {
            cut_allocator(&mut addrs, code);
            addrs
        };
        // main → handler → Vec::push → __rust_alloc → jemalloc's internals
        assert_eq!(cut(vec![1, 2, 3, 100, 150, 3]), vec![1, 2, 3]);
        assert_eq!(cut(vec![1, 2, 200, 100, 4]), vec![1, 2, 200]);
        assert_eq!(cut(vec![1, 2, 3]), vec![1, 2, 3]);
        assert_eq!(cut(vec![100, 1]), Vec::<usize>::new());
        // RawVec::grow → (tail calls) do_rallocx → ... → _rjem_je_prof_backtrace
        assert_eq!(cut(vec![300, 1, 2, 301, 302, 100, 300]), vec![300, 1, 2]);
        // C code of the program's own (the C library's thread start) stays.
        assert_eq!(cut(vec![300, 1, 300, 2, 100]), vec![300, 1, 300, 2]);
    }

    #[test]
    fn allocator_names() {
        for name in [
            "_rjem_malloc",
            "<tikv_jemallocator::Jemalloc as core::alloc::global::GlobalAlloc>::alloc",
            "__rust_alloc_zeroed",
            "__rustc::__rust_realloc",
            "alloc::alloc::exchange_malloc",
            "<alloc::alloc::Global as core::alloc::Allocator>::allocate",
        ] {
            assert!(is_allocator(name), "{name}");
        }
        for name in [
            "<alloc::vec::Vec<T,A> as core::clone::Clone>::clone",
            "alloc::raw_vec::RawVec<T,A>::grow_one",
            "olm_catalog::load::load_dir",
            "prof_backtrace_impl",
        ] {
            assert!(!is_allocator(name), "{name}");
        }
    }
}
