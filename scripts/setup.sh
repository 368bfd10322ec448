#!/usr/bin/env bash
# Installs everything olm's tests and `olm dev` need on a fresh Debian machine, and does nothing
# that is already done: Debian packages (the OCI registry, kubectl if absent), the Rust lint
# components, and the Go-built local control plane (cached under ~/.cache/olm).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v docker-registry >/dev/null 2>&1 || need_apt+=(docker-registry)
command -v kubectl >/dev/null 2>&1 || need_apt+=(kubernetes-client)
if ((${#need_apt[@]})); then
    sudo_cmd=()
    [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
    echo "setup: installing Debian packages: ${need_apt[*]}"
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${need_apt[@]}"
fi

if command -v rustup >/dev/null 2>&1; then
    rustup component add rustfmt clippy >/dev/null 2>&1 || true
fi

tools/controlplane/build.sh
