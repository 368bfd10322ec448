#!/usr/bin/env bash
# The main job: builds olm and the example operator, starts the local environment (`olm dev up`:
# a real control plane with a node — a real one where the machine can run containers, kwok's
# otherwise —, a local OCI registry and OLM), pushes the example operator's image, bundles and
# catalog from examples/ to that registry, installs the operator with a ClusterCatalog and a
# ClusterExtension, and shows what the cluster reports. On a real node it then shows the
# operator at work: its pod Running, a valid Widget reconciled, an invalid one refused by its
# webhook. Everything keeps running in the background until `target/local/olm dev down`. Safe
# to run again: every step is idempotent.
#
# OLM_PROFILE picks the build: `local` (the default: optimised like the shipped build but without
# LTO, which would add most of the build time of a first run), `release` (what ships) or `debug`
# (CI's, reusing what scripts/test.sh built).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
case ${OLM_PROFILE:-local} in
local)
    cargo build --profile local --locked -p olm -p example-operator
    target=target/local
    ;;
release)
    cargo build --release --locked -p olm -p example-operator
    target=target/release
    ;;
debug)
    cargo build --locked -p olm -p example-operator
    target=target/debug
    ;;
*)
    echo "run.sh: OLM_PROFILE is local (the default), release or debug, not ${OLM_PROFILE}" >&2
    exit 2
    ;;
esac

olm=$target/olm

"$olm" dev up
registry=$("$olm" dev status | sed -n 's/^registry: //p')
node=$("$olm" dev status | sed -n 's/^node: //p')
KUBECONFIG=$("$olm" dev kubeconfig)
export KUBECONFIG
if [[ -z $registry ]]; then
    echo "run.sh: olm dev status names no registry" >&2
    exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The CSVs name the image quay.io/olm-examples/example-operator:vX; a real node's containerd
# pulls every registry's images from the dev registry by path (docs/dev.md, "The node"). Both
# versions run the same build; 0.2.0's CSV turns its webhook on.
echo "== pushing the example operator's image to $registry/olm-examples/example-operator"
for version in 0.1.0 0.2.0; do
    "$olm" image push-program "$target/example-operator" \
        "$registry/olm-examples/example-operator:v$version" \
        --label "org.opencontainers.image.description=The example operator of olm's examples/"
done

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
    # shellcheck disable=SC2086 # $1 is KIND/NAME, maybe with --namespace NS
    kubectl get $1 -o yaml >&2 || true
    if kubectl get deployment/example-operator-controller --namespace example-system >/dev/null 2>&1; then
        echo "--- the example operator's log:" >&2
        kubectl logs deployment/example-operator-controller --namespace example-system --tail=40 >&2 || true
    fi
    if kubectl get deployment/olm-controller-manager --namespace olmv1-system >/dev/null 2>&1; then
        echo "--- OLM's log:" >&2
        kubectl logs deployment/olm-controller-manager --namespace olmv1-system --tail=40 >&2 || true
    fi
    echo "--- the last lines of $log (olm dev's log):" >&2
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

if [[ $node != *"(real)" ]]; then
    echo "== the node is $node: no container runs on it, so the operator's pod, a reconciled Widget and its webhook's refusal need a real node (olm dev up --node real, as root); not shown"
    exit 0
fi

# OLM's certificate provider puts its CA's hash on the pod template once the webhook's
# certificate is issued, so the first pod is replaced at once; the operator stops at once on
# SIGTERM, so the old pod is soon gone.
echo "== the operator's pod"
kubectl rollout status deployment/example-operator-controller --namespace example-system --timeout=120s ||
    explain "pods --namespace example-system" "Running and ready"
for _ in $(seq 120); do
    pods=$(kubectl get pods --namespace example-system --selector app.kubernetes.io/name=example-operator -o name)
    [[ $(wc -l <<<"$pods") -eq 1 ]] && break
    sleep 0.5
done
kubectl get pods --namespace example-system

# OLM's certificate provider puts the CA into the webhook configuration once the Service's
# certificate is issued: until then the API server cannot call the webhook, and with
# failurePolicy Fail it refuses every widget. A server-side dry run goes through the webhook
# without storing anything.
callable=false
for _ in $(seq 120); do
    if kubectl apply --dry-run=server -f examples/widget.yaml >/dev/null 2>&1; then
        callable=true
        break
    fi
    sleep 0.5
done
$callable || explain validatingwebhookconfigurations "able to call the operator's webhook"

echo "== a valid widget, reconciled"
kubectl apply -f examples/widget.yaml
kubectl wait --for=jsonpath='{.status.ready}'=true widget/sample --namespace default --timeout=60s ||
    explain "widget/sample --namespace default" "ready"
kubectl get widgets --namespace default
kubectl get widget sample --namespace default \
    -o jsonpath='status: ready={.status.ready} observedGeneration={.status.observedGeneration}{"\n"}'

echo "== an invalid widget, refused by the operator's webhook"
if refused=$(kubectl apply -f examples/widget-too-large.yaml 2>&1); then
    echo "run.sh: the API server stored examples/widget-too-large.yaml; the webhook should have refused it" >&2
    kubectl delete -f examples/widget-too-large.yaml >&2 || true
    exit 1
fi
echo "$refused"
if [[ $refused != *"denied the request: "* ]]; then
    explain "validatingwebhookconfigurations" "able to call the webhook"
fi
