#!/usr/bin/env bats
# mtc-backup: a node's part of a step into LOCATION/<job>/<name>/, on both backends.

load helpers
load fakegcs/fakegcs
load backup

setup() {
	gcs_setup backup
}

teardown() {
	fakegcs_stop
	rm -rf "$WORK"
}

@test "backs up to a directory in the reference layout and prints a JSON summary with --json" {
	config "$WORK/cfg" job 0 1
	h=$(saved_step "$WORK/local" job 100 0 a)
	run mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 100 --to "$WORK/bk" --name 2025-06-30_14-30 --json
	assert_success
	echo "$output" | fakegcs_json 'd["bytes"] > 300000 and d["objects"] == 5 and d["backup"] == "2025-06-30_14-30" and "mib-per-s" in d and "seconds" in d' | grep -qx true
	b="$WORK/bk/job/2025-06-30_14-30"
	assert_equal "$(cat "$b/job-s100-n0-w0.meta")" "$h"
	cmp "$WORK/local/$h.data/weights" "$b/$h.data/weights"
	assert_dir_exists "$b/$h.data/sub/empty"
	assert_file_exists "$b/$h.manifest"
	run find "$WORK/bk" -name '*.tmp'
	assert_output ""
}

@test "file:// works, and the default name is the current UTC minute" {
	config "$WORK/cfg" job 0 1
	saved_step "$WORK/local" job 5 0 b >/dev/null
	before=$(date -u +%Y-%m-%d_%H-%M)
	run mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 5 --to "file://$WORK/bk"
	assert_success
	after=$(date -u +%Y-%m-%d_%H-%M)
	name=$(ls "$WORK/bk/job")
	[[ "$name" == "$before" || "$name" == "$after" ]]
}

@test "gs://: data first, .meta last; the same data from another node is not uploaded again" {
	fakegcs_start
	config "$WORK/cfg0" job 0 2
	config "$WORK/cfg1" job 1 2
	h=$(saved_step "$WORK/n0" job 7 0 same)
	saved_step "$WORK/n1" job 7 1 same >/dev/null
	run mtc-backup --dir "$WORK/n0" --config "$WORK/cfg0" --step 7 --to gs://bkt/root --name 2025-01-01_00-00
	assert_success
	fakegcs_ctl DELETE stats >/dev/null
	run mtc-backup --dir "$WORK/n1" --config "$WORK/cfg1" --step 7 --to gs://bkt/root --name 2025-01-01_00-00 --json
	assert_success
	echo "$output" | fakegcs_json 'd["bytes"] == 0 and d["skipped"] == 3' | grep -qx true
	[ "$(fakegcs_stat 'requests.POST upload-multipart')" -le 2 ]
	run "$STORE" gs://bkt/root list job/2025-01-01_00-00/ /
	assert_line "job/2025-01-01_00-00/job-s7-n0-w0.meta 65"
	assert_line "job/2025-01-01_00-00/job-s7-n1-w0.meta 65"
	assert_line "job/2025-01-01_00-00/$h.data/"
}

@test "gs://: with D replicas that agree, only the last partition uploads data" {
	fakegcs_start
	config "$WORK/cfg1" job 1 4 2
	config "$WORK/cfg3" job 3 4 2
	saved_step "$WORK/n1" job 9 1 same >/dev/null
	h=$(saved_step "$WORK/n3" job 9 3 same)
	cp "$WORK/n3/job-s9-n3-w0.meta" "$WORK/n1/" # the mate's meta, as replication leaves it
	run mtc-backup --dir "$WORK/n3" --config "$WORK/cfg3" --step 9 --to gs://bkt --name 2025-01-01_00-00
	assert_success
	run mtc-backup --dir "$WORK/n1" --config "$WORK/cfg1" --step 9 --to gs://bkt --name 2025-01-01_00-00 --json
	assert_success
	echo "$output" | fakegcs_json 'd["bytes"] == 0' | grep -qx true
	run "$STORE" gs://bkt list job/2025-01-01_00-00/ /
	assert_equal "$(echo "$output" | grep -c '\.data/$')" 1
	assert_line "job/2025-01-01_00-00/$h.data/"
}

