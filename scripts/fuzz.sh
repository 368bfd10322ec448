#!/usr/bin/env bash
# Runs every fuzz target under fuzz/ for SECONDS each (default 30) against its corpus in
# fuzz/corpus/<target>/, and fails naming the artifact if any input crashes, hangs or runs out
# of memory. New inputs go to a temporary directory, so the checkout stays clean; to grow the
# committed corpus, see docs/fuzzing.md.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Needs cargo-fuzz and the nightly toolchain (scripts/setup.sh installs both). The build is
# optimised with debug assertions on and is kept under ~/.cache/olm/fuzz-target (override with
# OLM_FUZZ_TARGET_DIR), so a second run only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

secs="${1:-30}"
[[ $# -gt 0 ]] && shift
if ! [[ $secs =~ ^[0-9]+$ ]]; then
    echo "fuzz: SECONDS must be a whole number, not '$secs'" >&2
    exit 2
fi

export PATH="$HOME/.cache/olm/cargo-fuzz/bin:$PATH"
if ! command -v cargo-fuzz >/dev/null 2>&1; then
    echo "fuzz: cargo-fuzz is not installed; run scripts/setup.sh" >&2
    exit 2
fi
target_dir="${OLM_FUZZ_TARGET_DIR:-$HOME/.cache/olm/fuzz-target}"
# The fuzz build has its own flags: the project's incremental setting would only take disk.
export CARGO_INCREMENTAL=0

targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
    mapfile -t targets < <(cd fuzz && cargo +nightly fuzz list)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
artifacts="${OLM_FUZZ_ARTIFACTS:-$repo/fuzz/artifacts}"
mkdir -p "$artifacts"

build_start=$SECONDS
if ! (cd fuzz && cargo +nightly fuzz build -O --debug-assertions --target-dir "$target_dir") \
    >"$work/build.log" 2>&1; then
    grep -Ev '^\s*(Compiling|Downloaded|Downloading) ' "$work/build.log" | tail -n 60 >&2
    echo "fuzz: the fuzz targets do not build" >&2
    exit 1
fi
echo "fuzz: built in $((SECONDS - build_start)) s"

fail=0
failed=()
for t in "${targets[@]}"; do
    bin="$target_dir/x86_64-unknown-linux-gnu/release/$t"
    if [[ ! -x $bin ]]; then
        echo "fuzz: $t: no binary at $bin" >&2
        fail=1
        failed+=("$t")
        continue
    fi
    mkdir -p "$work/$t" "fuzz/corpus/$t"
    log="$work/$t.log"
    start=$SECONDS
    set +e
    # New inputs land in the first directory (the temporary one); the committed corpus is read.
    # libFuzzer stops itself; the outer limit only guards against a run stuck outside its timer.
    timeout --kill-after=10 "$((secs + 120))" "$bin" "$work/$t" "fuzz/corpus/$t" \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$artifacts/$t-" >"$log" 2>&1
    rc=$?
    set -e
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -n1 || true)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n1 | grep -o '[0-9]*' || true)
    printf 'fuzz: %-14s %10s executions in %3d s (coverage %s, %s inputs found)\n' \
        "$t" "${execs:-?}" "$((SECONDS - start))" "${cov:-?}" "$(find "$work/$t" -type f | wc -l)"
    if [[ $rc -ne 0 ]]; then
        fail=1
        artifact=$(grep -o 'Test unit written to [^ ]*' "$log" | tail -n1 | sed 's/Test unit written to //')
        echo "fuzz: $t FAILED (exit $rc); input: ${artifact:-none written}" >&2
        # The panic message (without the backtrace) or the sanitizer's summary.
        sed -n '/panicked at/,/^stack backtrace/p' "$log" | grep -v '^stack backtrace' | head -n 30 >&2 || true
        grep -E '^(==[0-9]+== ?ERROR|SUMMARY): ' "$log" | head -n 5 >&2 || true
        failed+=("$t")
    fi
done
passed=$((${#targets[@]} - ${#failed[@]}))
if [[ ${#failed[@]} -ne 0 ]]; then
    echo "fuzz: failed: ${failed[*]}; reproduce with $target_dir/x86_64-unknown-linux-gnu/release/TARGET ARTIFACT" >&2
fi
echo "fuzz: $passed passed, ${#failed[@]} failed"
exit "$fail"
