#!/bin/sh
# Peer transfer throughput on loopback, tmpfs to tmpfs, against the tools of the
# same run: the local copy limit (dd bs=4M per file), cp -r, rsync to an rsync
# daemon, curl of the same bytes, and mtc-replicate push/fetch (with digest
# verification on receipt), and push and fetch over mutual TLS against the
# plain ones. Each figure is the best of MTC_BENCH_RUNS runs (default 5): the
# machine is shared. Then the daemon's peak RSS with 16 nodes pushing to it at
# once.
#   tests/bench/peer.sh [BUILD_DIR]     MTC_BENCH_MB sets the step size (default 2048)
set -eu
. tests/bench/lib/common.sh
mb=${MTC_BENCH_MB:-2048}
bench_root peer

# The step: three large shards (15/16 of it) and many 64 KiB files.
small=$((mb * 1024 / 16 / 64))
shard=$((mb * 1024 * 1024 * 15 / 16 / 3))
# It is made by mtc-replicate commit, as on a node: <hash>.data, its .meta, and
# <hash>.manifest beside it, so a push sends without hashing the step again.
mkdir -p "$root/src/1/small"
for i in 0 1 2; do head -c "$shard" /dev/urandom >"$root/src/1/shard-$i"; done
head -c $((small * 65536)) /dev/urandom | split -b 65536 -a 5 - "$root/src/1/small/f-"
: >"$root/src/1/commit_success.txt"
printf '{"job-name":"bench","framework":"orbax","node-rank":0,"nodes":2,"peers-per-node":1,"backup-interval-minutes":30}\n' >"$root/cfg.json"
hash=$("$bin/mtc-replicate" commit --dir "$root/src" --config "$root/cfg.json" --json |
	sed -n 's/.*"hash":"\([^"]*\)".*/\1/p')
[ -f "$root/src/$hash.manifest" ] || { echo "commit kept no manifest" >&2; exit 1; }
echo "# peer bench: $mb MiB step (3 shards of $((shard >> 20)) MiB, $small files of 64 KiB), $(nproc) CPUs"

fresh() { rm -rf "$root/dst" && mkdir -p "$root/dst"; }
runs=${MTC_BENCH_RUNS:-5}

step_bytes=$((shard * 3 + small * 65536))
best "local copy limit (dd bs=4M, shards)" "$((shard * 3))" fresh \
	'for i in 0 1 2; do dd if="$root/src/$hash.data/shard-$i" of="$root/dst/shard-$i" bs=4M status=none; done'
local_rate=$(awk -v t="$BEST" -v b="$((shard * 3))" 'BEGIN { print b / 1048576 / t }')
best "cp -r" "$step_bytes" fresh 'cp -r "$root/src/$hash.data" "$root/dst/"'

if command -v rsync >/dev/null; then
	port=$((30000 + $$ % 20000))
	printf 'use chroot = no\nuid = 0\ngid = 0\n[dst]\npath = %s/dst\nread only = no\n' "$root" >"$root/rsyncd.conf"
	fresh
	rsync --daemon --no-detach --address=127.0.0.1 --port="$port" --config="$root/rsyncd.conf" &
	pids="$pids $!"
	i=0
	while ! rsync "rsync://127.0.0.1:$port/" >/dev/null 2>&1 && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	best "rsync to rsync daemon" "$step_bytes" 'rm -rf "$root/dst/"*' \
		'rsync -a "$root/src/$hash.data" "rsync://127.0.0.1:$port/dst/"'
	rsync_s=$BEST
else
	echo "rsync not installed: skipped"
	rsync_s=""
fi

fresh
serve serve "$root/dst"
dpid=$SERVED_PID
# Its anonymous and shared (tmpfs pages it maps) RSS, sampled every 0.1 s while it
# lives, at most an hour: what its peak is made of.
(
	i=0
	while [ $i -lt 36000 ] && awk '/^Rss(Anon|Shmem)/ { printf "%s %s ", $1, $2 } END { print "" }' \
		/proc/$dpid/status 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
	done >"$root/rss"
) &
url=$SERVED_URL
clean_dst='rm -rf "$root/dst/"* "$root/dst/".mtc-upload-*'

