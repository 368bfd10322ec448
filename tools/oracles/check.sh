#!/usr/bin/env bash
# Rebuilds every oracle-made expectation in a temporary folder and diffs it against the committed
# one: exit 0 when they are identical, 1 (with the diff) when not. Needs Go; the Rust tests do not.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

"$here/regen.sh" "$tmp"
status=0
while IFS= read -r -d '' f; do
    rel="${f#"$tmp"/}"
    if ! diff -u "$repo/$rel" "$f"; then
        status=1
    fi
done < <(find "$tmp" -type f -print0 | LC_ALL=C sort -z)
if [[ $status -eq 0 ]]; then
    echo "every oracle-made table matches the oracles"
fi
exit $status
