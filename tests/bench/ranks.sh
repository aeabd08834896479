#!/bin/bash
# Rank server benchmark (make bench): a job of MTC_BENCH_NODES (4) nodes on loopback, each
# saving MTC_BENCH_MIB (256) MiB, restarted
#  1. on the same hosts,
#  2. with every pod on another host, with the rank server (mtc-node --nodes): each node
#     is given the rank whose data its RAM holds, nothing is fetched,
#  3. the same without the rank server: every rank fetches its data from a peer.
# Prints the restore time of each and what was fetched: the restore summary's seconds of the
# node that reported last (the least of them: the others add their wait for it to arrive,
# up to a second as the trainers start), which ends at the restore-done barrier, so it
# holds the slowest fetch; the rank assignment's own time is the coordinator's log line's.
set -u # not -e: the harness's clean-up tolerates what is already gone
build=${1:-build/release}
cd "$(dirname "$0")/../.."
export MTC_TESTS=$PWD/tests PATH="$PWD/$build/bin:$PWD/tests/standin:$PATH"
exec 3>&2
# shellcheck source=tests/cluster/cluster.bash
. tests/cluster/cluster.bash
N=${MTC_BENCH_NODES:-4}
mib=${MTC_BENCH_MIB:-256}
trap 'cluster_stop >/dev/null 2>&1 || true' EXIT
trap 'exit 130' INT TERM

field() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" "$CL_ROOT/state$2/restore.json"; }

# restart NAME RANKSERVER PERMUTED
restart() {
	local name=$1 r secs fetched=0 bytes=0 assign=
	cluster_init "$N"
	if [ "$2" = 1 ]; then export CL_RANKSERVER=1; else unset CL_RANKSERVER; fi
	cluster_start
	trainers orbax --steps 1 --shards 2 --shard-bytes $((mib << 19)) --save-every 0 ||
		{ echo "# $name: the first run failed"; return 1; }
	wait_for "step 1 replicated" 300 replicated 1
	nodes_kill
	if [ "$3" = 1 ]; then
		for ((r = 0; r < N; r++)); do CL_HOST_OF[$r]=$(((r + 1) % N)); done
	fi
	cluster_start
	trainers orbax --steps 0 || { echo "# $name: the restart failed"; return 1; }
	[ "$(restored_steps)" = 1 ] || { echo "# $name: restored '$(restored_steps)'"; return 1; }
	secs=$(for ((r = 0; r < N; r++)); do field seconds "$r"; done | sort -n | head -1)
	for ((r = 0; r < N; r++)); do
		fetched=$((fetched + $(field fetched "$r")))
		bytes=$((bytes + $(field bytes "$r")))
	done
	[ "$2" = 1 ] && assign=$(sed -n 's/.*ranks: \(.*nodes on data they hold\).*assigned in \([0-9.]*\) s.*/; \1, assigned in \2 s/p' \
		"$CL_ROOT/node0.log" | tail -1)
	printf '%-44s restore %6.3f s, %d objects / %d MiB fetched%s\n' "$name:" "$secs" \
		"$fetched" $((bytes >> 20)) "$assign"
	cluster_stop
	CL_HOST_OF=()
}

echo "# $N nodes, $mib MiB each"
restart "same hosts" 1 0
restart "every pod on another host, rank server" 1 1
restart "every pod on another host, no rank server" 0 1
