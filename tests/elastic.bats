#!/usr/bin/env bats
# Data-parallel jobs restarted with another number of replicas (mtc(7) §5.9):
# ranks form a D x P grid (rank = replica * P + column); a job that comes back
# with more replicas restores its new ranks from their column's data, from the
# cluster or from a backup; one with fewer ignores the extra ranks' metas.
# The trainers' data is seeded by column, so a restored step names its column.
load helpers
load cluster/cluster

setup() {
	PIDS=()
}

teardown() {
	cluster_stop
}

# first_run N D [trainer options]: a job of N nodes, D replicas, saves steps 1-3,
# replicated everywhere.
first_run() {
	cluster_init "$1"
	export CL_DP=$2
	shift 2
	cluster_start
	run trainers orbax --dp "$CL_DP" --steps 3 "$@"
	assert_success
	wait_for "step 3 replicated" 90 replicated 3
}

# restart_as N D: the job starts again with N nodes and D replicas.
restart_as() {
	nodes_kill
	cluster_resize "$1"
	CL_DP=$2
	cluster_start
	run trainers orbax --dp "$2" --steps 0
}

# from_backup_as N D: once every node has a backup, every node lost; started again as N nodes
# in D rows, each restores its column's copy of the backup's step from the backup.
from_backup_as() {
	wait_for "a backup of every node" 90 has_backup
	step=$(backup_step)
	for ((r = 0; r < CL_N; r++)); do wipe_node "$r"; done
	restart_as "$1" "$2"
	assert_success
	restored_columns "$step"
	grep -q "from backup" "$CL_ROOT/node0.log"
}

fetched_of() { sed -n 's/.*"fetched":\([0-9]*\).*/\1/p' "$CL_ROOT/state$1/restore.json"; }

# Every rank restored step S, the data of its column (rank mod P).
restored_columns() {
	local s=$1 p=$((CL_N / CL_DP)) r
	[ "$(restored_steps)" = "$s" ] || { echo "# restored: $(restored_steps)" >&3; return 1; }
	for ((r = 0; r < CL_N; r++)); do
		grep -q "\"rank\": $((r % p))}" "$CL_ROOT/node$r/$s/metadata.json" ||
			{ echo "# rank $r: $(cat "$CL_ROOT/node$r/$s/metadata.json")" >&3; return 1; }
	done
}

@test "growth D=2 to D=3 from the cluster: the new replica's ranks restore their column's data" {
	first_run 4 2
	restart_as 6 3
	assert_success
	restored_columns 3
	assert_equal "$(fetched_of 4)" 1
	assert_equal "$(fetched_of 5)" 1
}

@test "growth D=2 to D=3 from a backup: every node lost, the new ranks restore their column's copy" {
	first_run 4 2
	from_backup_as 6 3
}

@test "shrink D=3 to D=2: the last replica's metas are ignored, every rank restores its own data" {
	first_run 6 3
	restart_as 4 2
	assert_success
	restored_columns 3
	for ((r = 0; r < 4; r++)); do assert_equal "$(fetched_of "$r")" 0; done
}

@test "shrink D=3 to D=2 from a backup: every node lost, each column's one copy restores" {
	first_run 6 3
	from_backup_as 4 2
}

# columns_refused MESSAGE: the job started again on 6 nodes in 2 rows (3 columns) fails
# within 30 s, every node's log saying MESSAGE.
columns_refused() {
	cluster_resize 6
	CL_DP=2
	cluster_start
	start=$SECONDS
	run trainers orbax --dp 2 --steps 0
	assert_failure
	[ $((SECONDS - start)) -lt 30 ]
	for ((r = 0; r < 6; r++)); do critical_seen "$r" "$1"; done
}

@test "columns changed: a job of 2 columns restarted with 3 fails within seconds, saying what to do" {
	first_run 4 2
	nodes_kill
	columns_refused "columns changed: node [0-9] holds steps of 4 nodes with assume-data-parallelism 2 (2 columns), this job has 6 nodes with 2 (3 columns)"
	grep -q "resharding" "$CL_ROOT/trainer5.err"
}

