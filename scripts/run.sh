#!/usr/bin/env bash
# Builds olm and starts the local development environment: a real control plane with a fake
# node and a local OCI registry, in the background until `olm dev down`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --locked -p olm
target/release/olm dev up
target/release/olm dev status
