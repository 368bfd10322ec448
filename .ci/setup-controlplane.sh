#!/usr/bin/env bash
# Prepares this machine to run the local control plane used by the integration tests and
# `olm dev`, and builds it: safe to run any number of times, and quick when everything is there.
#
# - Go >= 1.26 (the machine image ships it under /usr/local/go; Debian's golang-go is too old),
# - kubectl (tests drive the generated kubeconfig with it; Debian package kubernetes-client),
# - the control plane binaries, built by tools/controlplane/build.sh into
#   ~/.cache/olm/controlplane/<version>/bin (a no-op when already built).
set -euo pipefail
cd "$(dirname "$0")/.."

# Non-login shells (CI) may not have Go's install folder on PATH.
for dir in /usr/local/go/bin "$HOME/go/bin" /usr/lib/go/bin; do
    if [[ -x "$dir/go" ]] && ! command -v go >/dev/null 2>&1; then
        export PATH="$dir:$PATH"
    fi
done
if ! command -v go >/dev/null 2>&1; then
    echo "setup-controlplane: error: Go >= 1.26 is required to build the test control plane and was not found" >&2
    echo "  (looked on PATH and in /usr/local/go/bin). Install Go 1.26 and rerun." >&2
    exit 1
fi
go_version="$(go env GOVERSION)"   # e.g. go1.26.8
minor="$(sed -E 's/^go1\.([0-9]+).*/\1/' <<<"$go_version")"
if [[ ! "$minor" =~ ^[0-9]+$ ]] || ((minor < 26)); then
    echo "setup-controlplane: error: $go_version is too old; kwok v0.8.0 needs Go >= 1.26" >&2
    exit 1
fi

if ! command -v kubectl >/dev/null 2>&1; then
    sudo_cmd=()
    [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
    echo "setup-controlplane: installing kubectl (Debian package kubernetes-client)"
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq kubernetes-client
fi

start=$SECONDS
bash tools/controlplane/build.sh
echo "setup-controlplane: done in $((SECONDS - start)) s"
