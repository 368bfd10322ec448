#!/usr/bin/env bash
# Runs OLM v0's own e2e suite (operator-lifecycle-manager v0.46.0 test/e2e, built by
# tools/e2e/olm-v0/build.sh) against olm in a fresh `olm dev up --node fake` and judges the run:
# every spec of the containers olm's OLM v0 covers must pass, or be listed in
# tools/e2e/olm-v0/KNOWN.tsv (skip, fails or differs) with its reason; and the results must be
# the committed ones (tools/e2e/olm-v0/results-fake.tsv). e2e-judge (tools/e2e/judge) makes the
# --skip expression of the listed skips and checks the run.
#
#   tools/e2e/olm-v0.sh [--update] [--procs N] [--labels A,B] [--focus REGEX]
#
# --labels narrows the containers (Ginkgo labels, default: all that apply to olm), --focus the
# specs (a Ginkgo focus regular expression); either skips the comparison with the committed
# results. --update writes the results file and the counts table in docs/upstream-suites.md
# instead of comparing. --procs runs the suite in N processes (default 3). Uses
# target/debug/olm unless OLM_BIN names another binary.
set -euo pipefail

# All in one function, read whole before it runs, so that editing this file cannot change a
# run already under way.
main() {
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
    here="$root/tools/e2e/olm-v0"
    all_labels=ClusterServiceVersion,OperatorGroup,DisablingCopiedCSVs,GarbageCollection,Operator,ResourceManager,ScopedClient,Subscription,InstallPlan,CatalogSource,PackageManifest
    labels="$all_labels"
    focus=""
    update=0
    procs=3
    usage() {
        echo "usage: $0 [--update] [--procs N] [--labels A,B] [--focus REGEX]" >&2
        exit 2
    }
    while [[ $# -gt 0 ]]; do
        case "$1" in
        --update) update=1 ;;
        --procs) [[ $# -ge 2 ]] || usage; procs="$2"; shift ;;
        --labels) [[ $# -ge 2 ]] || usage; labels="$2"; shift ;;
        --focus) [[ $# -ge 2 ]] || usage; focus="$2"; shift ;;
        *) usage ;;
        esac
        shift
    done
    judge=1
    [[ $labels == "$all_labels" && -z $focus ]] || judge=0

    # shellcheck source=tools/e2e/lib.sh
    source "$root/tools/e2e/lib.sh"
    dev_env "$root"
    bin="$("$here/build.sh")"
    suite="$bin/../src/upstream/test/e2e"

    started=$SECONDS
    dev up --node fake >&2
    registry="$(dev status | sed -n 's/^registry: //p')"
    export KUBECONFIG="$state/dev/kubeconfig"
    # olm's OLM v0 keeps its global catalogs in its system namespace.
    olm_ns=olmv1-system
    # The suite waits for this global catalog before any spec; no registry Pod runs on the fake
    # node, so olm serves it itself.
    OLM_CACHE_DIR="$state" "$olm" image push-catalog --content-only "$here/catalog" \
        "$registry/olm-e2e/operatorhubio-catalog:latest" >&2
    kubectl apply -f - >&2 <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: operators}
---
apiVersion: operators.coreos.com/v1
kind: OperatorGroup
metadata: {name: global-operators, namespace: operators}
---
apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata:
  name: operatorhubio-catalog
  namespace: $olm_ns
  annotations:
    olm.operatorframework.io/serve-in-process: "true"
spec:
  sourceType: grpc
  image: $registry/olm-e2e/operatorhubio-catalog:latest
  displayName: Community Operators
  publisher: OperatorHub.io
YAML

    label_filter="$(sed 's/,/ || /g' <<<"$labels")"
    skip="$("$bin/e2e-judge" skip -known "$here/KNOWN.tsv" -profile fake)"
    args=(--procs="$procs" --label-filter="$label_filter" --json-report="$out/report.json"
        --timeout="${E2E_TIMEOUT:-2h}" --poll-progress-after=3m --no-color)
    [[ -z $skip ]] || args+=(--skip="$skip")
    [[ -z $focus ]] || args+=(--focus="$focus")
    log="$out/suite.log"
    echo "==> OLM v0 e2e suite on the fake node, $procs processes ($log)" >&2
    set +e
    (
        cd "$suite"
        "$bin/ginkgo" run "${args[@]}" "$bin/olm-v0-e2e.test" -- \
            -kubeconfig="$KUBECONFIG" -namespace=operators -olmNamespace="$olm_ns" \
            -catalogNamespace="$olm_ns" -test-data-dir="$suite/testdata" \
            -dummyImage="$registry/olm-e2e/none:latest" -gather-artifacts-script-path=
    ) >"$log" 2>&1
    suite_status=$?
    set -e
    echo "    suite ran in $((SECONDS - started)) s (exit $suite_status)" >&2
    if [[ ! -s "$out/report.json" ]]; then
        tail -40 "$log" >&2
        exit 1
    fi
    if [[ -n ${E2E_KEEP:-} ]]; then
        cp "$out/report.json" "$log" "$E2E_KEEP/"
    fi

    results="$here/results-fake.tsv"
    partial=()
    [[ -z $focus ]] || partial=(-partial)
    if ! "$bin/e2e-judge" check -known "$here/KNOWN.tsv" -profile fake -ginkgo "$out/report.json" \
        -groups "$labels" -out "$out/results.tsv" -table "$out/table.md" "${partial[@]}"; then
        exit 1
    fi
    [[ $judge -eq 1 ]] || exit 0

    if [[ $update -eq 1 ]]; then
        cp "$out/results.tsv" "$results"
        doc="$root/docs/upstream-suites.md"
        begin='<!-- OLM v0 results: tools/e2e/olm-v0.sh --update -->'
        end='<!-- end of OLM v0 results -->'
        TABLE="$(cat "$out/table.md")" BEGIN="$begin" END="$end" perl -0pi -e \
            's/\Q$ENV{BEGIN}\E.*?\Q$ENV{END}\E/$ENV{BEGIN}\n$ENV{TABLE}\n$ENV{END}/s' "$doc"
        echo "wrote $results and the table in $doc" >&2
    elif ! diff -u "$results" "$out/results.tsv" >&2; then
        echo "error: the results differ from $results (above); if olm changed on purpose, rerun with --update" >&2
        exit 1
    fi
}

main "$@"; exit
