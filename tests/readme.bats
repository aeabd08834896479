#!/usr/bin/env bats
# README.md's shell blocks marked runnable, run as they stand with only their
# paths moved into a temporary dir and the port made free: the one-node
# service with a training stand-in, a restart that restores, and retention.
# The local dir does not exist before the first start: the programs make it.
load helpers

setup() {
	W=$(mktemp -d /dev/shm/mtc-readme.XXXXXX)
	mkdir -p "$W/backups"
	PORT=$(free_port)
}

teardown() {
	[ -z "${SVC:-}" ] || { kill -TERM "$SVC" 2>/dev/null; wait "$SVC" 2>/dev/null; }
	pkill -f -- "--dir $W/local" 2>/dev/null || true
	rm -rf "$W"
}

# block N: README's Nth runnable block, its paths in $W.
block() {
	awk -v n="$1" '/<!-- runnable: tests\/readme.bats -->/ { k++; next }
		k == n && /^```sh$/ { on = 1; next } on && /^```$/ { exit } on { print }' \
		"$BATS_TEST_DIRNAME/../README.md" |
		sed -e "s|/run/mtc|$W/run|g" -e "s|/local|$W/local|g" -e "s|/backups|$W/backups|g" \
			-e "s|127.0.0.1:7070|127.0.0.1:$PORT|g"
}

service() {
	block 1 >"$W/service.sh"
	[ -s "$W/service.sh" ]
	bash -e "$W/service.sh" >"$W/service.log" 2>&1 &
	SVC=$!
}

has_backup() { ls "$W/backups/job"/20*/job-s*-n0-w0.meta >/dev/null 2>&1; }

# left: the processes of the service still running, one "PID ARGS" a line.
left() { pgrep -a -f -- "--dir $W/local" || true; }

# stop_service: SIGTERM to the service (the run its shell became), as a
# supervisor stops it; then nothing it started may be left, /readyz gone.
stop_service() {
	kill -TERM "$SVC"
	wait "$SVC" || true
	SVC=
	for _ in $(seq 50); do [ -z "$(left)" ] && break; sleep 0.1; done
	run left
	assert_output ''
	run curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/readyz"
	refute_output 200
}

@test "README's one-node service runs as written: a first start, a restart on the same port that restores with nothing left of the first, and retention" {
	service
	run mtc-trainer --dir "$W/local" --job job --nodes 1 --tick 0.1 --steps 2 --save-every 0.5 --minutes 1
	assert_success
	assert_line "restored 0"
	for _ in $(seq 100); do has_backup && break; sleep 0.2; done
	has_backup
	[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/readyz")" = 200 ]
	[ "$(stat -c %a "$W/local")" = 2770 ]
	stop_service
	service
	run mtc-trainer --dir "$W/local" --job job --nodes 1 --tick 0.1 --steps 0
	assert_success
	assert_line "restored 2"
	[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/readyz")" = 200 ]
	stop_service
	run grep -i 'in use\|cannot serve' "$W/service.log"
	assert_failure
	block 2 >"$W/prune.sh"
	run bash -e "$W/prune.sh"
	assert_success
	assert_output --partial "kept"
	block 3 >"$W/workstation.sh"
	run bash -ec "cd '$W' && . ./workstation.sh"
	assert_success
	assert_line --regexp '/backups/job/[0-9_-]+: valid$'
	# the step the newest backup holds (the first agreed one is backed up at once)
	step=$(ls "$W/backups/job"/20*/ | sed -n 's/^job-s\([0-9]*\)-n0-w0\.meta$/\1/p' | sort -n | tail -1)
	[ -n "$step" ] && [ -d "$W/ckpt/$step" ]
}
