# shellcheck shell=sh
# What the benches share (POSIX sh), sourced from the tree's top by a bench
# that takes the build dir as $1:  . tests/bench/lib/common.sh
# Gives build, bin and store; bench_root NAME (root: a fresh tmpfs dir, removed at
# exit with the processes in $pids stopped, kept when MTC_BENCH_KEEP is set);
# and the helpers below. Not a bench itself: tests/bench/run runs *.sh only.
build=${1:-build/release}
bin=$(cd "$build/bin" && pwd)
store="$PWD/$build/unit/store" # the store unit test's binary: put, get, ... on any URL
pids=""

stop_all() {
	for p in $pids; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	pids=""
}

bench_cleanup() {
	stop_all
	if [ -n "${MTC_BENCH_KEEP:-}" ]; then echo "# kept $root"; else rm -rf "$root"; fi
}

bench_root() {
	root=$(mktemp -d "/dev/shm/mtc-bench-$1.XXXXXX")
	trap bench_cleanup EXIT INT TERM
}

now() { date +%s.%N; }
# since T: seconds from T (a now) to now
since() { awk -v s="$1" -v e="$(now)" 'BEGIN { print e - s }'; }
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# rate NAME SECONDS BYTES: one figure's line
rate() { awk -v n="$1" -v t="$2" -v b="$3" 'BEGIN { printf "%-52s %7.3f s %8.0f MiB/s\n", n, t, b / 1048576 / t }'; }

# best NAME BYTES SETUP CMD: the fastest of $runs runs of CMD, each after SETUP; prints it, sets BEST (s).
best() {
	BEST=""
	for _ in $(seq "$runs"); do
		eval "$3"
		s=$(now)
		eval "$4"
		e=$(now)
		BEST=$(awk -v s="$s" -v e="$e" -v b="$BEST" 'BEGIN { t = e - s; print (b == "" || t < b) ? t : b }')
	done
	rate "$1" "$BEST" "$2"
}

# ratio A B NAME: how much faster A (s) is than B (s).
ratio() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { printf "#   %s: %+.0f%%\n", n, (b / a - 1) * 100 }'; }

# serve NAME DIR [OPTIONS]: a daemon for DIR, its --json line in NAME.out; sets SERVED_PID and SERVED_URL.
serve() {
	name=$1 d=$2
	shift 2
	"$bin/mtc-replicate" serve --dir "$d" --listen 127.0.0.1:0 --json "$@" >"$root/$name.out" 2>"$root/$name.err" &
	SERVED_PID=$!
	pids="$pids $SERVED_PID"
	i=0
	while ! grep -q listen "$root/$name.out" 2>/dev/null && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	SERVED_URL="$(sed -n 's/.*"scheme":"\([^"]*\)".*/\1/p' "$root/$name.out")://$(sed -n 's/.*"listen":"\([^"]*\)".*/\1/p' "$root/$name.out")"
}

# coord_peer: a fresh peer daemon (rank 1's, coordinating 2 nodes) on $root/peer, the only
# process of $pids; sets PEER and PEER_PID
coord_peer() {
	stop_all
	rm -rf "$root/peer" && mkdir -p "$root/peer"
	pt=$(port)
	"$bin/mtc-replicate" serve --dir "$root/peer" --listen "127.0.0.1:$pt" --coordinator --nodes 2 >/dev/null 2>&1 &
	PEER_PID=$!
	pids=$PEER_PID
	PEER=http://127.0.0.1:$pt
	for _ in $(seq 50); do curl -sf "$PEER/healthz" >/dev/null && return; sleep 0.1; done
	echo "the peer daemon did not start" >&2
	exit 1
}

