#!/usr/bin/env bats
# mtc-restore --from/--pin/--unpin and mtc-lkg --backups, on both backends.

load helpers
load fakegcs/fakegcs
load backup

setup() {
	gcs_setup restore
}

teardown() {
	[ -z "${BG_PID:-}" ] || kill -9 "$BG_PID" 2>/dev/null || true
	[ -z "${SMALL:-}" ] || umount "$SMALL" 2>/dev/null || true
	fakegcs_stop
	rm -rf "$WORK"
}

# backup_of LOCATION NAME STEP NODES: every node's part of a step, as mtc-backup leaves it.
backup_of() {
	local loc=$1 name=$2 step=$3 nodes=$4 r
	for ((r = 0; r < nodes; r++)); do
		config "$WORK/cfg$r" job "$r" "$nodes"
		saved_step "$WORK/n$r" job "$step" "$r" "seed$r-$step" >/dev/null
		mtc-backup --dir "$WORK/n$r" --config "$WORK/cfg$r" --step "$step" --to "$loc" --name "$name" >/dev/null
	done
}

both() { echo "$WORK/bk"; echo gs://bkt/root; }

# gs_backup_of_step [BYTES]: node 0's step 100 (a tree with a weights file of BYTES)
# backed up to gs://bkt as $B on a fresh fake GCS server; sets h, its hash.
gs_backup_of_step() {
	fakegcs_start
	config "$WORK/cfg0" job 0 1
	h=$(saved_step "$WORK/n0" job 100 0 seed "$@")
	mtc-backup --dir "$WORK/n0" --config "$WORK/cfg0" --step 100 --to gs://bkt --name "$B" >/dev/null
}

@test "restores a node's data into a dir, verified, the same bytes and .meta" {
	fakegcs_start
	for loc in $(both); do
		backup_of "$loc" 2025-06-30_14-30 100 2
		rm -rf "$WORK/out"
		run mtc-restore --from "$loc" --job job --name "2025-06-30_14-30" --rank 1 --layout hash --out "$WORK/out" --json
		assert_success
		echo "$output" | fakegcs_json 'd["step"] == 100 and d["rank"] == 1 and d["bytes"] > 300000' | grep -qx true
		h=$(cat "$WORK/n1/job-s100-n1-w0.meta")
		assert_equal "$(cat "$WORK/out/job-s100-n1-w0.meta")" "$h"
		diff -r "$WORK/n1/$h.data" "$WORK/out/$h.data"
		assert_file_not_exists "$WORK/out/job-s100-n0-w0.meta"
		run ls -A "$WORK/out"
		refute_output --partial ".mtc-restore"
		rm -rf "$WORK"/n* "$WORK"/cfg*
	done
}

@test "both restores publish one way: the data's manifest kept beside it, a flipped byte named by its file" {
	backup_of "$WORK/bk" 2025-06-30_14-30 100 1
	h=$(cat "$WORK/n0/job-s100-n0-w0.meta")
	stored="$WORK/bk/job/2025-06-30_14-30/$h.manifest"
	run mtc-restore --from "$WORK/bk" --job job --name 2025-06-30_14-30 --rank 0 --layout hash --out "$WORK/out"
	assert_success
	cmp "$stored" "$WORK/out/$h.manifest"
	mkdir -p "$WORK/local"
	run mtc-restore --dir "$WORK/local" --config "$WORK/cfg0" --backup "$WORK/bk" --standalone
	assert_success
	cmp "$stored" "$WORK/local/$h.manifest"
	diff -r "$WORK/n0/$h.data" "$WORK/local/$h.data"
	flip_byte "$WORK/bk/job/2025-06-30_14-30/$h.data/weights" 1000
	rm -rf "$WORK/local" && mkdir "$WORK/local"
	run -5 mtc-restore --dir "$WORK/local" --config "$WORK/cfg0" --backup "$WORK/bk" --standalone
	assert_output --partial "'weights' has"
	run ls -A "$WORK/local"
	refute_output --partial "$h"
}

@test "--archive - streams a tar, optionally zstd-compressed" {
	backup_of "$WORK/bk" 2025-06-30_14-30 100 1
	h=$(cat "$WORK/n0/job-s100-n0-w0.meta")
	mkdir "$WORK/x" "$WORK/z"
	mtc-restore --from "$WORK/bk" --job job --name "2025-06-30_14-30" --rank 0 --layout hash --archive - | tar -x -C "$WORK/x"
	diff -r "$WORK/n0/$h.data" "$WORK/x/$h.data"
	assert_equal "$(cat "$WORK/x/job-s100-n0-w0.meta")" "$h"
	run mtc-restore --from "$WORK/bk" --job job --name "2025-06-30_14-30" --rank 0 --layout hash --archive "$WORK/a.tar" --compress zstd
	assert_success
	zstd -dc "$WORK/a.tar" | tar -x -C "$WORK/z"
	diff -r "$WORK/n0/$h.data" "$WORK/z/$h.data"
}

@test "--archive honours --layout step: tar -x gives <step>, with several workers w<K>/<step>" {
	backup_of "$WORK/bk" 2025-06-30_14-30 100 1
	h=$(cat "$WORK/n0/job-s100-n0-w0.meta")
	mkdir "$WORK/x"
	# the man page's example: the default layout is step
	mtc-restore --from "$WORK/bk" --job job --archive - | tar -x -C "$WORK/x"
	assert_equal "$(ls -A "$WORK/x")" 100
	diff -r "$WORK/n0/$h.data" "$WORK/x/100"
	# a second worker of the node, with other data
	saved_step "$WORK/w1" job 200 0 other >/dev/null
	h1=$(cat "$WORK/w1/job-s200-n0-w0.meta")
	saved_step "$WORK/n0" job 200 0 seed-200 >/dev/null
	h0=$(cat "$WORK/n0/job-s200-n0-w0.meta")
	mv "$WORK/w1/$h1.data" "$WORK/n0/"
	printf %s "$h1" >"$WORK/n0/job-s200-n0-w1.meta"
	sed -i 's/"nodes": 1,/"nodes": 1, "workers-per-node": 2,/' "$WORK/cfg0"
	mtc-backup --dir "$WORK/n0" --config "$WORK/cfg0" --step 200 --to "$WORK/bk" --name 2025-06-30_15-00 >/dev/null
	mkdir "$WORK/y"
	mtc-restore --from "$WORK/bk" --job job --name 2025-06-30_15-00 --archive "$WORK/w.tar"
	tar -x -C "$WORK/y" -f "$WORK/w.tar"
	assert_equal "$(cd "$WORK/y" && find . -maxdepth 2 | sort | tr '\n' ' ')" ". ./w0 ./w0/200 ./w1 ./w1/200 "
	diff -r "$WORK/n0/$h0.data" "$WORK/y/w0/200"
	diff -r "$WORK/n0/$h1.data" "$WORK/y/w1/200"
	# the same as --out gives
	mtc-restore --from "$WORK/bk" --job job --name 2025-06-30_15-00 --out "$WORK/o"
	diff -r "$WORK/o" "$WORK/y"
}

@test "--archive takes the compression from the file's suffix, as tar -a does" {
	backup_of "$WORK/bk" 2025-06-30_14-30 100 1
	h=$(cat "$WORK/n0/job-s100-n0-w0.meta")
	for f in a.tar.zst a.tzst a.tar.gz a.tgz a.tar.xz a.tar.bz2 a.tar; do
		run mtc-restore --from "$WORK/bk" --job job --archive "$WORK/$f"
		assert_success
		rm -rf "$WORK/x" && mkdir "$WORK/x"
		tar -x -a -C "$WORK/x" -f "$WORK/$f"
		diff -r "$WORK/n0/$h.data" "$WORK/x/100"
	done
	# what file(1) sees: each compressed as named, the .tar plain
	assert_equal "$(head -c 4 "$WORK/a.tar.zst" | od -An -tx1 | tr -d ' ')" 28b52ffd
	assert_equal "$(head -c 2 "$WORK/a.tgz" | od -An -tx1 | tr -d ' ')" 1f8b
	assert_equal "$(head -c 6 "$WORK/a.tar.xz" | od -An -tx1 | tr -d ' ')" fd377a585a00
	assert_equal "$(head -c 3 "$WORK/a.tar.bz2")" BZh
	assert_equal "$(dd if="$WORK/a.tar" bs=1 skip=257 count=5 2>/dev/null)" ustar
	# --compress zstd agrees with .zst and adds zstd to a name with no compression; a suffix
	# naming another compression is a contradiction, refused before any byte moves
	run mtc-restore --from "$WORK/bk" --job job --archive "$WORK/b.tar.zst" --compress zstd
	assert_success
	run mtc-restore --from "$WORK/bk" --job job --archive "$WORK/c.tar.gz" --compress zstd
	assert_failure 2
	assert_output --partial "--compress zstd contradicts the suffix of '$WORK/c.tar.gz' (gzip)"
	[ ! -e "$WORK/c.tar.gz" ]
}

@test "--archive on a full disk: one line, and no partial archive (nor temporary) left" {
	config "$WORK/cfg0" job 0 1
	saved_step "$WORK/n0" job 100 0 seed 3000000 >/dev/null
	mtc-backup --dir "$WORK/n0" --config "$WORK/cfg0" --step 100 --to "$WORK/bk" --name "$B" >/dev/null
	SMALL=$WORK/small
	mkdir "$SMALL"
	mount -t tmpfs -o size=1m tmpfs "$SMALL" || skip "cannot mount a tmpfs here"
	run mtc-restore --from "$WORK/bk" --job job --archive "$SMALL/a.tar"
	assert_failure 1
	assert_output "mtc-restore: cannot write archive '$SMALL/a.tar': No space left on device"
	assert_equal "$(ls -A "$SMALL")" ""
	# an archive already there is left as it was
	echo old >"$SMALL/a.tar"
	run mtc-restore --from "$WORK/bk" --job job --archive "$SMALL/a.tar"
	assert_failure 1
	assert_equal "$(ls -A "$SMALL")" a.tar
	assert_equal "$(cat "$SMALL/a.tar")" old
	# on a pipe there is nothing to remove: the same line, and the reader sees a cut stream
	run bash -c "mtc-restore --from '$WORK/bk' --job job --archive - 2>&1 >'$SMALL/p.tar'"
	assert_failure 1
	assert_output "mtc-restore: cannot write archive '-': No space left on device"
}

@test "an archive writer killed midway leaves no archive; the next run removes its temporary" {
	backup_of "$WORK/bk" 2025-06-30_14-30 100 1
	h=$(cat "$WORK/n0/job-s100-n0-w0.meta")
	mkdir "$WORK/a"
	MTC_FAULT_KILL=archive run mtc-restore --from "$WORK/bk" --job job --archive "$WORK/a/x.tar"
	assert_equal "$status" 137
	run find "$WORK/a" -name '.mtc-*.x.tar.tmp' -size +0
	[ -n "$output" ]
	[ ! -e "$WORK/a/x.tar" ]
	run mtc-restore --from "$WORK/bk" --job job --archive "$WORK/a/x.tar"
	assert_success
	assert_equal "$(ls -A "$WORK/a")" x.tar
	mkdir "$WORK/x"
	tar -x -C "$WORK/x" -f "$WORK/a/x.tar"
	diff -r "$WORK/n0/$h.data" "$WORK/x/100"
}

@test "a flipped byte in a stored backup is exit 5, with what differed, and nothing in DIR" {
	backup_of "$WORK/bk" 2025-06-30_14-30 100 1
	h=$(cat "$WORK/n0/job-s100-n0-w0.meta")
	f="$WORK/bk/job/2025-06-30_14-30/$h.data/weights"
	flip_byte "$f" 1000
	run mtc-restore --from "$WORK/bk" --job job --name "2025-06-30_14-30" --rank 0 --layout hash --out "$WORK/out"
	assert_equal "$status" 5
	assert_output --partial "integrity failure"
	assert_output --partial "weights"
	run ls -A "$WORK/out"
	assert_output ""
}

@test "two files of the same size swapped in a backup are caught by the manifest" {
	config "$WORK/cfg" job 0 1
	mkdir -p "$WORK/n0/5"
	echo aaaa >"$WORK/n0/5/x"
	echo bbbb >"$WORK/n0/5/y"
	h=$(mtc-replicate digest "$WORK/n0/5" | awk '{print $1}')
	mv "$WORK/n0/5" "$WORK/n0/$h.data"
	printf %s "$h" >"$WORK/n0/job-s5-n0-w0.meta"
	mtc-backup --dir "$WORK/n0" --config "$WORK/cfg" --step 5 --to "$WORK/bk" --name 2025-06-30_14-30
	d="$WORK/bk/job/2025-06-30_14-30/$h.data"
	mv "$d/x" "$d/t" && mv "$d/y" "$d/x" && mv "$d/t" "$d/y"
	# the digest does not hash names: only the manifest sees this
	assert_equal "$(mtc-replicate digest "$d" | awk '{print $1}')" "$h"
	run mtc-restore --from "$WORK/bk" --job job --name "2025-06-30_14-30" --rank 0 --layout hash --out "$WORK/out"
	assert_equal "$status" 5
	assert_output --partial "'x'"
}

@test "gs://: a download corrupted in transit is fetched again; a corrupt stored object is exit 5" {
	fakegcs_start
	backup_of gs://bkt 2025-06-30_14-30 100 1
	fakegcs_fault '{"kind": "download", "action": "flip", "offset": 10, "object": "*weights"}'
	run mtc-restore --from gs://bkt --job job --name 2025-06-30_14-30 --rank 0 --layout hash --out "$WORK/out"
	assert_success
	assert_output --partial "crc32c mismatch"
	fakegcs_fault '{"kind": "download", "action": "flip", "offset": 10, "object": "*weights", "times": -1}'
	run mtc-restore --from gs://bkt --job job --name 2025-06-30_14-30 --rank 0 --layout hash --out "$WORK/out2"
	assert_equal "$status" 5
	run ls -A "$WORK/out2"
	assert_output ""
}

@test "a rank or a backup that is not there is exit 4; bad options are exit 2" {
	backup_of "$WORK/bk" 2025-06-30_14-30 100 1
	run mtc-restore --from "$WORK/bk" --job job --name "2025-06-30_14-30" --rank 3 --layout hash --out "$WORK/out"
	assert_equal "$status" 4
	assert_output --partial "rank 3"
	run mtc-restore --from "$WORK/bk" --job job --name "2025-01-01_00-00" --rank 0 --layout hash --out "$WORK/out"
	assert_equal "$status" 4
	run mtc-restore --from "$WORK/bk" --job job --name "2025-06-30_14-30" --rank 0
	assert_equal "$status" 2
	run mtc-restore --from "$WORK/bk" --job job --name "2025-06-30_14-30" --out "$WORK/out" --layout raw
	assert_equal "$status" 2
	run mtc-restore --from "$WORK/bk" --job job --name "2025-06-30_14-30" --rank 0 --layout hash --out x --archive y
	assert_equal "$status" 2
	run mtc-restore --from "$WORK/bk" --job job --name "2025-06-30_14-30" --rank 0 --archive - --compress xz
	assert_equal "$status" 2
	run mtc-restore --pin "$WORK/bk" --job job
	assert_equal "$status" 2
	run mtc-restore --unpin "$WORK/bk" --job job --force
	assert_equal "$status" 2
}

@test "mtc-lkg --backups lists newest first with validity, marks the newest valid and restore.version" {
	fakegcs_start
	for loc in $(both); do
		backup_of "$loc" 2025-06-30_14-30 100 2
		backup_of "$loc" 2025-06-30_15-30 200 2
		backup_of "$loc" 2025-06-30_16-30 300 2
		# the newest loses node 1's data: incomplete
		"$STORE" "$loc" rmprefix "job/2025-06-30_16-30/$(cat "$WORK/n1/job-s300-n1-w0.meta").data/"
		run mtc-lkg --backups "$loc" --job job --json
		assert_success
		echo "$output" | fakegcs_json '[b["backup"] for b in d["backups"]] == ["2025-06-30_16-30", "2025-06-30_15-30", "2025-06-30_14-30"]' | grep -qx true
		echo "$output" | fakegcs_json 'd["newest-valid"] == "2025-06-30_15-30" and d["backups"][0]["state"] == "incomplete" and d["backups"][1]["step"] == 200 and d["backups"][1]["nodes"] == 2 and d["backups"][1]["bytes"] > 600000 and d["restore-version"] is None' | grep -qx true
		run mtc-lkg --backups "$loc" --job job
		assert_success
		assert_line --regexp '^\* 2025-06-30_15-30 +listed +200 +2 '
		assert_line --regexp '^  2025-06-30_16-30 +incomplete +300 '
		# pin: a valid backup only, unless --force
		run mtc-restore --pin "$loc" --job job 2025-06-30_16-30
		assert_equal "$status" 5
		run mtc-restore --pin "$loc" --job job 2025-06-30_17-00
		assert_equal "$status" 4
		run mtc-restore --pin "$loc" --job job 2025-06-30_14-30
		assert_success
		run mtc-lkg --backups "$loc" --job job --json
		echo "$output" | fakegcs_json 'd["restore-version"] == "2025-06-30_14-30" and d["backups"][2]["pinned"]' | grep -qx true
		run mtc-lkg --backups "$loc" --job job
		assert_line "restore.version: 2025-06-30_14-30"
		run mtc-restore --pin "$loc" --job job 2025-06-30_16-30 --force
		assert_success
		run "$STORE" "$loc" cat job/restore.version
		assert_output 2025-06-30_16-30
		run mtc-restore --unpin "$loc" --job job
		assert_success
		run mtc-restore --unpin "$loc" --job job
		assert_success
		run "$STORE" "$loc" cat job/restore.version
		assert_equal "$status" 4
		rm -rf "$WORK"/n* "$WORK"/cfg*
	done
}

@test "a pin of a missing or invalid backup warns when --force makes it, and mtc-lkg warns while it stands" {
	backup_of "$WORK/bk" 2025-06-30_14-30 100 1
	run --separate-stderr mtc-restore --pin "$WORK/bk" --job job 2025-06-30_17-00 --force
	assert_success
	[[ $stderr == *"mtc-restore: warning: pinned '$WORK/bk/job/2025-06-30_17-00', which does not exist: every restore from '$WORK/bk/job' fails until it is pinned to a valid backup or unpinned (mtc-restore --unpin)"* ]]
	run --separate-stderr mtc-lkg --backups "$WORK/bk" --job job
	assert_success
	assert_line "restore.version: 2025-06-30_17-00"
	[[ $stderr == *"mtc-lkg: warning: restore.version names backup '2025-06-30_17-00', which does not exist"* ]]
	# a backup that lost its data: invalid, with the reason
	mkdir -p "$WORK/bk/job/2025-06-30_16-00"
	printf %s "$(cat "$WORK/n0/job-s100-n0-w0.meta")" >"$WORK/bk/job/2025-06-30_16-00/job-s100-n0-w0.meta"
	run --separate-stderr mtc-restore --pin "$WORK/bk" --job job 2025-06-30_16-00 --force
	assert_success
	[[ $stderr == *"warning: pinned '$WORK/bk/job/2025-06-30_16-00', which is not valid: "* ]]
	run --separate-stderr mtc-lkg --backups "$WORK/bk" --job job
	[[ $stderr == *"restore.version names backup '2025-06-30_16-00', which is not valid: "* ]]
	# a valid pin: no warning
	run --separate-stderr mtc-restore --pin "$WORK/bk" --job job 2025-06-30_14-30
	assert_success
	[ -z "$stderr" ]
	run --separate-stderr mtc-lkg --backups "$WORK/bk" --job job
	assert_success
	[ -z "$stderr" ]
}

@test "a bit-flipped newest backup is listed, not valid, until verified; its failing restore names the next one to use" {
	backup_of "$WORK/bk" 2025-06-30_14-30 100 1
	backup_of "$WORK/bk" 2025-06-30_15-30 200 1
	h=$(cat "$WORK/n0"/job-s200-n0-w0.meta)
	f=$(cd "$WORK/bk/job/2025-06-30_15-30/$h.data" && find . -type f -size +100k | head -1)
	flip_byte "$WORK/bk/job/2025-06-30_15-30/$h.data/$f" 1000
	run mtc-lkg --backups "$WORK/bk" --job job
	assert_success
	refute_output --regexp '(^|'$'\n'')\* [^ ]+ +valid '
	assert_line --regexp '^\* 2025-06-30_15-30 +listed +200 '
	assert_line --regexp '^  2025-06-30_14-30 +listed +100 '
	assert_line --partial "listed: every .meta there, its data at the sizes its manifest gives; not re-hashed"
	run mtc-lkg --backups "$WORK/bk" --job job --verify
	assert_success
	assert_line --regexp '^  2025-06-30_15-30 +damaged +200 '
	assert_line --regexp '^\* 2025-06-30_14-30 +verified +100 '
	run mtc-restore --from "$WORK/bk" --job job --out "$WORK/out dir"
	assert_failure 5
	assert_output --partial "mtc-restore: backup 2025-06-30_15-30 is damaged (integrity failure: "
	assert_output --partial "); the newest valid one is 2025-06-30_14-30: mtc-restore --from $WORK/bk --job job --out '$WORK/out dir' --name 2025-06-30_14-30"
	run mtc-restore --from "$WORK/bk" --job job --out "$WORK/out dir" --name 2025-06-30_14-30
	assert_success
	# --name given: replaced in the command suggested
	rm -rf "$WORK/out dir"
	run mtc-restore --from "$WORK/bk" --job job --name=2025-06-30_15-30 --out "$WORK/o2"
	assert_failure 5
	assert_output --partial ": mtc-restore --from $WORK/bk --job job --out $WORK/o2 --name 2025-06-30_14-30"
}

@test "mtc-lkg --backups with no valid backup is exit 4" {
	mkdir -p "$WORK/bk/job/2025-06-30_14-30"
	run mtc-lkg --backups "$WORK/bk" --job job
	assert_equal "$status" 4
	assert_output --partial "no valid backup among 1"
	run mtc-lkg
	assert_equal "$status" 2
}

# --- resuming after a kill, and the progress line

B=2025-06-30_14-30
staging_of() { echo "$1/.mtc-restore-$B-n0.tmp"; }

# wide_step DIR STEP N BYTES: a step of N files of BYTES each, hashed, with its .meta; prints the hash.
wide_step() {
	local dir=$1 step=$2 n=$3 bytes=$4 i hash
	mkdir -p "$dir/$step.tmp"
	for ((i = 0; i < n; i++)); do make_data "$dir/$step.tmp/f$i" "$bytes" "wide$i"; done
	hash=$(mtc-replicate digest "$dir/$step.tmp" | awk '{print $1}')
	mv "$dir/$step.tmp" "$dir/$hash.data"
	printf %s "$hash" >"$dir/job-s$step-n0-w0.meta"
	echo "$hash"
}

size_of() { stat -c %s "$1" 2>/dev/null || echo 0; }
fired_at_least() { [ "$(fakegcs_stat faults_fired)" -ge "$1" ]; }

# killed_midway: a gs:// restore of rank 0 into $WORK/out that holds 'weights' in part (two
# answers cut after 1 MiB, then a stalled one) and 'sub/note.txt' whole, killed with -9.
killed_midway() {
	fakegcs_fault '[{"kind": "download", "object": "*weights", "action": "drop-response", "after_bytes": 1048576, "times": 2},
		{"kind": "download", "object": "*weights", "action": "delay", "seconds": 30, "times": -1}]'
	mtc-restore --from "gs://bkt" --job job --name "$B" --rank 0 --layout hash --out "$WORK/out" 2>"$WORK/killed.err" &
	BG_PID=$!
	S=$(staging_of "$WORK/out")
	PART="$S/.partial/$h.data/weights"
	wait_for "the fault fired" 30 fired_at_least 3
	wait_for "the file written" 30 test -s "$S/$h.data/sub/note.txt"
	kill -9 "$BG_PID"
	wait "$BG_PID" || true
	fakegcs_ctl DELETE faults >/dev/null
	fakegcs_ctl DELETE stats >/dev/null
	P=$(size_of "$PART")
	[ "$P" -gt 0 ] && [ "$P" -lt 4194304 ]
}

