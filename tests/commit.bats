#!/usr/bin/env bats
# mtc-replicate commit and gc: saved steps become <hash>.data + .meta, crash
# safety at every point of the order, and local garbage collection.

load helpers

setup() {
	T=$(mktemp -d /dev/shm/mtc-commit.XXXXXX)
	L=$T/local
	mkdir "$L"
	config orbax 1
}

teardown() {
	[ -n "${WATCH_PID:-}" ] && kill "$WATCH_PID" 2>/dev/null
	[ -n "${SPINNERS:-}" ] && kill $SPINNERS 2>/dev/null
	rm -rf "$T"
}

config() {
	printf '{"job-name":"job","framework":"%s","node-rank":0,"nodes":2,"peer-ranks":[1],"backup-interval-minutes":30,"workers-per-node":%d}' \
		"$1" "$2" > "$T/cfg.json"
}

# A step as a framework writes it: a few files, an empty file, nested dirs.
make_step() {
	local d=$1 seed=$2
	mkdir -p "$d/params/layer0" "$d/empty"
	head -c 300000 /dev/urandom > "$d/params/layer0/shard0"
	head -c 70001 /dev/urandom > "$d/params/shard1"
	: > "$d/params/zero"
	printf 'step %s' "$seed" > "$d/_METADATA"
}

commit() { mtc-replicate commit --dir "$L" --config "$T/cfg.json" --quiet-time 0 "$@"; }

