#!/usr/bin/env bats
# Data parallelism as multi-slice jobs run it: N nodes (4; 8 with MTC_LONG) in
# D rows of N/D columns, each trainer's peer its column-mate. With the real
# Orbax (--real-orbax) replicas write different bytes and share a logical
# name; with --replicas-differ they share nothing but the declaration. Every
# restart must restore the newest restorable step, each node's marker naming
# verified data (read back by Orbax itself where it is real).
load helpers
load cluster/cluster

setup() {
	cluster_setup 8
}

teardown() {
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	cluster_stop
}
PIDS=()

# dp_first_run D [trainer options]: three steps saved, replicated and backed up.
dp_first_run() {
	D=$1
	P=$((N / D))
	export CL_DP=$D
	shift
	cluster_start
	run trainers orbax --dp "$D" --steps 3 "$@"
	assert_success
	[ "$(restored_steps)" = 0 ]
	wait_for "step 3 replicated" 90 replicated 3
	wait_for "a backup" 90 has_backup
}

# restart [trainer options]: every node restarts with what its RAM still holds.
restart() {
	nodes_kill
	cluster_start
	run trainers orbax --dp "$D" --steps 0 "$@"
	assert_success
}

meta_of() { cat "$CL_ROOT/node$1/$CL_JOB-s$2-n$1-w0.meta"; }

# Every trainer read step S back with the real Orbax and found its values.
all_verified() {
	for ((r = 0; r < N; r++)); do
		grep -qx "verified $1" "$CL_ROOT/trainer$r.out" || {
			echo "# rank $r did not verify step $1" >&3
			return 1
		}
	done
}

backup_dir() { ls -d "$CL_BACKUP/$CL_JOB"/20*/ | head -1; }
backup_copies() { ls "$(backup_dir)" | grep -c '\.data$'; }

@test "real Orbax: a replica's push to a column-mate that holds the same logical data sends only the .meta" {
	need_frameworks
	for r in 0 1; do
		d=$CL_ROOT/node$r
		printf '{"job-name":"%s","framework":"orbax","node-rank":%d,"nodes":2,"peer-ranks":[%d],"assume-data-parallelism":2,"backup-interval-minutes":30}\n' \
			"$CL_JOB" "$r" $((1 - r)) >"$CL_ROOT/cfg$r"
		MTC_PY=$MTC_PY mtc-trainer --dir "$d" --real-orbax --rank "$r" --nodes 2 --dp 2 --resume 0 --steps 1 --save-every 0 >/dev/null 2>&1
		mtc-replicate commit --dir "$d" --config "$CL_ROOT/cfg$r" >/dev/null
	done
	h=$(meta_of 0 1)
	assert_equal "$(meta_of 1 1)" "$h"
	run mtc-replicate digest "$CL_ROOT/node0/$h.data" "$CL_ROOT/node1/$h.data"
	[ "$(echo "$output" | cut -d' ' -f1 | sort -u | wc -l)" -eq 2 ] # their bytes differ
	serve_on "$CL_ROOT/node1"
	run mtc-replicate push --dir "$CL_ROOT/node0" --config "$CL_ROOT/cfg0" --step 1 --peer "$URL"
	assert_success
	assert_output --regexp " 0 bytes in [0-9.]+ s$"
	assert_equal "$(cat "$CL_ROOT/node1/$CL_JOB-s1-n0-w0.meta")" "$h"
}

@test "real Orbax, D=2: replicas share a logical name; the backup holds one copy per column" {
	need_frameworks
	export MTC_PY
	dp_first_run 2 --real-orbax
	for ((c = 0; c < P; c++)); do
		[[ $(meta_of "$c" 3) == D* ]]
		assert_equal "$(meta_of "$c" 3)" "$(meta_of $((c + P)) 3)"
	done
	step=$(backup_step)
	wait_for "every node's meta of step $step in the backup" 30 backup_of "$step"
	[ "$(backup_copies)" -eq "$P" ]
}

@test "real Orbax, D=2: a node lost restores its column's data from its peer, read back by Orbax" {
	need_frameworks
	export MTC_PY
	dp_first_run 2 --real-orbax
	wipe_node 0
	restart --real-orbax
	[ "$(restored_steps)" = 3 ]
	all_verified 3
}

@test "real Orbax, D=2: a whole replica lost restores from the other" {
	need_frameworks
	export MTC_PY
	dp_first_run 2 --real-orbax
	for ((r = 0; r < P; r++)); do wipe_node "$r"; done
	restart --real-orbax
	[ "$(restored_steps)" = 3 ]
	all_verified 3
	grep -q "restoring step 3 from cluster" "$CL_ROOT/node0.log"
}

