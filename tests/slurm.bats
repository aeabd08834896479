#!/usr/bin/env bats
# contrib/slurm/mtc.sbatch, run as Slurm runs it, twice over:
# - on a real Slurm from Debian (munged, slurmctld and slurmd started by the
#   test on loopback with a config of its own, one node): sbatch as the
#   script's comments say, on a machine without the RAM dir; a requeue
#   restores from RAM; a missing token fails the job at once;
# - on four hosts (tests/cluster/hosts.bash), each a network namespace with
#   its RAM disk as MTC_DIR, srun and scontrol being stand-ins that start one
#   task per "node": the same script across nodes. The job saves steps; then
#   it is requeued (the same script again): the newest step comes back from RAM.
load helpers
load cluster/cluster
load cluster/hosts

setup() {
	case $BATS_TEST_DESCRIPTION in
	"a real Slurm"*) real_slurm ;;
	*)
		N=${MTC_CLUSTER_NODES:-4}
		cluster_init "$N"
		hosts_init
		fake_slurm
		;;
	esac
}

teardown() {
	[ -z "${SLURM_CONF:-}" ] || slurm_stop
	cluster_stop
	[ -z "${HOSTS_ID:-}" ] || hosts_stop
}

# real_slurm: munged, slurmctld and slurmd on loopback, their files in the
# test's dir; one node, named localhost so that the script's peers file
# (scontrol show hostnames) names an address. Skips when Debian's packages
# are not installed.
real_slurm() {
	local c
	for c in munged slurmctld slurmd sbatch squeue scontrol scancel; do
		command -v "$c" >/dev/null || skip "no $c: Slurm from Debian is not installed (apt-get install slurmctld slurmd slurm-client munge)"
	done
	N=1
	cluster_init 1
	SL=$CL_ROOT/slurm
	mkdir -p "$SL/state" "$SL/spool"
	head -c 1024 /dev/urandom >"$SL/munge.key"
	chmod 0600 "$SL/munge.key"
	munged --force --socket="$SL/munge.sock" --key-file="$SL/munge.key" --log-file="$SL/munged.log" \
		--pid-file="$SL/munged.pid" --seed-file="$SL/munged.seed"
	local ports=($(free_ports 3))
	MTC_PORT=${ports[2]}
	# cred_expire: a requeued job may start again that many seconds after it ended (120 by default);
	# sched_interval, bf_interval: the schedulers, which start it then, look every second (60, 30 by default)
	cat >"$SL/slurm.conf" <<-EOF
	ClusterName=mtctest
	SlurmctldHost=$(hostname)(127.0.0.1)
	SlurmctldPort=${ports[0]}
	SlurmdPort=${ports[1]}
	SlurmUser=root
	SlurmdUser=root
	AuthType=auth/munge
	AuthInfo=socket=$SL/munge.sock,cred_expire=5
	CredType=cred/munge
	StateSaveLocation=$SL/state
	SlurmdSpoolDir=$SL/spool
	SlurmctldPidFile=$SL/slurmctld.pid
	SlurmdPidFile=$SL/slurmd.pid
	SlurmctldLogFile=$SL/slurmctld.log
	SlurmdLogFile=$SL/slurmd.log
	ProctrackType=proctrack/linuxproc
	TaskPlugin=task/none
	JobAcctGatherType=jobacct_gather/none
	AccountingStorageType=accounting_storage/none
	JobCompType=jobcomp/none
	SwitchType=switch/none
	MpiDefault=none
	MailProg=/bin/true
	SelectType=select/cons_tres
	SelectTypeParameters=CR_Core
	ReturnToService=2
	KillWait=5
	SchedulerParameters=sched_interval=1,bf_interval=1
	NodeName=localhost NodeHostname=$(hostname) NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
	PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
	EOF
	export SLURM_CONF=$SL/slurm.conf
	slurmctld -i -f "$SLURM_CONF"
	slurmd -f "$SLURM_CONF" -N localhost
	wait_for "the Slurm node idle" 30 bash -c "sinfo -h -o %t 2>/dev/null | grep -qx idle"
}

slurm_stop() {
	local f
	scancel --full --jobname=train 2>/dev/null
	wait_for "no job left" 30 bash -c '[ -z "$(squeue -h 2>/dev/null)" ]' || true
	for f in slurmd slurmctld munged; do
		[ -s "$SL/$f.pid" ] && kill "$(cat "$SL/$f.pid")" 2>/dev/null
	done
	for f in slurmd slurmctld munged; do
		[ -s "$SL/$f.pid" ] && wait_for "$f to stop" 10 bash -c "! kill -0 $(cat "$SL/$f.pid") 2>/dev/null"
	done
	unset SLURM_CONF
	return 0
}