@test "gs://: with D replicas that disagree, each node of the column uploads its own data" {
	fakegcs_start
	config "$WORK/cfg1" job 1 4 2
	config "$WORK/cfg3" job 3 4 2
	h1=$(saved_step "$WORK/n1" job 9 1 r1)
	h3=$(saved_step "$WORK/n3" job 9 3 r3)
	cp "$WORK/n3/job-s9-n3-w0.meta" "$WORK/n1/"
	run mtc-backup --dir "$WORK/n1" --config "$WORK/cfg1" --step 9 --to gs://bkt --name 2025-01-01_00-00 --json
	assert_success
	echo "$output" | fakegcs_json 'd["bytes"] > 300000' | grep -qx true
	run mtc-backup --dir "$WORK/n3" --config "$WORK/cfg3" --step 9 --to gs://bkt --name 2025-01-01_00-00
	assert_success
	run "$STORE" gs://bkt list job/2025-01-01_00-00/ /
	assert_line "job/2025-01-01_00-00/$h1.data/"
	assert_line "job/2025-01-01_00-00/$h3.data/"
}

@test "a node that leaves its data to its column-mate uploads its .meta only once that data is whole, and gives up after --stall-timeout" {
	config "$WORK/cfg1" job 1 4 2
	config "$WORK/cfg3" job 3 4 2
	saved_step "$WORK/n1" job 9 1 same >/dev/null
	h=$(saved_step "$WORK/n3" job 9 3 same)
	cp "$WORK/n3/job-s9-n3-w0.meta" "$WORK/n1/"
	run -3 mtc-backup --dir "$WORK/n1" --config "$WORK/cfg1" --step 9 --to "$WORK/bk" --name 2025-01-01_00-00 --stall-timeout 1
	assert_output --partial "has not grown for 1 s"
	assert_not_exist "$WORK/bk/job/2025-01-01_00-00/job-s9-n1-w0.meta"
	mtc-backup --dir "$WORK/n1" --config "$WORK/cfg1" --step 9 --to "$WORK/bk" --name 2025-01-01_00-00 >"$WORK/n1.out" 2>&1 &
	pid=$!
	sleep 0.5
	assert_not_exist "$WORK/bk/job/2025-01-01_00-00/job-s9-n1-w0.meta" # still waiting
	run mtc-backup --dir "$WORK/n3" --config "$WORK/cfg3" --step 9 --to "$WORK/bk" --name 2025-01-01_00-00
	assert_success
	wait "$pid"
	assert_file_exist "$WORK/bk/job/2025-01-01_00-00/job-s9-n1-w0.meta"
	[ "$(ls "$WORK/bk/job/2025-01-01_00-00" | grep -c '\.data$')" -eq 1 ]
}

@test "gs://: survives 503 bursts and a dropped connection" {
	fakegcs_start
	config "$WORK/cfg" job 0 1
	saved_step "$WORK/local" job 3 0 f $((10 << 20)) >/dev/null
	fakegcs_fault '[{"kind": "upload-*", "action": "status", "status": 503, "times": 4},
	                {"kind": "upload-chunk", "action": "drop-request", "after_bytes": 3000000}]'
	run mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 3 --to gs://bkt --name 2025-01-01_00-00
	assert_success
	[ "$(fakegcs_stat faults_fired)" -eq 5 ]
	run mtc-lkg --backups gs://bkt --job job --json
	assert_success
	echo "$output" | fakegcs_json 'd["backups"][0]["state"]' | grep -qx valid
}

