#!/usr/bin/env bash
# Builds the test oracles from the Go wrapper modules beside this script into
#   ${OLM_CACHE_DIR:-~/.cache/olm}/oracles/<key>/bin
# and prints that folder on stdout. <key> is a digest of the wrapper modules' files, so a changed
# pin or wrapper gives a fresh folder and an unchanged tree finds its binaries: then this is a no-op.
#
#   oc-render      operator-controller v1.11.0's registry+v1 renderer (render/)
#   oc-crdupgrade  operator-controller v1.11.0's CRD upgrade-safety preflight (crdupgrade/)
#   oc-apivalidate operator-framework/api v0.45.0's CSV and bundle validators (apivalidate/)
#   oc-optional    operator-framework/api v0.45.0's optional validators, as operator-sdk runs them (optional/)
#   opm            operator-registry v1.74.0's opm
#   grpcurl        fullstorydev/grpcurl v1.9.3, a gRPC client that reads services by reflection (grpcurl/)
#   kubectl-operator  operator-framework/kubectl-operator v0.6.0, the `kubectl operator` plugin
#                  that drives OLM v0 (kubectl-operator/)
#
# `build.sh NAME…` builds only the named oracles (into the same folder), e.g. the one a test runs.
#
# Go's module and build caches are the ones tools/controlplane/build.sh uses, so shared
# dependencies are downloaded and compiled once. Binaries are build outputs, never committed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${OLM_CACHE_DIR:-$HOME/.cache/olm}"

# Kept in step with tools/oracles/opm/go.mod: opm reports it as its version.
opm_version="v1.74.0"
# Kept in step with tools/oracles/kubectl-operator/go.mod: the plugin's `version` prints them.
kubectl_operator_version="v0.6.0"
kubectl_operator_commit="ddb2132976fa3e0ca5da63915c29c77b9240da70"

key="$(cd "$here" && find operator-controller opm grpcurl kubectl-operator -type f \( -name '*.go' -o -name 'go.mod' -o -name 'go.sum' \) -print0 |
    LC_ALL=C sort -z | xargs -0 sha256sum | cat - build.sh | sha256sum | cut -c1-16)"
dest="$cache/oracles/$key"
bin="$dest/bin"
all_products=(oc-render oc-crdupgrade oc-apivalidate oc-optional opm grpcurl kubectl-operator)
# `build.sh PRODUCT…` builds only those (a test that needs one oracle does not wait for all).
if [[ $# -gt 0 ]]; then
    for p in "$@"; do
        [[ " ${all_products[*]} " == *" $p "* ]] || { echo "error: no oracle named $p (${all_products[*]})" >&2; exit 2; }
    done
    products=("$@")
else
    products=("${all_products[@]}")
fi

complete() {
    local f
    for f in "${products[@]}"; do
        [[ -x "$bin/$f" ]] || return 1
    done
}

if complete; then
    echo "$bin"
    exit 0
fi

if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
    export PATH="/usr/local/go/bin:$PATH"
fi
if ! command -v go >/dev/null 2>&1; then
    echo "error: the Go toolchain (go >= 1.26) is needed to build the test oracles, and 'go' is not on PATH." >&2
    exit 1
fi

export GOMODCACHE="$cache/go/mod"
export GOCACHE="$cache/go/build"
export GOTOOLCHAIN=local
export CGO_ENABLED=0
# Two cores are easily swamped: set OLM_GO_PARALLEL=1 when another big build runs.
export GOFLAGS="-mod=readonly -buildvcs=false -p=${OLM_GO_PARALLEL:-2}"
mkdir -p "$GOMODCACHE" "$GOCACHE" "$dest"

if command -v flock >/dev/null 2>&1; then
    exec 9>"$dest/.build.lock"
    flock 9
    if complete; then
        echo "$bin"
        exit 0
    fi
fi

work="$(mktemp -d "$dest/.build.XXXXXX")"
trap 'rm -rf "$work"' EXIT

step() {
    local name="$1"
    shift
    local t0=$SECONDS
    echo "==> $name" >&2
    "$@" >&2
    echo "    $name took $((SECONDS - t0)) s" >&2
}

build_oc() {
    (cd "$here/operator-controller" && go build -trimpath -ldflags "-s -w" -o "$work/oc-render" ./render &&
        go build -trimpath -ldflags "-s -w" -o "$work/oc-crdupgrade" ./crdupgrade &&
        go build -trimpath -ldflags "-s -w" -o "$work/oc-apivalidate" ./apivalidate &&
        go build -trimpath -ldflags "-s -w" -o "$work/oc-optional" ./optional)
}

# As upstream's Makefile builds it, minus the sqlite C code: the oracles only read file-based
# catalogs, and json1,containers_image_openpgp keep the build free of cgo and gpgme.
build_opm() {
    local pkg=github.com/operator-framework/operator-registry
    (cd "$here/opm" && go build -trimpath -tags=json1,containers_image_openpgp \
        -ldflags "-s -w -X $pkg/cmd/opm/version.opmVersion=$opm_version -X $pkg/cmd/opm/version.gitCommit=none" \
        -o "$work/opm" $pkg/cmd/opm)
}

build_grpcurl() {
    (cd "$here/grpcurl" && go build -trimpath -ldflags "-s -w" -o "$work/grpcurl" github.com/fullstorydev/grpcurl/cmd/grpcurl)
}

# As upstream's Makefile stamps it (the commit is the tag's), without cgo: nothing the plugin
# does needs it.
build_kubectl_operator() {
    local pkg=github.com/operator-framework/kubectl-operator
    (cd "$here/kubectl-operator" && go build -trimpath \
        -ldflags "-s -w -X $pkg/internal/version.GitVersion=$kubectl_operator_version -X $pkg/internal/version.GitCommit=$kubectl_operator_commit -X $pkg/internal/version.GitTreeState=clean" \
        -o "$work/kubectl-operator" $pkg)
}

wanted() {
    local p
    for p in "${products[@]}"; do
        [[ $p == "$1" ]] && return 0
    done
    return 1
}

if wanted oc-render || wanted oc-crdupgrade || wanted oc-apivalidate || wanted oc-optional; then
    step "operator-controller oracles" build_oc
fi
if wanted opm; then step "opm $opm_version" build_opm; fi
if wanted grpcurl; then step "grpcurl" build_grpcurl; fi
if wanted kubectl-operator; then step "kubectl-operator $kubectl_operator_version" build_kubectl_operator; fi

mkdir -p "$bin"
for f in "${all_products[@]}"; do
    if [[ -e "$work/$f" ]]; then mv -f "$work/$f" "$bin/$f"; fi
done
echo "$bin"
