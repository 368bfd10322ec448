#!/usr/bin/env bash
# Remakes the test expectations that come from upstream tools (see README.md beside this script):
#
#   crates/olm-bundle/tests/golden/data-bundles.txt       operator-controller's registry+v1 renderer
#   crates/olm-bundle/tests/golden/crd-upgrade-pairs.txt  operator-controller's CRD upgrade preflight
#   crates/olm-bundle/tests/golden/crd-upgrade-mutations.txt  the same preflight on one-change mutations
#   crates/olm-bundle/tests/golden/crd-upgrade-upstream.txt   the same preflight on upstream's own test vectors
#   crates/olm-bundle/tests/golden/api-validation.txt     operator-framework/api's authoring checks
#   crates/olm-bundle/tests/data/optional/{data,edge}-bundles.txt  operator-framework/api's optional validators
#   crates/olm-graph/tests/golden/render-graph/           opm alpha render-graph (README.md there)
#   crates/olm-catalog/tests/golden/load-errors.txt       opm's load errors on a corpus of broken catalog files
#   crates/olm-registry/tests/golden/community-v4.21.tsv  opm serve's registry gRPC answers, through grpcurl
#
# Usage: tools/oracles/regen.sh [OUT]   (OUT defaults to the repository; check.sh passes a temp dir)
# Builds the oracles first (tools/oracles/build.sh, a no-op when built). Needs Go, not cargo.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${1:-$repo}"
data="${OLM_DATA_DIR:-$repo/../shared/data}"
bin="$("$here/build.sh")"

remake='Remake: tools/oracles/regen.sh; check: tools/oracles/check.sh (tools/oracles/README.md).'

golden="$out/crates/olm-bundle/tests/golden"
mkdir -p "$golden"
{
    echo "# Made by operator-controller v1.11.0's own registry+v1 renderer (tools/oracles/operator-controller/render),"
    echo "# not by olm, from every bundle in shared/data/bundles. $remake"
    "$bin/oc-render" -bundles "$data/bundles"
} >"$golden/data-bundles.txt.tmp"
mv "$golden/data-bundles.txt.tmp" "$golden/data-bundles.txt"

{
    echo "# Made by operator-controller v1.11.0's CRD upgrade-safety preflight (tools/oracles/operator-controller/crdupgrade),"
    echo "# not by olm, from consecutive bundle versions in shared/data/bundles, both ways. Problems sorted (upstream's order is random)."
    echo "# $remake"
    "$bin/oc-crdupgrade" -bundles "$data/bundles"
} >"$golden/crd-upgrade-pairs.txt.tmp"
mv "$golden/crd-upgrade-pairs.txt.tmp" "$golden/crd-upgrade-pairs.txt"

{
    echo "# Made by operator-controller v1.11.0's CRD upgrade-safety preflight (tools/oracles/operator-controller/crdupgrade, -mutations),"
    echo "# not by olm: one-change JSON Patch mutations of one v1 CRD of each package's newest bundle in shared/data/bundles, each"
    echo "# checked as an upgrade (up: original installed, mutated applied) and back (down). Problems sorted (upstream's order is random)."
    echo "# $remake"
    "$bin/oc-crdupgrade" -bundles "$data/bundles" -mutations
} >"$golden/crd-upgrade-mutations.txt.tmp"
mv "$golden/crd-upgrade-mutations.txt.tmp" "$golden/crd-upgrade-mutations.txt"

{
    echo "# Made by operator-controller v1.11.0's CRD upgrade-safety preflight (tools/oracles/operator-controller/crdupgrade, -cases),"
    echo "# not by olm: upstream's own test vectors (operator-controller's crdupgradesafety tests, crdify's validation tests) listed in"
    echo "# crates/olm-bundle/tests/data/crdupgradesafety/cases.json. Problems sorted (upstream's order is random)."
    echo "# $remake"
    "$bin/oc-crdupgrade" -cases "$repo/crates/olm-bundle/tests/data/crdupgradesafety/cases.json"
} >"$golden/crd-upgrade-upstream.txt.tmp"
mv "$golden/crd-upgrade-upstream.txt.tmp" "$golden/crd-upgrade-upstream.txt"

{
    echo "# Made by operator-framework/api v0.45.0's ClusterServiceVersion and bundle validators (tools/oracles/operator-controller/apivalidate),"
    echo "# not by olm, from every bundle in shared/data/bundles. Findings sorted. $remake"
    "$bin/oc-apivalidate" -bundles "$data/bundles"
} >"$golden/api-validation.txt.tmp"
mv "$golden/api-validation.txt.tmp" "$golden/api-validation.txt"

