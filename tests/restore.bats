#!/usr/bin/env bats
# mtc-restore --from/--pin/--unpin and mtc-lkg --backups, on both backends.

load helpers
load fakegcs/fakegcs
load backup

setup() {
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/mtc-restore.XXXXXX")
	export MTC_GCS_RETRY_BASE_MS=20
	unset MTC_GCS_ENDPOINT GOOGLE_APPLICATION_CREDENTIALS MTC_GCS_TOKEN
	STORE="$MTC_BIN/../unit/store"
}

teardown() {
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

@test "restores a node's data into a dir, verified, the same bytes and .meta" {
	fakegcs_start
	for loc in $(both); do
		backup_of "$loc" 2025-06-30_14-30 100 2
		rm -rf "$WORK/out"
		run mtc-restore --from "$loc/job/2025-06-30_14-30" --rank 1 --out "$WORK/out"
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

@test "--archive - streams a tar, optionally zstd-compressed" {
	backup_of "$WORK/bk" 2025-06-30_14-30 100 1
	h=$(cat "$WORK/n0/job-s100-n0-w0.meta")
	mkdir "$WORK/x" "$WORK/z"
	mtc-restore --from "$WORK/bk/job/2025-06-30_14-30" --rank 0 --archive - | tar -x -C "$WORK/x"
	diff -r "$WORK/n0/$h.data" "$WORK/x/$h.data"
	assert_equal "$(cat "$WORK/x/job-s100-n0-w0.meta")" "$h"
	run mtc-restore --from "$WORK/bk/job/2025-06-30_14-30" --rank 0 --archive "$WORK/a.tar.zst" --compress zstd
	assert_success
	zstd -dc "$WORK/a.tar.zst" | tar -x -C "$WORK/z"
	diff -r "$WORK/n0/$h.data" "$WORK/z/$h.data"
}

@test "a flipped byte in a stored backup is exit 5, with what differed, and nothing in DIR" {
	backup_of "$WORK/bk" 2025-06-30_14-30 100 1
	h=$(cat "$WORK/n0/job-s100-n0-w0.meta")
	f="$WORK/bk/job/2025-06-30_14-30/$h.data/weights"
	printf '\x01' | dd of="$f" bs=1 seek=1000 conv=notrunc 2>/dev/null
	run mtc-restore --from "$WORK/bk/job/2025-06-30_14-30" --rank 0 --out "$WORK/out"
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
	run mtc-restore --from "$WORK/bk/job/2025-06-30_14-30" --rank 0 --out "$WORK/out"
	assert_equal "$status" 5
	assert_output --partial "'x'"
}

@test "gs://: a download corrupted in transit is fetched again; a corrupt stored object is exit 5" {
	fakegcs_start
	backup_of gs://bkt 2025-06-30_14-30 100 1
	fakegcs_fault '{"kind": "download", "action": "flip", "offset": 10, "object": "*weights"}'
	run mtc-restore --from gs://bkt/job/2025-06-30_14-30 --rank 0 --out "$WORK/out"
	assert_success
	assert_output --partial "crc32c mismatch"
	fakegcs_fault '{"kind": "download", "action": "flip", "offset": 10, "object": "*weights", "times": -1}'
	run mtc-restore --from gs://bkt/job/2025-06-30_14-30 --rank 0 --out "$WORK/out2"
	assert_equal "$status" 5
	run ls -A "$WORK/out2"
	assert_output ""
}

@test "a rank or a backup that is not there is exit 4; bad options are exit 2" {
	backup_of "$WORK/bk" 2025-06-30_14-30 100 1
	run mtc-restore --from "$WORK/bk/job/2025-06-30_14-30" --rank 3 --out "$WORK/out"
	assert_equal "$status" 4
	assert_output --partial "rank 3"
	run mtc-restore --from "$WORK/bk/job/2025-01-01_00-00" --rank 0 --out "$WORK/out"
	assert_equal "$status" 4
	run mtc-restore --from "$WORK/bk/job/2025-06-30_14-30" --out "$WORK/out"
	assert_equal "$status" 2
	run mtc-restore --from "$WORK/bk/job/2025-06-30_14-30" --rank 0
	assert_equal "$status" 2
	run mtc-restore --from "$WORK/bk/job/2025-06-30_14-30" --rank 0 --out x --archive y
	assert_equal "$status" 2
	run mtc-restore --from "$WORK/bk/job/2025-06-30_14-30" --rank 0 --archive - --compress xz
	assert_equal "$status" 2
	run mtc-restore --pin "$WORK/bk/job"
	assert_equal "$status" 2
	run mtc-restore --unpin "$WORK/bk/job" --force
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
		run mtc-lkg --backups "$loc/job" --json
		assert_success
		echo "$output" | fakegcs_json '[b["name"] for b in d["backups"]] == ["2025-06-30_16-30", "2025-06-30_15-30", "2025-06-30_14-30"]' | grep -qx true
		echo "$output" | fakegcs_json 'd["newest_valid"] == "2025-06-30_15-30" and d["backups"][0]["state"] == "incomplete" and d["backups"][1]["step"] == 200 and d["backups"][1]["nodes"] == 2 and d["backups"][1]["bytes"] > 600000 and d["restore_version"] is None' | grep -qx true
		run mtc-lkg --backups "$loc/job"
		assert_success
		assert_line --regexp '^\* 2025-06-30_15-30 +valid +200 +2 '
		assert_line --regexp '^  2025-06-30_16-30 +incomplete +300 '
		# pin: a valid backup only, unless --force
		run mtc-restore --pin "$loc/job" 2025-06-30_16-30
		assert_equal "$status" 5
		run mtc-restore --pin "$loc/job" 2025-06-30_17-00
		assert_equal "$status" 4
		run mtc-restore --pin "$loc/job" 2025-06-30_14-30
		assert_success
		run mtc-lkg --backups "$loc/job" --json
		echo "$output" | fakegcs_json 'd["restore_version"] == "2025-06-30_14-30" and d["backups"][2]["pinned"]' | grep -qx true
		run mtc-lkg --backups "$loc/job"
		assert_line "restore.version: 2025-06-30_14-30"
		run mtc-restore --pin "$loc/job" 2025-06-30_16-30 --force
		assert_success
		run "$STORE" "$loc" cat job/restore.version
		assert_output 2025-06-30_16-30
		run mtc-restore --unpin "$loc/job"
		assert_success
		run mtc-restore --unpin "$loc/job"
		assert_success
		run "$STORE" "$loc" cat job/restore.version
		assert_equal "$status" 4
		rm -rf "$WORK"/n* "$WORK"/cfg*
	done
}

@test "mtc-lkg --backups with no valid backup is exit 4" {
	mkdir -p "$WORK/bk/job/2025-06-30_14-30"
	run mtc-lkg --backups "$WORK/bk/job"
	assert_equal "$status" 4
	run mtc-lkg
	assert_equal "$status" 2
}
