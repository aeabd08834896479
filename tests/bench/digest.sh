#!/bin/sh
# BLAKE3 and the commit on a tmpfs step of about 1 GiB (a few large shards plus
# many small files): mtc-replicate digest against b3sum (all threads and one),
# then the end-to-end commit of the same step. Best of MTC_BENCH_RUNS (5) runs,
# the programs taking turns.
set -eu
. tests/bench/lib/common.sh
size_mb=${MTC_BENCH_MB:-1024}
bench_root digest

step=$root/local/1000
make_step "$step" $(((size_mb - 64) / 4)) 2048 61 523 48
bytes=$(du -sb "$step" | cut -f1)
files=$(find "$step" -type f | wc -l)

runs=${MTC_BENCH_RUNS:-5}
t() { # wall seconds of one run of the command
	t0=$(date +%s.%N)
	"$@" > /dev/null
	t1=$(date +%s.%N)
	echo "$t0 $t1" | awk '{ print $2 - $1 }'
}
min() { echo "$1 $2" | awk '{ print ($1 < $2 ? $1 : $2) }'; }

# Best of $runs, the commands taking turns so that each pair sees the same load.
shards="$step/shards/shard1 $step/shards/shard2 $step/shards/shard3 $step/shards/shard4"
m1=999 b1=999 ma=999 ba=999 md=999 bd=999
r=0
while [ $r -lt "$runs" ]; do
	# shellcheck disable=SC2086
	{
	m1=$(min "$m1" "$(t mtc-replicate digest --threads 1 $shards)")
	b1=$(min "$b1" "$(t b3sum --num-threads 1 $shards)")
	ma=$(min "$ma" "$(t mtc-replicate digest $shards)")
	ba=$(min "$ba" "$(t b3sum $shards)")
	}
	md=$(min "$md" "$(t mtc-replicate digest "$step")")
	bd=$(min "$bd" "$(t sh -c "find '$step' -type f -print0 | xargs -0 b3sum")")
	r=$((r + 1))
done
# shellcheck disable=SC2086
shard_bytes=$(stat -c %s $shards | awk '{ s += $1 } END { print s }')

cpus=$(nproc)
simd=sse4_1
for f in avx2 avx512f; do grep -q -w "$f" /proc/cpuinfo && simd=$f; done
echo "step: $((bytes / 1048576)) MiB in $files files on tmpfs; $cpus CPUs; widest SIMD: $simd; best of $runs"
awk -v b="$bytes" -v sb="$shard_bytes" -v m1="$m1" -v b1="$b1" -v ma="$ma" -v ba="$ba" -v md="$md" -v bd="$bd" 'BEGIN {
	gb = b / 1e9; sgb = sb / 1e9
	printf "digest shards, 1 thread:   mtc %.2f GB/s  b3sum %.2f GB/s  ratio %.2f (target >= 0.9)\n", sgb / m1, sgb / b1, b1 / m1
	printf "digest shards, all threads: mtc %.2f GB/s  b3sum %.2f GB/s  ratio %.2f (target >= 0.9)\n", sgb / ma, sgb / ba, ba / ma
	printf "digest whole step dir:      mtc %.2f GB/s  b3sum per file %.2f GB/s  ratio %.2f\n", gb / md, gb / bd, bd / md
}'

# The logical digest of an OCDBT store (--framework orbax) against the merkle
# digest of the same store's files: about size_mb of large values written by
# the real tensorstore, when `make venv` made it.
venv=build/venv
if [ -e "$venv/.complete" ]; then
	"$venv/bin/python" - "$root/ocdbt/step/store" "$size_mb" <<'PY'
import os, sys
import tensorstore as ts
path, mb = sys.argv[1], int(sys.argv[2])
kv = ts.KvStore.open({"driver": "ocdbt", "base": "file://" + os.path.abspath(path),
                      "config": {"max_inline_value_bytes": 0}}).result()
txn = ts.Transaction()
for i in range(mb // 32):
    kv.with_transaction(txn)[b"param/%04d" % i] = os.urandom(32 << 20)
for i in range(256):
    kv.with_transaction(txn)[b"small/%04d" % i] = os.urandom(4096 + i)
txn.commit_async().result()
PY
	ol=999 om=999
	r=0
	while [ $r -lt "$runs" ]; do
		ol=$(min "$ol" "$(t mtc-replicate digest --framework orbax "$root/ocdbt/step")")
		om=$(min "$om" "$(t mtc-replicate digest "$root/ocdbt/step/store")")
		r=$((r + 1))
	done
	obytes=$(du -sb "$root/ocdbt/step/store" | cut -f1)
	awk -v b="$obytes" -v ol="$ol" -v om="$om" 'BEGIN {
		printf "logical digest of an OCDBT store (%d MiB): %.2f GB/s  merkle of its files %.2f GB/s  ratio %.2f (target >= 0.8)\n", b / 1048576, b / 1e9 / ol, b / 1e9 / om, om / ol
	}'
	rm -rf "$root/ocdbt"
else
	echo "logical digest of an OCDBT store: skipped (no build/venv with tensorstore: make venv)"
fi

cfg=$root/cfg.json
printf '{"job-name":"bench","framework":"orbax","node-rank":0,"nodes":2,"peer-ranks":[1],"backup-interval-minutes":30}' > "$cfg"
inode=$(stat -c %i "$step/shards/shard1")
t0=$(date +%s.%N)
out=$(mtc-replicate commit --dir "$root/local" --config "$cfg" --quiet-time 0)
t1=$(date +%s.%N)
same=$(find "$root/local" -inum "$inode" | grep -c '\.data/shards/shard1$' || true)
echo "$out"
awk -v b="$bytes" -v t0="$t0" -v t1="$t1" -v same="$same" 'BEGIN {
	printf "commit end to end: %.3f s, %.2f GB/s; data moved by rename, no copy: %s\n", t1 - t0, b / 1e9 / (t1 - t0), same == 1 ? "yes (same inode)" : "NO"
}'