# make_step DIR SHARD_MB SMALL MOD UNIT MIBS: a step of four shards (SHARD_MB MiB and a
# few KiB each), SMALL files of 1 to MOD UNITs of bytes and MIBS files of 1 MiB
make_step() {
	mkdir -p "$1/shards" "$1/small"
	for i in 1 2 3 4; do
		head -c $(($2 * 1048576 + i * 4099)) /dev/urandom >"$1/shards/shard$i"
	done
	i=0
	while [ $i -lt "$3" ]; do
		head -c $(((i % $4 + 1) * $5)) /dev/urandom >"$1/small/f$i"
		i=$((i + 1))
	done
	i=0
	while [ $i -lt "$6" ]; do
		head -c 1048576 /dev/urandom >"$1/small/m$i"
		i=$((i + 1))
	done
}

# make_pki DIR: a CA and a node's certificate for 127.0.0.1 (client and server), as
# --tls-dir DIR/node takes them
make_pki() {
	mkdir -p "$1/node"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj "/CN=bench CA" \
		-keyout "$1/ca.key" -out "$1/node/ca.crt" 2>/dev/null
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=node" \
		-keyout "$1/node/tls.key" -out "$1/node.csr" 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >"$1/ext"
	openssl x509 -req -in "$1/node.csr" -CA "$1/node/ca.crt" -CAkey "$1/ca.key" -CAcreateserial \
		-days 1 -extfile "$1/ext" -out "$1/node/tls.crt" 2>/dev/null
	chmod 600 "$1/node/tls.key"
}

# fake_gcs [OPTION...]: the fake GCS server (tests/fakegcs/server.py) on a free port, its
# data in $root/server, stopped at exit; sets url
# big_object MB: $root/big, MB MiB of random bytes, and gib its size in GiB; exits 0
# (skipped) when /dev/shm lacks room for the 7 copies a big bench takes.
big_object() {
	avail_mb=$(df -Pm /dev/shm | awk 'NR == 2 { print $4 }')
	if [ "$avail_mb" -lt $(($1 * 7 + 256)) ]; then
		echo "# /dev/shm has $avail_mb MB free, too little for the 7 copies of $1 MB this takes: skipped"
		exit 0
	fi
	head -c $(($1 * 1048576)) /dev/urandom >"$root/big"
	gib=$(echo "$1" | awk '{ print $1 / 1024 }')
}

# measure LABEL PREP CMD...: CMD over the big object ($gib GiB), the fastest of $runs (1) runs,
# each after PREP (a shell snippet, untimed): wall seconds, MB/s, client CPU seconds per GiB,
# and its speed over $base's, which the first line after `base=` sets.
base=
runs=1
measure() {
	label=$1 prep=$2
	shift 2
	: >"$root/times"
	n=0
	while [ $n -lt $runs ]; do
		sh -c "$prep"
		/usr/bin/time -f '%e %U %S' -o "$root/time" "$@" > /dev/null 2>"$root/err" || {
			echo "# $label failed:"; sed 's/^/#   /' "$root/err" | tail -5; return 0; }
		cat "$root/time" >> "$root/times"
		n=$((n + 1))
	done
	set -- $(sort -n "$root/times" | head -1) $(sort -n "$root/times" | tail -1 | cut -d' ' -f1)
	[ -n "$base" ] || base=$1
	printf '%-46s' "$label"
	echo "$1 $2 $3 $base $4 $runs" | awk -v g="$gib" '{
		printf " %7.2f s  %8.1f MB/s  %6.2f CPU s/GiB  %5.2fx", $1, g * 1073.741824 / $1, ($2 + $3) / g, $4 / $1
		if ($6 > 1) printf "  (best of %d, spread %.2f)", $6, $5 / $1
		printf "\n" }'
}

fake_gcs() {
	mkdir -p "$root/server"
	python3 tests/fakegcs/server.py --host 127.0.0.1 --port 0 --port-file "$root/port" \
		--data-dir "$root/server" "$@" >"$root/server.log" 2>&1 &
	pids="$pids $!"
	i=0
	while [ ! -s "$root/port" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	[ -s "$root/port" ] || { echo "# the fake server did not start:"; sed 's/^/#   /' "$root/server.log"; exit 1; }
	url="http://127.0.0.1:$(cat "$root/port")"
}