@test "columns changed, every node lost: the backup's shape refuses it within seconds" {
	first_run 4 2
	wait_for "a backup of every node" 90 has_backup
	b=$(basename "$(ls -d "$CL_BACKUP/$CL_JOB"/20*/ | head -1)")
	assert_equal "$(cat "$CL_BACKUP/$CL_JOB/$b/shape.json")" '{"nodes":4,"assume-data-parallelism":2}'
	for ((r = 0; r < 4; r++)); do wipe_node "$r"; done
	columns_refused "columns changed: backup '20[-0-9_]*' holds steps of 4 nodes with assume-data-parallelism 2 (2 columns)"
}

@test "the steps' shape follows the job: after a growth every dir holds the new shape, and the grown job restarts" {
	first_run 4 2
	restart_as 6 3
	assert_success
	for ((r = 0; r < 6; r++)); do
		assert_equal "$(cat "$CL_ROOT/node$r/.mtc-shape-$CL_JOB.json")" '{"nodes":6,"assume-data-parallelism":3}'
	done
	restart_as 6 3
	assert_success
	restored_columns 3
}

# disagree_at S R: replica R's own .meta of step S names other data than its column's
# (a hash no node holds), as when replicas write different bytes.
disagree_at() {
	local f=$CL_ROOT/node$2/$CL_JOB-s$1-n$2-w0.meta h
	h=$(cat "$f")
	case $h in *0) h=${h%?}1 ;; *) h=${h%?}0 ;; esac
	printf %s "$h" >"$f.tmp" && mv "$f.tmp" "$f"
}

@test "growth with a column whose replicas disagree: the column is skipped, the step is not valid, an older copy restores" {
	first_run 4 2
	wait_for "a backup of every node" 90 has_backup
	nodes_kill
	disagree_at 3 2 # column 0 of step 3: node 0 and node 2 differ
	cluster_resize 6
	CL_DP=3
	cluster_start
	run trainers orbax --dp 3 --steps 0
	assert_success
	# the old rule took one replica for the new rank 4 and restored step 3 from the cluster
	[ -z "$(grep "restoring step 3 from cluster" "$CL_ROOT/node0.log")" ]
	s=$(restored_steps)
	grep -q "restoring step $s from" "$CL_ROOT/node0.log"
	[ "$s" -ge 1 ] && [ "$s" -le 3 ]
	restored_columns "$s"
	grep -q "step 3: column 0 worker 0: replicas disagree: node 0 has [0-9a-zA-Z]*, node 2 has [0-9a-zA-Z]*; the column is skipped" "$CL_ROOT/node0.log"
	grep -q "replicas disagree" "$CL_ROOT/node4/replicator.errors"
}

@test "growth with a whole column lost: the cluster's step is not valid, the backup's restores" {
	first_run 4 2
	wait_for "a backup of every node" 90 has_backup
	step=$(backup_step)
	wipe_node 1
	wipe_node 3 # column 1, both replicas
	restart_as 6 3
	assert_success
	restored_columns "$step"
	grep -q "restoring step $step from backup" "$CL_ROOT/node0.log"
}

@test "rank server: growth D=2 to D=3 with pods on other hosts, then shrink back: each old rank stays on its data" {
	export CL_RANKSERVER=1
	first_run 4 2
	nodes_kill
	cluster_resize 6
	for ((r = 0; r < 4; r++)); do CL_HOST_OF[$r]=$(((r + 1) % 4)); done
	CL_DP=3
	cluster_start
	run trainers orbax --dp 3 --steps 0
	assert_success
	restored_columns 3
	for ((r = 0; r < 4; r++)); do assert_equal "$(fetched_of "$r")" 0; done
	restart_as 4 2
	assert_success
	restored_columns 3
}
