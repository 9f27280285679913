#!/usr/bin/env bash
# Wall time and peak RSS of each pipeline on Prism against the stateproc
# command on the same input, and the map stage's throughput per core
# against the command's on one core (GOMAXPROCS=1 for both; the map stage
# of prune-ttl and verify is the per-shard function the command calls).
#
#   go run ./bench/gensavepoints -out /tmp/b -only sessions-large -scale 0.1
#   beam/bench/run.sh /tmp/b/sessions-large
#
# Prism runs in memory on this machine, so the whole-pipeline figures are a
# sanity check of the engine's overhead, not a measure of scale-out.
set -euo pipefail
sp=$1
shards=${SHARDS:-4}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$root" && go build -o "$work/stateproc" ./cmd/stateproc)
(cd "$root/beam" && go build -o "$work/stateproc-beam" ./cmd/stateproc-beam)
bytes=$(du -sb "$sp" | cut -f1)

measure() { # name, command...
  local name=$1; shift
  /usr/bin/time -f "%e %M" -o "$work/t" "$@" > /dev/null 2> "$work/err" || { cat "$work/err" >&2; exit 1; }
  read -r wall rss < "$work/t"
  # PART: the share of the input the run reads (1/N for one shard).
  awk -v n="$name" -v w="$wall" -v r="$rss" -v b="$bytes" -v part="${PART:-1}" \
    'BEGIN { printf "%-34s %8.2f s %8.0f MiB %8.1f MiB/s\n", n, w, r/1024, b*part/1048576/w }'
}

echo "input $sp: $((bytes / 1048576)) MiB, $shards shards"
printf "%-34s %10s %12s %14s\n" run wall "peak RSS" "input/s"
measure "prune-ttl CLI" "$work/stateproc" prune-ttl "$sp" --out "$work/p1" --ttl session-features/category-counts=1d
measure "prune-ttl Beam (Prism)" "$work/stateproc-beam" prune-ttl --shards "$shards" --out "$work/p2" --ttl session-features/category-counts=1d "$sp"
cmp <(cd "$work/p1" && cat $(ls)) <(cd "$work/p2" && cat $(ls)) && echo "  prune-ttl outputs byte-identical"
measure "verify CLI" "$work/stateproc" verify "$sp"
measure "verify Beam (Prism)" "$work/stateproc-beam" verify --shards "$shards" "$sp"
measure "inspect --scan CLI" "$work/stateproc" inspect --scan "$sp"
measure "inspect --scan Beam (Prism)" "$work/stateproc-beam" inspect --shards "$shards" "$sp"
measure "export CLI" "$work/stateproc" export "$sp" --out "$work/e1"
measure "export Beam (Prism)" "$work/stateproc-beam" export --shards "$shards" --out "$work/e2" "$sp"
measure "rescale CLI (maxP 256)" "$work/stateproc" rescale "$sp" --out "$work/r1" --max-parallelism 256
measure "rescale Beam (Prism, maxP 256)" "$work/stateproc-beam" rescale --shards "$shards" --out "$work/r2" --max-parallelism 256 "$sp"
cmp <(cd "$work/r1" && cat $(ls)) <(cd "$work/r2" && cat $(ls)) && echo "  rescale outputs byte-identical"

echo "one core (GOMAXPROCS=1): the whole run against one shard of $shards (its share of the input per second)"
GOMAXPROCS=1 measure "verify CLI, 1 core" "$work/stateproc" verify "$sp"
PART=$(awk -v n="$shards" 'BEGIN { print 1/n }') GOMAXPROCS=1 measure "verify --shard 0/$shards, 1 core" "$work/stateproc" verify --shard "0/$shards" "$sp"
GOMAXPROCS=1 measure "prune-ttl CLI, 1 core" "$work/stateproc" prune-ttl "$sp" --out "$work/p3" --ttl session-features/category-counts=1d
PART=$(awk -v n="$shards" 'BEGIN { print 1/n }') GOMAXPROCS=1 measure "prune-ttl --shard 0/$shards, 1 core" "$work/stateproc" prune-ttl "$sp" --out "$work/p4" --ttl session-features/category-counts=1d --shard "0/$shards"
