#!/bin/sh
# What data parallelism saves: two nodes of a framework: orbax job, each step
# saved by the real Orbax (so two replicas' bytes differ). D=1: two nodes of
# different data; D=2: two replicas of one column (the same values). Bytes a
# push sends from node 0 to node 1's daemon, and bytes in the backup once both
# nodes backed up the step.
#   tests/bench/dp.sh [BUILD_DIR]     MTC_BENCH_MB sets the step size (default 256)
set -eu
. tests/bench/lib/common.sh
py=$PWD/build/venv/bin/python
if [ ! -e build/venv/.complete ]; then
	echo "# dp bench skipped: the real Orbax is not installed (make venv)"
	exit 0
fi
mb=${MTC_BENCH_MB:-256}
bench_root dp

config() { # config FILE RANK D
	dp=""
	[ "$3" -gt 1 ] && dp=", \"assume-data-parallelism\": $3"
	printf '{"job-name":"bench","framework":"orbax","node-rank":%d,"nodes":2,"peer-ranks":[%d],"backup-interval-minutes":30%s}\n' \
		"$2" $((1 - $2)) "$dp" >"$1"
}

echo "# dp bench: 2 nodes, a step of $mb MiB per node saved by the real Orbax"
printf '%-4s %14s %14s\n' D "push MiB" "backup MiB"
for d in 1 2; do
	rm -rf "$root"/n* "$root/bk"
	for r in 0 1; do
		mkdir -p "$root/n$r"
		config "$root/cfg$r" "$r" "$d"
		MTC_PY=$py "$PWD/tests/standin/mtc-trainer" --dir "$root/n$r" --real-orbax --rank "$r" \
			--nodes 2 --dp "$d" --resume 0 --steps 1 --save-every 0 --shards 4 \
			--shard-bytes $((mb * 262144)) >/dev/null 2>&1
		"$bin/mtc-replicate" commit --dir "$root/n$r" --config "$root/cfg$r" >/dev/null
	done
	serve serve "$root/n1"
	sent=$("$bin/mtc-replicate" push --dir "$root/n0" --config "$root/cfg0" --step 1 --peer "$SERVED_URL" |
		sed -n 's/.*"bytes":\([0-9]*\).*/\1/p' | head -1)
	stop_all
	"$bin/mtc-backup" --dir "$root/n1" --config "$root/cfg1" --step 1 --to "$root/bk" --name 2026-01-01_00-00 >/dev/null
	"$bin/mtc-backup" --dir "$root/n0" --config "$root/cfg0" --step 1 --to "$root/bk" --name 2026-01-01_00-00 >/dev/null
	stored=$(du -sb "$root/bk" | cut -f1)
	printf '%-4s %14.1f %14.1f\n' "$d" "$(echo "$sent" | awk '{ print $1 / 1048576 }')" \
		"$(echo "$stored" | awk '{ print $1 / 1048576 }')"
	eval "sent$d=$sent stored$d=$stored"
done
awk -v a="$sent1" -v b="$sent2" -v c="$stored1" -v e="$stored2" 'BEGIN {
	printf "D=2 against D=1: push sends %.1f%% of the bytes, the backup holds %.1f%%\n",
		100 * b / a, 100 * e / c }'