# real_sbatch STEPS [TOKEN]: contrib/slurm/mtc.sbatch submitted as its
# comments say, the training stand-in its command, the RAM dir one that does
# not exist yet; prints the job's id.
real_sbatch() {
	mkdir -p "$CL_ROOT/submit"
	(cd "$CL_ROOT/submit" && PATH="$MTC_BIN:$MTC_TESTS/../contrib:$MTC_TESTS/standin:$PATH" \
		MTC_DIR="$CL_ROOT/shm/mtc/train" MTC_PORT=$MTC_PORT MTC_BACKUP="$CL_BACKUP" \
		MTC_PEER_TOKEN_FILE="${2:-$CL_TOKEN}" \
		MTC_NODE_OPTS="--heartbeat=0.5 --heartbeat-timeout=3 --sync-interval=0.5 --quiet-time=0.5 --verbose" \
		command sbatch --parsable --output="$CL_ROOT/job-%j.out" "$MTC_TESTS/../contrib/slurm/mtc.sbatch" bash -c '
			mtc-trainer --dir "$MTC_DIR" --rank "$NODE_RANK" --nodes 1 --job train \
				--tick 0.1 --restore-timeout 900 --shard-bytes 65536 --save-every 0.3 --steps '"$1"' \
				>trainer.out || { cat trainer.out; exit 1; }
			cat trainer.out
			# the job goes on training until mtc-node has committed the last step it saved (60 s at most)
			last=$(sed -n "s/^saved //p" trainer.out | tail -n 1)
			for _ in $(seq 600); do [ -e "$MTC_DIR/train-s$last-n0-w0.meta" ] && break; sleep 0.1; done')
}

job_state() { scontrol show job "$1" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
job_ended() { case $(job_state "$1") in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL) return 0 ;; esac; return 1; }

@test "a real Slurm runs the script: the RAM dir made, mtc-node beside the training step and stopped cleanly; a requeue restores from RAM" {
	CL_TOKEN=$CL_ROOT/token
	echo "a-job-secret-of-the-test-$$" >"$CL_TOKEN"
	chmod 600 "$CL_TOKEN"
	[ ! -e "$CL_ROOT/shm" ]
	id=$(real_sbatch 3)
	wait_for "job $id to end" 120 job_ended "$id"
	out=$CL_ROOT/job-$id.out
	[ "$(job_state "$id")" = COMPLETED ] || fail "job $id: $(job_state "$id"): $(cat "$out")"
	grep -qx "restored 0" "$out"
	[ "$(stat -c %a "$CL_ROOT/shm/mtc/train")" = 700 ]
	ls "$CL_ROOT/shm/mtc/train" | grep -q '^train-s3-n0-w0.meta$'
	# the helper step ended by itself: no task killed, no step cancelled
	! grep -E 'error|Killed|CANCELLED|forcing' "$out"
	grep -Eq 'signal (2|15): shutting down$' "$out"
	[ ! -e "$CL_ROOT/submit/.mtc-$id" ] # the script cleans up after itself
	# the backups gone: what the requeued job restores can only come from RAM
	rm -rf "$CL_BACKUP"/*
	scontrol requeue "$id"
	wait_for "job $id to run again" 60 bash -c "scontrol show job $id | grep -q 'Restarts=1'"
	wait_for "job $id to end again" 120 bash -c "$(declare -f job_state job_ended); [ \"\$(job_state $id)\" != PENDING ] && job_ended $id"
	[ "$(job_state "$id")" = COMPLETED ] || fail "job $id: $(job_state "$id"): $(cat "$out")"
	grep -qx "restored 3" "$out"
	! grep -E 'error|Killed|CANCELLED|forcing' "$out"
}

@test "a real Slurm job without its token fails within seconds, the reason in its output and in replicator.failed" {
	[ ! -e "$CL_ROOT/shm" ]
	start=$SECONDS
	id=$(real_sbatch 3 "$CL_ROOT/no-such-token")
	wait_for "job $id to end" 60 job_ended "$id"
	out=$CL_ROOT/job-$id.out
	[ "$(job_state "$id")" = FAILED ] || fail "job $id: $(job_state "$id"): $(cat "$out")"
	[ $((SECONDS - start)) -lt 30 ] || fail "the job took $((SECONDS - start)) s to fail"
	# the reason, one line, in the job's output and where the framework reads it
	grep "^mtc-node: .*cannot read token file '$CL_ROOT/no-such-token'" "$out"
	# the framework is told: it read replicator.failed (Orbax deletes it as it reads it,
	# and fails with its text), or the script stopped the training step when mtc-node
	# failed first; which comes first is a race, both end the job now (the file may be
	# there either way: mtc-node may write it again after the framework read it)
	if ! grep -q "Replicator fatal errors: .*no-such-token" "$out"; then
		grep -q "no-such-token" "$CL_ROOT/shm/mtc/train/replicator.failed"
		grep -q "^mtc.sbatch: mtc-node failed (exit 1): stopping the training step" "$out"
	fi
}

# srun: every task in its node's namespace, SLURM_NODEID set, TERM passed on;
# scontrol show hostnames: the nodes' addresses.
fake_slurm() {
	mkdir -p "$CL_ROOT/slurm-bin"
	cat >"$CL_ROOT/slurm-bin/scontrol" <<-SH
	#!/bin/sh
	[ "\$1 \$2" = "show hostnames" ] || exit 2
	for i in \$(seq 1 $N); do echo "$HOSTS_NET.\$i"; done
	SH
	cat >"$CL_ROOT/slurm-bin/srun" <<-SH
	#!/bin/bash
	while [[ \${1:-} == -* ]]; do shift; done
	pids=()
	trap 'kill -TERM "\${pids[@]}" 2>/dev/null; wait; exit 143' TERM INT
	for ((i = 0; i < $N; i++)); do
		ip netns exec "${HOSTS_ID}h\$i" env SLURM_NODEID=\$i SLURM_PROCID=\$i \\
			MTC_DIR="$CL_ROOT/node\$i" "\$@" >>"$CL_ROOT/task\$i.log" 2>&1 &
		pids+=(\$!)
	done
	rc=0
	for p in "\${pids[@]}"; do wait "\$p" || rc=1; done
	exit \$rc
	SH
	chmod +x "$CL_ROOT/slurm-bin/srun" "$CL_ROOT/slurm-bin/scontrol"
}

# sbatch STEPS: the script with the training stand-in as its command.
sbatch() {
	PATH="$CL_ROOT/slurm-bin:$MTC_TESTS/../contrib:$PATH" SLURM_JOB_ID=4711 SLURM_JOB_NAME=train \
		SLURM_JOB_NODELIST="node[1-$N]" SLURM_SUBMIT_DIR="$CL_ROOT" MTC_BACKUP="$CL_BACKUP" \
		MTC_PEER_TOKEN_FILE="$CL_TOKEN" \
		MTC_NODE_OPTS="--heartbeat=0.5 --heartbeat-timeout=3 --sync-interval=0.5 --quiet-time=0.5 --verbose" \
		timeout 300 "$MTC_TESTS/../contrib/slurm/mtc.sbatch" bash -c '
			mtc-trainer --dir "$MTC_DIR" --rank "$NODE_RANK" --nodes '"$N"' --job train \
				--peer-ranks $((NODE_RANK ^ 1)) --tick 0.1 --restore-timeout 900 \
				--shard-bytes 65536 --save-every 0.3 --steps '"$1"' || exit 1
			# the job goes on training until the last step is here and on the peer (60 s at most)
			s='"$1"' peer=$((NODE_RANK ^ 1))
			for _ in $(seq 600); do
				[ "$s" = 0 ] || { [ -e "$MTC_DIR/train-s$s-n$NODE_RANK-w0.meta" ] &&
					[ -e "$MTC_DIR/train-s$s-n$peer-w0.meta" ]; } && break
				sleep 0.1
			done'
}

@test "the Slurm script on four hosts with stand-in srun: mtc-node on every node beside the training step; a requeued job restores from RAM" {
	run sbatch 3
	assert_success
	for ((r = 0; r < N; r++)); do grep -qx "restored 0" "$CL_ROOT/task$r.log"; done
	ls "$CL_ROOT/node1" | grep -q '^train-s3-n1-w0.meta$'
	[ ! -e "$CL_ROOT/.mtc-4711" ] # the script cleans up after itself
	run sbatch 0
	assert_success
	for ((r = 0; r < N; r++)); do grep -qx "restored 3" "$CL_ROOT/task$r.log"; done
}