# The optional validators (operator-sdk's --select-optional), on the data bundles and on the
# hand-made bundles that reach the paths no data bundle does.
optional="$out/crates/olm-bundle/tests/data/optional"
mkdir -p "$optional"
optional_table() {
    local from="$1" what="$2" file="$3"
    {
        echo "# Made by operator-framework/api v0.45.0's optional validators (tools/oracles/operator-controller/optional), not by olm, from $what."
        echo "# Each case is '== <package>/<version> <validator> [<optional values>]', then its findings as operator-sdk prints them."
        echo "# Channels are read from metadata/annotations.yaml; Go map order is sorted. $remake"
        "$bin/oc-optional" -table "$from"
    } >"$optional/$file.tmp"
    mv "$optional/$file.tmp" "$optional/$file"
}
optional_table "$data/bundles" "every bundle in shared/data/bundles" data-bundles.txt
optional_table "$repo/crates/olm-bundle/tests/data/optional/bundles" "the bundles in crates/olm-bundle/tests/data/optional/bundles" edge-bundles.txt

# opm alpha render-graph: the graph test's fixture with each option, the whole data catalog, and
# each package alone with OLM v0 semantics (on several packages at once, opm's linkStyle numbers
# change from run to run; one package at a time they are stable).
graphs="$out/crates/olm-graph/tests/golden/render-graph"
fixture="$repo/crates/olm-graph/tests/golden/render-graph/fixture"
catalog="$data/catalogs/community-v4.21"
mkdir -p "$graphs/v0"
"$bin/opm" alpha render-graph "$fixture" >"$graphs/fixture.mmd"
"$bin/opm" alpha render-graph --draw-v0-semantics "$fixture" >"$graphs/fixture.v0.mmd"
"$bin/opm" alpha render-graph --minimum-edge foo.v0.2.0 "$fixture" >"$graphs/fixture.minimum-edge.mmd"
"$bin/opm" alpha render-graph --package-name bar "$fixture" >"$graphs/fixture.package-bar.mmd"
"$bin/opm" alpha render-graph "$catalog" >"$graphs/community-v4.21.mmd"
one="$(mktemp -d)"
trap 'rm -rf "$one"' EXIT
for dir in "$catalog"/*/; do
    pkg="$(basename "$dir")"
    rm -rf "${one:?}"/*
    cp -r "$dir" "$one/$pkg"
    "$bin/opm" alpha render-graph --draw-v0-semantics "$one" >"$graphs/v0/$pkg.mmd"
done

# opm's load errors: every file of the catalog load-error corpus, alone in a folder. `ok` when
# `opm render` loads it (it may still fail validation), else the message `opm validate` prints
# (logrus quotes it as Go's %q does).
corpus="$repo/crates/olm-catalog/tests/data/load-errors"
errors="$out/crates/olm-catalog/tests/golden/load-errors.txt"
mkdir -p "$(dirname "$errors")"
{
    echo "# Made by opm v1.74.0 (tools/oracles/opm), not by olm, from each file of crates/olm-catalog/tests/data/load-errors"
    echo "# alone in a folder: ok when opm render loads it, else the message opm validate prints, Go-quoted. $remake"
    for f in "$corpus"/*; do
        rm -rf "${one:?}"/*
        cp "$f" "$one/"
        if "$bin/opm" render "$one" -o json >/dev/null 2>&1; then
            msg=ok
        else
            msg="$({ "$bin/opm" validate "$one" 2>&1 || true; } | sed -n 's/.* level=fatal msg=//p')"
        fi
        printf '%s\t%s\n' "$(basename "$f")" "$msg"
    done
} >"$errors.tmp"
mv "$errors.tmp" "$errors"

registry="$out/crates/olm-registry/tests/golden"
mkdir -p "$registry"
{
    echo "# Made by opm v1.74.0's opm serve (tools/oracles/opm) through grpcurl v1.9.3, not by olm, from shared/data/catalogs/community-v4.21:"
    echo "# METHOD, request, sha256 of the sorted key-sorted response messages or the error message; several joined by | where"
    echo "# opm answers in Go map order (tools/oracles/registry-golden.sh). $remake"
    "$here/registry-golden.sh" "$bin" "$data/catalogs/community-v4.21"
} >"$registry/community-v4.21.tsv.tmp"
mv "$registry/community-v4.21.tsv.tmp" "$registry/community-v4.21.tsv"
