#!/usr/bin/env bash
# Runs OLM v0's own e2e suite (operator-lifecycle-manager v0.46.0 test/e2e, built by
# tools/e2e/olm-v0/build.sh) against olm in a fresh `olm dev up` and judges the run: every spec
# of the containers olm's OLM v0 covers must pass, or be listed in tools/e2e/olm-v0/KNOWN.tsv
# (skip, fails or differs) for the profile with its reason (a spec that failed beside others
# is run again alone, and that run judges it, as upstream gives each process a cluster of its
# own); and the results must be the
# committed ones (tools/e2e/olm-v0/results-PROFILE.tsv). e2e-judge (tools/e2e/judge) makes the
# --skip expression of the listed skips and checks the run.
#
#   tools/e2e/olm-v0.sh [--node fake|real] [--update] [--procs N] [--labels A,B] [--focus REGEX]
#
# The profile is the node (default fake): on kwok's fake node olm runs in the environment's
# process and no container runs; on the real node (root, one per machine, taken in turn with
# the other suites that start one) OLM runs as pods and the suite's Pods run: olm-v0-images
# pushes opm's image (what the suite's MagicCatalog Pods run, as quay.io/operator-framework/opm),
# a stand-in for -dummyImage (what the Deployments of its hand-made CSVs run), and stand-ins for
# the quay.io/olmtest bundle and index images the suite names, built from
# tools/e2e/olm-v0/standins (see its README).
# --labels narrows the containers (Ginkgo labels, default: all that apply to olm), --focus the
# specs (a Ginkgo focus regular expression); either skips the comparison with the committed
# results. --update writes the profile's results file (and, for the fake node, the counts table
# in docs/upstream-suites.md) instead of comparing. --procs runs the suite in N processes (default 3). Uses
# target/debug/olm unless OLM_BIN names another binary. E2E_KEEP=DIR keeps the suite's log and
# report and the environment's logs in DIR.
set -euo pipefail