@test "real Orbax, D=4: every node lost restores from the backup's one copy per column" {
	need_frameworks
	export MTC_PY
	dp_first_run 4 --real-orbax
	step=$(backup_step)
	wait_for "every node's meta of step $step in the backup" 30 backup_of "$step"
	[ "$(backup_copies)" -eq "$P" ]
	nodes_kill
	for ((r = 0; r < N; r++)); do wipe_node "$r"; done
	restart --real-orbax
	[ "$(restored_steps)" = "$step" ]
	all_verified "$step"
}

@test "replicas whose bytes differ: disagreement is said, never fatal; every node lost restores from the backup" {
	dp_first_run 2 --replicas-differ
	[ "$(meta_of 0 3)" != "$(meta_of "$P" 3)" ]
	step=$(backup_step)
	wait_for "every node's meta of step $step in the backup" 30 backup_of "$step"
	[ "$(backup_copies)" -eq "$N" ] # replicas that disagree each keep their own data
	nodes_kill
	for ((r = 0; r < N; r++)); do wipe_node "$r"; done
	restart
	[ "$(restored_steps)" = "$step" ]
	grep -q "replicas disagree" "$CL_ROOT/node0.log"
	run mtc-lkg --backups "$CL_BACKUP" --job "$CL_JOB" --json
	assert_success
}

@test "replicas whose bytes differ: a node whose data exists nowhere in the cluster never takes its column-mate's; an older copy restores" {
	dp_first_run 2 --replicas-differ
	step=$(backup_step)
	wait_for "every node's meta of step $step in the backup" 30 backup_of "$step"
	h0=$(meta_of 0 3)
	hp=$(meta_of "$P" 3)
	nodes_kill
	wipe_node 0
	rm -rf "$CL_ROOT/node$P/$h0.data" "$CL_ROOT/node$P/$h0.manifest" # its only other copy
	restart
	[ -z "$(grep "restoring step 3 from cluster" "$CL_ROOT/node0.log")" ]
	s=$(restored_steps)
	[ "$s" -ge "$step" ] && [ "$s" -lt 3 ] || grep -q "restoring step 3 from backup" "$CL_ROOT/node0.log"
	[ "$(readlink "$CL_ROOT/node0/$s")" != "$hp.data" ] # its own bytes, never its column-mate's
	grep -q "column 0 worker 0: replicas disagree.*the column is skipped" "$CL_ROOT/node0.log"
}

@test "replicas whose bytes differ: a corrupt copy in the backup gives way to the next replica's" {
	dp_first_run 2 --replicas-differ
	step=$(backup_step)
	wait_for "every node's meta of step $step in the backup" 30 backup_of "$step"
	b=$(backup_dir)
	h0=$(cat "$b/$CL_JOB-s$step-n0-w0.meta")
	hp=$(cat "$b/$CL_JOB-s$step-n$P-w0.meta")
	nodes_kill
	for ((r = 0; r < N; r++)); do wipe_node "$r"; done
	flip_bit "$b/$h0.data"
	restart
	[ "$(restored_steps)" = "$step" ]
	assert_equal "$(readlink "$CL_ROOT/node0/$step")" "$hp.data"
}

# pending_beyond S: the manifests a column-mate sent ahead of data, in any node's local dir,
# whose hash no .meta of step S there names.
pending_beyond() {
	local r f h
	for ((r = 0; r < N; r++)); do
		for f in "$CL_ROOT/node$r"/.mtc-upload-manifest-*; do
			[ -e "$f" ] || continue
			h=${f##*/.mtc-upload-manifest-}
			cat "$CL_ROOT/node$r/$CL_JOB-s$1-n"*-w0.meta 2>/dev/null | grep -qx "$h" || echo "$f"
		done
	done
}

@test "D=2: a manifest a column-mate sent ahead of data this node committed itself is removed, not kept until a restart" {
	D=2
	export CL_DP=$D
	cluster_start
	run trainers orbax --dp "$D" --steps 12
	assert_success
	wait_for "step 12 replicated" 90 replicated 12
	# the commit removes what arrived before it; gc, at the next sync, what slipped in between
	wait_for "no pending manifest beyond step 12" 30 test -z "$(pending_beyond 12)"
	run find "$CL_ROOT" -name '.mtc-*.tmp'
	assert_output ""
}
