#!/usr/bin/env bash
# Records what opm serve answers over its registry gRPC API for one catalog, as one line per call:
#   METHOD<TAB>REQUEST-JSON<TAB>sha256:<digest> | error:<message>   (several joined by `|` where
#   opm's answer depends on Go map order)
# where the digest is over the response messages, each as `jq -cS .` prints grpcurl's JSON of it,
# sorted and joined by newlines (opm answers several streams in Go map order; sorting makes the
# record independent of it). crates/olm-registry/tests/conformance.rs computes the same from
# olm's registry.
#
# Usage: tools/oracles/registry-golden.sh BIN CATALOG   (BIN: the oracles' bin folder)
set -euo pipefail

bin="$1"
catalog="$2"
work="$(mktemp -d)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
"$bin/opm" serve "$catalog" -p "$port" --cache-dir "$work/cache" --cache-enforce-integrity=false \
    --pprof-addr 127.0.0.1:0 -t "$work/termination" >"$work/log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 1 300); do
    "$bin/grpcurl" -plaintext "127.0.0.1:$port" grpc.health.v1.Health/Check >/dev/null 2>&1 && break
    sleep 0.2
done

call() { # METHOD REQUEST
    local out
    if out="$("$bin/grpcurl" -plaintext -d "$2" "127.0.0.1:$port" "api.Registry/$1" 2>&1)"; then
        printf '%s\t%s\tsha256:%s\n' "$1" "$2" "$(printf '%s' "$out" | jq -cS . | LC_ALL=C sort | sha256sum | cut -d' ' -f1)"
    else
        printf '%s\t%s\terror:%s\n' "$1" "$2" "$(printf '%s' "$out" | sed -n 's/^  Message: //p')"
    fi
}

call ListPackages '{}'
call ListBundles '{}'
"$bin/grpcurl" -plaintext "127.0.0.1:$port" api.Registry/ListBundles >"$work/bundles.json"
"$bin/grpcurl" -plaintext "127.0.0.1:$port" api.Registry/ListPackages | jq -r .name | LC_ALL=C sort >"$work/packages"
while read -r p; do
    call GetPackage "{\"name\":\"$p\"}"
    "$bin/grpcurl" -plaintext -d "{\"name\":\"$p\"}" "127.0.0.1:$port" api.Registry/GetPackage |
        jq -r '.name as $n | .channels[] | "\($n) \(.name)"'
done <"$work/packages" >"$work/channels.raw"
grep -v '^GetPackage' "$work/channels.raw" >"$work/channels" || true
grep '^GetPackage' "$work/channels.raw"
while read -r p c; do
    call GetBundleForChannel "{\"pkgName\":\"$p\",\"channelName\":\"$c\"}"
done <"$work/channels"
jq -r '"\(.packageName) \(.channelName) \(.csvName) \(.replaces // "")"' "$work/bundles.json" | LC_ALL=C sort >"$work/entries"
# How many bundles of a channel replace or skip each name: where several do, opm picks one in Go
# map order, so that call is made 16 times and every answer seen is recorded, joined by `|`.
declare -A replacers
while read -r key count; do
    replacers["$key"]="$count"
done < <(jq -r '[.packageName, .channelName] as [$p, $c] | ([.replaces // empty] + (.skips // []) | unique[]) | "\($p)/\($c)/\(.)"' \
    "$work/bundles.json" | LC_ALL=C sort | uniq -c | awk '{print $2, $1}')
while read -r p c n r; do
    call GetBundle "{\"pkgName\":\"$p\",\"channelName\":\"$c\",\"csvName\":\"$n\"}"
    if [[ -n "$r" ]]; then
        req="{\"csvName\":\"$r\",\"pkgName\":\"$p\",\"channelName\":\"$c\"}"
        if [[ "${replacers["$p/$c/$r"]:-1}" -gt 1 ]]; then
            answers="$(for _ in $(seq 1 16); do call GetBundleThatReplaces "$req" | cut -f3; done | LC_ALL=C sort -u | paste -sd'|')"
            printf '%s\t%s\t%s\n' GetBundleThatReplaces "$req" "$answers"
        else
            call GetBundleThatReplaces "$req"
        fi
    fi
done <"$work/entries"
cut -d' ' -f3 "$work/entries" | LC_ALL=C sort -u | while read -r n; do
    call GetChannelEntriesThatReplace "{\"csvName\":\"$n\"}"
done
jq -c '.providedApis[]? | {group, version, kind}' "$work/bundles.json" | LC_ALL=C sort -u | while read -r g; do
    call GetChannelEntriesThatProvide "$g"
    call GetLatestChannelEntriesThatProvide "$g"
    call GetDefaultBundleThatProvides "$g"
done
# Errors, in upstream's words.
call GetPackage '{"name":"no-such-package"}'
call GetBundle '{"pkgName":"no-such-package"}'
p="$(head -1 "$work/packages")"
call GetBundle "{\"pkgName\":\"$p\",\"channelName\":\"no-such-channel\"}"
read -r p c _ <"$work/channels"
call GetBundle "{\"pkgName\":\"$p\",\"channelName\":\"$c\",\"csvName\":\"no-such-bundle\"}"
call GetBundleForChannel "{\"pkgName\":\"$p\",\"channelName\":\"no-such-channel\"}"
call GetBundleThatReplaces '{"csvName":"x","pkgName":"no-such-package"}'
call GetBundleThatReplaces "{\"csvName\":\"no-such-bundle\",\"pkgName\":\"$p\",\"channelName\":\"$c\"}"
call GetChannelEntriesThatReplace '{"csvName":"no-such-bundle"}'
call GetChannelEntriesThatProvide '{"group":"no.such.group","version":"v1","kind":"Nothing"}'
call GetLatestChannelEntriesThatProvide '{"group":"no.such.group","version":"v1","kind":"Nothing"}'
call GetDefaultBundleThatProvides '{"group":"no.such.group","version":"v1","kind":"Nothing"}'
