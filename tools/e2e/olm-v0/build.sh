#!/usr/bin/env bash
# Builds OLM v0's own e2e suite (operator-lifecycle-manager's test/e2e, a Ginkgo suite, pinned by
# tools/e2e/olm-v0/go.mod) into
#   ${OLM_CACHE_DIR:-~/.cache/olm}/e2e-v0/<key>/bin
# and prints that folder on stdout; <key> is a digest of the wrapper module, the judge module
# (tools/e2e/judge), the image pieces' module (tools/e2e/oci, copied to <key>/src/oci, where the
# wrapper replaces it) and this script, so an unchanged tree finds its binaries and this is a no-op.
#
#   olm-v0-e2e.test   the suite (go test -c), unchanged
#   ginkgo            Ginkgo's command, which runs the suite in several processes
#   e2e-judge         judges a run against KNOWN.tsv (tools/e2e/judge)
#   olm-v0-images     pushes the images the suite's Pods run on a real node (images/): opm's
#                     image, from the two programs below, the mock extension API server's and a
#                     stand-in for -dummyImage
#   mock-extension-apiserver  the stand-in for upstream's mock extension API server (mockext/),
#                     static
#   copy-content      operator-lifecycle-manager's cmd/copy-content, static (what OLM's image
#                     gives an extractContent registry Pod)
#   opm               operator-registry's opm, at the version OLM's go.mod requires, static
#   grpc_health_probe grpc-health-probe, at the version operator-registry's go.mod requires
#                     (as operator-registry's image has it), static
#
# The suite reads its test data from its source (./testdata beside the tests), so the upstream
# module is copied to <key>/src/upstream and stays there; the suite runs from
# <key>/src/upstream/test/e2e.
set -euo pipefail

main() {
    local here cache module upstream_module upstream_version registry_module key dest bin products src upstream_dir started f
    here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
    cache="${OLM_CACHE_DIR:-$HOME/.cache/olm}"
    module="$here"
    upstream_module=github.com/operator-framework/operator-lifecycle-manager
    upstream_version=v0.46.0
    registry_module=github.com/operator-framework/operator-registry

    key="$(cd "$here" && find . ../judge ../oci -type f \( -name '*.go' -o -name 'go.mod' -o -name 'go.sum' \) -not -path './upstream/*' -print0 |
        LC_ALL=C sort -z | xargs -0 sha256sum | cat - build.sh | sha256sum | cut -c1-16)"
    dest="$cache/e2e-v0/$key"
    bin="$dest/bin"
    products=(olm-v0-e2e.test ginkgo e2e-judge olm-v0-images opm grpc_health_probe mock-extension-apiserver copy-content)

    complete() {
        local f
        for f in "${products[@]}"; do
            [[ -x "$bin/$f" ]] || return 1
        done
    }

    if complete; then
        echo "$bin"
        return 0
    fi

    # shellcheck source=tools/e2e/lib.sh
    source "$here/../lib.sh"
    go_setup "$dest" "OLM v0's e2e suite"

    if command -v flock >/dev/null 2>&1; then
        exec 9>"$dest/.build.lock"
        flock 9
        if complete; then
            echo "$bin"
            return 0
        fi
    fi

    started=$SECONDS
    src="$dest/src"
    rm -rf "$src"
    mkdir -p "$src"
    # The pinned module, fetched (and checked against go.sum's hash) by the module proxy's rules.
    upstream_dir="$(cd "$src" && GOFLAGS=-mod=mod go mod download -json "$upstream_module@$upstream_version" |
        sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
    [[ -d "$upstream_dir" ]] || { echo "error: go mod download gave no folder for $upstream_module@$upstream_version" >&2; return 1; }
    cp -r "$upstream_dir" "$src/upstream"
    chmod -R u+w "$src/upstream"
    cp "$module/go.mod" "$module/go.sum" "$module/tools.go" "$src/"
    cp -r "$module/images" "$src/images"
    cp -r "$module/mockext" "$src/mockext"
    cp -r "$here/../oci" "$src/oci"

    work="$(mktemp -d "$dest/.build.XXXXXX")"
    trap 'rm -rf "${work:-}"' EXIT
    (
        cd "$src"
        echo "==> operator-lifecycle-manager $upstream_version e2e suite" >&2
        go test -c -o "$work/olm-v0-e2e.test" "$upstream_module/test/e2e" >&2
        go build -o "$work/ginkgo" github.com/onsi/ginkgo/v2/ginkgo >&2
        # The version upstream's go.mod requires (the wrapper names it too); opm reports it.
        opm_version="$(go list -m -f '{{.Version}}' "$registry_module")"
        echo "==> opm $opm_version, grpc_health_probe and olm-v0-images" >&2
        # As operator-registry's Makefile builds opm, without cgo: `opm serve` reads file-based
        # catalogs only, and containers_image_openpgp keeps gpgme out.
        go build -trimpath -tags=json1,containers_image_openpgp -ldflags "-s -w \
            -X $registry_module/cmd/opm/version.opmVersion=$opm_version \
            -X $registry_module/cmd/opm/version.gitCommit=none" \
            -o "$work/opm" "$registry_module/cmd/opm" >&2
        go build -trimpath -ldflags "-s -w" -o "$work/grpc_health_probe" github.com/grpc-ecosystem/grpc-health-probe >&2
        go build -trimpath -o "$work/olm-v0-images" ./images >&2
        CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/mock-extension-apiserver" ./mockext >&2
        CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/copy-content" "$upstream_module/cmd/copy-content" >&2
    )
    (cd "$here/../judge" && go build -o "$work/e2e-judge" .) >&2
    mkdir -p "$bin"
    for f in "${products[@]}"; do
        mv -f "$work/$f" "$bin/$f"
    done
    echo "    built in $((SECONDS - started)) s" >&2
    echo "$bin"
}

main "$@"
