#!/usr/bin/env bash
# Everything CI checks, in the order that fails fastest: setup, formatting, lints, all tests
# (unit, golden, property and integration tests against the real control plane and registry,
# and the suites that need a real node, which take turns at the machine's one node as cargo runs
# test binaries one after another), then upstream's own e2e suite judging the olm just built
# (docs/upstream-suites.md).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo test --workspace --locked
tools/e2e/operator-controller.sh