@test "gs://: a killed mtc-backup leaves no .meta whose data is incomplete" {
	fakegcs_start
	config "$WORK/cfg" job 0 1
	mkdir -p "$WORK/local/4"
	for i in $(seq 1 20); do echo "$i" >"$WORK/local/4/f$i"; done
	h=$(mtc-replicate digest "$WORK/local/4" | awk '{print $1}')
	mv "$WORK/local/4" "$WORK/local/$h.data"
	printf %s "$h" >"$WORK/local/job-s4-n0-w0.meta"
	fakegcs_fault '{"kind": "upload-*", "action": "delay", "seconds": 0.3, "times": -1}'
	mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 4 --to gs://bkt --name 2025-01-01_00-00 -j 2 3>&- &
	pid=$!
	sleep 1
	kill -9 "$pid"
	wait "$pid" || true
	fakegcs_ctl DELETE faults >/dev/null
	run "$STORE" gs://bkt list job/2025-01-01_00-00/
	assert_success
	refute_output --partial ".meta"
	[ "$(echo "$output" | wc -l)" -ge 1 ]
	run --separate-stderr mtc-lkg --backups gs://bkt --job job --json
	assert_equal "$status" 4
	assert_equal "$stderr" "mtc-lkg: no valid backup among 1 at 'gs://bkt/job'"
	echo "$output" | fakegcs_json 'd["backups"][0]["state"] != "valid"' | grep -qx true
	# the next run completes it
	run mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 4 --to gs://bkt --name 2025-01-01_00-00
	assert_success
	run mtc-lkg --backups gs://bkt --job job --json
	assert_success
}

@test "refuses local data that does not match its name (exit 5), uploading nothing" {
	config "$WORK/cfg" job 0 1
	h=$(saved_step "$WORK/local" job 6 0 c)
	echo tampered >>"$WORK/local/$h.data/sub/note.txt"
	run mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 6 --to "$WORK/bk" --name 2025-01-01_00-00
	assert_equal "$status" 5
	assert_output --partial "its digest is"
	[ -z "$(find "$WORK/bk" -name '*.meta' 2>/dev/null)" ]
}

