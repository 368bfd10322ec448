# Pieces the upstream-suite harnesses share; sourced, not run.
#
#   go_setup DEST WHAT   Go found (or an error naming WHAT), its caches the project's, DEST made
#   dev_env ROOT         a fresh `olm dev` state folder of its own ($state, $out), `dev ARGS…`
#                        running `olm dev` in it, stopped and removed on exit; $olm is the binary

# Go on PATH, with the module and build caches tools/controlplane/build.sh uses, so shared
# dependencies are downloaded and compiled once; DEST (the build's keyed folder) created.
go_setup() {
    local dest="$1" what="$2"
    if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
        export PATH="/usr/local/go/bin:$PATH"
    fi
    if ! command -v go >/dev/null 2>&1; then
        echo "error: the Go toolchain (go >= 1.26) is needed to build $what, and 'go' is not on PATH." >&2
        return 1
    fi
    local cache="${OLM_CACHE_DIR:-$HOME/.cache/olm}"
    export GOMODCACHE="$cache/go/mod"
    export GOCACHE="$cache/go/build"
    export GOTOOLCHAIN=local
    export CGO_ENABLED=0
    export GOFLAGS="-mod=readonly -buildvcs=false -p=${OLM_GO_PARALLEL:-2}"
    mkdir -p "$GOMODCACHE" "$GOCACHE" "$dest"
}

# An `olm dev` environment of its own (so that one a developer runs is left alone), from the
# olm binary ($OLM_BIN or ROOT/target/debug/olm) and the control plane tools/controlplane builds.
dev_env() {
    local root="$1"
    olm="${OLM_BIN:-$root/target/debug/olm}"
    if [[ ! -x "$olm" ]]; then
        echo "error: $olm is not built: run cargo build (or set OLM_BIN)" >&2
        return 1
    fi
    "$root/tools/controlplane/build.sh" >&2
    export OLM_CONTROLPLANE_BIN="${OLM_CACHE_DIR:-$HOME/.cache/olm}/controlplane/$(tr -d '[:space:]' <"$root/tools/controlplane/VERSION")/bin"
    state="$(mktemp -d)"
    out="$state/out"
    mkdir -p "$out"
    # The paths are fixed into the trap now: it runs after the caller's variables may be gone,
    # and an empty OLM_CACHE_DIR would stop the developer's own environment.
    # E2E_KEEP=DIR keeps the suite's log, report and the environment's logs there for a look
    # after the run.
    local keep=""
    [[ -z ${E2E_KEEP:-} ]] || keep="mkdir -p '$E2E_KEEP' && cp -r '$state/out' '$state/dev' '$E2E_KEEP/' 2>/dev/null;"
    trap "OLM_CACHE_DIR='$state' '$olm' dev down >/dev/null 2>&1 || true; $keep rm -rf '$state'" EXIT
    # Bash leaves on INT or TERM without its EXIT trap unless it handles them: an interrupted
    # run would leave its environment (on the real node, the machine's one node) running.
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

dev() { OLM_CACHE_DIR="$state" "$olm" dev "$@"; }
