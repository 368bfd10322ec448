#!/usr/bin/env bash
# Runs operator-controller's own e2e suite (v1.11.0, built by tools/e2e/build.sh) against olm in
# a fresh `olm dev` environment and judges the run: every scenario must pass, or be listed in
# tools/e2e/operator-controller/KNOWN.tsv as not judged on this node (skip) or as a deliberate
# difference (differs), with its reason; and the results must be the committed ones
# (tools/e2e/operator-controller/results-PROFILE.tsv). e2e-judge (tools/e2e/judge) checks the run
# and writes the table.
#
#   tools/e2e/operator-controller.sh [--node fake|real] [--update] [FEATURE[:LINE]...]
#
# The profile is the node (default fake): on kwok's fake node olm runs in the environment's
# process; on the real node (root, one per machine) OLM runs as pods and the suite's bundles run
# busybox, pushed by e2e-images. Either way the suite pushes to the environment's registry
# (devregistry/registry.go). On the real node OLM is installed as upstream's two Deployments
# (`--layout upstream`), which the suite finds, restarts and reads feature gates from as it does
# upstream's; on the fake node it finds the Deployment in olm-gates.yaml. --update writes
# the profile's results file and the table in docs/upstream-suites.md instead of comparing.
# FEATURE arguments (paths under upstream's test/e2e, e.g. features/install.feature:11) narrow
# the run and skip the comparison. Uses target/debug/olm unless OLM_BIN names another binary.
#
# The listed deliberate differences run only with --update (or E2E_SKIP_DIFFERS=0): each fails
# only when a step times out, which would double the run; a plain run skips them and compares
# every other scenario's outcome.
set -euo pipefail