# committed_step DIR CFG STEP SEED: a step committed by mtc-replicate (with its manifest beside
# the data, a 3 MiB file over several copy units, an empty dir); prints the hash
committed_step() {
	mkdir -p "$1/$3/sub/empty"
	make_data "$1/$3/weights" $((3 << 20)) "$4"
	echo "$4" >"$1/$3/sub/note.txt"
	touch "$1/$3/commit_success.txt"
	mtc-replicate commit --dir "$1" --config "$2" >/dev/null 2>&1
	cat "$1"/*-s"$3"-n0-w0.meta
}

@test "to a directory, each file is checked against the step's manifest as it is copied: no pass of its own" {
	config "$WORK/cfg" job 0 1
	h=$(committed_step "$WORK/local" "$WORK/cfg" 8 d)
	assert_file_exists "$WORK/local/$h.manifest"
	run mtc-backup -v --dir "$WORK/local" --config "$WORK/cfg" --step 8 --to "$WORK/bk" --name 2025-01-01_00-00
	assert_success
	assert_output --partial "each file is checked against its manifest as it is copied"
	refute_output --partial "hashed '"
	b="$WORK/bk/job/2025-01-01_00-00"
	diff -r "$WORK/local/$h.data" "$b/$h.data"
	cmp "$WORK/local/$h.manifest" "$b/$h.manifest"
	assert_equal "$(cat "$b/job-s8-n0-w0.meta")" "$h"
	run find "$WORK/bk" -name '*.tmp'
	assert_output ""
}

@test "a bit flipped in a committed file is caught as it is copied (exit 5): that object and no .meta land" {
	config "$WORK/cfg" job 0 1
	h=$(committed_step "$WORK/local" "$WORK/cfg" 9 e)
	printf '\xff' | dd of="$WORK/local/$h.data/weights" bs=1 seek=$((2 << 20)) conv=notrunc status=none
	run mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 9 --to "$WORK/bk" --name 2025-01-01_00-00
	assert_equal "$status" 5
	assert_output --partial "its bytes do not match its manifest"
	b="$WORK/bk/job/2025-01-01_00-00"
	assert_file_not_exists "$b/$h.data/weights"
	[ -z "$(find "$WORK/bk" -name '*.meta' -o -name '*.tmp')" ]
}

@test "a committed step whose files no longer match its manifest's sizes is hashed first and refused (exit 5)" {
	config "$WORK/cfg" job 0 1
	h=$(committed_step "$WORK/local" "$WORK/cfg" 10 f)
	echo tampered >>"$WORK/local/$h.data/sub/note.txt"
	run mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 10 --to "$WORK/bk" --name 2025-01-01_00-00
	assert_equal "$status" 5
	assert_output --partial "its digest is"
	[ -z "$(find "$WORK/bk" -name '*.meta' -o -name '*.data' 2>/dev/null)" ]
}

@test "a step of 48k files, its manifest longer than a peer accepts: commit warns; backed up, verified and restored whole" {
	[ -d /dev/shm ] && rm -rf "$WORK" && WORK=$(mktemp -d /dev/shm/mtc-backup.XXXXXX) # a RAM disk, as deployed
	config "$WORK/cfg" big 0 1
	python3 -c '
import os, sys
for a in range(48):
    d = "%s/1/d%02d" % (sys.argv[1], a)
    os.makedirs(d)
    for b in range(1000):
        open("%s/%s%04d" % (d, "x" * 246, b), "w").close()
open(sys.argv[1] + "/1/commit_success.txt", "w").close()' "$WORK/local"
	run mtc-replicate commit --dir "$WORK/local" --config "$WORK/cfg"
	assert_success
	assert_output --partial "is longer than the 16 MiB a peer accepts: it is backed up, but not replicated"
	h=$(cat "$WORK/local/big-s1-n0-w0.meta")
	[ "$(stat -c %s "$WORK/local/$h.manifest")" -gt $((16 << 20)) ]
	run mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 1 --to "$WORK/bk" --name 2026-01-01_00-00
	assert_success
	run mtc-lkg --backups "$WORK/bk" --job big --verify --json
	assert_success
	echo "$output" | fakegcs_json 'd["backups"][0]["state"] == "valid"' | grep -qx true
	run mtc-restore --from "$WORK/bk" --job big --out "$WORK/out"
	assert_success
	[ "$(find "$WORK/out" -type f | wc -l)" = 48001 ]
}

@test "run: a bucket that does not answer holds up nothing; steps go on being committed while the backup waits in its child" {
	printf '{"job-name":"job","framework":"orbax","node-rank":0,"nodes":1,"peer-ranks":[],"backup-interval-minutes":1}\n' >"$WORK/cfg1"
	mkdir "$WORK/local"
	# nothing listens on port 9: every request fails, and is retried for minutes
	STORAGE_EMULATOR_HOST=http://127.0.0.1:9 mtc-replicate run --dir "$WORK/local" --config "$WORK/cfg1" \
		--backup gs://bkt --quiet-time 0.2 --timeout 60 2>"$WORK/run.err" &
	RUN=$!
	for s in 1 2 3; do
		mkdir "$WORK/local/$s.tmp" && make_data "$WORK/local/$s.tmp/w" 1000 "s$s"
		mv "$WORK/local/$s.tmp" "$WORK/local/$s"
		for _ in $(seq 50); do [ -e "$WORK/local/job-s$s-n0-w0.meta" ] && break; sleep 0.1; done
		[ -e "$WORK/local/job-s$s-n0-w0.meta" ] || { kill "$RUN"; cat "$WORK/run.err"; false; }
	done
	kill "$RUN"
	wait "$RUN" || true
	run pgrep -f "mtc-backup --dir $WORK/local" # the loop ended its backup child too
	assert_failure
}

@test "run: a backup's summary is one log line of the daemon's, no JSON of mtc-backup's on stderr" {
	printf '{"job-name":"job","framework":"orbax","node-rank":0,"nodes":1,"peer-ranks":[],"backup-interval-minutes":1}\n' >"$WORK/cfg1"
	mkdir "$WORK/local"
	mtc-replicate run -v --dir "$WORK/local" --config "$WORK/cfg1" --backup "$WORK/bk" \
		--quiet-time 0.2 --timeout 90 >"$WORK/run.out" 2>"$WORK/run.err" &
	RUN=$!
	mkdir "$WORK/local/7.tmp"
	make_data "$WORK/local/7.tmp/w" 100000 s7
	mv "$WORK/local/7.tmp" "$WORK/local/7"
	# the backup starts on the loop's own clock: up to a minute
	for _ in $(seq 600); do grep -q "of step 7 done" "$WORK/run.err" && break; sleep 0.1; done
	grep -q "of step 7 done" "$WORK/run.err" || { kill "$RUN"; cat "$WORK/run.err"; false; }
	kill "$RUN"
	wait "$RUN" || true
	name=$(ls "$WORK/bk/job")
	run grep "of step 7 done" "$WORK/run.err"
	assert_output --regexp "info: backup '$name' of step 7 done: 1[0-9]{5} bytes, [1-9][0-9]* objects \(0 skipped\) in [0-9]+\.[0-9]{3} s$"
	run grep -c '^{' "$WORK/run.err" "$WORK/run.out"
	assert_output "$WORK/run.err:0
$WORK/run.out:0"
}

@test "a step this node has no .meta for is exit 4; bad options are exit 2" {
	config "$WORK/cfg" job 0 1
	run mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 6 --to "$WORK/bk"
	assert_equal "$status" 4
	assert_output "mtc-backup: cannot read the local dir '$WORK/local' (--dir): No such file or directory"
	mkdir -p "$WORK/local"
	run mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 6 --to "$WORK/bk"
	assert_equal "$status" 4
	assert_output "mtc-backup: no step 6 of job 'job' in '$WORK/local' (--step): 'job-s6-n0-w0.meta' is missing"
	run mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step x --to "$WORK/bk"
	assert_equal "$status" 2
	run mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 6 --to "$WORK/bk" --name yesterday
	assert_equal "$status" 2
	run mtc-backup --dir "$WORK/local" --step 6
	assert_equal "$status" 2
	run mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 6 --to "ftp://x"
	assert_equal "$status" 2
}

@test "a backup name holds one step: a second step into it is refused (exit 1), nothing stored is touched" {
	config "$WORK/cfg" job 0 1
	saved_step "$WORK/local" job 300 0 a >/dev/null
	saved_step "$WORK/local" job 100 0 b >/dev/null
	run mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 300 --to "$WORK/bk" --name 2025-06-30_14-30
	assert_success
	before=$(cd "$WORK/bk" && find . -printf '%p %s %T@\n' | sort)
	run --separate-stderr mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 100 --to "$WORK/bk" --name 2025-06-30_14-30
	assert_failure 1
	assert_output ""
	assert_equal "$stderr" "mtc-backup: cannot back up step 100 into '$WORK/bk/job/2025-06-30_14-30/': it holds step 300 ('job-s300-n0-w0.meta'), and a backup name is bound to one step; give another --name"
	assert_equal "$(cd "$WORK/bk" && find . -printf '%p %s %T@\n' | sort)" "$before"
	# the same step again is a no-op, not a refusal
	run mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 300 --to "$WORK/bk" --name 2025-06-30_14-30
	assert_success
}

@test "-v logs each phase: hashing, uploading, the .meta files; --json prints only the summary line" {
	config "$WORK/cfg" job 0 1
	saved_step "$WORK/local" job 5 0 a >/dev/null
	run --separate-stderr mtc-backup -v --json --dir "$WORK/local" --config "$WORK/cfg" --step 5 --to "$WORK/bk" --name 2025-06-30_14-30
	assert_success
	assert_output --regexp '^\{"location":"[^"]*","job":"job","backup":"2025-06-30_14-30","step":5,"rank":0,"bytes":300002,"objects":5,"skipped":0,"seconds":[0-9]+\.[0-9]{1,3},"mib-per-s":[0-9.]+\}$'
	[[ "$stderr" == *"info: hashing the data of step 5 (1 worker)"* ]]
	[[ "$stderr" == *"info: hashed '$WORK/local/"* ]]
	[[ "$stderr" == *"info: uploading 3 objects (300002 bytes) to '$WORK/bk/job/2025-06-30_14-30/'"* ]]
	[[ "$stderr" == *"info: uploading 1 .meta file last"* ]]
}

# stalled_backup STEP LOCATION NAME: mtc-backup held where the temporary of 'weights' is
# written whole (MTC_FAULT_STALL), in the background: BG_PID is its pid.
stalled_backup() {
	rm -f "$WORK/stalled"
	MTC_FAULT_STALL="dir-put=*/weights:$WORK/stalled" mtc-backup --dir "$WORK/local" \
		--config "$WORK/cfg" --step "$1" --to "$2" --name "$3" >/dev/null 2>&1 &
	BG_PID=$!
	wait_for "the stall" 30 grep -qs "^[0-9]*$" "$WORK/stalled"
}

