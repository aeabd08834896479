#!/usr/bin/env bats
# The cluster across hosts of their own (tests/cluster/hosts.bash): every node
# in its own network namespace, its daemon on its own address with the peer
# token, and real network faults: a node's link goes dark (silence, not a
# reset) and heals, packets are delayed and lost. Every wait must stay
# bounded, the training job must see a clear error rather than a hang, and
# after the link heals the cluster converges and the next restart restores
# the newest step. Each test writes what it injected and what the job saw,
# with times, to $MTC_FAULT_LOG when that is set (tests/run collects it).
load helpers
load cluster/cluster
load cluster/hosts

setup() {
	N=${MTC_CLUSTER_NODES:-4}
	[ -n "${MTC_LONG:-}" ] && N=8
	cluster_init "$N"
	hosts_init
	T0=$(date +%s.%N)
}

teardown() {
	cluster_stop_hosts
}

cluster_stop_hosts() {
	cluster_stop
	hosts_stop
}

since() { echo "$(date +%s.%N) $T0" | awk '{ printf "%.1f", $1 - $2 }'; }

note() { # note TEXT: one line of the fault log, with the seconds since the test began
	[ -n "${MTC_FAULT_LOG:-}" ] && echo "$BATS_TEST_DESCRIPTION @ $(since) s: $*" >>"$MTC_FAULT_LOG"
	return 0
}

first_run() {
	cluster_start
	run trainers "${1:-orbax}" --steps "${STEPS:-3}"
	assert_success
	[ "$(restored_steps)" = 0 ]
	wait_for "step ${STEPS:-3} replicated" 60 replicated "${STEPS:-3}"
	wait_for "a backup" 60 has_backup
}

# heal_and_restart RANK: its link heals; step 6 (saved while it was dark)
# becomes replicated everywhere, and a restart restores it.
heal_and_restart() {
	link_heal "$1"
	note "link of rank $1 healed"
	wait_for "step 6 replicated after the heal" 90 replicated 6
	note "step 6 replicated everywhere"
	nodes_kill
	cluster_start
	run trainers orbax --steps 0
	assert_success
	[ "$(restored_steps)" = 6 ]
	note "restart restored step 6"
}

errors_of() { cat "$CL_ROOT/node$1/replicator.errors" 2>/dev/null; }

# status_is RANK FIELD VALUE: the node's status file (what its metrics show) says so.
status_is() { [ "$(jq -r ".$2" "$CL_ROOT/node$1/.mtc-status.json" 2>/dev/null)" = "$3" ]; }

@test "hosts: each node on its own address with the token; a node's RAM wiped is restored from its peer" {
	first_run orbax
	grep -q "$HOSTS_NET.2:7070" "$CL_ROOT/state1/serve.json"
	nodes_kill
	wipe_node 1
	cluster_start
	run trainers orbax --steps 0
	assert_success
	[ "$(restored_steps)" = 3 ]
}

@test "hosts: a node's link dark in the steady state: errors, no hang; healed, the cluster converges and a restart restores the newest step" {
	first_run orbax
	dark=$((N - 1))
	link_dark "$dark"
	note "link of rank $dark dark (steady state, saving steps 4-6)"
	run trainers orbax --resume 3 --steps 3
	assert_success # saving never waits for the network
	wait_for "an error about the silent rank" 30 bash -c "grep -qi 'vanished\|silent\|cannot push\|timed out' '$CL_ROOT/node0/replicator.errors' 2>/dev/null"
	note "rank 0's replicator.errors: $(errors_of 0 | tail -1 | cut -c1-160)"
	partner=$((dark ^ 1))
	wait_for "rank $partner committing step 6 while its push to rank $dark hangs" 20 status_is "$partner" committed 6
	note "rank $partner committed step 6 with its push partner dark: $(errors_of "$partner" | grep -c 'cannot push') push errors"
	heal_and_restart "$dark"
}

@test "hosts: a node's link dark during the restore round: the others fail clearly within the round timeout; healed, the next restart restores" {
	first_run nemo
	nodes_kill
	dark=$((N - 1))
	link_dark "$dark"
	note "link of rank $dark dark before the restore round"
	export CL_ROUND_TIMEOUT=10
	cluster_start
	start=$(date +%s)
	# NeMo reads replicator.failed once, when its yaml is accepted; a round that fails
	# later reaches it as "no prerestore file" after its own wait (300 s; 30 here)
	run trainers nemo --steps 0 --restore-timeout 300
	assert_failure
	took=$(($(date +%s) - start))
	[ "$took" -lt 120 ] # bounded: the round timeout, then NeMo's own wait
	critical_seen 0 "restore"
	note "rank 0's replicator.failed: $(cut -c1-200 "$CL_ROOT/node0/replicator.failed" 2>/dev/null | head -1)"
	note "NeMo on rank 0 raised after $took s: $(grep -v '^$' "$CL_ROOT/trainer0.err" | tail -1 | cut -c1-160)"
	link_heal "$dark"
	nodes_kill
	unset CL_ROUND_TIMEOUT
	cluster_start
	run trainers nemo --steps 0
	assert_success
	[ "$(restored_steps)" = 3 ]
	note "after the heal a restart restored step 3"
}

@test "hosts: the coordinator's link dark in the steady state, then healed: the nodes go on saving, then agree again and back up" {
	first_run orbax
	backups=$(backups_count)
	link_dark 0
	note "the coordinator's link (rank 0) dark"
	run trainers orbax --resume 3 --steps 3
	assert_success
	wait_for "an error about the coordinator" 15 bash -c "grep -qi 'coordinator\|sync' '$CL_ROOT/node1/replicator.errors' 2>/dev/null"
	note "rank 1's replicator.errors: $(errors_of 1 | tail -1 | cut -c1-160)"
	heal_and_restart 0
	note "backups: $backups before the fault, $(backups_count) after"
}

@test "hosts: shaped links (a 50 Mbit/s cap; 30 ms of delay and 1% loss where the kernel has netem): a first run and a restart complete" {
	shaped="tbf rate 50mbit"
	for ((r = 0; r < N; r++)); do
		if link_shape "$r" netem delay 30ms loss 1% rate 50mbit; then
			shaped="netem delay 30ms loss 1% rate 50mbit"
		else
			link_shape "$r" tbf rate 50mbit burst 64kbit latency 400ms || skip "neither netem nor tbf in this kernel"
		fi
	done
	[ "$shaped" != "tbf rate 50mbit" ] || echo "# no netem in this kernel: delay and loss not injected, the rate cap is" >&3
	note "every link: $shaped"
	first_run orbax
	nodes_kill
	wipe_node 2
	cluster_start
	run trainers orbax --steps 0
	assert_success
	[ "$(restored_steps)" = 3 ]
	note "first run, node 2 wiped, restart restored step 3"
}
