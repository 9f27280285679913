#!/bin/sh
# Regenerates cmd/stateproc/default.pgo, the CPU profile from which the Go
# toolchain optimizes the stateproc command (profile-guided optimization:
# hot calls are inlined). The profile is of the commands the README's
# benchmarks time, on the benchmark savepoints, which must exist first:
#
#   go run ./bench/gensavepoints -out /tmp/bench
#   sh bench/pgo.sh [/tmp/bench]
#
# Each command runs several times so that a short one gets enough samples
# to count beside a long one.
set -eu
bench=${1:-/tmp/bench}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM

go build -pgo=off -o "$work/stateproc" ./cmd/stateproc
go run ./examples/gatewaymeter -manifest -leak -open-schema v2 > "$work/job-v2.json"

n=0
profile() { # profile RUNS ARGS...: run stateproc ARGS, RUNS times
	runs=$1
	shift
	for _ in $(seq "$runs"); do
		n=$((n + 1))
		rm -rf "$work/out"
		"$work/stateproc" "$@" --cpuprofile "$work/$n.prof" > /dev/null
	done
}
profile 5 inspect --scan "$bench/sessions-large"
profile 2 verify "$bench/sessions-large"
profile 1 export "$bench/sessions-large" --out "$work/out"
profile 2 prune-ttl "$bench/sessions-large" --now 2026-01-10T00:00:00Z --out "$work/out"
profile 2 rescale "$bench/sessions-large" --max-parallelism 720 --out "$work/out"
profile 10 migrate "$bench/gateway-large" --job "$work/job-v2.json" --out "$work/out"

go tool pprof -proto "$work"/*.prof > cmd/stateproc/default.pgo
echo "wrote cmd/stateproc/default.pgo from $n profiles" >&2
