#!/usr/bin/env bats
# The rank server (mtc(7) §5.7): before the training job starts, every node's
# mtc-node reports its pod index, its host and what its RAM holds; the
# coordinator (pod index 0's daemon) gives each a process id by data
# locality, written to jax-init-info.txt as Orbax reads it. Also the rules a
# job can see around it: the newest report for a rank wins, and a restore
# keeps every node's .meta of its step.
load helpers
load cluster/cluster

setup() {
	N=${MTC_CLUSTER_NODES:-4}
	PIDS=()
}

teardown() {
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	cluster_stop
	[ -z "${T:-}" ] || rm -rf "$T"
}

fetched_of() { sed -n 's/.*"fetched":\([0-9]*\).*/\1/p' "$CL_ROOT/state$1/restore.json"; }
status_has() { curl -s "$URL/v1/coord/status" | grep -qE "$1"; }
ranks_reported() { status_has "\"ranks\":$1[,}]"; }
pid_in() { head -n 1 "$CL_ROOT/node$1/jax-init-info.txt"; }

@test "rank server: a fresh job keeps its pod indexes; each trainer reads its process id from jax-init-info.txt" {
	cluster_init "$N"
	export CL_RANKSERVER=1 CL_JAX_PORT=9123
	cluster_start
	run trainers orbax --steps 2
	assert_success
	[ "$(restored_steps)" = 0 ]
	for ((r = 0; r < N; r++)); do
		assert_equal "$(cat "$CL_ROOT/node$r/jax-init-info.txt")" "$r"$'\n'"127.0.0.1:9123"
		grep -q "process id $r," "$CL_ROOT/trainer$r.err"
	done
}

@test "rank server: hosts permuted and one RAM lost, every node whose data stayed restores it from its own RAM (fetched: 0)" {
	cluster_init "$N"
	export CL_RANKSERVER=1
	cluster_start
	run trainers orbax --steps 3
	assert_success
	wait_for "step 3 replicated" 60 replicated 3
	restart_moved # every pod on another host
	run trainers orbax --steps 0
	assert_success
	[ "$(restored_steps)" = 3 ]
	for ((r = 0; r < N; r++)); do
		h=${CL_HOST_OF[$r]}
		p=$(pid_in "$h")
		# the step Orbax renamed the marker to is the data of the rank it was given
		grep -q "\"rank\": $p}" "$CL_ROOT/node$h/3/metadata.json"
		if [ "$h" != "$lost" ]; then
			assert_equal "$(fetched_of "$r")" 0
		fi
	done
	[ "$(fetched_of $(((lost + N - 1) % N)))" -gt 0 ] # the pod on the wiped host fetched
	grep -q "ranks: $((N - 1)) of $N nodes on data they hold" "$CL_ROOT/node0.log"
}

@test "rank server: a node that never reports fails the others within the round, in replicator.failed and jax-init-info.txt" {
	cluster_init 2
	export CL_RANKSERVER=1 CL_ROUND_TIMEOUT=3
	cluster_start 0
	wait_for "a final error" 30 test -s "$CL_ROOT/node0/replicator.failed"
	grep -q "rank assignment failed: .*timed out after 3 s: 1 of 2 nodes reported; pod index 1 did not" "$CL_ROOT/node0/replicator.failed"
	# Orbax's reading of a one-line file is a ValueError naming it at once, not a 900 s wait
	run mtc-trainer --dir "$CL_ROOT/node0" --mtc-process-ids --nodes 2 --tick 0.01
	assert_failure
	assert_output --partial "no process id from the rank server"
}

@test "rank server: a node-rank in replicator.yaml other than the assigned process id is a replicator.failed line" {
	cluster_init 2
	export CL_RANKSERVER=1
	cluster_start
	wait_for "process ids" 30 test -s "$CL_ROOT/node1/jax-init-info.txt"
	run mtc-trainer --dir "$CL_ROOT/node1" --rank 0 --nodes 2 --peer-ranks 1 --tick 0.05
	assert_failure
	wait_for "the failure" 20 grep -q "node-rank: 0, the rank server assigned process id 1" "$CL_ROOT/state1/failed"
	grep -q "node-rank: 0, the rank server assigned process id 1" "$CL_ROOT/node1/replicator.failed" ||
		grep -q "node-rank: 0, the rank server assigned process id 1" "$CL_ROOT/node1.log"
}

