#!/usr/bin/env bash
# olm against opm, side by side on the same machine: `validate`, `render -o json` and
# `render -o yaml` on a real catalog (the community catalog of ../shared/data, one directory per
# package) and on ten renamed copies of it (a catalog ten times as large), each run RUNS times
# (default 5). Prints the median wall time and peak RSS of each tool and their ratios as a
# Markdown table (the one in docs/catalogs.md).
#
#   scripts/bench-opm.sh [RUNS]
#
# opm v1.74.0 is built from Go modules by tools/oracles/build.sh; olm is the release build.
# Outputs go to /dev/null; both tools must succeed on every run.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
runs="${1:-5}"
data="${OLM_DATA_DIR:-$repo/../shared/data}"
work="${OLM_CACHE_DIR:-$HOME/.cache/olm}/bench-opm"
mkdir -p "$work"

opm="$(tools/oracles/build.sh)/opm"
cargo build --release --locked -q -p olm
olm="$repo/target/release/olm"

# The real catalog, and ten copies of it whose package names (and so every name derived from
# them) carry a suffix, so that the copies validate together.
real="$data/catalogs/community-v4.21"
big="$work/community-x10"
if [[ ! -f "$big/.complete" ]]; then
    rm -rf "$big"
    python3 - "$real" "$big" <<'EOF'
import os, re, shutil, sys
src, dst = sys.argv[1], sys.argv[2]
for n in range(10):
    for pkg in sorted(os.listdir(src)):
        sdir = os.path.join(src, pkg)
        if not os.path.isdir(sdir):
            continue
        ddir = os.path.join(dst, pkg if n == 0 else f"{pkg}-copy{n}")
        os.makedirs(ddir, exist_ok=True)
        for root, _, files in os.walk(sdir):
            for f in files:
                text = open(os.path.join(root, f), encoding="utf-8").read()
                # The package names the directory's blobs belong to (not always its name).
                for name in sorted(set(re.findall(r"(?m)^package: (\S+)$", text))) if n else []:
                    # Whole words only, so that a name that merely starts with this one (another
                    # package's) is left alone.
                    text = re.sub(r"(?<![A-Za-z0-9_.-])" + re.escape(name) + r"(?![A-Za-z0-9_-])", f"{name}-copy{n}", text)
                rel = os.path.relpath(os.path.join(root, f), sdir)
                os.makedirs(os.path.dirname(os.path.join(ddir, rel)), exist_ok=True)
                open(os.path.join(ddir, rel), "w", encoding="utf-8").write(text)
open(os.path.join(dst, ".complete"), "w").close()
EOF
    # The marker is not catalog content.
    echo ".complete" >"$big/.indexignore"
fi

# One measurement: "<seconds> <peak KiB>" of a command whose output is discarded.
measure() {
    local out
    if ! /usr/bin/time -o "$work/time" -f '%e %M' "$@" >/dev/null 2>"$work/stderr"; then
        echo "bench-opm: '$*' failed:" >&2
        tail -n 5 "$work/stderr" >&2
        exit 1
    fi
    out="$(tail -n 1 "$work/time")"
    if ! [[ $out =~ ^[0-9.]+\ [0-9]+$ ]]; then
        echo "bench-opm: '$*' failed" >&2
        exit 1
    fi
    echo "$out"
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf '| operation | catalog | opm | olm | olm faster | opm peak RSS | olm peak RSS | olm smaller |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for cat in "$real" "$big"; do
    size="$(du -sm --exclude=.complete "$cat" | cut -f1) MB"
    name="$(basename "$cat") ($size)"
    for op in validate json yaml; do
        case $op in
            validate) args=(validate "$cat") ;;
            *) args=(render "$cat" -o "$op") ;;
        esac
        : >"$work/opm.t"; : >"$work/olm.t"
        for _ in $(seq "$runs"); do
            measure "$opm" "${args[@]}" >>"$work/opm.t"
            measure "$olm" catalog "${args[@]}" >>"$work/olm.t"
        done
        ot="$(cut -d' ' -f1 "$work/opm.t" | median)"; om="$(cut -d' ' -f2 "$work/opm.t" | median)"
        lt="$(cut -d' ' -f1 "$work/olm.t" | median)"; lm="$(cut -d' ' -f2 "$work/olm.t" | median)"
        label=$([[ $op == validate ]] && echo validate || echo "render -o $op")
        awk -v l="$label" -v n="$name" -v ot="$ot" -v lt="$lt" -v om="$om" -v lm="$lm" 'BEGIN {
            lt1 = (lt > 0 ? lt : 0.005)
            printf "| %s | %s | %.2f s | %.2f s | %.1f× | %.0f MB | %.0f MB | %.1f× |\n",
                l, n, ot, lt, ot / lt1, om / 1024, lm / 1024, om / lm }'
    done
done
