//! CPU profiles: while one is taken, a `SIGPROF` timer fires 100 times per second of CPU time the
//! process uses (Go's rate) and pprof-rs records the stack of the thread it interrupted. The
//! stacks are kept as addresses and symbolized once, afterwards, when they are written as pprof.
//!
//! Nothing of this runs between profiles: no timer, no signal handler work.

use std::collections::HashMap;

use pprof::{ProfilerGuard, ProfilerGuardBuilder};
use pprof_util::{StackProfile, WeightedStack};

/// Samples per second of CPU time, as Go's `runtime/pprof`.
const FREQUENCY_HZ: i32 = 100;

/// Samples that land in these libraries are dropped: unwinding from inside the C library, the
/// unwinder itself or the vDSO, from a signal handler, can deadlock or crash (pprof-rs's
/// advice).
const BLOCKLIST: [&str; 4] = ["libc", "libgcc", "pthread", "vdso"];

/// A CPU profile being taken; dropping it stops the sampling.
pub(super) struct Running(ProfilerGuard<'static>);

/// Sampled stacks (leaf first, as addresses, as the unwinder saw them) and how often each was
/// seen.
pub(super) struct Stacks(Vec<(Vec<usize>, isize)>);

/// Starts sampling; fails if a profile is already being taken elsewhere in the process.
pub(super) fn start() -> Result<Running, String> {
    ProfilerGuardBuilder::default()
        .frequency(FREQUENCY_HZ)
        .blocklist(&BLOCKLIST)
        .build()
        .map(Running)
        .map_err(|e| e.to_string())
}

impl Running {
    /// Stops sampling and returns what was sampled.
    pub(super) fn finish(self) -> Result<Stacks, String> {
        let report = self
            .0
            .report()
            .build_unresolved()
            .map_err(|e| e.to_string())?;
        drop(self);
        let stacks = report
            .data
            .into_iter()
            .map(|(frames, count)| {
                let addrs = frames.frames.iter().map(|f| f.ip() as usize).collect();
                (addrs, count)
            })
            .collect();
        Ok(Stacks(stacks))
    }
}

/// The stacks as a gzipped pprof profile of CPU nanoseconds (one sample being 1/100 s), with
/// function names and lines when the binary has symbols, and the process's mappings.
pub(super) fn encode(Stacks(stacks): Stacks) -> Vec<u8> {
    let period_ns = 1e9 / f64::from(FREQUENCY_HZ);
    let mut in_handler = HashMap::new();
    let mut profile = StackProfile::default();
    for (addrs, count) in stacks {
        let interrupted = cut_signal_handler(&addrs, |addr| {
            *in_handler.entry(addr).or_insert_with(|| {
                super::symbol_names(addr)
                    .iter()
                    .any(|name| name.ends_with("perf_signal_handler"))
            })
        });
        // Root first, as pprof_util wants; the unwinder ends some stacks with a null frame, and
        // pprof_util takes every address for a return address, one past a call: not 0.
        let addrs = interrupted
            .iter()
            .rev()
            .copied()
            .filter(|&ip| ip != 0)
            .collect();
        let weight = count as f64 * period_ns;
        profile.push_stack(WeightedStack { addrs, weight }, None);
    }
    for mapping in mappings::MAPPINGS.iter().flatten() {
        profile.push_mapping(mapping.clone());
    }
    profile.to_pprof(("cpu", "nanoseconds"), ("cpu", "nanoseconds"), None)
}

/// The part of a stack (leaf first) below pprof-rs's signal handler: without the unwinder, the
/// handler and the kernel's signal trampoline that called it, so that a stack starts where its
/// thread was interrupted. A binary without symbols keeps them all: nothing says where they end.
fn cut_signal_handler(addrs: &[usize], in_handler: impl FnMut(usize) -> bool) -> &[usize] {
    match addrs.iter().copied().position(in_handler) {
        Some(handler) => addrs.get(handler + 2..).unwrap_or_default(),
        None => addrs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacks_start_where_the_thread_was_interrupted() {
        // unwinder, unwinder, handler, trampoline, interrupted function, its callers
        let stack = [1, 2, 9, 3, 4, 5, 6];
        assert_eq!(cut_signal_handler(&stack, |a| a == 9), &[4, 5, 6]);
        assert_eq!(cut_signal_handler(&stack, |_| false), &stack);
        assert_eq!(cut_signal_handler(&[1, 9], |a| a == 9), &[] as &[usize]);
    }
}
