#!/usr/bin/env bats
# contrib/slurm/mtc.sbatch, run as Slurm runs it: its srun and scontrol are
# stand-ins that start one task per "node", each node a host of its own
# (tests/cluster/hosts.bash) with its RAM disk as MTC_DIR. The job saves
# steps; then it is requeued (the same script again): the newest step comes
# back from RAM.
load helpers
load cluster/cluster
load cluster/hosts

setup() {
	N=${MTC_CLUSTER_NODES:-4}
	cluster_init "$N"
	hosts_init
	fake_slurm
}

teardown() {
	cluster_stop
	hosts_stop
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
			sleep 4 # the job goes on training while the last step is replicated'
}

@test "the Slurm script runs mtc-node on every node beside the training step; a requeued job restores from RAM" {
	run sbatch 3
	assert_success
	for ((r = 0; r < N; r++)); do grep -qx "restored 0" "$CL_ROOT/task$r.log"; done
	ls "$CL_ROOT/node1" | grep -q '^train-s3-n1-w0.meta$'
	[ ! -e "$CL_ROOT/.mtc-4711" ] # the script cleans up after itself
	run sbatch 0
	assert_success
	for ((r = 0; r < N; r++)); do grep -qx "restored 3" "$CL_ROOT/task$r.log"; done
}
