#!/bin/sh
# The coordinator at scale: a restore round of N ranks (each reporting 4 steps
# of its own and its peer's metas), in process (the round's logic alone) at 1,024,
# 4,096 and 16,384 ranks, then over HTTP against a daemon at the same counts
# (MTC_BENCH_HTTP_RANKS; every waiting report holds a connection, no thread);
# then heartbeats of 16,384 ranks every 5 s for 25 s (MTC_BENCH_HB_RANKS), each
# rank on a kept connection, against the daemon and against tests/bench/http_floor.c
# (the least a server can do for them: the kernel's share on this machine), woken
# for each request and resting 2 ms after each pass as the daemon does.
#   tests/bench/coord.sh [BUILD_DIR]
set -eu
ulimit -n 65536 2>/dev/null || true # a connection per rank, both ends
. tests/bench/lib/common.sh
bench_root coord
pkgs="yaml-0.1 libcurl libarchive popt jansson libmicrohttpd libssl libcrypto libzstd"
cc -O2 -std=c11 -D_GNU_SOURCE -pthread -Ilib $(pkg-config --cflags jansson) \
	-o "$root/coord_scale" tests/bench/coord_scale.c "$build/lib/libmtc.a" $(pkg-config --libs $pkgs) -lm
cc -O2 -D_GNU_SOURCE -o "$root/http_floor" tests/bench/http_floor.c
echo "# coordinator, in process: targets at 16384 ranks < 2 s CPU, < 256 MiB"
for n in 1024 4096 16384; do "$root/coord_scale" "$n"; done
echo "# coordinator over HTTP (one connection per waiting report): targets at 16384 ranks < 2 s CPU, < 256 MiB"
# daemon N [coord_http.py arguments...]: a coordinator for N ranks under that load
daemon() {
	n=$1
	shift
	port=$(port)
	rm -rf "$root/d$n"
	mkdir -p "$root/d$n"
	"$build/bin/mtc-replicate" serve --dir "$root/d$n" --listen "127.0.0.1:$port" --coordinator \
		--nodes "$n" --max-connections $((n + 100)) --max-conns-per-ip $((n + 100)) >/dev/null 2>&1 &
	pid=$!
	pids=$pid
	for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
	timeout 300 python3 tests/bench/coord_http.py "$port" "$pid" "$n" "$@"
	stop_all
}
for n in ${MTC_BENCH_HTTP_RANKS:-1024 4096 16384}; do daemon "$n"; done
n=${MTC_BENCH_HB_RANKS:-16384}
echo "# heartbeats, one kept connection a rank: target at 16384 ranks every 5 s < 10% of a core"
daemon "$n" heartbeats 25 5 | sed 's/^/daemon: /'
# floor PAUSE_MS LABEL: the same load against the bare server
floor() {
	rm -f "$root/floor.port"
	"$root/http_floor" "$root/floor.port" "$1" &
	pid=$!
	pids=$pid
	for _ in $(seq 50); do [ -s "$root/floor.port" ] && break; sleep 0.1; done
	timeout 300 python3 tests/bench/coord_http.py "$(cat "$root/floor.port")" "$pid" "$n" heartbeats 25 5 |
		sed "s/^/$2: /; s/coordinator after/server after/"
	stop_all
}
floor 0 "floor (http_floor.c, a wakeup a request)"
floor 2 "floor (http_floor.c, resting 2 ms a pass as the daemon does)"