# Every .meta names a .data that exists and whose digest is its name.
assert_consistent() {
	local m h
	for m in "$L"/*.meta; do
		[ -e "$m" ] || continue
		h=$(cat "$m")
		[ -e "$L/$h.data" ] || { echo "'$m' names missing '$h.data'"; return 1; }
		[ "$(mtc-replicate digest "$L/$h.data" | cut -d' ' -f1)" = "$h" ] ||
			{ echo "'$h.data' is incomplete"; return 1; }
	done
}

@test "an Orbax step renamed into place becomes <digest>.data and a .meta without newline" {
	make_step "$L/100.orbax-checkpoint-tmp" 100
	want=$(mtc-replicate digest "$L/100.orbax-checkpoint-tmp" | cut -d' ' -f1)
	mv "$L/100.orbax-checkpoint-tmp" "$L/100"
	run commit
	assert_success
	assert_output --regexp "^committed step 100 worker 0: $want \(370009 bytes, [0-9.]+ s, [0-9]+ of them hashed while it was written\)$"
	assert_file_exists "$L/$want.data/params/layer0/shard0"
	[ "$(cat "$L/job-s100-n0-w0.meta")" = "$want" ]
	[ "$(wc -c < "$L/job-s100-n0-w0.meta")" -eq 65 ]
	[ ! -e "$L/100" ]
	assert_file_not_exists "$L/job-s100-n0-w0.tmp"
}

@test "a step holding a symlink that leads out of it is not committed, said once; one that stays inside is followed" {
	echo "outside the step" >"$T/outside"
	make_step "$L/100.orbax-checkpoint-tmp" 100
	ln -s "$T/outside" "$L/100.orbax-checkpoint-tmp/params/leak"
	mv "$L/100.orbax-checkpoint-tmp" "$L/100"
	run commit
	assert_failure
	assert_output --partial "cannot commit step 100 worker 0"
	assert_output --partial "leads out of the tree"
	run ls "$L"
	refute_output --partial .meta
	refute_output --partial .data
	make_step "$L/101.orbax-checkpoint-tmp" 101
	ln -s layer0/shard0 "$L/101.orbax-checkpoint-tmp/params/alias"
	mv "$L/101.orbax-checkpoint-tmp" "$L/101"
	run commit
	assert_output --partial "committed step 101 worker 0: "
	h=$(cat "$L/job-s101-n0-w0.meta")
	cmp "$L/$h.data/params/alias" "$L/$h.data/params/layer0/shard0"
}

@test "a step dir still being written is not taken, and said; commit_success.txt or quiet time releases it" {
	make_step "$L/7" 7
	run --separate-stderr mtc-replicate commit --dir "$L" --config "$T/cfg.json" --quiet-time 60
	assert_success
	assert_output ""
	assert_equal "$stderr" "mtc-replicate: warning: step 7 is pending: written to within the last 60 s (--quiet-time); not committed (--wait SEC waits for it)"
	run --separate-stderr mtc-replicate commit --dir "$L" --config "$T/cfg.json" --quiet-time 60 --json
	assert_success
	assert_output '{"pending":[7],"quiet-time":60.0}'
	assert_equal "$stderr" ""
	assert_file_exists "$L/7/_METADATA"
	: > "$L/7/commit_success.txt"
	run mtc-replicate commit --dir "$L" --config "$T/cfg.json" --quiet-time 60
	assert_success
	assert_output --partial "committed step 7 worker 0: "
	assert_file_exists "$L/job-s7-n0-w0.meta"
}

@test "NeMo: step=N is left alone until renamed to N" {
	make_step "$L/step=300" 300
	run commit
	assert_output ""
	assert_file_exists "$L/step=300/_METADATA"
	mv "$L/step=300" "$L/300"
	run commit
	assert_success
	assert_output --partial "committed step 300 worker 0: "
}

@test "a numeric symlink (a restore marker being consumed) is left alone" {
	make_step "$L/src" 1
	ln -s src "$L/400"
	run commit
	assert_success
	assert_output ""
	[ -L "$L/400" ]
}

@test "a step equal to an existing .data is deleted and its .meta points to the old data" {
	make_step "$L/100" same
	commit >/dev/null
	cp -a "$L"/*.data "$L/200"
	run commit
	assert_success
	assert_line --regexp "^committed step 200 worker 0: D[0-9a-f]{64} \(.*; the same data was already there\)$"
	[ "$(cat "$L/job-s100-n0-w0.meta")" = "$(cat "$L/job-s200-n0-w0.meta")" ]
	[ "$(ls -d "$L"/*.data | wc -l)" -eq 1 ]
	[ ! -e "$L/200" ]
	[ ! -e "$L/job-s200-n0-w0.save" ]
}

@test "pytorch: .save files are committed once workers-per-node of them exist" {
	config pytorch 2
	head -c 5000 /dev/urandom > "$L/job-s10-n0-w0.save"
	head -c 5000 /dev/urandom > "$L/job-s10-n1-w0.save"
	head -c 5000 /dev/urandom > "$L/other-s10-n0-w1.save"
	run --separate-stderr commit
	assert_output ""
	assert_equal "$stderr" "mtc-replicate: warning: step 10 is pending: 1 of 2 workers' saves are there"
	h1=$(b3sum --no-names "$L/job-s10-n0-w0.save")
	head -c 7000 /dev/urandom > "$L/job-s10-n0-w1.save"
	h2=$(b3sum --no-names "$L/job-s10-n0-w1.save")
	run commit
	assert_success
	assert_line --partial "committed step 10 worker 0: $h1 ("
	assert_line --partial "committed step 10 worker 1: $h2 ("
	[ "$(cat "$L/job-s10-n0-w0.meta")" = "$h1" ]
	[ "$(cat "$L/job-s10-n0-w1.meta")" = "$h2" ]
	assert_file_exists "$L/job-s10-n1-w0.save"
	assert_file_exists "$L/other-s10-n0-w1.save"
}

@test "--watch commits a step renamed in while it runs" {
	mtc-replicate commit --dir "$L" --config "$T/cfg.json" --watch --quiet-time 600 --timeout 20 \
		> "$T/out" 2> "$T/err" &
	WATCH_PID=$!
	make_step "$L/55.orbax-checkpoint-tmp" 55
	sleep 0.3
	mv "$L/55.orbax-checkpoint-tmp" "$L/55"
	for _ in $(seq 1 100); do
		[ -e "$L/job-s55-n0-w0.meta" ] && break
		sleep 0.1
	done
	assert_file_exists "$L/job-s55-n0-w0.meta"
	grep -q '^committed step 55 worker 0: ' "$T/out"
	assert_consistent
}

# run_one [OPTION...]: mtc-replicate run on $L as the one node of a job, logging to $T/err
run_one() {
	printf '{"job-name":"job","framework":"orbax","node-rank":0,"nodes":1,"peer-ranks":[],"backup-interval-minutes":30}' >"$T/one.json"
	mtc-replicate run --dir "$L" --config "$T/one.json" --timeout 30 -vv "$@" 2>"$T/err" &
	WATCH_PID=$!
}

# stop_at_meta STEP: waits for STEP's .meta, then stops run
stop_at_meta() {
	for _ in $(seq 1 300); do
		[ -e "$L/job-s$1-n0-w0.meta" ] && break
		sleep 0.1
	done
	kill "$WATCH_PID"
	wait "$WATCH_PID" || true
	WATCH_PID=
}

@test "run hashes a step while the framework writes it; a file written again after its hash is hashed again" {
	run_one --background normal # in the idle class it would wait for a CPU the suite leaves free
	tmp=$L/5.orbax-checkpoint-tmp
	mkdir -p "$tmp/d"
	head -c 1048576 /dev/urandom >"$tmp/d/a"
	head -c 1048576 /dev/urandom >"$tmp/d/b"
	# in one pass or two (b may not be quiet yet when a is), each byte once
	prehashed() { sed -n 's/.*hashed \([0-9]*\) bytes of steps in the making$/\1/p' "$T/err" | awk '{ s += $1 } END { print s + 0 }'; }
	for _ in $(seq 1 300); do
		[ "$(prehashed)" -ge 2097152 ] && break
		sleep 0.1
	done
	[ "$(prehashed)" = 2097152 ]
	# the framework writes b again, its size unchanged, and renames the step at once
	head -c 4096 /dev/urandom | dd of="$tmp/d/b" conv=notrunc status=none
	: >"$tmp/commit_success.txt"
	cp -r "$tmp" "$T/want"
	mv "$tmp" "$L/5"
	stop_at_meta 5
	h=$(cat "$L/job-s5-n0-w0.meta")
	[ "$h" = "$(mtc-replicate digest "$T/want" | cut -d' ' -f1)" ]
	grep "committed step 5 worker 0: $h (2097152 bytes, .* s, 1048576 of them hashed while it was written)" "$T/err"
	assert_consistent
}

@test "in the idle class, run hashes nothing before the commit while every CPU is wanted" {
	local i
	SPINNERS=
	for i in $(seq $((2 * $(getconf _NPROCESSORS_ONLN) + 1))); do # more than the CPUs the gate counts
		sh -c 'while :; do :; done' &
		SPINNERS="$SPINNERS $!"
	done
	run_one
	tmp=$L/8.orbax-checkpoint-tmp
	mkdir -p "$tmp/d"
	head -c 1048576 /dev/urandom >"$tmp/d/a"
	head -c 5000000 /dev/urandom >"$tmp/d/e46f94127a44b0909c1e9ee2c33bc8ab" # OCDBT data: its segments too
	: >"$tmp/commit_success.txt"
	sleep 2 # quiet for longer than a pass needs, and for a second pass
	mv "$tmp" "$L/8"
	stop_at_meta 8
	kill $SPINNERS
	SPINNERS=
	grep "committed step 8 worker 0: .*, 0 of them hashed while it was written)" "$T/err"
	run grep 'of steps in the making' "$T/err"
	assert_failure
	assert_consistent
}

@test "run --no-prehash hashes a step only at its commit" {
	run_one --no-prehash
	make_step "$L/6.orbax-checkpoint-tmp" 6
	: >"$L/6.orbax-checkpoint-tmp/commit_success.txt"
	sleep 1
	mv "$L/6.orbax-checkpoint-tmp" "$L/6"
	stop_at_meta 6
	grep "committed step 6 worker 0: .*, 0 of them hashed while it was written)" "$T/err"
	run grep 'of steps in the making' "$T/err"
	assert_failure
	assert_consistent
}

# run_sched TID: the class of a thread of run (sched_of)
run_sched() { sched_of "$WATCH_PID" "$1"; }

# prehash_tid: the thread of run that hashes steps before their commit
prehash_tid() {
	local t
	for _ in $(seq 1 100); do
		for t in /proc/"$WATCH_PID"/task/*; do
			[ "$(cat "$t/comm" 2>/dev/null)" = mtc-prehash ] && { basename "$t"; return; }
		done
		sleep 0.05
	done
	return 1
}

@test "run hashes before the commit in the idle class, and commits at normal priority" {
	run_one
	tid=$(prehash_tid)
	[ "$(run_sched "$tid")" = "5 0" ]
	[ "$(run_sched "$WATCH_PID")" = "0 0" ]
	make_step "$L/7.orbax-checkpoint-tmp" 7
	: >"$L/7.orbax-checkpoint-tmp/commit_success.txt"
	mv "$L/7.orbax-checkpoint-tmp" "$L/7"
	stop_at_meta 7
	assert_consistent
}

@test "run --background nice and normal: the class of the work before the commit" {
	run_one --background nice
	[ "$(run_sched "$(prehash_tid)")" = "0 19" ]
	[ "$(run_sched "$WATCH_PID")" = "0 0" ]
	kill "$WATCH_PID" && wait "$WATCH_PID" || true
	run_one --background normal
	[ "$(run_sched "$(prehash_tid)")" = "0 0" ]
	kill "$WATCH_PID" && wait "$WATCH_PID" || true
	WATCH_PID=
	run mtc-replicate run --dir "$L" --config "$T/one.json" --background low
	assert_failure 2
	assert_output --partial "--background takes idle, nice or normal, not 'low'"
}

@test "run hashes a real Orbax save while it is written: the name and manifest are those of a commit from scratch" {
	need_frameworks
	run_one
	MTC_PY=$MTC_PY mtc-trainer --dir "$L" --real-orbax --resume 4 --steps 1 --save-every 0 \
		--shards 4 --shard-bytes 67108864 >/dev/null 2>&1
	stop_at_meta 5
	h=$(cat "$L/job-s5-n0-w0.meta")
	# the same bytes committed again by a process that knew nothing before
	mkdir -p "$T/again"
	cp -r "$L/$h.data" "$T/again/5"
	mtc-replicate commit --dir "$T/again" --config "$T/one.json" --quiet-time 0
	[ "$(cat "$T/again/job-s5-n0-w0.meta")" = "$h" ]
	cmp "$L/$h.manifest" "$T/again/$h.manifest"
	known=$(sed -n "s/.*committed step 5 worker 0: $h ([0-9]* bytes, .* s, \([0-9]*\) of them hashed while it was written)/\1/p" "$T/err")
	[ -n "$known" ]
	echo "# $known bytes of the Orbax save were hashed while it was written" >&3
}

@test "kill -9 at every point of the commit: a re-run converges" {
	for point in hashed tmp-written data-renamed meta-renamed; do
		rm -rf "$L" && mkdir "$L"
		make_step "$L/100" $point
		MTC_FAULT_KILL=commit-$point run commit
		[ "$status" -eq 137 ] || { echo "no crash at $point: $status"; false; }
		assert_consistent
		run commit
		assert_success
		assert_consistent
		assert_file_exists "$L/job-s100-n0-w0.meta"
		[ "$(ls "$L" | grep -cv '\.data$\|\.meta$\|\.manifest$\|^\.mtc-trash$')" -eq 0 ] || { ls -la "$L"; false; }
	done
}

@test "kill -9 while deleting a redundant copy: the name never holds a partial tree" {
	make_step "$L/100" same
	commit >/dev/null
	cp -a "$L"/*.data "$L/200"
	MTC_FAULT_KILL=trash run commit
	[ "$status" -eq 137 ]
	assert_consistent
	[ ! -e "$L/job-s200-n0-w0.save" ]
	run commit
	assert_success
	assert_consistent
	[ ! -e "$L/.mtc-trash" ]
	[ "$(cat "$L/job-s100-n0-w0.meta")" = "$(cat "$L/job-s200-n0-w0.meta")" ]
}

@test "kill -9 at random moments of a larger commit: never an inconsistent dir" {
	n=40; sanitized && n=8
	for i in $(seq 1 8); do
		mkdir -p "$L/$i"
		for f in $(seq 1 $n); do head -c $((f * 4099)) /dev/urandom > "$L/$i/f$f"; done
	done
	for delay in 0.01 0.02 0.03 0.05 0.08 0.1 0.15 0.2; do
		# the program itself, not the function: $! of a function is a subshell, and
		# killing that left the commit running on beside the next ones
		mtc-replicate commit --dir "$L" --config "$T/cfg.json" --quiet-time 0 >/dev/null 2>&1 &
		pid=$!
		sleep $delay
		kill -9 $pid 2>/dev/null || true
		wait $pid 2>/dev/null || true
		assert_consistent
	done
	run commit
	assert_success
	assert_consistent
	[ "$(ls "$L"/*.meta | wc -l)" -eq 8 ]
}

@test "gc keeps the kept steps and what a .restore marker points to, deletes the rest" {
	for s in 1 2 3 4; do make_step "$L/$s" gc$s; done
	commit > /dev/null
	h1=$(cat "$L/job-s1-n0-w0.meta")
	h3=$(cat "$L/job-s3-n0-w0.meta")
	ln -s "$h1.data" "$L/job-s1-n0-w0.restore"
	printf '%s' "$h3" > "$L/job-s3-n1-w0.meta"
	run mtc-replicate gc --dir "$L" --config "$T/cfg.json" --keep 3 --dry-run --json
	assert_success
	assert_output --regexp '^\{"dry-run":true,"would-delete-paths":\[("[^"]*",){6}"[^"]*"\],"would-delete-meta":3,"would-delete-data":2,"kept-meta":2,"kept-data":2\}$'
	run mtc-replicate gc --dir "$L" --config "$T/cfg.json" --keep 3 --dry-run
	assert_success
	assert_line "would-delete $L/job-s2-n0-w0.meta"
	assert_line --index 7 "3 .meta and 2 .data to delete, kept 2 .meta and 2 .data (dry run: nothing deleted)"
	would=$(sed -n 's/^would-delete //p' <<<"$output") # mtc(7) §9.1: as mtc-prune's table
	[ "$(wc -l <<<"$would")" -eq 7 ]
	for p in $would; do [ -e "$p" ]; done
	[ "$(ls "$L"/*.meta | wc -l)" -eq 5 ]
	run mtc-replicate gc --dir "$L" --config "$T/cfg.json" --keep 3 --json
	assert_success
	assert_output '{"dry-run":false,"deleted-meta":3,"deleted-data":2,"kept-meta":2,"kept-data":2}'
	assert_file_exists "$L/job-s3-n0-w0.meta"
	assert_file_exists "$L/job-s3-n1-w0.meta"
	[ -d "$L/$h1.data" ]
	[ -d "$L/$h3.data" ]
	assert_file_not_exists "$L/job-s2-n0-w0.meta"
	[ "$(ls -d "$L"/*.data | wc -l)" -eq 2 ]
	# manifests go with their data
	run ls "$L"
	assert_output --partial "$h1.manifest"
	assert_output --partial "$h3.manifest"
	[ "$(ls "$L"/*.manifest | wc -l)" -eq 2 ]
	assert_consistent
}

@test "commit keeps the manifest of a directory's data: paths, sizes and file digests" {
	make_step "$L/5" m
	commit > /dev/null
	h=$(cat "$L/job-s5-n0-w0.meta")
	assert_file_exists "$L/$h.manifest"
	python3 - "$L/$h.manifest" "$L/$h.data" <<-'PY'
	import json, os, subprocess, sys
	entries = {e["path"]: e for e in json.load(open(sys.argv[1]))}
	for root, dirs, files in os.walk(sys.argv[2]):
	    for f in files:
	        p = os.path.join(root, f)
	        rel = os.path.relpath(p, sys.argv[2])
	        digest = subprocess.run(["b3sum", "--no-names", p], capture_output=True, text=True).stdout.strip()
	        assert entries[rel]["size"] == os.path.getsize(p), rel
	        assert entries[rel]["digest"] == digest, rel
	PY
	rm -rf "$L/$h.data"
	touch "$L/orphan"
	run mtc-replicate gc --dir "$L" --config "$T/cfg.json" --keep 5
	assert_success
	assert_file_not_exists "$L/$h.manifest"
}

@test "gc --own-only keeps only this node's .meta of the kept step" {
	make_step "$L/5" own
	commit > /dev/null
	printf '%s' "$(cat "$L/job-s5-n0-w0.meta")" > "$L/job-s5-n1-w0.meta"
	run mtc-replicate gc --dir "$L" --config "$T/cfg.json" --keep 5 --own-only
	assert_success
	assert_file_exists "$L/job-s5-n0-w0.meta"
	assert_file_not_exists "$L/job-s5-n1-w0.meta"
}

@test "gc --grace keeps data just published until its .meta lands, then deletes it when unnamed" {
	make_step "$L/5" kept
	commit > /dev/null
	# A peer's data whose .meta has not arrived yet, and an old orphan.
	mkdir -p "$T/up/x" && echo pushed > "$T/up/x/f"
	h=$(mtc-replicate digest "$T/up/x" | cut -d" " -f1)
	mv "$T/up/x" "$L/$h.data"
	echo '{}' > "$L/$h.manifest"
	mkdir -p "$T/up/y" && echo old > "$T/up/y/f"
	o=$(mtc-replicate digest "$T/up/y" | cut -d" " -f1)
	mv "$T/up/y" "$L/$o.data"
	run mtc-replicate gc --dir "$L" --config "$T/cfg.json" --keep 5 --grace 600
	assert_success
	assert_dir_exists "$L/$h.data"
	assert_file_exists "$L/$h.manifest"
	assert_dir_exists "$L/$o.data" # just renamed too: within the grace
	run mtc-replicate gc --dir "$L" --config "$T/cfg.json" --keep 5
	assert_success
	assert_dir_not_exists "$L/$h.data"
	assert_file_not_exists "$L/$h.manifest"
	assert_dir_not_exists "$L/$o.data"
	run mtc-replicate gc --dir "$L" --config "$T/cfg.json" --keep 5 --grace -1
	[ "$status" -eq 2 ]
}

@test "kill -9 during gc: the re-run finishes and no .meta names missing data" {
	for s in 1 2; do make_step "$L/$s" k$s; done
	commit > /dev/null
	MTC_FAULT_KILL=trash run mtc-replicate gc --dir "$L" --config "$T/cfg.json" --keep 2
	[ "$status" -eq 137 ]
	assert_consistent
	run mtc-replicate gc --dir "$L" --config "$T/cfg.json" --keep 2
	assert_success
	assert_consistent
	[ "$(ls -d "$L"/*.data | wc -l)" -eq 1 ]
}

@test "commit --wait takes a step once it is quiet; exit 3 when it stays pending" {
	make_step "$L/7" 7
	(sleep 0.5 && : > "$L/7/commit_success.txt") &
	run --separate-stderr mtc-replicate commit --dir "$L" --config "$T/cfg.json" --quiet-time 60 --wait 10 --json
	assert_success
	assert_output --regexp '^\{"step":7,"worker":0,"hash":"D[0-9a-f]{64}",'
	assert_file_exists "$L/job-s7-n0-w0.meta"
	make_step "$L/8" 8
	run --separate-stderr mtc-replicate commit --dir "$L" --config "$T/cfg.json" --quiet-time 60 --wait 0.3 --json
	assert_failure 3
	assert_output '{"pending":[8],"quiet-time":60.0}'
	assert_equal "$stderr" "mtc-replicate: timed out after 0.3 s: step 8 still pending"
	run mtc-replicate commit --dir "$L" --config "$T/cfg.json" --watch --wait 1
	assert_failure 2
}

@test "usage and config errors" {
	run mtc-replicate commit --config "$T/cfg.json"
	assert_failure 2
	assert_output "mtc-replicate: --dir is required (see 'mtc-replicate commit --help')"
	run mtc-replicate gc --dir "$L" --config "$T/cfg.json" --keep x
	assert_failure 2
	printf '{}' > "$T/bad.json"
	run mtc-replicate commit --dir "$L" --config "$T/bad.json"
	assert_failure 2
	assert_output --partial "mtc-replicate: invalid config '$T/bad.json'"
}

# Runs commit with MTC_FAULT_PAUSE=commit-$1: each time it stops there, one more
# line is appended to the file open as fd 7 (a writer that still appends),
# then it goes on. Sets status, output and paused.
commit_while_appending() {
	local pid state i
	paused=0
	MTC_FAULT_PAUSE=commit-$1 mtc-replicate commit --dir "$L" --config "$T/cfg.json" \
		--quiet-time 0 --json > "$T/out" 2> "$T/err" &
	pid=$!
	for ((i = 0; i < 1000; i++)); do
		state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || break
		[ "$state" = Z ] && break
		if [ "$state" = T ]; then
			echo "line $i" >&7
			paused=$((paused + 1))
			kill -CONT "$pid"
		fi
		sleep 0.02
	done
	status=0
	wait "$pid" || status=$?
	output=$(cat "$T/out")
	echo "line after" >&7 # the writer is still at it after the commit
}

# step_7_pending_while_appending FILE PHASE: step 7's FILE is appended to each time its
# commit stops at PHASE: the commit leaves the step pending, no .meta, the dir consistent.
step_7_pending_while_appending() {
	make_step "$L/7" 7
	: > "$L/7/commit_success.txt"
	exec 7>> "$L/7/$1"
	commit_while_appending "$2"
	exec 7>&-
	[ "$status" -eq 0 ]
	[ "$paused" -ge 2 ]
	assert_equal "$output" '{"pending":[7],"quiet-time":0.0}'
	assert_consistent
	[ ! -e "$L/job-s7-n0-w0.meta" ]
}

@test "a step whose writer still appends while it is hashed is not committed; once quiet it is, by its final content" {
	step_7_pending_while_appending params/log hashing
	assert_file_exists "$L/job-s7-n0-w0.save/params/log"
	run commit
	assert_success
	want=$(cat "$L/job-s7-n0-w0.meta")
	[ "$(mtc-replicate digest "$L/$want.data" | cut -d' ' -f1)" = "$want" ]
	[ "$(tail -n1 "$L/$want.data/params/log")" = "line after" ]
	assert_consistent
}

@test "data that changes after it was hashed and renamed in goes back to its save: no .meta, no .data, no manifest" {
	step_7_pending_while_appending params/shard1 data-renamed
	[ -z "$(find "$L" -maxdepth 1 -name '*.data' -o -maxdepth 1 -name '*.manifest' -o -maxdepth 1 -name '*.tmp')" ]
	assert_file_exists "$L/job-s7-n0-w0.save/params/shard1"
	run commit
	assert_success
	assert_consistent
	assert_file_exists "$L/job-s7-n0-w0.meta"
}