temporaries() { find "$1" -name '.mtc-*.tmp' | sort; }

@test "kill -9 mid-upload to a directory: the re-run removes the temporary, --verify reports it, prune --delete removes it, a live writer's stays" {
	config "$WORK/cfg" job 0 1
	h=$(saved_step "$WORK/local" job 100 0 a 4194304)
	b="$WORK/bk/job/2025-06-30_14-30"
	stalled_backup 100 "$WORK/bk" 2025-06-30_14-30
	kill -9 "$BG_PID"
	wait "$BG_PID" || true
	left=$(temporaries "$b")
	[[ "$left" == "$b/$h.data/.mtc-"*".weights.tmp" ]]
	[ "$(stat -c %s "$left")" -eq 4194304 ]
	cp -a "$left" "$WORK/aside"
	run mtc-backup -v --dir "$WORK/local" --config "$WORK/cfg" --step 100 --to "$WORK/bk" --name 2025-06-30_14-30
	assert_success
	assert_output --partial "removed '$left' (4194304 bytes): a dead writer's temporary"
	run temporaries "$WORK/bk"
	assert_output ""

	# the dead writer's temporary in the whole backup: reported, not valid
	cp -a "$WORK/aside" "$left"
	run --separate-stderr mtc-restore --from "$WORK/bk" --job job --name 2025-06-30_14-30 --verify --json
	assert_success
	echo "$output" | fakegcs_json 'd["state"] == "leftovers" and d["leftovers"] == 1 and d["leftover-bytes"] == 4194304' | grep -qx true
	[[ "$stderr" == *"holds 1 temporary of dead writers (4194304 bytes), first '$left'"* ]]

	# prune --delete removes it; a live writer's temporary (a backup held mid-upload) stays
	stalled_backup 100 "$WORK/bk" 2025-07-01_00-00
	live=$(temporaries "$WORK/bk/job/2025-07-01_00-00")
	[ -n "$live" ]
	run mtc-prune "$WORK/bk" --job job --daily 2 --delete
	assert_success
	assert_file_not_exists "$left"
	assert_file_exists "$live"
	run mtc-restore --from "$WORK/bk" --job job --name 2025-06-30_14-30 --verify --json
	assert_success
	echo "$output" | fakegcs_json 'd["state"] == "valid" and d["leftovers"] == 0' | grep -qx true
	kill -9 "$BG_PID"
	wait "$BG_PID" || true
	run mtc-prune "$WORK/bk" --job job --daily 2 --delete
	assert_success
	run temporaries "$WORK/bk"
	assert_output ""
}

