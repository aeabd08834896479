#!/usr/bin/env bats
# mtc-node when things go wrong, and the local dir (mtc(7) §3, §9.4): what a
# restart cannot fix reaches the training job as one line in
# replicator.failed and ends mtc-node with 1; what may pass is a line in
# replicator.errors and a restart in place; nothing mtc-node or a program
# started outlives it; a missing local dir is created.
load helpers

NODE=$BATS_TEST_DIRNAME/../contrib/mtc-node

setup() {
	W=$(mktemp -d /dev/shm/mtc-node.XXXXXX)
	chmod 755 "$W"
	PORT=$(free_port)
	printf 'job-name: job\nframework: orbax\nnode-rank: 0\nnodes: 1\npeer-ranks: []\nbackup-interval-minutes: 30\n' >"$W/y.yaml"
	mtc-handshake check "$W/y.yaml" >"$W/cfg.json"
	NPID=
}

teardown() {
	[ -z "$NPID" ] || { kill -TERM "$NPID" 2>/dev/null; wait "$NPID" 2>/dev/null; }
	[ -z "${HOLD:-}" ] || { kill "$HOLD" 2>/dev/null; wait "$HOLD" 2>/dev/null; }
	pkill -f -- "$W/" 2>/dev/null || true
	rm -rf "$W"
}

# node_start [OPTION...]: mtc-node for a one-node job on $W/local, in the background.
node_start() {
	"$NODE" --dir "$W/local" --listen "127.0.0.1:$PORT" --coordinator-url "http://127.0.0.1:$PORT" \
		--peer-url-template "http://127.0.0.1:$PORT" --state-dir "$W/state" "$@" >"$W/node.log" 2>&1 &
	NPID=$!
}

# ends_with PID SEC STATUS: PID ends within SEC s with STATUS.
ends_with() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	! kill -0 "$1" 2>/dev/null || { echo "still running after $2 s"; cat "$W/node.log"; return 1; }
	local rc=0
	wait "$1" || rc=$?
	[ "$rc" = "$3" ] || { echo "exit $rc, not $3"; cat "$W/node.log"; return 1; }
}

# failed_within SEC: replicator.failed appears within SEC s.
failed_within() {
	local i
	for ((i = 0; i < $1 * 10; i++)); do [ -s "$W/local/replicator.failed" ] && return 0; sleep 0.1; done
	echo "no replicator.failed after $1 s"
	cat "$W/node.log"
	return 1
}

# left: the processes still running on $W, one "PID ARGS" a line.
left() { pgrep -a -f -- "$W/" || true; }

nothing_left() {
	local i
	for ((i = 0; i < 50; i++)); do [ -z "$(left)" ] && return 0; sleep 0.1; done
	run left
	assert_output ''
}

@test "mtc-node: an unreadable token reaches the job in replicator.failed within 10 s, and mtc-node exits 1" {
	node_start --peer-token-file "$W/no-token" --fail-wait 0
	failed_within 10
	run cat "$W/local/replicator.failed"
	assert_output --regexp "\[CRI\] node\.main\(0\): 'mtc-replicate serve' cannot start: mtc-replicate: cannot serve '$W/local': .*no-token.*"
	[ "${#lines[@]}" = 1 ]
	ends_with "$NPID" 10 1
	NPID=
	run cat "$W/state/failed"
	assert_output --partial "no-token"
	nothing_left
}

@test "mtc-node: a port another program holds reaches the job in replicator.failed within 10 s, and mtc-node exits 1" {
	python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(600)' "$PORT" &
	HOLD=$!
	for _ in $(seq 50); do ss -ltn | grep -q ":$PORT " && break; sleep 0.1; done
	node_start --fail-wait 0
	failed_within 10
	run cat "$W/local/replicator.failed"
	assert_output --partial "cannot listen on '127.0.0.1:$PORT'"
	[ "${#lines[@]}" = 1 ]
	ends_with "$NPID" 10 1
	NPID=
	nothing_left
}

@test "mtc-node: an invalid replicator.yaml reaches the job in replicator.failed within 10 s, and mtc-node exits 1" {
	node_start
	for _ in $(seq 50); do [ -d "$W/local" ] && break; sleep 0.1; done
	sed 's/orbax/tensorflow/' "$W/y.yaml" >"$W/local/replicator.yaml"
	failed_within 10
	run cat "$W/local/replicator.failed"
	assert_output --partial "invalid config '$W/local/replicator.yaml'"
	[ "${#lines[@]}" = 1 ]
	[ ! -e "$W/local/replicator.yaml" ]
	ends_with "$NPID" 10 1
	NPID=
	nothing_left
}

@test "mtc-node: a local dir it cannot create or write ends it with 1 within 10 s, the reason in STATE/failed" {
	touch "$W/file"
	node_start --dir "$W/file/local" --fail-wait 0
	ends_with "$NPID" 10 1
	NPID=
	run cat "$W/state/failed"
	assert_output --partial "cannot use '$W/file/local': Not a directory"
	mkdir -m 555 "$W/ro"
	mkdir "$W/state2"
	chown nobody "$W/state2"
	# what nobody runs, where nobody may read it (a checkout may sit in a dir only root enters)
	mkdir -m 755 "$W/image"
	cp "$NODE" "$MTC_BIN"/mtc-* "$W/image/"
	PATH="$W/image:$PATH" setpriv --reuid=nobody --regid=nogroup --clear-groups "$W/image/mtc-node" \
		--dir "$W/ro" --listen "127.0.0.1:$PORT" \
		--coordinator-url "http://127.0.0.1:$PORT" --peer-url-template "http://127.0.0.1:$PORT" \
		--state-dir "$W/state2" --fail-wait 0 >"$W/node.log" 2>&1 &
	NPID=$!
	ends_with "$NPID" 10 1
	NPID=
	run cat "$W/state2/failed"
	assert_output --partial "cannot write in '$W/ro': Permission denied"
	nothing_left
}

