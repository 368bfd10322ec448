#!/usr/bin/env bash
# Builds the local test control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# kwok) and a real node's kubelet, kube-proxy and CoreDNS from the Go wrapper modules beside this script into
#   ${OLM_CACHE_DIR:-~/.cache/olm}/controlplane/<VERSION>/bin
# and does nothing when every binary for that version is already there. The binaries are build outputs
# and never belong in the work tree.
#
# A cold build takes a long time on a small machine (all of Kubernetes is compiled); Go's module and
# build caches live under the same cache folder so that a rebuild (for example after a version bump
# of one component) only recompiles what changed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="$(tr -d '[:space:]' <"$here/VERSION")"
cache="${OLM_CACHE_DIR:-$HOME/.cache/olm}"
dest="$cache/controlplane/$version"
bin="$dest/bin"

# Kept in step with go.mod of the kube wrapper: the binaries report this as their version.
kube_version="v1.35.8"
kube_major="1"
kube_minor="35"

binaries=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok kubelet kube-proxy coredns)
products=("${binaries[@]}" kwok-stages.yaml)

complete() {
    local f
    for f in "${products[@]}"; do
        [[ -s "$bin/$f" ]] || return 1
    done
}

if complete; then
    echo "control plane $version already built in $bin"
    exit 0
fi

# Non-login shells (CI) may lack Go's usual install folder on PATH.
if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
    export PATH="/usr/local/go/bin:$PATH"
fi
if ! command -v go >/dev/null 2>&1; then
    echo "error: the Go toolchain (go >= 1.26) is needed to build the test control plane, and 'go' is not on PATH." >&2
    echo "       Install Go (for example from the Go download page or your distribution) and rerun $0." >&2
    exit 1
fi

export GOMODCACHE="$cache/go/mod"
export GOCACHE="$cache/go/build"
# Fail fast on a go line the local toolchain cannot satisfy instead of fetching another toolchain.
export GOTOOLCHAIN=local
export CGO_ENABLED=0
export GOFLAGS="-mod=readonly -buildvcs=false"
mkdir -p "$GOMODCACHE" "$GOCACHE" "$dest"

# Two builds at once (say, two terminals, or CI steps in parallel) would each take many minutes;
# the second waits for the first and then finds everything built.
if command -v flock >/dev/null 2>&1; then
    exec 9>"$dest/.build.lock"
    flock 9
    if complete; then
        echo "control plane $version already built in $bin"
        exit 0
    fi
fi

# Build into a scratch folder and move the results in at the end, so that an interrupted build never
# leaves a half-filled bin folder that the next run would mistake for a finished one.
work="$(mktemp -d "$dest/.build.XXXXXX")"
trap 'rm -rf "$work"' EXIT

started=$SECONDS
step() {
    local name="$1"
    shift
    local t0=$SECONDS
    echo "==> $name"
    "$@"
    echo "    $name took $((SECONDS - t0)) s"
}

stamp=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    stamp+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=$kube_major -X $pkg.gitMinor=$kube_minor"
    stamp+=" -X $pkg.gitTreeState=clean"
done

build_kube() {
    (cd "$here/kube" && go build -trimpath -tags selinux,notest -ldflags "-s -w$stamp" -o "$work/" \
        k8s.io/kubernetes/cmd/kube-apiserver \
        k8s.io/kubernetes/cmd/kube-controller-manager \
        k8s.io/kubernetes/cmd/kube-scheduler \
        k8s.io/kubernetes/cmd/kubelet \
        k8s.io/kubernetes/cmd/kube-proxy)
}

build_etcd() {
    (cd "$here/etcd" && go build -trimpath -ldflags "-s -w" -o "$work/etcd" go.etcd.io/etcd/server/v3)
}

build_coredns() {
    (cd "$here/coredns" && go build -trimpath -ldflags "-s -w" -o "$work/coredns" github.com/coredns/coredns)
}

build_kwok() {
    (cd "$here/kwok" && go build -trimpath -ldflags "-s -w" -o "$work/kwok" sigs.k8s.io/kwok/cmd/kwok)
}

# The standalone kwok binary has no built-in behaviour: it needs Stage objects. These are the "fast"
# defaults that kwokctl uses, taken from the same module version so they always match the binary.
kwok_stages() {
    local dir
    dir="$(cd "$here/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
    local f first=1
    for f in \
        kustomize/stage/node/fast/node-initialize.yaml \
        kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
        kustomize/stage/pod/fast/pod-ready.yaml \
        kustomize/stage/pod/fast/pod-complete.yaml \
        kustomize/stage/pod/fast/pod-delete.yaml; do
        [[ $first -eq 1 ]] || echo "---"
        first=0
        cat "$dir/$f"
    done >"$work/kwok-stages.yaml"
}

echo "building control plane $version into $bin (GOMODCACHE=$GOMODCACHE, GOCACHE=$GOCACHE)"
step "etcd" build_etcd
step "kwok" build_kwok
step "kwok stages" kwok_stages
step "coredns" build_coredns
step "kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy" build_kube

mkdir -p "$bin"
for f in "${products[@]}"; do
    mv -f "$work/$f" "$bin/$f"
done
echo "control plane $version built in $((SECONDS - started)) s: $bin"