# gcs_parts PREFIX: the composite uploads' parts under gs://bkt/PREFIX, "name size" a line.
gcs_parts() {
	curl -fsS --max-time 10 "$FAKEGCS_URL/storage/v1/b/bkt/o?prefix=$1" | fakegcs_json \
		'"\n".join(o["name"] + " " + o["size"] for o in d.get("items", []) if ".mtc-parts/" in o["name"])'
}

# stalled_gs_backup NAME: mtc-backup to gs://bkt held before it composes 'weights' from its
# parts (MTC_FAULT_STALL), in the background: BG_PID is its pid.
stalled_gs_backup() {
	rm -f "$WORK/stalled"
	MTC_FAULT_STALL="gcs-compose=*/weights:$WORK/stalled" mtc-backup --dir "$WORK/local" \
		--config "$WORK/cfg" --step 100 --to gs://bkt --name "$1" --slice-threshold 1M \
		--slices 4 >/dev/null 2>&1 &
	BG_PID=$!
	wait_for "the stall" 30 grep -qs "^[0-9]*$" "$WORK/stalled"
}

@test "gs://: kill -9 mid-upload leaves parts that the re-run, --verify and prune --delete handle by their age" {
	fakegcs_start
	config "$WORK/cfg" job 0 1
	h=$(saved_step "$WORK/local" job 100 0 a 4194304)
	b=job/2025-06-30_14-30
	stalled_gs_backup 2025-06-30_14-30
	kill -9 "$BG_PID"
	wait "$BG_PID" || true
	run gcs_parts "$b/"
	assert_equal "${#lines[@]}" 4
	assert_line "$b/$h.data/weights.mtc-parts/00 1048576"
	parts=("${lines[@]}")

	# the parts are a day old (MTC_TMP_STALE_S): the re-run removes them before it uploads
	MTC_TMP_STALE_S=0 run mtc-backup -v --dir "$WORK/local" --config "$WORK/cfg" --step 100 \
		--to gs://bkt --name 2025-06-30_14-30 --slice-threshold 1M --slices 4
	assert_success
	assert_output --partial "removed 'gs://bkt/$b/$h.data/weights.mtc-parts/03' (1048576 bytes): a dead writer's temporary"
	run gcs_parts job/
	assert_output ""

	# the parts of a dead writer in the whole backup: reported, not valid; listings skip them
	head -c 1048576 /dev/urandom >"$WORK/part"
	for p in "${parts[@]}"; do
		curl -fsS --max-time 10 -o /dev/null --data-binary @"$WORK/part" \
			"$FAKEGCS_URL/upload/storage/v1/b/bkt/o?uploadType=media&name=${p%% *}"
	done
	MTC_TMP_STALE_S=0 run --separate-stderr mtc-restore --from gs://bkt --job job --name 2025-06-30_14-30 --verify --json
	assert_success
	echo "$output" | fakegcs_json 'd["state"] == "leftovers" and d["leftovers"] == 4 and d["leftover-bytes"] == 4194304' | grep -qx true
	[[ "$stderr" == *"holds 4 temporaries of dead writers (4194304 bytes), first 'gs://bkt/$b/$h.data/weights.mtc-parts/00'"* ]]
	# younger than the bound: they may be a live writer's
	run mtc-restore --from gs://bkt --job job --name 2025-06-30_14-30 --verify --json
	assert_success
	echo "$output" | fakegcs_json 'd["state"] == "valid" and d["leftovers"] == 0' | grep -qx true
	run mtc-restore --from gs://bkt --job job --name 2025-06-30_14-30 --rank 0 --layout hash --out "$WORK/out"
	assert_success
	diff -r "$WORK/local/$h.data" "$WORK/out/$h.data"

	# prune --delete: a live writer's parts (a backup held before it composes) and young ones stay
	stalled_gs_backup 2025-07-01_00-00
	run gcs_parts job/2025-07-01_00-00/
	assert_equal "${#lines[@]}" 4
	run mtc-prune gs://bkt --job job --daily 2 --delete
	assert_success
	[ "$(gcs_parts job/ | wc -l)" -eq 8 ]
	kill -9 "$BG_PID"
	wait "$BG_PID" || true
	MTC_TMP_STALE_S=0 run mtc-prune gs://bkt --job job --daily 2 --delete
	assert_success
	run gcs_parts job/
	assert_output ""
	MTC_TMP_STALE_S=0 run mtc-restore --from gs://bkt --job job --name 2025-06-30_14-30 --verify --json
	assert_success
	echo "$output" | fakegcs_json 'd["state"] == "valid"' | grep -qx true
}

