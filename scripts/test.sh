#!/usr/bin/env bash
# Everything CI checks, in the order that fails fastest: setup, formatting, lints, all tests
# (unit, golden, property and integration tests against the real control plane and registry,
# and the suites that need a real node, which take turns at the machine's one node as cargo runs
# test binaries one after another), then upstream's own e2e suites judging the olm just built:
# operator-controller's whole, OLM v0's in part (docs/upstream-suites.md).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
tools/e2e/operator-controller.sh
# OLM v0's suite, the containers whose specs are quick on the fake node (3 to 4.5 minutes; the
# whole suite takes 22, more than CI's hour has left): judged by the same KNOWN.tsv.
tools/e2e/olm-v0.sh --labels OperatorGroup,ScopedClient,ResourceManager,PackageManifest,GarbageCollection,InstallPlan,DisablingCopiedCSVs
