#!/usr/bin/env bash
# Everything CI checks, in the order that fails fastest: setup, formatting, lints, all tests
# (unit, golden, property and integration tests against the real control plane and registry,
# and the suites that need a real node).
#
# The real-node suites take turns at the machine's one node and spend much of their time waiting
# on it (two scenarios wait out OLM v1's 10-minute progress deadline), so they run one after
# another in the background while every other suite, which only needs an API server and kwok's
# fake node, runs in the foreground; both must pass. Their output is printed when they end.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked --no-run

# Each real-node suite (package, test target, test name); the names are unique in the workspace.
# (The package only names where the suite lives: the target names are unique too.)
real_node=(
    "olm real_olm both_olms_and_their_operators_on_one_real_node"
    "olm dev_olm_pods olm_as_pods_survives_its_leader_and_its_own_rollout_and_uninstalls"
    "olm example_operator_real the_example_operator_runs_upgrades_reconciles_and_validates_on_a_real_node"
    "olm dev_cli a_real_node_is_one_per_machine_and_down_cleans_up_after_a_killed_supervisor"
    "olm-testenv real_node containers_run_and_the_machine_is_as_it_was_after"
    "olm-testenv real_node a_node_whose_starter_was_killed_is_cleaned_up_by_the_next"
)
skip=()
for suite in "${real_node[@]}"; do
    read -r _ _ name <<<"$suite"
    skip+=(--skip "$name")
done

real_log=$(mktemp)
trap 'rm -f "$real_log"' EXIT
(
    failed=0
    for suite in "${real_node[@]}"; do
        read -r package target name <<<"$suite"
        echo "=== real node: $package --test $target $name"
        # --workspace, not -p: the same feature set as the build above, so nothing is rebuilt
        # (a rebuilt `olm` would replace the binary the other suites are running).
        cargo test --workspace --locked --test "$target" -- --exact "$name" || failed=1
    done
    exit "$failed"
) >"$real_log" 2>&1 &
real_pid=$!

status=0
cargo test --workspace --locked -- "${skip[@]}" || status=$?
real_status=0
wait "$real_pid" || real_status=$?
echo "=== the real-node suites (run beside the others):"
cat "$real_log"
if [[ $real_status -ne 0 ]]; then
    echo "test: a real-node suite failed (see above)" >&2
fi
[[ $status -eq 0 && $real_status -eq 0 ]]
