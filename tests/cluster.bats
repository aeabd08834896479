#!/usr/bin/env bats
# The cluster scenarios of issue 7 on N nodes (default 4; MTC_CLUSTER_NODES=16 or MTC_LONG=1 for 16).
load helpers
load cluster/cluster

setup() {
	cluster_setup 16
}

teardown() {
	[ -z "${MOTO_PID:-}" ] || moto_stop
	cluster_stop
}

# First start: nothing to restore, then three steps saved, replicated and backed up.
first_run() {
	local steps=${FIRST_STEPS:-3}
	cluster_start
	run trainers "${1:-orbax}" --steps "$steps" "${@:2}"
	assert_success
	[ "$(restored_steps)" = 0 ]
	wait_for "step $steps replicated" 60 replicated "$steps"
	wait_for "a backup" 60 has_backup
}

# A NeMo first run backed up, then every node lost with its RAM: sets step, the backed-up one.
all_lost_after_a_backup() {
	first_run nemo
	step=$(backup_step)
	nodes_kill
	for ((r = 0; r < N; r++)); do wipe_node "$r"; done
}

ranks_but() { seq 0 $((N - 1)) | grep -vx "$1" | tr '\n' ' '; }

# After a first run, a restart where every rank but the last is in the
# restore round, waiting for it: sets last and bg (the trainers' job).
round_waiting_for_last() {
	first_run orbax
	nodes_kill
	cluster_start
	last=$((N - 1))
	CL_RANKS=$(ranks_but "$last") trainers orbax --steps 0 &
	bg=$!
	wait_for "$last ranks in the restore round" 30 coord_reported restore "$last"
}

# A job secret for the nodes (mtc-node --peer-token-file).
job_token() {
	CL_TOKEN=$CL_ROOT/token
	echo "the-job-secret-of-the-cluster-$$" >"$CL_TOKEN"
	chmod 600 "$CL_TOKEN"
}

# After a first run, node 2 is lost with its RAM and restarted: the restart
# restores the newest step, node 2's from its peers.
wiped_node_restores_from_peers() {
	first_run orbax
	node_kill 2
	wipe_node 2
	cluster_start 2
	run trainers orbax --steps 0
	assert_success
	[ "$(restored_steps)" = 3 ]
	grep -q '"source":"cluster","fetched":[1-9]' "$CL_ROOT/state2/restore.json"
}

no_markers() {
	run ls "$CL_ROOT/node$1"
	refute_output --partial .restore # no marker: the training job is not woken
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
	wiped_node_restores_from_peers
	[ -L "$CL_ROOT/node2/3" ]
}