# Once without the kept manifest (a step not made by commit: push hashes it first).
mv "$root/src/$hash.manifest" "$root/manifest.kept"
s=$(now)
"$bin/mtc-replicate" push --dir "$root/src" --config "$root/cfg.json" --step 1 --peer "$url" >/dev/null
rate "push, manifest computed first" "$(since "$s")" "$step_bytes"
diff -r "$root/src/$hash.data" "$root/dst/$hash.data" >/dev/null || echo "PUSH COPY DIFFERS"
mv "$root/manifest.kept" "$root/src/$hash.manifest"
# four_and_one WHAT SETUP CMD DIR: CMD on 4 streams (its copy in DIR checked; sets FOUR), then on one
four_and_one() {
	best "$1 (4 streams, verified)" "$step_bytes" "$2" "$3 >/dev/null"
	FOUR=$BEST
	diff -r "$root/src/$hash.data" "$4/$hash.data" >/dev/null || echo "$1: THE COPY DIFFERS"
	best "$1 --streams 1 (one tar stream)" "$step_bytes" "$2" "$3 --streams 1 >/dev/null"
}
four_and_one push "$clean_dst" \
	'"$bin/mtc-replicate" push --dir "$root/src" --config "$root/cfg.json" --step 1 --peer "$url"' "$root/dst"
push_s=$FOUR
four_and_one fetch 'rm -rf "$root/back"; mkdir -p "$root/back"' \
	'"$bin/mtc-replicate" fetch --dir "$root/back" --from "$url" --hash "$hash"' "$root/back"
fetch_s=$FOUR
rm -rf "$root/back"
best "curl GET of the tar stream" "$step_bytes" : 'curl -sf -o /dev/null "$url/v1/objects/$hash.data"'

# The per-file wire form at its best: the three shards as raw bodies over three connections.
for i in 0 1 2; do b3sum --no-names "$root/src/$hash.data/shard-$i" >"$root/h$i"; done
s=$(now)
puts=""
for i in 0 1 2; do
	curl -sf -o /dev/null -T "$root/src/$hash.data/shard-$i" "$url/v1/objects/$(cat "$root/h$i").data" &
	puts="$puts $!"
done
for p in $puts; do wait "$p"; done
rate "3 parallel PUTs of shards (verified)" "$(since "$s")" "$((shard * 3))"
rm -f "$root/dst/"[0-9a-f]*.data

big="$root/src/$hash.data/shard-0"
bh=$(b3sum --no-names "$big")
s=$(now)
curl -sf -o /dev/null -T "$big" "$url/v1/objects/$bh.data"
rate "curl PUT of one shard (verified)" "$(since "$s")" "$shard"
s=$(now)
curl -sf -o "$root/one" "$url/v1/objects/$bh.data"
rate "curl GET of one shard (sendfile)" "$(since "$s")" "$shard"
rm -f "$root/one"

# A one-file object (a PyTorch .save, say): pushed in byte ranges over the streams, and over one.
mkdir -p "$root/onefile"
ln "$big" "$root/onefile/$bh.data"
printf %s "$bh" >"$root/onefile/bench-s2-n0-w0.meta"
best "push of one file (4 streams, ranges)" "$shard" "$clean_dst" \
	'"$bin/mtc-replicate" push --dir "$root/onefile" --config "$root/cfg.json" --step 2 --peer "$url" >/dev/null'
one_s=$BEST
cmp -s "$big" "$root/dst/$bh.data" || echo "ONE-FILE PUSH DIFFERS"
best "push of one file --streams 1" "$shard" "$clean_dst" \
	'"$bin/mtc-replicate" push --dir "$root/onefile" --config "$root/cfg.json" --step 2 --peer "$url" --streams 1 >/dev/null'
one1_s=$BEST
rm -rf "$root/onefile"
eval "$clean_dst"

echo "# daemon peak RSS (VmHWM) after the runs above: $(awk '/VmHWM/ { print $2, $3 }' /proc/$dpid/status)" \
	"$(awk '$2 > a { a = $2 } $4 > s { s = $4 } END { printf "(of it at most %d kB anonymous, %d kB tmpfs pages mapped)", a, s }' "$root/rss")"