@test "sizes and rates are binary units everywhere: the summaries give mib-per-s" {
	config "$WORK/cfg" job 0 1
	saved_step "$WORK/n0" job 5 0 seed 3145728 >/dev/null
	run --separate-stderr mtc-backup --dir "$WORK/n0" --config "$WORK/cfg" --step 5 --to "$WORK/bk" --name 2025-06-30_14-30 --json
	assert_success
	jq -e 'has("mib-per-s") and (has("mb-per-s") | not)' <<<"$output"
	# the rate is bytes / 2^20 / seconds (seconds rounded to the ms)
	jq -e '.seconds < 0.05 or ((.bytes / 1048576 / .seconds) / .["mib-per-s"] - 1 | fabs) < 0.1' <<<"$output"
	run --separate-stderr mtc-restore --from "$WORK/bk" --job job --out "$WORK/out" --json
	assert_success
	jq -e 'has("mib-per-s") and (has("mb-per-s") | not)' <<<"$output"
	run mtc-lkg --backups "$WORK/bk" --job job
	assert_line --regexp '^\* 2025-06-30_14-30 .* 3\.0 MiB  '
}

# interrupted_backup ERRFILE ARGS...: mtc-backup of step 100 held mid-upload of 'weights'
# (MTC_FAULT_STALL), then Ctrl-C (SIGINT); its exit status in int_status.
interrupted_backup() {
	local err=$1
	shift
	rm -f "$WORK/stalled"
	MTC_FAULT_STALL="dir-put=*/weights:$WORK/stalled" mtc-backup --dir "$WORK/local" \
		--config "$WORK/cfg" --step 100 "$@" >/dev/null 2>"$err" &
	BG_PID=$!
	wait_for "the stall" 30 grep -qs "^[0-9][0-9]*$" "$WORK/stalled"
	kill -INT "$BG_PID"
	int_status=0
	wait "$BG_PID" || int_status=$?
}

