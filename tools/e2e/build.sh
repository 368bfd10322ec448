#!/usr/bin/env bash
# Builds operator-controller's own e2e suite (a Godog suite, pinned by
# tools/e2e/operator-controller/go.mod) into
#   ${OLM_CACHE_DIR:-~/.cache/olm}/e2e/<key>/bin
# and prints that folder on stdout; <key> is a digest of the wrapper module, the judge module
# (tools/e2e/judge), the image pieces' module (tools/e2e/oci) and this script, so an unchanged
# tree finds its binaries and this is a no-op.
#
#   oc-e2e.test       the suite, with tools/e2e/operator-controller/devregistry/registry.go in place
#                     of upstream's test/internal/registry (it pushes to the environment's registry)
#   e2e-judge         checks a run against KNOWN.tsv and writes the docs' results table
#                     (tools/e2e/judge, copied to <key>/src/judge, where the runner imports it)
#   e2e-images        pushes the images the suite's bundles run (busybox), for the real node
#                     (with tools/e2e/oci, copied to <key>/src/oci, what it shares with OLM v0's)
#
# The suite reads its feature files and test data from its source, so the upstream module is
# copied to <key>/src/upstream (Go will not overlay files in the module cache) and stays there;
# the binaries are built without -trimpath so that the paths they record are that copy's.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${OLM_CACHE_DIR:-$HOME/.cache/olm}"
module="$here/operator-controller"
upstream_module=github.com/operator-framework/operator-controller
upstream_version=v1.11.0

key="$(cd "$here" && find operator-controller judge oci -type f \( -name '*.go' -o -name 'go.mod' -o -name 'go.sum' \) -print0 |
    LC_ALL=C sort -z | xargs -0 sha256sum | cat - build.sh | sha256sum | cut -c1-16)"
dest="$cache/e2e/$key"
bin="$dest/bin"
products=(oc-e2e.test e2e-judge e2e-images)

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

# shellcheck source=tools/e2e/lib.sh
source "$here/lib.sh"
go_setup "$dest" "upstream's e2e suite"

if command -v flock >/dev/null 2>&1; then
    exec 9>"$dest/.build.lock"
    flock 9
    if complete; then
        echo "$bin"
        exit 0
    fi
fi

started=$SECONDS
src="$dest/src"
rm -rf "$src"
mkdir -p "$src"
# The pinned module, fetched (and checked against go.sum's hash) by the module proxy's rules.
upstream_dir="$(cd "$src" && GOFLAGS=-mod=mod go mod download -json "$upstream_module@$upstream_version" |
    sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
[[ -d "$upstream_dir" ]] || { echo "error: go mod download gave no folder for $upstream_module@$upstream_version" >&2; exit 1; }
cp -r "$upstream_dir" "$src/upstream"
chmod -R u+w "$src/upstream"
cp -r "$module/." "$src/"
cp -r "$here/judge" "$src/judge"
cp -r "$here/oci" "$src/oci"
printf '{"Replace":{"%s":"%s"}}\n' "$src/upstream/test/internal/registry/registry.go" \
    "$src/devregistry/registry.go" >"$src/devregistry.json"

work="$(mktemp -d "$dest/.build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
(
    cd "$src"
    echo "==> operator-controller $upstream_version e2e suite" >&2
    go test -c -overlay devregistry.json -o "$work/oc-e2e.test" . >&2
    (cd judge && go build -o "$work/e2e-judge" .) >&2
    go build -o "$work/e2e-images" ./images >&2
)
mkdir -p "$bin"
for f in "${products[@]}"; do
    mv -f "$work/$f" "$bin/$f"
done
echo "    built in $((SECONDS - started)) s" >&2
echo "$bin"
