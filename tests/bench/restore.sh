#!/bin/bash
# Restore benchmarks (make bench):
#  1. one node's 2 GiB restored from its peer by mtc-restore (2-node cluster on
#     loopback: node 1's RAM is empty, node 0 holds both nodes' data), as one
#     object, as 8 workers' objects, and as a tree laid out as an Orbax save
#     (one big data file and a few small ones: it crosses in ranges); the one object,
#     a single file, is also fetched over one connection beside its byte ranges
# (the coordinator at scale: tests/bench/coord.sh)
# MTC_BENCH_GIB changes the size of 1.
set -eu
base=/dev/shm
[ -d "$base" ] && [ -w "$base" ] || base=${TMPDIR:-/tmp}
W=$(mktemp -d "$base/mtc-bench-restore.XXXXXX")
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$W"' EXIT
trap 'exit 130' INT TERM
gib=${MTC_BENCH_GIB:-2}
ports=($(python3 -c '
import socket
s = [socket.socket() for _ in range(3)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))'))

# --- 1. 2 GiB from a peer, as one object and as 8 workers' objects (fetched 4 at a time),
# best of MTC_BENCH_RUNS (default 4) side by side with `mtc-replicate fetch` of the same
# objects from the same daemon, each run from a fresh copy; the spread is (worst - best) / best.
runs=${MTC_BENCH_RUNS:-4}
now() { date +%s.%N; }

# serve_pair: both nodes' daemons on fresh copies of the template; rank 0 coordinates
serve_pair() {
	rm -rf "$W/n0" "$W/n1" && cp -r "$W/t0" "$W/n0" && mkdir -p "$W/n1"
	mtc-replicate serve --dir "$W/n0" --listen "127.0.0.1:${ports[0]}" --coordinator --nodes 2 >/dev/null &
	s0=$!
	mtc-replicate serve --dir "$W/n1" --listen "127.0.0.1:${ports[1]}" >/dev/null &
	s1=$!
	pids+=($s0 $s1)
	for _ in $(seq 50); do
		curl -sf "http://127.0.0.1:${ports[0]}/healthz" >/dev/null &&
			curl -sf "http://127.0.0.1:${ports[1]}/healthz" >/dev/null && return
		sleep 0.1
	done
}
stop_pair() { kill $s0 $s1 2>/dev/null || true; wait $s0 $s1 2>/dev/null || true; }

time_restore() {
	local coord=http://127.0.0.1:${ports[0]} t0 t1 p0
	serve_pair
	mtc-restore --dir "$W/n0" --config "$W/c0.json" --coordinator-url "$coord" --address "$coord" >/dev/null &
	p0=$!
	t0=$(now)
	mtc-restore --dir "$W/n1" --config "$W/c1.json" --coordinator-url "$coord" \
		--address "http://127.0.0.1:${ports[1]}" >"$W/r1.json"
	t1=$(now)
	wait $p0 || true
	restore+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')")
	stop_pair
}

# time_fetch [OPTION...]: sets into fetch, or with --streams 1 into fetch1
time_fetch() {
	local t0 t1 t
	serve_pair
	rm -rf "$W/f1" && mkdir -p "$W/f1"
	t0=$(now)
	mtc-replicate fetch --dir "$W/f1" --from "http://127.0.0.1:${ports[0]}" "${hashes[@]}" "$@" >/dev/null
	t1=$(now)
	t=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
	if [ $# -gt 0 ]; then fetch1+=("$t"); else fetch+=("$t"); fi
	stop_pair
	rm -rf "$W/f1"
}

# object SIZE TREE: a new object of SIZE random bytes in $W/t0 (with TREE, a tree laid out
# as an Orbax save: the bytes in one data file beside small ones, no OCDBT manifest, so
# that the merkle digest names it); sets h
object() {
	if [ -n "$2" ]; then
		mkdir -p "$W/f/ocdbt.process_0/d"
		head -c "$1" /dev/urandom >"$W/f/ocdbt.process_0/d/e46f94127a44b0909c1e9ee2c33bc8ab"
		for n in _METADATA _CHECKPOINT_METADATA ocdbt.process_0/d/01381d6e46485ccdda238cc01ea42f33; do
			head -c 300 /dev/urandom >"$W/f/$n"
		done
	else
		head -c "$1" /dev/urandom >"$W/f"
	fi
	h=$(mtc-replicate digest "$W/f" | cut -d' ' -f1)
	mv "$W/f" "$W/t0/$h.data"
}

# peer_restore WORKERS [tree]: node 1's GiB in WORKERS objects live only on node 0; node 1 fetches them
peer_restore() {
	local w=$1 tree=${2:-} r k size h
	restore=() fetch=() fetch1=() hashes=()
	rm -rf "$W/t0" && mkdir -p "$W/t0"
	for r in 0 1; do
		echo "{\"job-name\":\"b\",\"framework\":\"orbax\",\"node-rank\":$r,\"nodes\":2,\"peer-ranks\":[$((1 - r))],\"backup-interval-minutes\":30,\"workers-per-node\":$w}" >"$W/c$r.json"
		for ((k = 0; k < w; k++)); do
			if [ "$r" = 1 ]; then size=$(((gib << 30) / w)); else size=$((1 << 20)); fi
			object "$size" "$tree"
			printf %s "$h" >"$W/t0/b-s1-n$r-w$k.meta"
			[ "$r" = 1 ] && hashes+=(--hash "$h")
		done
	done
	for i in $(seq "$runs"); do
		# the order alternates: the first to fill fresh tmpfs pages pays for them
		if [ $((i % 2)) = 1 ]; then time_restore; time_fetch; else time_fetch; time_restore; fi
		# one file: over one connection too, to show what its byte ranges buy
		[ "$w" = 1 ] && [ -z "$tree" ] && time_fetch --streams 1
	done
	python3 - "$gib" "$w" "${restore[*]}" "${fetch[*]}" "$tree" "${fetch1[*]:-}" <<'PY'
import sys
gib, w, tree = int(sys.argv[1]), int(sys.argv[2]), sys.argv[5]
r, f = [float(x) for x in sys.argv[3].split()], [float(x) for x in sys.argv[4].split()]
f1 = [float(x) for x in sys.argv[6].split()]
def line(name, t):
    b = min(t)
    print(f"  {name:<34} best {b:6.2f} s {gib * 1024 / b:6.0f} MiB/s   spread {(max(t) - b) / b * 100:4.0f}% over {len(t)}")
what = "a tree laid out as an Orbax save (one big data file)" if tree else f"{w} object(s)"
print(f"restore from a peer, {what}, {gib} GiB:")
line("mtc-restore (plan, fetch, verify)", r)
line("mtc-replicate fetch, same bytes", f)
if f1:
    line("  the same over one connection", f1)
print(f"  restore / fetch speed: {min(f) / min(r):.2f}x (target >= 0.9x)")
PY
	rm -rf "$W/t0" "$W/n0" "$W/n1" "$W/f1"
}
peer_restore 1
peer_restore 8
peer_restore 1 tree
