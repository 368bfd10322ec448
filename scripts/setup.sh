#!/usr/bin/env bash
# Installs everything olm's tests and `olm dev` need on a fresh Debian machine, and does nothing
# that is already done: the OCI registry and chromium (with chromedriver) from Debian, the Rust
# lint components, the parts of a real node (containerd, runc, CNI plugins, iptables), and the
# Go-built local control plane with kubectl (.ci/setup-controlplane.sh; cached under ~/.cache/olm),
# and cargo-fuzz with a nightly toolchain for scripts/fuzz.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: the OCI registry, the browser the catalog browser's tests drive, the
# parts of a real node (containerd, runc, the CNI plugins, iptables for kube-proxy), and busybox
# for the images of upstream's e2e suite.
missing=()
command -v docker-registry >/dev/null 2>&1 || missing+=(docker-registry)
command -v containerd >/dev/null 2>&1 || missing+=(containerd)
command -v runc >/dev/null 2>&1 || missing+=(runc)
[[ -x /usr/lib/cni/bridge ]] || missing+=(containernetworking-plugins)
command -v iptables >/dev/null 2>&1 || missing+=(iptables)
# The node's pause image is a static C program built on first use.
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
[[ -e /usr/lib/x86_64-linux-gnu/libc.a || -e /usr/lib/aarch64-linux-gnu/libc.a ]] || missing+=(libc6-dev)
# Upstream's e2e suite runs busybox in its test bundles: tools/e2e pushes an image of this one.
# It must be the static build (ldd fails on a static program): the image holds nothing else.
if [[ ! -x /bin/busybox ]] || ldd /bin/busybox >/dev/null 2>&1; then missing+=(busybox-static); fi
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
if [[ ${#missing[@]} -gt 0 ]]; then
    sudo_cmd=()
    [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
    echo "setup: installing the Debian packages ${missing[*]}"
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}"
fi

if command -v rustup >/dev/null 2>&1; then
    rustup component add rustfmt clippy >/dev/null 2>&1 || true
fi

# Fuzzing (scripts/fuzz.sh): cargo-fuzz at a pinned version, in its own root so nothing else
# on the machine changes, and the nightly toolchain its sanitizer flags need.
CARGO_FUZZ_VERSION=0.13.2
cargo_fuzz_root="$HOME/.cache/olm/cargo-fuzz"
if command -v rustup >/dev/null 2>&1 && ! rustup toolchain list | grep -q '^nightly'; then
    echo "setup: installing the nightly Rust toolchain"
    rustup toolchain install nightly --profile minimal >/dev/null
fi
if ! "$cargo_fuzz_root/bin/cargo-fuzz" --version 2>/dev/null | grep -qx "cargo-fuzz $CARGO_FUZZ_VERSION"; then
    echo "setup: installing cargo-fuzz $CARGO_FUZZ_VERSION into $cargo_fuzz_root"
    # Its own target dir, so the install neither reuses nor leaves behind the project's build.
    CARGO_TARGET_DIR="$HOME/.cache/olm/cargo-fuzz-build" \
        cargo install --quiet --locked --root "$cargo_fuzz_root" --version "$CARGO_FUZZ_VERSION" cargo-fuzz
    rm -rf "$HOME/.cache/olm/cargo-fuzz-build"
fi

bash .ci/setup-controlplane.sh