# All in one function, read whole before it runs, and exit on the same line, so that editing
# this file cannot change a run already under way.
main() {
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
    here="$root/tools/e2e"
    profile=fake
    update=0
    paths=()
    usage() {
        echo "usage: $0 [--node fake|real] [--update] [FEATURE[:LINE]...]" >&2
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
        -*) usage ;;
        *) paths+=("$1") ;;
        esac
        shift
    done

    # shellcheck source=tools/e2e/lib.sh
    source "$root/tools/e2e/lib.sh"
    dev_env "$root"
    bin="$("$here/build.sh")"
    suite="$bin/../src/upstream/test/e2e"
    # A results file without the rows of the profile's listed failures (differs or fails) when
    # they were skipped (feature and scenario name as KNOWN.tsv gives them).
    without_skipped_differs() {
        if [[ $skip_differs != 1 ]]; then
            cat "$1"
            return
        fi
        awk -F'\t' -v profile="$profile" '
            NR == FNR {
                if (($4 == "differs" || $4 == "fails") && ("," $3 ",") ~ ("," profile ",|[*]")) skip[$1 "\t" $2] = 1
                next
            }
            !(($1 "\t" $3) in skip)
        ' "$here/operator-controller/KNOWN.tsv" "$1"
    }

    if [[ $profile == real && -w /run ]]; then
        # The machine's one real node: take turns with the other suites that start one.
        exec 8>/run/olm-real-turn.lock
        flock 8
    fi
    started=$SECONDS
    # Upstream's @mirrored-registry scenario names its bundles at this host, which a
    # registries.conf sends to the real registry.
    layout=()
    [[ $profile == real ]] && layout=(--layout upstream)
    dev up --node "$profile" "${layout[@]}" \
        --registry-alias mirrored-registry.operator-controller-e2e.svc.cluster.local:5000 >&2
    registry="$(dev status | sed -n 's/^registry: //p')"
    export KUBECONFIG="$state/dev/kubeconfig"
    if [[ $profile == real ]]; then
        "$bin/e2e-images" "$registry" >&2
        # The proxy scenario asks `$CONTAINER_RUNTIME network inspect kind` for the address at
        # which pods reach this machine (kind's network gateway), where its recording proxy
        # listens: here that is the node's own address.
        node_ip="$(kubectl get nodes -o jsonpath='{.items[0].status.addresses[?(@.type=="InternalIP")].address}')"
        mkdir -p "$out/runtime"
        printf '#!/bin/sh\n# network inspect kind --format …: the address pods reach this machine at\necho %s\n' \
            "$node_ip" >"$out/runtime/e2e-runtime"
        chmod +x "$out/runtime/e2e-runtime"
        export CONTAINER_RUNTIME="$out/runtime/e2e-runtime"
    else
        kubectl apply -f "$here/operator-controller/olm-gates.yaml" >&2
    fi
    kubectl -n olmv1-system rollout status deployment/operator-controller-controller-manager --timeout=60s >&2

    skip_differs="${E2E_SKIP_DIFFERS:-$((1 - update))}"
    if [[ ${#paths[@]} -eq 0 ]]; then
        paths=(features)
        judge=1
    else
        judge=0
    fi
    # Scenarios run side by side on the fake node (each has its own namespace and names, and
    # every scenario upstream marks @Serial is one the fake node does not judge); one at a time
    # on the real node, where @Serial ones restart OLM's pods. Godog's pretty format cannot
    # interleave, so side by side the log is its progress format.
    if [[ $profile == fake ]]; then concurrency="${E2E_CONCURRENCY:-4}"; else concurrency="${E2E_CONCURRENCY:-1}"; fi
    if [[ $concurrency -gt 1 ]]; then format=progress; else format=pretty; fi
    log="$out/suite.log"
    echo "==> operator-controller e2e suite on the $profile node ($log)" >&2
    # A step waits at most 2 minutes (upstream's default is 5): the longest wait a scenario
    # needs on olm is a catalog poll (1 minute) or a 1-minute progress deadline, and a listed
    # difference then fails in 2 minutes rather than 5.
    set +e
    (
        cd "$suite"
        E2E_REGISTRY="$registry" CLUSTER_REGISTRY_HOST="$registry" \
            E2E_KNOWN="$here/operator-controller/KNOWN.tsv" E2E_PROFILE="$profile" \
            E2E_SKIP_DIFFERS="$skip_differs" \
            E2E_STEP_TIMEOUT="${E2E_STEP_TIMEOUT:-2m}" \
            "$bin/oc-e2e.test" --godog.format="$format,cucumber:$out/run.json" \
            --godog.concurrency="$concurrency" "${paths[@]}"
    ) >"$log" 2>&1
    suite_status=$?
    set -e
    echo "    suite ran in $((SECONDS - started)) s (exit $suite_status)" >&2

    results="$here/operator-controller/results-$profile.tsv"
    check_args=()
    [[ $skip_differs == 1 ]] && check_args+=(-differs-skipped)
    if ! "$bin/e2e-judge" check -known "$here/operator-controller/KNOWN.tsv" -profile "$profile" \
        -cucumber "$out/run.json" -out "$out/results.tsv" "${check_args[@]}"; then
        grep -E '^\s+(Error|Messages|Scenario)|Condition never|failed' "$log" | tail -60 >&2
        exit 1
    fi
    [[ $judge -eq 1 ]] || exit 0

    if [[ $update -eq 1 && $skip_differs == 1 ]]; then
        echo "error: --update with E2E_SKIP_DIFFERS=1 would record the listed differences as skipped" >&2
        exit 1
    fi
    if [[ $update -eq 1 ]]; then
        cp "$out/results.tsv" "$results"
        profiles=()
        for p in fake real; do
            f="$here/operator-controller/results-$p.tsv"
            [[ -f "$f" ]] && profiles+=(-results "$p=$f")
        done
        table="$("$bin/e2e-judge" table -known "$here/operator-controller/KNOWN.tsv" "${profiles[@]}")"
        doc="$root/docs/upstream-suites.md"
        begin='<!-- operator-controller results: tools/e2e/operator-controller.sh --update -->'
        end='<!-- end of operator-controller results -->'
        TABLE="$table" BEGIN="$begin" END="$end" perl -0pi -e \
            's/\Q$ENV{BEGIN}\E.*?\Q$ENV{END}\E/$ENV{BEGIN}\n$ENV{TABLE}\n$ENV{END}/s' "$doc"
        echo "wrote $results and the table in $doc" >&2
    elif ! diff -u <(without_skipped_differs "$results") <(without_skipped_differs "$out/results.tsv") >&2; then
        echo "error: the results differ from $results (above); if olm changed on purpose, rerun with --update" >&2
        exit 1
    fi
}

main "$@"; exit
