#!/bin/sh
# The coordinator at scale: a restore round of N ranks (each reporting 4 steps
# of its own and its peer's metas), in process (the round's logic alone) at 1,024,
# 4,096 and 16,384 ranks, then over HTTP against a daemon at the same counts
# (MTC_BENCH_HTTP_RANKS; every waiting report holds a connection, no thread).
#   tests/bench/coord.sh [BUILD_DIR]
set -eu
ulimit -n 65536 2>/dev/null || true # a connection per rank, both ends
build=${1:-build/release}
root=$(mktemp -d /dev/shm/mtc-bench-coord.XXXXXX)
pid=""
cleanup() {
	[ -z "$pid" ] || kill "$pid" 2>/dev/null || true
	rm -rf "$root"
}
trap cleanup EXIT INT TERM
pkgs="yaml-0.1 libcurl libarchive popt jansson libmicrohttpd libssl libcrypto libzstd"
cc -O2 -std=c11 -D_GNU_SOURCE -pthread -Ilib $(pkg-config --cflags jansson) \
	-o "$root/coord_scale" tests/bench/coord_scale.c "$build/lib/libmtc.a" $(pkg-config --libs $pkgs) -lm
echo "# coordinator, in process: targets at 16384 ranks < 2 s CPU, < 256 MiB"
for n in 1024 4096 16384; do "$root/coord_scale" "$n"; done
echo "# coordinator over HTTP (one connection per waiting report): targets at 16384 ranks < 2 s CPU, < 256 MiB"
for n in ${MTC_BENCH_HTTP_RANKS:-1024 4096 16384}; do
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	mkdir -p "$root/d$n"
	"$build/bin/mtc-replicate" serve --dir "$root/d$n" --listen "127.0.0.1:$port" --coordinator \
		--nodes "$n" --max-connections $((n + 100)) --max-conns-per-ip $((n + 100)) >/dev/null 2>&1 &
	pid=$!
	for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
	timeout 300 python3 tests/bench/coord_http.py "$port" "$pid" "$n"
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	pid=""
done