@test "gs://: a killed restore continues: the partial file from its size, whole files kept, only the rest sent again" {
	gs_backup_of_step 4194304
	killed_midway
	assert_file_not_exists "$WORK/out/job-s100-n0-w0.meta"
	assert_file_not_exists "$WORK/out/$h.data"
	run mtc-restore --from "gs://bkt" --job job --name "$B" --rank 0 --layout hash --out "$WORK/out" --json
	assert_success
	kept=$(echo "${lines[-1]}" | fakegcs_json 'd["kept"]')
	assert_equal "$kept" $((P + $(size_of "$WORK/n0/$h.data/sub/note.txt")))
	sent=$(fakegcs_stat bytes_sent)
	[ "$sent" -ge $((4194304 - P)) ] && [ "$sent" -lt $((4194304 - P + 8192)) ]
	diff -r "$WORK/n0/$h.data" "$WORK/out/$h.data"
	assert_equal "$(cat "$WORK/out/job-s100-n0-w0.meta")" "$h"
	run ls -A "$WORK/out"
	refute_output --partial ".mtc-restore"

	# an object whose generation changed is not kept, even with the same size
	rm -rf "$WORK/out"
	killed_midway
	key="job/$B/$h.data/sub/note.txt"
	"$STORE" gs://bkt rm "$key" && "$STORE" gs://bkt put "$key" "$WORK/n0/$h.data/sub/note.txt"
	run mtc-restore --from "gs://bkt" --job job --name "$B" --rank 0 --layout hash --out "$WORK/out" --json
	assert_success
	assert_equal "$(echo "${lines[-1]}" | fakegcs_json 'd["kept"]')" "$P"
	diff -r "$WORK/n0/$h.data" "$WORK/out/$h.data"
}