# All in one function, read whole before it runs, so that editing this file cannot change a
# run already under way.
main() {
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
    here="$root/tools/e2e/olm-v0"
    all_labels=ClusterServiceVersion,OperatorGroup,DisablingCopiedCSVs,GarbageCollection,Operator,ResourceManager,ScopedClient,Subscription,InstallPlan,CatalogSource,PackageManifest
    labels="$all_labels"
    focus=""
    profile=fake
    update=0
    procs=3
    usage() {
        echo "usage: $0 [--node fake|real] [--update] [--procs N] [--labels A,B] [--focus REGEX]" >&2
        exit 2
    }
    while [[ $# -gt 0 ]]; do
        case "$1" in
        --update) update=1 ;;
        --node)
            [[ $# -ge 2 && ( $2 == fake || $2 == real ) ]] || usage
            profile="$2"
            shift
            ;;
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

    if [[ $profile == real && -w /run ]]; then
        # The machine's one real node: take turns with the other suites that start one.
        exec 8>/run/olm-real-turn.lock
        flock 8
    fi
    started=$SECONDS
    up_args=()
    # The node pulls quay.io images from the environment's registry; so do OLM's pods for their
    # own pulls (bundles, catalogs served in process), as upstream's unpack Jobs pull on the node.
    [[ $profile == fake ]] || up_args=(--registry-alias quay.io)
    dev up --node "$profile" "${up_args[@]}" >&2
    registry="$(dev status | sed -n 's/^registry: //p')"
    export KUBECONFIG="$state/dev/kubeconfig"
    # No container runs on the fake node: an image that does not exist does.
    dummy_image="$registry/olm-e2e/none:latest"
    if [[ $profile == real ]]; then
        "$bin/olm-v0-images" -catalog "$here/catalog" -standins "$here/standins" "$registry" >&2
        dummy_image="$registry/olm-e2e/dummy:latest"
    fi
    # olm's OLM v0 keeps its global catalogs in its system namespace.
    olm_ns=olmv1-system
    # The suite waits for this global catalog before any spec; no registry Pod runs on the fake
    # node, so olm serves it itself (on the real node too, so that both profiles meet the same
    # global catalog).
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
    kubectl apply -f "$here/olm-operator.yaml" >&2

    label_filter="$(sed 's/,/ || /g' <<<"$labels")"
    # A focused run runs what it holds in one go, serial specs included; a whole run leaves
    # those to a second run in one process.
    kinds=skip,serial
    [[ -z $focus ]] || kinds=skip
    skip="$("$bin/e2e-judge" skip -known "$here/KNOWN.tsv" -profile "$profile" -kinds "$kinds")"
    # One run of the suite: its log to $1, then ginkgo's own arguments; returns ginkgo's status.
    suite_run() {
        local log="$1"
        shift
        (
            cd "$suite"
            "$bin/ginkgo" run --label-filter="$label_filter" --timeout="${E2E_TIMEOUT:-2h}" \
                --poll-progress-after=3m --no-color "$@" "$bin/olm-v0-e2e.test" -- \
                -kubeconfig="$KUBECONFIG" -namespace=operators -olmNamespace="$olm_ns" \
                -catalogNamespace="$olm_ns" -test-data-dir="$suite/testdata" \
                -dummyImage="$dummy_image" -gather-artifacts-script-path=
        ) >"$log" 2>&1
    }
    args=(--procs="$procs" --json-report="$out/report.json")
    [[ -z $skip ]] || args+=(--skip="$skip")
    [[ -z $focus ]] || args+=(--focus="$focus")
    log="$out/suite.log"
    echo "==> OLM v0 e2e suite on the $profile node, $procs processes ($log)" >&2
    set +e
    suite_run "$log" "${args[@]}"
    suite_status=$?
    set -e
    echo "    suite ran in $((SECONDS - started)) s (exit $suite_status)" >&2
    if [[ ! -s "$out/report.json" ]]; then
        tail -40 "$log" >&2
        exit 1
    fi
    # The specs KNOWN.tsv lists as serial pass only alone (in a parallel run another spec's
    # teardown reaches theirs): a second run, in one process, holds them.
    reports=(-ginkgo "$out/report.json")
    serial=""
    [[ -n $focus ]] || serial="$("$bin/e2e-judge" skip -known "$here/KNOWN.tsv" -profile "$profile" -kinds serial)"
    if [[ -n $serial ]]; then
        suite_run "$out/suite-serial.log" --procs=1 --focus="$serial" \
            --json-report="$out/report-serial.json" || true
        echo "    serial specs ran alone by $((SECONDS - started)) s" >&2
        [[ ! -s "$out/report-serial.json" ]] || reports+=(-ginkgo "$out/report-serial.json")
    fi

    # Upstream runs each process against a cluster of its own; here the processes share one,
    # and one spec's teardown can break another's. What failed without being listed as failing
    # is run again, alone, and that outcome is the one judged (e2e-judge retry).
    retried=()
    if [[ -z $focus ]]; then
        again="$("$bin/e2e-judge" retry -known "$here/KNOWN.tsv" -profile "$profile" "${reports[@]}")"
        if [[ -n $again ]]; then
            suite_run "$out/suite-retry.log" --procs=1 --focus="$again" \
                --json-report="$out/report-retry.json" || true
            echo "    failures retried alone by $((SECONDS - started)) s" >&2
            [[ ! -s "$out/report-retry.json" ]] || retried=(-retried "$out/report-retry.json")
        fi
    fi

    results="$here/results-$profile.tsv"
    partial=()
    [[ -z $focus ]] || partial=(-partial)
    if ! "$bin/e2e-judge" check -known "$here/KNOWN.tsv" -profile "$profile" "${reports[@]}" \
        "${retried[@]}" -groups "$labels" -out "$out/results.tsv" -table "$out/table.md" \
        "${partial[@]}"; then
        exit 1
    fi
    [[ $judge -eq 1 ]] || exit 0

    if [[ $update -eq 1 && $profile != fake ]]; then
        # The table in docs/upstream-suites.md is the fake node's.
        cp "$out/results.tsv" "$results"
        echo "wrote $results" >&2
    elif [[ $update -eq 1 ]]; then
        cp "$out/results.tsv" "$results"
        doc="$root/docs/upstream-suites.md"
        begin='<!-- OLM v0 results: tools/e2e/olm-v0.sh --update -->'
        end='<!-- end of OLM v0 results -->'
        TABLE="$(cat "$out/table.md")" BEGIN="$begin" END="$end" perl -0pi -e \
            's/\Q$ENV{BEGIN}\E.*?\Q$ENV{END}\E/$ENV{BEGIN}\n$ENV{TABLE}\n$ENV{END}/s' "$doc"
        echo "wrote $results and the table in $doc" >&2
    elif [[ ! -f "$results" ]]; then
        echo "error: no $results to compare with; rerun with --update to write it" >&2
        exit 1
    elif ! diff -u "$results" "$out/results.tsv" >&2; then
        echo "error: the results differ from $results (above); if olm changed on purpose, rerun with --update" >&2
        exit 1
    fi
}

main "$@"; exit