@test "duplicate rank: a second process reporting for a rank wins, the older waiting report gets 409 at once" {
	T=$(mktemp -d)
	mkdir "$T/p"
	serve_on "$T/p" --coordinator --nodes 2 --round-timeout 60
	curl -s -o "$T/old" -w '%{http_code}' -X POST "$URL/v1/coord/sync" \
		-d '{"rank":1,"session":"old","replicated-step":1,"wait":15}' >"$T/old.code" &
	PIDS+=($!)
	wait_for "the old report waiting" 10 status_has '"sync":1[,}]'
	start=$SECONDS
	curl -s -X POST "$URL/v1/coord/sync" -d '{"rank":1,"session":"new","replicated-step":1,"wait":0}' >/dev/null
	wait_for "the old report answered" 10 test -s "$T/old.code"
	[ $((SECONDS - start)) -lt 10 ] # not at the end of its 15 s wait
	assert_equal "$(cat "$T/old.code")" 409
	grep -q "superseded" "$T/old"
	# the older process stays refused; the newer is still in the round
	run curl -s -o /dev/null -w '%{http_code}' -X POST "$URL/v1/coord/sync" -d '{"rank":1,"session":"old","replicated-step":1,"wait":0}'
	assert_output 409
	run curl -s -X POST "$URL/v1/coord/sync" -d '{"rank":0,"session":"r0","replicated-step":1,"wait":0}'
	assert_output --partial '"agreed-step":1'
}

@test "duplicate pod index: the rank server answers the older report 409 at once" {
	T=$(mktemp -d)
	mkdir "$T/p" "$T/a" "$T/b"
	serve_on "$T/p" --coordinator --nodes 2 --round-timeout 60
	mtc-handshake rank --dir "$T/a" --coordinator-url "$URL" --index 1 --host a --timeout 30 >"$T/a.out" 2>"$T/a.err" &
	PIDS+=($!)
	apid=$!
	wait_for "the first report waiting" 10 ranks_reported 1
	start=$SECONDS
	mtc-handshake rank --dir "$T/b" --coordinator-url "$URL" --index 1 --host b --timeout 30 >"$T/b.out" 2>"$T/b.err" &
	PIDS+=($!)
	wait_for "the older report's end" 10 eval '! kill -0 "$apid" 2>/dev/null'
	[ $((SECONDS - start)) -lt 10 ] # not at the end of its 30 s
	grep -q "superseded" "$T/a.err"
	grep -q "superseded" "$T/a/jax-init-info.txt"
}

@test "a coordinator not up yet: the rank says once that it cannot reach it and keeps trying" {
	T=$(mktemp -d)
	mkdir "$T/p" "$T/a"
	port=$(free_port)
	C=http://127.0.0.1:$port
	mtc-handshake rank --dir "$T/a" --coordinator-url "$C" --index 0 --host a --timeout 60 >"$T/a.out" 2>"$T/a.err" &
	apid=$!
	PIDS+=($apid)
	wait_for "the warning" 20 grep -q "cannot reach" "$T/a.err"
	run cat "$T/a.err"
	assert_output --regexp "^mtc-handshake: warning: cannot reach the coordinator '$C': connection refused; retrying for up to [0-9]+ s$"
	# refused again and again while it stays down: still the one line
	wait_for "two more refusals" 20 eval '[ $(( $(date +%s) - $(stat -c %Y "$T/a.err") )) -ge 3 ]'
	mtc-replicate serve --dir "$T/p" --listen "127.0.0.1:$port" --coordinator --nodes 1 >/dev/null 2>"$T/p.err" &
	PIDS+=($!)
	st=0
	wait "$apid" || st=$?
	assert_equal "$st" 0
	assert_equal "$(grep -c "cannot reach" "$T/a.err")" 1
	assert_equal "$(head -n 1 "$T/a/jax-init-info.txt")" 0
}