@test "gs://: bytes changed in what a killed restore left are caught: in the partial by crc32c (fetched again), in a whole file by the digest (exit 5)" {
	gs_backup_of_step 4194304
	killed_midway
	flip_byte "$PART" 1000
	run mtc-restore --from "gs://bkt" --job job --name "$B" --rank 0 --layout hash --out "$WORK/out"
	assert_success
	assert_output --partial "crc32c mismatch"
	diff -r "$WORK/n0/$h.data" "$WORK/out/$h.data"

	rm -rf "$WORK/out"
	killed_midway
	printf 'X' | dd of="$S/$h.data/sub/note.txt" bs=1 seek=0 conv=notrunc 2>/dev/null
	run mtc-restore --from "gs://bkt" --job job --name "$B" --rank 0 --layout hash --out "$WORK/out"
	assert_equal "$status" 5
	assert_output --partial "integrity failure"
	assert_output --partial "sub/note.txt"
	run ls -A "$WORK/out"
	assert_output ""
}

@test "directory backend: a partial file left in the staging dir is continued; a wrong byte in it is exit 5 naming the file, and the staging dir goes" {
	config "$WORK/cfg0" job 0 1
	h=$(saved_step "$WORK/n0" job 100 0 seed 1048576)
	mtc-backup --dir "$WORK/n0" --config "$WORK/cfg0" --step 100 --to "$WORK/bk" --name "$B" >/dev/null
	# what a run killed after 300000 bytes of 'weights' leaves (same layout, generation 0 here)
	S=$(staging_of "$WORK/out")
	mkdir -p "$S/.partial/$h.data"
	printf '{"%s.data/weights": 0}' "$h" >"$S/.mtc-generations"
	head -c 300000 "$WORK/n0/$h.data/weights" >"$S/.partial/$h.data/weights"
	run mtc-restore --from "$WORK/bk" --job job --name "$B" --rank 0 --layout hash --out "$WORK/out" --json
	assert_success
	assert_equal "$(echo "$output" | fakegcs_json 'd["kept"]')" 300000
	diff -r "$WORK/n0/$h.data" "$WORK/out/$h.data"
	run ls -A "$WORK/out"
	refute_output --partial ".mtc-restore"

	rm -rf "$WORK/out"
	mkdir -p "$S/.partial/$h.data"
	printf '{"%s.data/weights": 0}' "$h" >"$S/.mtc-generations"
	head -c 300000 "$WORK/n0/$h.data/weights" >"$S/.partial/$h.data/weights"
	flip_byte "$S/.partial/$h.data/weights" 1000
	run mtc-restore --from "$WORK/bk" --job job --name "$B" --rank 0 --layout hash --out "$WORK/out"
	assert_equal "$status" 5
	assert_output --partial "'weights'"
	run ls -A "$WORK/out"
	assert_output ""
}

