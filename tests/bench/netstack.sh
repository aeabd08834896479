#!/bin/sh
# The hand-built network stack of lib/peer/ against the libraries beside it, the
# same bytes on loopback, tmpfs to tmpfs, plain and over TLS:
#  - the server: the daemon (libmicrohttpd behind sorter.c, and over TLS
#    tls_front.c and tls_relay.c) against libmicrohttpd alone
#    (tests/bench/mhd_file.c, terminating TLS itself with GnuTLS), curl the
#    client of both; a GET of one file, and a PUT (the daemon also hashes what
#    it receives, which b3sum's time is printed beside);
#  - the client: mtc-replicate push and fetch of one file on one stream by
#    the raw path (peer_http.c, sendfile; over TLS through tls_relay.c)
#    against the same program on libcurl (a proxy variable in the environment
#    turns the raw path off; no_proxy='*' keeps curl direct), the daemon the
#    server of both.
# Each figure is the best of MTC_BENCH_RUNS runs (default 3): the machine is shared.
#   tests/bench/netstack.sh [BUILD_DIR]     MTC_BENCH_MB sets the file's size (default 256)
set -eu
. tests/bench/lib/common.sh
mb=${MTC_BENCH_MB:-256}
runs=${MTC_BENCH_RUNS:-3}
bench_root net

cc -O2 -D_GNU_SOURCE -o "$root/mhd_file" tests/bench/mhd_file.c -lmicrohttpd
head -c $((mb << 20)) /dev/urandom >"$root/file"
bytes=$((mb << 20))
h=$(b3sum --no-names "$root/file")
printf '{"job-name":"bench","framework":"orbax","node-rank":0,"nodes":2,"peers-per-node":1,"backup-interval-minutes":30}\n' >"$root/cfg.json"
mkdir -p "$root/src"
ln "$root/file" "$root/src/$h.data"
printf %s "$h" >"$root/src/bench-s1-n0-w0.meta"

# mhd NAME DIR [CERT KEY]: libmicrohttpd alone for DIR; sets MURL.
mhd() {
	name=$1 d=$2
	shift 2
	"$root/mhd_file" "$root/$name.port" "$d" "$@" &
	pids="$pids $!"
	i=0
	while ! [ -s "$root/$name.port" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	MURL="$([ $# -gt 0 ] && echo https || echo http)://127.0.0.1:$(cat "$root/$name.port")"
}

# raw_vs_curl WHAT SETUP CMD COPY: the fastest CMD (push or fetch) on the raw path and on
# libcurl, the copy it makes checked after each
raw_vs_curl() {
	best "$1 one file, one stream: raw (peer_http.c)" "$bytes" "$2" "$3"
	a=$BEST
	cmp -s "$root/file" "$4" || echo "$1: THE COPY DIFFERS"
	best "$1 one file, one stream: libcurl" "$bytes" "$2" "env $nocurl $3"
	ratio "$a" "$BEST" "$1: the raw path against libcurl"
	cmp -s "$root/file" "$4" || echo "$1: THE COPY DIFFERS"
}

pki=$root/pki
make_pki "$pki"
tlscurl="--cacert $pki/node/ca.crt --cert $pki/node/tls.crt --key $pki/node/tls.key"
nocurl="http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 no_proxy='*'"

echo "# netstack bench: one file of $mb MiB, best of $runs, $(nproc) CPUs, $(curl --version | head -1 | cut -d' ' -f1-2), libmicrohttpd $(pkg-config --modversion libmicrohttpd 2>/dev/null || echo '?')"
best "b3sum of the file (the daemon's hashing on a PUT)" "$bytes" : 'b3sum --num-threads 1 "$root/file" >/dev/null'
b3=$BEST

for mode in plain tls; do
	mkdir -p "$root/d-$mode" "$root/m-$mode"
	if [ $mode = tls ]; then
		serve "d-$mode" "$root/d-$mode" --tls-dir "$pki/node"
		mhd "m-$mode" "$root/m-$mode" "$pki/node/tls.crt" "$pki/node/tls.key"
		c=$tlscurl
		kt=$(grep -q '"kernel-tls":true' "$root/d-$mode.out" && echo "kernel TLS on" || echo "kernel TLS off: OpenSSL en- and decrypts")
		echo "# --- over TLS (the daemon: $kt; libmicrohttpd: GnuTLS)"
		tlsdir="--tls-dir $pki/node"
	else
		serve "d-$mode" "$root/d-$mode"
		mhd "m-$mode" "$root/m-$mode"
		c=""
		echo "# --- plain"
		tlsdir=""
	fi
	durl=$SERVED_URL
	ln "$root/file" "$root/d-$mode/$h.data"
	ln "$root/file" "$root/m-$mode/file"

	echo "# the server, curl the client"
	best "GET: daemon" "$bytes" : "curl -sf $c -o /dev/null '$durl/v1/objects/$h.data'"
	a=$BEST
	best "GET: libmicrohttpd alone" "$bytes" : "curl -sf $c -o /dev/null '$MURL/file'"
	ratio "$a" "$BEST" "the daemon's GET against libmicrohttpd alone"
	best "PUT: daemon (hashed and verified)" "$bytes" "rm -f '$root/d-$mode/$h.data'" \
		"curl -sf $c -o /dev/null -T '$root/file' '$durl/v1/objects/$h.data'"
	a=$BEST
	best "PUT: libmicrohttpd alone (written, fsynced)" "$bytes" "rm -f '$root/m-$mode/put'" \
		"curl -sf $c -o /dev/null -T '$root/file' '$MURL/put'"
	ratio "$a" "$BEST" "the daemon's PUT against libmicrohttpd alone"
	awk -v a="$a" -v m="$BEST" -v h="$b3" 'BEGIN { printf "#   the daemon'"'"'s PUT less one b3sum of the file: %+.0f%%\n", (m / (a - h > 0 ? a - h : a) - 1) * 100 }'

	echo "# the client, the daemon the server"
	clean="rm -rf '$root/d-$mode/'*.data '$root/d-$mode/'*.meta '$root/d-$mode/'.mtc-upload-*"
	raw_vs_curl push "$clean" \
		"'$bin/mtc-replicate' push --dir '$root/src' --config '$root/cfg.json' --step 1 --peer '$durl' --streams 1 $tlsdir >/dev/null" \
		"$root/d-$mode/$h.data"
	fresh="rm -rf '$root/back'; mkdir -p '$root/back'"
	raw_vs_curl fetch "$fresh" \
		"'$bin/mtc-replicate' fetch --dir '$root/back' --from '$durl' --hash '$h' --streams 1 $tlsdir >/dev/null" \
		"$root/back/$h.data"
	rm -rf "$root/back" "$root/d-$mode" "$root/m-$mode"
done
