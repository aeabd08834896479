#!/usr/bin/env bats
# The rank server against the real stack: JAX on the CPU, one process per node,
# each calling the real Orbax's initialize_multi_tier_checkpointing with its
# defaults (use_mtc_process_ids=True), which waits for jax-init-info.txt; only
# mtc-node writes it. A job of 2 slices, so that Orbax gives each process its
# column-mate in the other slice as peer, as on a multi-slice cluster.
load helpers
load cluster/cluster

setup() {
	need_frameworks
	N=4
	SLICES=2
	cluster_init "$N"
	export CL_RANKSERVER=1 CL_JAX_PORT
	CL_JAX_PORT=$(free_ports 1)
}

teardown() {
	cluster_stop
}

# jax_job ARGS...: one JAX process per pod, pod r on the RAM of node CL_HOST_OF[r];
# JAX reads the process count from Slurm's variables, the process id from Orbax.
jax_job() {
	local r rc=0
	for ((r = 0; r < N; r++)); do
		JAX_PLATFORMS=cpu XLA_FLAGS=--xla_cpu_multi_thread_eigen=false \
			SLURM_JOB_ID=1 SLURM_STEP_NODELIST=127.0.0.1 SLURM_NTASKS=$N SLURM_PROCID=$r SLURM_LOCALID=0 \
			timeout 300 "$MTC_PY" "$MTC_TESTS/standin/mtc-jax-job" --dir "$CL_ROOT/node${CL_HOST_OF[$r]:-$r}" \
			--job "$CL_JOB" --slices "$SLICES" "$@" >"$CL_ROOT/trainer$r.out" 2>"$CL_ROOT/trainer$r.err" &
		echo $! >"$CL_ROOT/trainer$r.pid"
	done
	for ((r = 0; r < N; r++)); do
		wait "$(cat "$CL_ROOT/trainer$r.pid")" || { rc=1; echo "# pod $r failed:"; tail -5 "$CL_ROOT/trainer$r.err" | sed 's/^/#   /'; }
	done
	return $rc
}

fetched_of() { sed -n 's/.*"fetched":\([0-9]*\).*/\1/p' "$CL_ROOT/state$1/restore.json"; }

@test "real Orbax, use_mtc_process_ids: hosts permuted and one RAM lost, every process restores; those whose data stayed fetch nothing" {
	cluster_start
	run jax_job --steps 2
	assert_success
	[ "$(restored_steps)" = 0 ]
	for ((r = 0; r < N; r++)); do # Orbax's own replicator.yaml: the column-mate in the other slice
		p=$(sed -n 's/.*"node-rank":\([0-9]*\).*/\1/p' "$CL_ROOT/state$r/config.json")
		grep -q "\"peer-ranks\":\[$(((p + N / SLICES) % N))\],.*\"assume-data-parallelism\":$SLICES" "$CL_ROOT/state$r/config.json"
	done
	wait_for "step 2 replicated" 60 replicated 2
	restart_moved # every pod on another host
	run jax_job --steps 0
	assert_success
	[ "$(restored_steps)" = 2 ]
	for ((r = 0; r < N; r++)); do
		grep -q "^verified 2$" "$CL_ROOT/trainer$r.out"
		h=${CL_HOST_OF[$r]}
		if [ "$h" != "$lost" ]; then
			assert_equal "$(fetched_of "$r")" 0
		else
			[ "$(fetched_of "$r")" -gt 0 ]
		fi
	done
	grep -q "ranks: $((N - 1)) of $N nodes on data they hold" "$CL_ROOT/node0.log"
}
