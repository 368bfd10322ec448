#!/usr/bin/env bash
# Installs everything olm's tests and `olm dev` need on a fresh Debian machine, and does nothing
# that is already done: the OCI registry from Debian, the Rust lint components, and the
# Go-built local control plane with kubectl (.ci/setup-controlplane.sh; cached under ~/.cache/olm).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v docker-registry >/dev/null 2>&1; then
    sudo_cmd=()
    [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
    echo "setup: installing the Debian package docker-registry"
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq docker-registry
fi

if command -v rustup >/dev/null 2>&1; then
    rustup component add rustfmt clippy >/dev/null 2>&1 || true
fi

bash .ci/setup-controlplane.sh