# The same push and fetch over mutual TLS (mtc(7) §4.3), to a second daemon on the same tmpfs.
pki=$root/pki
make_pki "$pki"
mkdir -p "$root/tdst"
serve tserve "$root/tdst" --tls-dir "$pki/node"
tpid=$SERVED_PID
turl=$SERVED_URL
if grep -q '"kernel-tls":true' "$root/tserve.out"; then
	echo "# kernel TLS: offered by this kernel (the kernel en- and decrypts)"
else
	echo "# kernel TLS: not offered by this kernel (no tls in tcp_available_ulp): OpenSSL en- and decrypts"
fi
best "push over TLS (verified)" "$step_bytes" 'rm -rf "$root/tdst/"* "$root/tdst/".mtc-upload-*' \
	'"$bin/mtc-replicate" push --dir "$root/src" --config "$root/cfg.json" --step 1 --peer "$turl" --tls-dir "$pki/node" >/dev/null'
tls_push_s=$BEST
diff -r "$root/src/$hash.data" "$root/tdst/$hash.data" >/dev/null || echo "TLS PUSH COPY DIFFERS"
best "fetch over TLS (verified)" "$step_bytes" 'rm -rf "$root/back"; mkdir -p "$root/back"' \
	'"$bin/mtc-replicate" fetch --dir "$root/back" --from "$turl" --hash "$hash" --tls-dir "$pki/node" >/dev/null'
tls_fetch_s=$BEST
diff -r "$root/src/$hash.data" "$root/back/$hash.data" >/dev/null || echo "TLS FETCH COPY DIFFERS"
rm -rf "$root/back"
best "curl GET of the tar stream over TLS" "$step_bytes" : \
	'curl -sf -o /dev/null --cacert "$pki/node/ca.crt" --cert "$pki/node/tls.crt" --key "$pki/node/tls.key" "$turl/v1/objects/$hash.data"'
echo "# TLS daemon peak RSS (VmHWM): $(awk '/VmHWM/ { print $2, $3 }' /proc/$tpid/status)"
kill "$tpid" 2>/dev/null || true
rm -rf "$root/tdst"

# Memory under load: 16 nodes push distinct steps at once (64 connections) to a fresh
# daemon (on loopback they share one address: no per-address limit here).
rm -rf "$root/dst/"* "$root/back" "$root/src"
serve serve16 "$root/dst" --max-conns-per-ip 0
d16=$SERVED_PID
url16=$SERVED_URL
nodes=$(seq 16)
for n in $nodes; do
	mkdir -p "$root/n$n/1/small"
	for i in 0 1; do head -c $((16 << 20)) /dev/urandom >"$root/n$n/1/shard-$i"; done
	head -c $((128 * 65536)) /dev/urandom | split -b 65536 -a 3 - "$root/n$n/1/small/f-"
	: >"$root/n$n/1/commit_success.txt"
	"$bin/mtc-replicate" commit --dir "$root/n$n" --config "$root/cfg.json" >/dev/null
done
pushes=""
s=$(now)
for n in $nodes; do
	"$bin/mtc-replicate" push --dir "$root/n$n" --config "$root/cfg.json" --step 1 --peer "$url16" >"$root/push$n.out" &
	pushes="$pushes $!"
done
failed=0
for p in $pushes; do wait "$p" || failed=$((failed + 1)); done
[ "$failed" -eq 0 ] || echo "CONCURRENT PUSHES FAILED: $failed"
rate "16 nodes pushing at once (4 streams)" "$(since "$s")" "$((16 * (32 << 20) + 16 * 128 * 65536))"
echo "# daemon peak RSS (VmHWM) with 16 nodes pushing at once: $(awk '/VmHWM/ { print $2, $3 }' /proc/$d16/status) (limit 64 MiB)"
awk -v p="$push_s" -v l="$local_rate" -v r="$rsync_s" -v b="$step_bytes" -v tp="$tls_push_s" \
	-v f="$fetch_s" -v tf="$tls_fetch_s" -v o="$one_s" -v o1="$one1_s" 'BEGIN {
	printf "# push vs local copy limit: %.2fx", b / 1048576 / p / l
	if (r != "") printf ", push vs rsync: %.2fx", r / p
	printf ", TLS push vs plain push: %.2fx (target 0.7), TLS fetch vs plain fetch: %.2fx", p / tp, f / tf
	printf ", one-file push in ranges vs one stream: %.2fx", o1 / o
	printf "\n" }'