@test "mtc-node: a training job that starts after a final error is answered with it at once" {
	node_start --peer-token-file "$W/no-token"
	failed_within 10
	run timeout 20 mtc-handshake offer --dir "$W/local" --job-name job --node-rank 0 --nodes 1 \
		--peer-ranks '' --backup-interval-minutes 30 --timeout 15
	assert_failure 1
	assert_output --partial "replicator failed:"
	assert_output --partial "no-token"
	ends_with "$NPID" 10 1
	NPID=
	nothing_left
}

@test "mtc-node: a daemon that dies is a line in replicator.errors and restarts in place" {
	node_start
	for _ in $(seq 300); do [ -s "$W/state/serve.pid" ] && curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
	local old
	old=$(cat "$W/state/serve.pid")
	kill -9 "$old"
	for _ in $(seq 300); do
		[ "$(cat "$W/state/serve.pid")" != "$old" ] && curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break
		sleep 0.1
	done
	run curl -sf "http://127.0.0.1:$PORT/healthz"
	assert_success
	run cat "$W/local/replicator.errors"
	assert_output --regexp "\[ERR\] node\.main\(0\): 'mtc-replicate serve' exited \(137\); restart 1 of 10 in 1 s"
	kill -0 "$NPID"
	[ ! -e "$W/local/replicator.failed" ]
}

@test "mtc-node: killed with -9 or stopped with SIGTERM, nothing it started is left" {
	node_start
	for _ in $(seq 300); do [ -s "$W/state/serve.pid" ] && curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
	pgrep -f -- "mtc-handshake accept --dir $W/local" >/dev/null
	kill -9 "$NPID"
	wait "$NPID" || true
	NPID=
	nothing_left
	node_start
	for _ in $(seq 300); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
	kill -TERM "$NPID"
	ends_with "$NPID" 10 0
	NPID=
	nothing_left
}

# creates CMD...: CMD, given $D missing, creates it (and its parents) mode 2770 and says so once.
creates() {
	rm -rf "$W/new"
	D=$W/new/a/local
	"$@" 2>"$W/err" || true
	[ "$(stat -c %a "$D")" = 2770 ] || { echo "$*: $(stat -c %a "$D" 2>&1)"; cat "$W/err"; return 1; }
	[ "$(grep -c "created the local dir '$D'" "$W/err")" = 1 ] || { echo "$*"; cat "$W/err"; return 1; }
}

# refuses CMD...: CMD, given $D under a file, exits 2 with one line naming it.
refuses() {
	"$@" 2>"$W/err" && { echo "$*: succeeded"; return 1; }
	local rc=$?
	[ "$rc" = 2 ] || { echo "$*: exit $rc"; cat "$W/err"; return 1; }
	[ "$(wc -l <"$W/err")" = 1 ] && grep -q "cannot use '$D': Not a directory$" "$W/err" ||
		{ echo "$*"; cat "$W/err"; return 1; }
}

@test "a program that writes the local dir creates a missing one, mode 2770, and one it cannot is a one-line error" {
	local h=0000000000000000000000000000000000000000000000000000000000000000
	# shellcheck disable=SC2016
	local cmds=(
		'mtc-handshake accept --dir "$D" --timeout 0.2'
		'mtc-handshake watch --dir "$D" --timeout 0.2'
		'mtc-replicate serve --dir "$D" --listen 127.0.0.1:0 & p=$!; for _ in $(seq 50); do [ -d "$D" ] && break; sleep 0.1; done; kill $p; wait $p'
		'mtc-replicate run --dir "$D" --config "$W/cfg.json" --timeout 0.2'
		'mtc-replicate fetch --dir "$D" --from http://127.0.0.1:1 --hash $h --retries 0'
		'mtc-restore --dir "$D" --config "$W/cfg.json" --standalone'
	)
	touch "$W/file"
	for c in "${cmds[@]}"; do
		creates eval "$c"
		D=$W/file/local
		refuses eval "${c%%&*}"
	done
	# reading programs do not create it
	D=$W/new/b/local
	run mtc-lkg --dir "$D" --config "$W/cfg.json"
	assert_failure
	[ ! -e "$D" ]
}

@test "mtc-node: SIGTERM while its coordinator holds a restore round open for a rank that never comes stops everything within 10 s" {
	node_start
	mtc-handshake offer --dir "$W/local" --job-name job --node-rank 0 --nodes 2 --peer-ranks 1 \
		--backup-interval-minutes 30 --timeout 20 >/dev/null 2>&1
	# rank 0's restore waits in the coordinator's round for rank 1
	for _ in $(seq 300); do pgrep -f -- "mtc-restore .*--dir $W/local" >/dev/null && break; sleep 0.1; done
	pgrep -f -- "mtc-replicate serve .*--dir $W/local .*--coordinator" >/dev/null
	sleep 0.5
	kill -TERM "$NPID"
	ends_with "$NPID" 10 0
	NPID=
	nothing_left
}