@test "cluster: with per-rank credentials and --strict-ranks a wiped node restores from its peers" {
	job_token
	for ((r = 0; r < N; r++)); do CL_ENV[$r]=MTC_STRICT_RANKS=1; done
	wiped_node_restores_from_peers
	run grep -lE "cannot speak for|cannot write here|HTTP 40[13]" "$CL_ROOT"/node*.log
	assert_output ""
	# the daemons are strict: the plain secret cannot write a meta
	[ "$(curl -s -o /dev/null -w '%{http_code}' -X PUT --data x -H "Authorization: Bearer $(cat "$CL_TOKEN")" \
		"http://127.0.0.1:${CL_PORTS[1]}/v1/objects/job-s9-n1-w0.meta")" = 403 ]
}

@test "cluster: over mutual TLS (mtc-node --tls-dir) a wiped node restores from its peers, and plain HTTP reaches nothing" {
	cluster_tls
	job_token
	wiped_node_restores_from_peers
	# the programs' own lines (a sanitizer's report in a log is not one)
	run grep -hE "^mtc-[a-z]+: .*(HTTP 40[13]|must be https|TLS handshake|SSL)" "$CL_ROOT"/node*.log
	assert_output ""
	[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:${CL_PORTS[1]}/healthz")" = 000 ]
	[ "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$CL_TLS/ca.crt" "https://127.0.0.1:${CL_PORTS[1]}/healthz")" = 200 ]
}

@test "cluster: with all RAM wiped the job restores from the backup" {
	all_lost_after_a_backup
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
	nodes_kill
	CL_ENV[3]="MTC_FAULT_STALL=after-plan:$CL_ROOT/stalled.pid"
	cluster_start
	for ((r = 0; r < N; r++)); do
		mtc-trainer --dir "$CL_ROOT/node$r" --style nemo --job "$CL_JOB" --rank "$r" --nodes "$N" \
			--tick 0.1 --restore-timeout 300 >"$CL_ROOT/trainer$r.out" 2>"$CL_ROOT/trainer$r.err" &
		echo $! >"$CL_ROOT/trainer$r.pid"
	done
	wait_for "rank 3 stalls after the plan" 30 test -s "$CL_ROOT/stalled.pid"
	kill -KILL "$(cat "$CL_ROOT/stalled.pid")"
	for r in 0 1 2; do
		wait_for "rank $r fails" 20 critical_seen "$r" "rank 3 vanished"
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
	nodes_kill
	for ((r = 0; r < N; r++)); do wipe_node "$r"; done
	cluster_start
	run trainers orbax --dp 2 --steps 0
	assert_success
	[ "$(restored_steps)" = "$step" ]
}

@test "cluster: the coordinator lost in the steady state: errors, no hang, recovery" {
	first_run orbax
	# rank 0's daemon dies: the service restarts it, and the new coordinator takes over
	supervised_kill 0 serve
	run trainers orbax --resume 3 --steps 1
	assert_success
	wait_for "step 4 replicated" 30 replicated 4
	wait_for "the new coordinator agrees on step 4" 30 grep -q "agreed step 4" "$CL_ROOT/node0.log"
	[ "$(backups_count)" = 1 ] # it knows the last backup: no second one at once
	# rank 0's whole pod is lost: the others say so and go on committing
	node_lost 0
	CL_RANKS=$(ranks_but 0) run trainers orbax --resume 4 --steps 1
	assert_success
	for ((r = 1; r < N; r++)); do
		wait_for "rank $r reports the loss" 20 \
			grep -q "sync with the coordinator failed: lost the coordinator" "$CL_ROOT/node$r/replicator.errors"
		wait_for "rank $r commits step 5" 10 test -e "$CL_ROOT/node$r/$CL_JOB-s5-n$r-w0.meta"
	done
	# the job restarts with rank 0 back: the newest step every node holds
	cluster_start 0
	run trainers orbax --steps 0
	assert_success
	[ "$(restored_steps)" = 4 ]
}

@test "cluster: the coordinator lost during a restore round: the others fail clearly, then recover" {
	round_waiting_for_last
	node_lost 0
	for ((r = 1; r < last; r++)); do
		wait_for "rank $r fails" 20 critical_seen "$r" "lost the coordinator"
		wait_for "rank $r's restore exits 1" 10 grep -q "mtc-restore failed (exit 1)" "$CL_ROOT/node$r.log"
		no_markers "$r"
	done
	for ((r = 0; r < last; r++)); do kill -KILL "$(cat "$CL_ROOT/trainer$r.pid")" 2>/dev/null || true; done # Orbax ends at replicator.failed
	wait "$bg" || true
	cluster_start 0
	run trainers orbax --steps 0
	assert_success
	[ "$(restored_steps)" = 3 ]
}

@test "cluster: only the coordinator's daemon killed during a restore round: the round re-forms, the restore succeeds" {
	round_waiting_for_last
	old=$(cat "$CL_ROOT/state0/serve.pid")
	supervised_kill 0 serve
	wait_for "the daemon restarted" 10 sh -c "[ -s '$CL_ROOT/state0/serve.pid' ] && [ \"\$(cat '$CL_ROOT/state0/serve.pid')\" != $old ]"
	wait_for "$last ranks back in the round" 30 coord_reported restore "$last"
	CL_RANKS=$last run trainers orbax --steps 0
	assert_success
	wait "$bg"
	[ "$(restored_steps)" = 3 ]
	for ((r = 0; r < N; r++)); do
		run critical_seen "$r" "lost the coordinator"
		assert_failure
	done
}

@test "cluster: a bit flipped in a peer's copy is rejected and the backup serves instead" {
	FIRST_STEPS=1 first_run orbax
	node_kill 2
	wipe_node 2
	hash=$(cat "$CL_ROOT/node3/$CL_JOB-s1-n2-w0.meta")
	flip_bit "$CL_ROOT/node3/$hash.data"
	cluster_start 2
	run trainers orbax --steps 0
	assert_success
	[ "$(restored_steps)" = 1 ]
	grep -q "cannot fetch '$hash.data' from http" "$CL_ROOT/node2.log"
	grep -q "fetched '$hash.data' from backup" "$CL_ROOT/node2.log"
}

@test "cluster: a bit flipped in the only copy, the backup's: exit 5, CRITICAL, no markers" {
	all_lost_after_a_backup
	b=$(ls -d "$CL_BACKUP/$CL_JOB"/20*/ | head -1)
	hash=$(cat "$b/$CL_JOB-s$step-n1-w0.meta")
	flip_bit "$b/$hash.data"
	cluster_start
	trainers nemo --steps 0 &
	bg=$!
	wait_for "rank 1's restore exits 5" 30 grep -q "mtc-restore failed (exit 5)" "$CL_ROOT/node1.log"
	critical_seen 1 "is not what its name says"
	for ((r = 0; r < N; r++)); do
		wait_for "rank $r fails" 20 critical_seen "$r" "rank 1 could not restore"
		no_markers "$r"
	done
	kill -KILL $(cat "$CL_ROOT"/trainer*.pid) 2>/dev/null || true
	wait "$bg" || true
}

@test "cluster: an Orbax _BACKUP_REQUESTED file triggers a backup before the interval" {
	first_run orbax
	b=$(ls -d "$CL_BACKUP/$CL_JOB"/20*/ | head -1)
	mv "$b" "$CL_BACKUP/$CL_JOB/$(date -u -d '-10 min' +%Y-%m-%d_%H-%M)"
	run trainers orbax --steps 1 # the last backup is 10 minutes old, the interval 30
	assert_success
	wait_for "step 4 replicated" 30 replicated 4
	sleep 2
	[ "$(backups_count)" = 1 ]
	run trainers orbax --resume 4 --steps 1 --backup-requested
	assert_success
	wait_for "a backup of step 5" 30 backup_of 5
	[ "$(backups_count)" = 2 ]
}

@test "cluster: mtc-replicate run killed -9 in the commit, after push, sync and during a backup converges" {
	local f=$CL_ROOT/fault
	CL_ENV[0]="MTC_FAULT_KILL=sync:${f}0a,commit-meta-renamed:${f}0b"
	CL_ENV[1]="MTC_FAULT_KILL=commit:${f}1a,commit-hashed:${f}1b"
	CL_ENV[2]="MTC_FAULT_KILL=push:${f}2a,commit-data-renamed:${f}2b"
	CL_ENV[3]="MTC_FAULT_KILL=backup:${f}3a,commit-tmp-written:${f}3b"
	first_run orbax
	for r in 0 1 2 3; do
		[ -e "${f}${r}a" ]
		[ "$(grep -c "'mtc-replicate run' exited (137)" "$CL_ROOT/node$r.log")" -ge 2 ]
	done
	run trainers orbax --steps 0
	assert_success
	[ "$(restored_steps)" = 3 ]
}

@test "cluster: backups on s3:// (moto, signatures checked): with all RAM wiped the job restores from the bucket" {
	load s3
	need_moto
	moto_start "$CL_ROOT"
	moto bucket bkt
	read -r KEY SECRET < <(moto user alice)
	moto enforce
	CL_ENV=()
	for ((r = 0; r < N; r++)); do
		CL_ENV[$r]="AWS_ACCESS_KEY_ID=$KEY AWS_SECRET_ACCESS_KEY=$SECRET AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true"
	done
	export AWS_ACCESS_KEY_ID=$KEY AWS_SECRET_ACCESS_KEY=$SECRET AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
	CL_BACKUP_URL=s3://bkt/ckpt CL_S3_ENDPOINT=$MOTO_URL
	all_lost_after_a_backup
	# nothing went to the directory; every node's .meta went to the bucket
	[ -z "$(ls -A "$CL_BACKUP")" ]
	[ "$(grep -c "PUT /bkt/ckpt/$CL_JOB/20[0-9_-]*/$CL_JOB-s$step-n[0-9]*-w0.meta" "$CL_ROOT/moto.log")" -ge "$N" ]
	cluster_start
	run trainers nemo --steps 0
	assert_success
	[ "$(restored_steps)" = "$step" ]
	for ((r = 0; r < N; r++)); do
		grep -qE "^restore-backup: 20[0-9]{2}-[0-9]{2}-[0-9]{2}_[0-9]{2}-[0-9]{2}$" "$CL_ROOT/node$r/replicator.prerestore"
	done
	grep -q "GET /bkt/ckpt/$CL_JOB/20" "$CL_ROOT/moto.log"
	nodes_kill
	moto_stop
}