@test "restore, crash before a save, restore again: the second survives the same loss as the first" {
	cluster_init "$N"
	export CL_DP=2
	P=$((N / 2))
	cluster_start
	run trainers orbax --dp 2 --steps 3
	assert_success
	wait_for "step 3 replicated" 60 replicated 3
	nodes_kill
	wipe_node 0
	# each node's loop hangs before its first push: the restore's gc alone decides what stays
	for ((r = 0; r < N; r++)); do CL_ENV[$r]="MTC_FAULT_STALL=commit:$CL_ROOT/stall$r"; done
	cluster_start
	run trainers orbax --dp 2 --steps 0
	assert_success
	[ "$(restored_steps)" = 3 ]
	for ((r = 0; r < N; r++)); do wait_for "node $r's loop at its first push" 30 test -e "$CL_ROOT/stall$r"; done
	# the restore kept every node's .meta of the step: rank 0's is on its column-mate still
	[ -e "$CL_ROOT/node$P/$CL_JOB-s3-n0-w0.meta" ]
	for ((r = 0; r < N; r++)); do node_lost "$r"; done # a crash before any save or push
	wipe_node 0
	CL_ENV=()
	cluster_start
	run trainers orbax --dp 2 --steps 0
	assert_success
	[ "$(restored_steps)" = 3 ]
	grep -q "restoring step 3 from cluster" "$CL_ROOT/node0.log"
}

@test "rank server after a shrink: a node holding a rank past the job's nodes reports it, and it is ignored" {
	T=$(mktemp -d)
	mkdir "$T/p" "$T/a" "$T/b" "$T/a/s.data"
	echo x >"$T/a/s.data/f"
	h=$(mtc-replicate digest "$T/a/s.data" | cut -d' ' -f1)
	mv "$T/a/s.data" "$T/a/$h.data"
	printf %s "$h" >"$T/a/job-s3-n5-w0.meta" # rank 5 of the job's bigger run
	serve_on "$T/p" --coordinator --nodes 2 --round-timeout 60
	mtc-handshake rank --verbose --dir "$T/a" --coordinator-url "$URL" --index 0 --host a --timeout 30 >"$T/a.out" 2>"$T/a.err" &
	PIDS+=($!)
	run mtc-handshake rank --dir "$T/b" --coordinator-url "$URL" --index 1 --host b --timeout 30
	assert_success
	wait_for "index 0's answer" 10 test -s "$T/a.out"
	grep -q "1 held ranks" "$T/a.err"
	assert_equal "$(head -n 1 "$T/a/jax-init-info.txt")" 0
	assert_equal "$(head -n 1 "$T/b/jax-init-info.txt")" 1
}

@test "rank server behind a token: \$MTC_PEER_TOKEN_FILE stands for --peer-token-file, as in every program" {
	T=$(mktemp -d)
	mkdir "$T/p" "$T/a" "$T/b"
	printf 'a-shared-secret-of-the-job-0123456789\n' >"$T/token"
	chmod 600 "$T/token"
	serve_on "$T/p" --peer-token-file "$T/token" --coordinator --nodes 2 --round-timeout 60
	mtc-handshake rank --dir "$T/a" --coordinator-url "$URL" --index 0 --host a --timeout 30 \
		--peer-token-file "$T/token" >"$T/a.out" 2>"$T/a.err" &
	PIDS+=($!)
	MTC_PEER_TOKEN_FILE="$T/token" run mtc-handshake rank --dir "$T/b" --coordinator-url "$URL" \
		--index 1 --host b --timeout 30
	assert_success
	assert_output "process id 1 of 2 for pod index 1: JAX coordinator 'a:8482', no node holds a step"
	wait_for "index 0's answer" 10 test -s "$T/a.out"
	assert_equal "$(head -n 1 "$T/a/jax-init-info.txt")" 0
	assert_equal "$(head -n 1 "$T/b/jax-init-info.txt")" 1
}