@test "Ctrl-C during a backup exits 130 saying interrupted; with --name, that the same command continues, and it does" {
	config "$WORK/cfg" job 0 1
	h=$(saved_step "$WORK/local" job 100 0 a 4194304)
	interrupted_backup "$WORK/err" --to "$WORK/bk" --name 2025-06-30_14-30
	assert_equal "$int_status" 130
	run cat "$WORK/err"
	assert_output "mtc-backup: interrupted; run the same command to continue"
	run --separate-stderr mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 100 --to "$WORK/bk" --name 2025-06-30_14-30
	assert_success
	run --separate-stderr mtc-restore --from "$WORK/bk" --job job --name 2025-06-30_14-30 --verify
	assert_success
	# without --name a second run would be another backup: no such promise
	interrupted_backup "$WORK/err2" --to "$WORK/bk2"
	assert_equal "$int_status" 130
	run cat "$WORK/err2"
	assert_output "mtc-backup: interrupted"
}

@test "Ctrl-C with --log-format json says interrupted in a JSON log record like every other line" {
	config "$WORK/cfg" job 0 1
	saved_step "$WORK/local" job 100 0 a 4194304 >/dev/null
	interrupted_backup "$WORK/err" --to "$WORK/bk" --name 2025-06-30_14-30 --log-format json
	assert_equal "$int_status" 130
	run cat "$WORK/err"
	assert_equal "${#lines[@]}" 1
	jq -e '(keys_unsorted == ["ts", "level", "prog", "msg"]) and .level == "error" and
		.prog == "mtc-backup" and .msg == "interrupted; run the same command to continue" and
		(.ts | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$"))' <<<"$output"
	# the time is now, as every other record's is
	now=$(date -u +%s)
	t=$(jq -r '.ts | sub("\\.[0-9]+Z$"; "Z") | fromdate' <<<"$output")
	[ $((now - t)) -ge 0 ] && [ $((now - t)) -lt 120 ]
}