@test "kill -9 at a random point, then the same command completes the restore, on both backends" {
	fakegcs_start
	h=$(wide_step "$WORK/n0" 7 12 262144)
	config "$WORK/cfg0" job 0 1
	for loc in "$WORK/bk" gs://bkt; do
		mtc-backup --dir "$WORK/n0" --config "$WORK/cfg0" --step 7 --to "$loc" --name "$B" >/dev/null
		rm -rf "$WORK/out"
		if [ "$loc" = gs://bkt ]; then
			fakegcs_fault '{"kind": "download", "action": "delay", "seconds": 0.15, "times": -1}'
			pause=$(printf '0.%03d' $((RANDOM % 900 + 100)))
		else
			pause=$(printf '0.%03d' $((RANDOM % 30)))
		fi
		mtc-restore --from "$loc" --job job --name "$B" --rank 0 --layout hash --out "$WORK/out" --parallel 2 >/dev/null 2>&1 &
		BG_PID=$!
		sleep "$pause"
		kill -9 "$BG_PID" 2>/dev/null || true
		wait "$BG_PID" || true
		fakegcs_ctl DELETE faults >/dev/null
		fakegcs_ctl DELETE stats >/dev/null
		run mtc-restore --from "$loc" --job job --name "$B" --rank 0 --layout hash --out "$WORK/out" --json
		assert_success
		kept=$(echo "${lines[-1]}" | fakegcs_json 'd["kept"]')
		if [ "$loc" = gs://bkt ]; then
			[ "$(fakegcs_stat bytes_sent)" -lt $((12 * 262144 - kept + 16384)) ]
		fi
		diff -r "$WORK/n0/$h.data" "$WORK/out/$h.data"
		assert_equal "$(cat "$WORK/out/job-s7-n0-w0.meta")" "$h"
		run ls -A "$WORK/out"
		refute_output --partial ".mtc-restore"
	done
}

@test "a second restore of the same backup and rank into the same DIR is refused while the first runs" {
	gs_backup_of_step
	fakegcs_fault '{"kind": "download", "object": "*weights", "action": "delay", "seconds": 2, "times": 1}'
	mtc-restore --from "gs://bkt" --job job --name "$B" --rank 0 --layout hash --out "$WORK/out" >/dev/null 2>&1 &
	BG_PID=$!
	wait_for "the fault fired" 30 fired_at_least 1
	run mtc-restore --from "gs://bkt" --job job --name "$B" --rank 0 --layout hash --out "$WORK/out"
	assert_equal "$status" 1
	assert_output --partial "another mtc-restore"
	wait "$BG_PID"
	diff -r "$WORK/n0/$h.data" "$WORK/out/$h.data"
}

@test "a progress line on a terminal for a transfer longer than a second; none with --no-progress, for a short one, or off a terminal" {
	gs_backup_of_step 2097152
	restore_on_tty() {
		rm -rf "$WORK/out"
		script -qec "mtc-restore --from gs://bkt --job job --name $B --rank 0 --layout hash --out '$WORK/out' $*" /dev/null
	}
	fakegcs_fault '{"kind": "download", "object": "*weights", "action": "delay", "seconds": 1.3}'
	run restore_on_tty
	assert_success
	assert_output --regexp $'\rmtc-restore: [0-9.]+ MiB / 2\\.0 MiB \\([0-9]+%\\)  [0-9.]+ MiB/s  ETA [0-9:-]+'
	assert_output --partial '2.0 MiB / 2.0 MiB (100%)'
	fakegcs_fault '{"kind": "download", "object": "*weights", "action": "delay", "seconds": 1.3}'
	run restore_on_tty --no-progress
	assert_success
	refute_output --partial 'ETA'
	run restore_on_tty
	assert_success
	refute_output --partial 'ETA'
	fakegcs_fault '{"kind": "download", "object": "*weights", "action": "delay", "seconds": 1.3}'
	rm -rf "$WORK/out"
	mtc-restore --from "gs://bkt" --job job --name "$B" --rank 0 --layout hash --out "$WORK/out" 2>"$WORK/err" >"$WORK/stdout"
	[ ! -s "$WORK/err" ]
	run grep -c $'\r' "$WORK/stdout"
	assert_output 0
}

sending() { [ "$(fakegcs_stat bytes_sent)" -gt 100000 ]; }

@test "the verify phase after a download has its progress line on a terminal, and none off it" {
	gs_backup_of_step 2097152
	MTC_FAULT_PAUSE="fetch-verify:$WORK/paused" script -qec "mtc-restore --from gs://bkt --job job --name $B --rank 0 --layout hash --out '$WORK/out'; exit \$?" /dev/null >"$WORK/tty" 2>&1 &
	BG_PID=$! # not exec'd: script(1) loses a direct child that stops
	wait_for "the run paused" 30 paused_at "$WORK/paused"
	sleep 1.1 # a phase is shown once it has lasted a second: let one pass while it is stopped
	kill -CONT "$(cat "$WORK/paused")"
	wait "$BG_PID"
	run cat "$WORK/tty"
	assert_output --regexp $'mtc-restore: verifying 2\\.0 MiB / 2\\.0 MiB \\(100%\\)  [0-9.]+ [KMG]?i?B/s  ETA [0-9:-]+'
	rm -rf "$WORK/out" "$WORK/paused"
	MTC_FAULT_PAUSE="fetch-verify:$WORK/paused" mtc-restore --from gs://bkt --job job --name "$B" --rank 0 --layout hash --out "$WORK/out" >/dev/null 2>"$WORK/err" &
	BG_PID=$!
	wait_for "the run paused" 30 paused_at "$WORK/paused"
	sleep 1.1
	kill -CONT "$(cat "$WORK/paused")"
	wait "$BG_PID"
	run cat "$WORK/err"
	refute_output --partial verifying
}

@test "Ctrl-C during a restore ends the progress line, says how to continue, exits 130, and the same command continues" {
	gs_backup_of_step 4194304
	fakegcs_ctl POST config '{"conn_rate": 262144}' >/dev/null
	script -qec "echo \$\$ >'$WORK/pid'; exec mtc-restore --from gs://bkt --job job --name $B --rank 0 --layout hash --out '$WORK/out'" /dev/null >"$WORK/tty" 2>&1 &
	BG_PID=$!
	wait_for "the progress line" 30 grep -q ETA "$WORK/tty"
	kill -INT "$(cat "$WORK/pid")"
	status=0
	wait "$BG_PID" || status=$?
	assert_equal "$status" 130
	run cat "$WORK/tty"
	assert_output --regexp $'ETA [0-9:-]+\e\\[K\r?\nmtc-restore: interrupted; run the same command to continue\r?$'
	fakegcs_ctl POST config '{"conn_rate": 0}' >/dev/null
	run mtc-restore --from gs://bkt --job job --name "$B" --rank 0 --layout hash --out "$WORK/out" --json
	assert_success
	[ "$(echo "${lines[-1]}" | fakegcs_json 'd["kept"]')" -gt 0 ]
	diff -r "$WORK/n0/$h.data" "$WORK/out/$h.data"
}

@test "Ctrl-C during a restore that cannot continue (a verify) just says interrupted" {
	gs_backup_of_step 4194304
	fakegcs_ctl POST config '{"conn_rate": 262144}' >/dev/null
	mtc-restore --from gs://bkt --job job --name "$B" --verify 2>"$WORK/err" >/dev/null &
	BG_PID=$!
	wait_for "the upload under way" 30 sending
	kill -INT "$BG_PID"
	status=0
	wait "$BG_PID" || status=$?
	assert_equal "$status" 130
	run cat "$WORK/err"
	assert_output "mtc-restore: interrupted"
}

# ref_orbax_backup: what the reference replicator leaves for a one-node Orbax
# job: step 5 saved by the real Orbax, uploaded flat under its logical name
# with no manifest beside it, in $WORK/bk/job/$B; sets h.
ref_orbax_backup() {
	need_frameworks
	B=2025-07-01_00-00
	MTC_PY=$MTC_PY mtc-trainer --dir "$WORK/save" --real-orbax --resume 4 --steps 1 --save-every 0 >/dev/null 2>&1
	h=$(mtc-replicate digest --framework orbax "$WORK/save/5" | cut -d' ' -f1)
	[[ $h == D* ]]
	mkdir -p "$WORK/bk/job/$B"
	cp -r "$WORK/save/5" "$WORK/bk/job/$B/$h.data"
	printf %s "$h" >"$WORK/bk/job/$B/job-s5-n0-w0.meta"
}

# The largest file of the store's data, where the values are.
largest_value_file() { find "$1" -path '*/d/*' -type f -printf '%s %p\n' | sort -n | tail -1 | cut -d' ' -f2; }

@test "a reference backup of an Orbax job (logical name, no manifest) restores, verified by its logical digest" {
	ref_orbax_backup
	run mtc-restore --from "$WORK/bk" --job job --name "$B" --rank 0 --layout hash --out "$WORK/out"
	assert_success
	diff -r "$WORK/save/5" "$WORK/out/$h.data"
	config "$WORK/cfg" job 0 1
	mkdir -p "$WORK/local"
	run mtc-restore --dir "$WORK/local" --config "$WORK/cfg" --backup "$WORK/bk" --standalone
	assert_success
	assert_equal "$(readlink "$WORK/local/job-s5-n0-w0.restore")" "$h.data"
	diff -r "$WORK/save/5" "$WORK/local/$h.data"
}

@test "a reference backup of an Orbax job with a value byte flipped is refused by both restores (exit 5)" {
	ref_orbax_backup
	flip_byte "$(largest_value_file "$WORK/bk/job/$B/$h.data")" 100
	run -5 mtc-restore --from "$WORK/bk" --job job --name "$B" --rank 0 --layout hash --out "$WORK/out"
	assert_output --partial "logical digest"
	run ls -A "$WORK/out"
	assert_output ""
	config "$WORK/cfg" job 0 1
	mkdir -p "$WORK/local"
	run -5 mtc-restore --dir "$WORK/local" --config "$WORK/cfg" --backup "$WORK/bk" --standalone
	run ls "$WORK/local"
	refute_output --partial ".restore"
	refute_output --partial "$h.data"
}

# --- one location rule, a workstation restore, intact or not

@test "a location is the bucket root: a job root, a missing job or location is explained" {
	backup_of "$WORK/bk" 2025-06-30_14-30 100 1
	mkdir -p "$WORK/bk/job/notes" "$WORK/bk/other"
	run mtc-lkg --backups "$WORK/bk/job"
	assert_equal "$status" 2
	assert_output --partial "it is the backup root of job 'job'; give the bucket root and the job: $WORK/bk --job job"
	run mtc-lkg --backups "$WORK/bk"
	assert_equal "$status" 2
	assert_output --partial "which job? give --job NAME or --config (jobs at '$WORK/bk': job, other)"
	run mtc-lkg --backups "$WORK/bk" --job nojob
	assert_equal "$status" 4
	assert_output --partial "no backups of job 'nojob' at '$WORK/bk' (jobs there: job, other)"
	run mtc-restore --unpin "$WORK/nonexistent" --job job
	assert_equal "$status" 4
	assert_output --partial "no such location"
	run mtc-restore --from "$WORK/bk/job" --job job --out "$WORK/out"
	assert_equal "$status" 2
	run mtc-lkg --backups "$WORK/bk" --job job
	assert_success
	assert_output --partial "1 name that is not backups, ignored: notes"
	run mtc-lkg --backups "$WORK/bk" --config "$WORK/cfg0" -q
	assert_success
}

@test "a workstation restore: the newest valid backup, rank 0 of a one-node job, as DIR/<step>" {
	backup_of "$WORK/bk" 2025-06-30_14-30 100 1
	backup_of "$WORK/bk" 2025-06-30_15-30 200 1
	run mtc-restore --from "$WORK/bk" --job job --out "$WORK/out" --json
	assert_success
	assert_equal "$(jq -r '[.step, .path] | @tsv' <<<"${lines[-1]}")" "200	$WORK/out/200"
	h=$(cat "$WORK/n0"/job-s200-n0-w0.meta)
	diff -r "$WORK/n0/$h.data" "$WORK/out/200"
	[ "$(ls -A "$WORK/out")" = 200 ]
	run mtc-restore --from "$WORK/bk" --job job --out "$WORK/out"
	assert_success
	assert_output --partial "'$WORK/out/200' is already there and holds step 200 of backup 2025-06-30_15-30: verified, kept"
	diff -r "$WORK/n0/$h.data" "$WORK/out/200"
	[ "$(ls -A "$WORK/out")" = 200 ]
	backup_of "$WORK/bk2" 2025-06-30_14-30 100 2
	run mtc-restore --from "$WORK/bk2" --job job --out "$WORK/out2"
	assert_equal "$status" 2
	assert_output --partial "holds 2 nodes: say which with --rank R"
	run script -qec "mtc-restore --from '$WORK/bk' --job job --archive -" /dev/null
	assert_output --partial "would write a tar stream to a terminal"
}

@test "a cut data file: lkg says damaged by size, restore --verify finds the file, prune keeps the intact one" {
	fakegcs_start
	for loc in $(both); do
		backup_of "$loc" 2025-06-30_14-30 100 1
		backup_of "$loc" 2025-06-30_15-30 200 1
		run mtc-restore --from "$loc" --job job --verify --json
		assert_success
		jq -e '.state == "valid" and .step == 200 and .files >= 1 and .bytes > 0' <<<"$output"
	done
	h=$(cat "$WORK/n0"/job-s200-n0-w0.meta)
	f=$(cd "$WORK/bk/job/2025-06-30_15-30/$h.data" && find . -type f -size +100k | head -1)
	truncate -s 303 "$WORK/bk/job/2025-06-30_15-30/$h.data/$f"
	run mtc-lkg --backups "$WORK/bk" --job job --json
	assert_success
	jq -e '.["newest-valid"] == "2025-06-30_14-30" and .backups[0].state == "damaged"' <<<"$output"
	jq -r '.backups[0].reason' <<<"$output" | grep -q "holds 303 bytes, its manifest says"
	run mtc-restore --from "$WORK/bk" --job job --name 2025-06-30_15-30 --verify
	assert_failure 5
	assert_output --partial "is not valid"
	# a flipped byte keeps the size: only the deep check sees it
	backup_of "$WORK/bk3" 2025-06-30_15-30 200 1
	flip_byte "$WORK/bk3/job/2025-06-30_15-30/$h.data/$f" 1000
	run mtc-lkg --backups "$WORK/bk3" --job job
	assert_success
	run mtc-lkg --backups "$WORK/bk3" --job job --verify
	assert_failure 4
	assert_output --partial "${f#./}"
	run mtc-restore --from "$WORK/bk3" --job job --verify
	assert_failure 5
	assert_output --partial "not what its manifest says"
}

@test "-v tells each phase of a workstation restore and of a listing" {
	backup_of "$WORK/bk" 2025-06-30_14-30 100 1
	run mtc-restore --from "$WORK/bk" --job job --out "$WORK/out" -v
	assert_success
	for phase in "the newest valid backup is 2025-06-30_14-30" "rank 0, step 100, 1 worker" \
		"fetching" "verifying" "writing $WORK/out"; do
		assert_output --partial "$phase"
	done
	run mtc-lkg --backups "$WORK/bk" --job job -v
	assert_output --partial "checking backup 2025-06-30_14-30"
}

# The bytes fake GCS sent since the last call (a .meta is 65 bytes; the data, megabytes).
sent_since() {
	local n
	n=$(fakegcs_stat bytes_sent)
	fakegcs_ctl DELETE stats >/dev/null
	echo "$n"
}

@test "a restore into a DIR that holds the step already verifies and keeps it: exit 0, no data downloaded; a re-run after completion too" {
	gs_backup_of_step 4194304
	for layout in step hash; do
		rm -rf "$WORK/out"
		run mtc-restore --from gs://bkt --job job --name "$B" --layout $layout --out "$WORK/out"
		assert_success
		[ "$(sent_since)" -gt 4194304 ]
		run mtc-restore --from gs://bkt --job job --name "$B" --layout $layout --out "$WORK/out" --json
		assert_success
		[ "$(sent_since)" -lt 4096 ]
		[ "$(echo "${lines[-1]}" | fakegcs_json 'd["bytes"]')" = 0 ]
		run ls -A "$WORK/out"
		refute_output --partial ".mtc-restore"
	done
	diff -r "$WORK/n0/$h.data" "$WORK/out/$h.data"
	assert_equal "$(cat "$WORK/out/job-s100-n0-w0.meta")" "$h"

	# a restore killed after it published, before it cleaned up, is finished by the same command
	rm -rf "$WORK/out"
	mtc-restore --from gs://bkt --job job --name "$B" --out "$WORK/out" >/dev/null 2>&1
	mkdir -p "$(staging_of "$WORK/out")/$h.data"
	sent_since >/dev/null
	run --separate-stderr mtc-restore --from gs://bkt --job job --name "$B" --out "$WORK/out"
	assert_success
	assert_equal "$stderr" "mtc-restore: warning: '$WORK/out/100' is already there and holds step 100 of backup $B: verified, kept"
	[ "$(sent_since)" -lt 4096 ]
	[ "$(ls -A "$WORK/out")" = 100 ]
	diff -r "$WORK/n0/$h.data" "$WORK/out/100"
}

@test "a restore into a DIR that holds something else there is refused before any byte moves, leaving nothing" {
	gs_backup_of_step 4194304
	mkdir -p "$WORK/out/100"
	echo other > "$WORK/out/100/weights"
	sent_since >/dev/null
	run mtc-restore --from gs://bkt --job job --name "$B" --out "$WORK/out"
	assert_failure 1
	assert_output --partial "mtc-restore: '$WORK/out/100' is already there and is not step 100 of backup $B ("
	assert_output --partial "): restore into another --out, or remove it first"
	[ "$(sent_since)" -lt 4096 ]
	[ "$(ls -A "$WORK/out")" = 100 ] && [ "$(ls -A "$WORK/out/100")" = weights ]
	assert_equal "$(cat "$WORK/out/100/weights")" other

	# --layout hash: a .meta of the same name that names other data
	rm -rf "$WORK/out" && mkdir "$WORK/out"
	printf D%064d 0 > "$WORK/out/job-s100-n0-w0.meta"
	run mtc-restore --from gs://bkt --job job --name "$B" --layout hash --out "$WORK/out"
	assert_failure 1
	assert_output --partial "'$WORK/out/job-s100-n0-w0.meta' is already there and names 'D$(printf %064d 0)', not '$h'"
	[ "$(sent_since)" -lt 4096 ]
	[ "$(ls -A "$WORK/out")" = job-s100-n0-w0.meta ]

	# --layout hash: a <hash>.data that is not what its name says
	rm -rf "$WORK/out" && mkdir -p "$WORK/out/$h.data"
	run mtc-restore --from gs://bkt --job job --name "$B" --layout hash --out "$WORK/out"
	assert_failure 1
	assert_output --partial "'$WORK/out/$h.data' is already there and is not what its name says"
	[ "$(sent_since)" -lt 4096 ]
	[ "$(ls -A "$WORK/out")" = "$h.data" ]
}

@test "a restore that cannot fit is refused before any byte moves, both restores, leaving nothing" {
	gs_backup_of_step 8388608
	SMALL=$WORK/small
	mkdir "$SMALL"
	mount -t tmpfs -o size=4m tmpfs "$SMALL" || skip "cannot mount a tmpfs here"
	sent_since >/dev/null
	run mtc-restore --from gs://bkt --job job --name "$B" --out "$SMALL/out"
	assert_failure 1
	assert_output --regexp "mtc-restore: not enough space in '$SMALL/out': the restore needs [0-9]+ more bytes, the filesystem has [0-9]+ free; make room there or restore elsewhere"
	[ "$(sent_since)" -lt 4096 ]
	[ -z "$(ls -A "$SMALL/out")" ]

	mkdir "$SMALL/local"
	run mtc-restore --dir "$SMALL/local" --config "$WORK/cfg0" --backup gs://bkt --standalone
	assert_failure 1
	assert_output --partial "not enough space in '$SMALL/local'"
	[ "$(sent_since)" -lt 4096 ]
	run ls -A "$SMALL/local"
	refute_output --partial ".mtc-restore"
	refute_output --partial ".data"
}

@test "kill -9 of a restore mid-download, and while it writes a .meta: the re-run completes and leaves no temporary" {
	config "$WORK/cfg0" job 0 1
	h=$(wide_step "$WORK/n0" 7 6 262144)
	mtc-backup --dir "$WORK/n0" --config "$WORK/cfg0" --step 7 --to "$WORK/bk" --name "$B" >/dev/null
	for point in 'dir-get=*/f3' 'write-atomic=*.meta'; do
		rm -rf "$WORK/out" "$WORK/stalled"
		MTC_FAULT_STALL="$point:$WORK/stalled" mtc-restore --from "$WORK/bk" --job job --name "$B" \
			--rank 0 --layout hash --out "$WORK/out" >/dev/null 2>&1 &
		BG_PID=$!
		wait_for "the stall" 30 grep -qs '^[0-9]*$' "$WORK/stalled"
		run find "$WORK/out" -name '.mtc-*.tmp'
		[ -n "$output" ]
		kill -9 "$BG_PID"
		wait "$BG_PID" || true
		run mtc-restore --from "$WORK/bk" --job job --name "$B" --rank 0 --layout hash --out "$WORK/out"
		assert_success
		diff -r "$WORK/n0/$h.data" "$WORK/out/$h.data"
		assert_equal "$(cat "$WORK/out/job-s7-n0-w0.meta")" "$h"
		run find "$WORK/out" -name '.mtc-*' -o -name '*.tmp'
		assert_output ""
	done
}

@test "kill -9 of a restore staging under \$TMPDIR: the next run that makes one removes it" {
	config "$WORK/cfg0" job 0 1
	h=$(wide_step "$WORK/n0" 7 6 262144)
	mtc-backup --dir "$WORK/n0" --config "$WORK/cfg0" --step 7 --to "$WORK/bk" --name "$B" >/dev/null
	export TMPDIR=$WORK/tmp
	mkdir "$TMPDIR"
	MTC_FAULT_STALL="dir-get=*/f3:$WORK/stalled" mtc-restore --from "$WORK/bk" --job job --name "$B" \
		--rank 0 --archive "$WORK/a.tar" >/dev/null 2>&1 &
	BG_PID=$!
	wait_for "the stall" 30 grep -qs '^[0-9]*$' "$WORK/stalled"
	run find "$TMPDIR" -maxdepth 1 -name '.mtc-*.restore.tmp'
	[ -n "$output" ]
	kill -9 "$BG_PID"
	wait "$BG_PID" || true
	BG_PID=
	run mtc-restore --from "$WORK/bk" --job job --name "$B" --rank 0 --archive "$WORK/a.tar"
	assert_success
	run ls -A "$TMPDIR"
	assert_output ""
}
