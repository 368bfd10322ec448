#!/usr/bin/env bash
# The main job: builds olm, starts the local environment (`olm dev up`: a real control plane with
# a fake node, a local OCI registry and `olm run`), pushes the example operator's bundles and
# catalog from examples/ to that registry, installs the operator with a ClusterCatalog and a
# ClusterExtension, and shows what the cluster reports. Everything keeps running in the
# background until `target/release/olm dev down`. Safe to run again: every step is idempotent.
#
# OLM_PROFILE=debug uses a debug build instead of the release build (CI does, reusing what
# scripts/test.sh built).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
case ${OLM_PROFILE:-release} in
release)
    cargo build --release --locked -p olm
    olm=target/release/olm
    ;;
debug)
    cargo build --locked -p olm
    olm=target/debug/olm
    ;;
*)
    echo "run.sh: OLM_PROFILE is release (the default) or debug, not ${OLM_PROFILE}" >&2
    exit 2
    ;;
esac

"$olm" dev up
registry=$("$olm" dev status | sed -n 's/^registry: //p')
KUBECONFIG=$("$olm" dev kubeconfig)
export KUBECONFIG
if [[ -z $registry ]]; then
    echo "run.sh: olm dev status names no registry" >&2
    exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== pushing the example bundles and catalog to $registry"
for version in 0.1.0 0.2.0; do
    "$olm" image push-bundle "examples/bundles/example-operator.v$version" \
        "$registry/examples/example-operator-bundle:v$version" >/dev/null
done
mkdir "$work/catalog"
sed "s|\${REGISTRY}|$registry|g" examples/catalog/template.yaml |
    "$olm" catalog template basic - -o yaml >"$work/catalog/catalog.yaml"
"$olm" catalog validate "$work/catalog"
"$olm" image push-catalog "$work/catalog" "$registry/examples/catalog:latest" >/dev/null

# Shows what went wrong when a wait times out, then fails.
explain() {
    local log="${OLM_CACHE_DIR:-$HOME/.cache/olm}/dev/supervisor.log"
    echo "run.sh: $1 did not become $2 in time; what the cluster says:" >&2
    kubectl get "$1" -o yaml >&2 || true
    echo "--- the last lines of $log (olm run's log):" >&2
    tail -n 40 "$log" >&2 || true
    exit 1
}

echo "== serving the catalog"
sed "s|\${REGISTRY}|$registry|g" examples/clustercatalog.yaml | kubectl apply -f -
kubectl wait --for=condition=Serving clustercatalog/examples --timeout=120s ||
    explain clustercatalog/examples Serving

echo "== installing example-operator"
kubectl apply -f examples/clusterextension.yaml
kubectl wait --for=condition=Installed clusterextension/example-operator --timeout=300s ||
    explain clusterextension/example-operator Installed

echo "== installed"
kubectl get clustercatalogs,clusterextensions
kubectl get deployments --namespace example-system
