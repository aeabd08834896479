#!/usr/bin/env bats
# The cluster scenarios of issue 7 on N nodes (default 4; MTC_CLUSTER_NODES=16 or MTC_LONG=1 for 16).
load helpers
load cluster/cluster

setup() {
	N=${MTC_CLUSTER_NODES:-4}
	[ -n "${MTC_LONG:-}" ] && N=16
	cluster_init "$N"
}

teardown() { cluster_stop; }

# First start: nothing to restore, then three steps saved, replicated and backed up.
first_run() {
	cluster_start
	run trainers "${1:-orbax}" --steps 3 "${@:2}"
	assert_success
	[ "$(restored_steps)" = 0 ]
	wait_for "step 3 replicated" 60 replicated 3
	wait_for "a backup" 60 has_backup
}

@test "cluster: a clean restart restores the newest step from RAM" {
	first_run orbax
	run trainers orbax --steps 0
	assert_success
	[ "$(restored_steps)" = 3 ]
	for ((r = 0; r < N; r++)); do
		[ -L "$CL_ROOT/node$r/3" ] # Orbax renamed the marker to <step>
		# the bytes of the reference's yaml.dump
		assert_equal "$(cat "$CL_ROOT/node$r/replicator.prerestore")" "restore-step: 3"
	done
}

@test "cluster: a node whose RAM was wiped restores from its peers" {
	first_run orbax
	node_kill 2
	wipe_node 2
	cluster_start 2
	run trainers orbax --steps 0
	assert_success
	[ "$(restored_steps)" = 3 ]
	[ -L "$CL_ROOT/node2/3" ]
	grep -q '"source":"cluster","fetched":[1-9]' "$CL_ROOT/state2/restore.json"
}

@test "cluster: with all RAM wiped the job restores from the backup" {
	first_run nemo
	step=$(backup_step)
	for ((r = 0; r < N; r++)); do node_kill "$r"; wipe_node "$r"; done
	cluster_start
	run trainers nemo --steps 0
	assert_success
	[ "$(restored_steps)" = "$step" ]
	for ((r = 0; r < N; r++)); do
		[ -d "$CL_ROOT/node$r/step=$step" ] # NeMo renamed the marker to step=<step>
		run python3 -c 'import sys, yaml; d = yaml.safe_load(open(sys.argv[1])); print(yaml.dump(d) == open(sys.argv[1]).read(), d["restore-step"])' "$CL_ROOT/node$r/replicator.prerestore"
		assert_output "True $step"
		grep -qE "^restore-backup: 20[0-9]{2}-[0-9]{2}-[0-9]{2}_[0-9]{2}-[0-9]{2}$" "$CL_ROOT/node$r/replicator.prerestore"
	done
}

@test "cluster: restore.version forces an older backup once, then is removed" {
	first_run orbax
	step=$(backup_step)
	name=$(basename "$(ls -d "$CL_BACKUP/$CL_JOB"/20*/ | head -1)")
	cp -r "$CL_BACKUP/$CL_JOB/$name" "$CL_BACKUP/$CL_JOB/2001-01-01_00-00"
	echo 2001-01-01_00-00 >"$CL_BACKUP/$CL_JOB/restore.version"
	run trainers orbax --steps 1
	assert_success
	[ "$(restored_steps)" = "$step" ] # not the newer step 3 in RAM
	wait_for "restore.version removed" 30 test ! -e "$CL_BACKUP/$CL_JOB/restore.version"
	wait_for "step $((step + 1)) replicated" 30 replicated $((step + 1))
	run trainers orbax --steps 0
	[ "$(restored_steps)" = $((step + 1)) ]
}

@test "cluster: a node killed during the restore makes the others fail clearly" {
	first_run orbax
	for ((r = 0; r < N; r++)); do node_kill "$r"; done
	CL_ENV[3]="MTC_FAULT_STALL_AFTER_PLAN=$CL_ROOT/stalled.pid"
	cluster_start
	for ((r = 0; r < N; r++)); do
		mtc-trainer --dir "$CL_ROOT/node$r" --style nemo --job "$CL_JOB" --rank "$r" --nodes "$N" \
			--tick 0.1 --restore-timeout 300 >"$CL_ROOT/trainer$r.out" 2>"$CL_ROOT/trainer$r.err" &
		echo $! >"$CL_ROOT/trainer$r.pid"
	done
	wait_for "rank 3 stalls after the plan" 30 test -s "$CL_ROOT/stalled.pid"
	kill -KILL "$(cat "$CL_ROOT/stalled.pid")"
	for r in 0 1 2; do
		wait_for "rank $r fails" 20 test -e "$CL_ROOT/node$r/replicator.failed"
		grep -q "rank 3 vanished" "$CL_ROOT/node$r/replicator.failed"
		grep -q "rank 3 vanished" "$CL_ROOT/node$r/replicator.errors"
		run ls "$CL_ROOT/node$r"
		refute_output --partial .restore # no marker: the training job is not woken
	done
}

@test "cluster: with assume-data-parallelism 2 one replica's data is backed up and restores" {
	first_run orbax --dp 2
	step=$(backup_step)
	b=$(ls -d "$CL_BACKUP/$CL_JOB"/20*/ | head -1)
	[ "$(ls "$b" | grep -c '\.data$')" -eq $((N / 2)) ] # only the last partition uploads data
	for ((r = 0; r < N; r++)); do node_kill "$r"; wipe_node "$r"; done
	cluster_start
	run trainers orbax --dp 2 --steps 0
	assert_success
	[ "$(restored_steps)" = "$step" ]
}
