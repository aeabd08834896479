#!/usr/bin/env bats
# Big objects on gs://: sliced downloads and parallel (composite) uploads, with
# the thresholds lowered so that a few MiB are big.

load helpers
load fakegcs/fakegcs
load backup

setup() {
	gcs_setup store-big
	export TEST_SLICE_THRESHOLD=1M TEST_SLICES=4
	export CLOUDSDK_CONFIG="$WORK/no-gcloud"
}

teardown() {
	[ -z "${GETTER:-}" ] || kill -9 "$GETTER" 2>/dev/null || true
	fakegcs_stop
	rm -rf "$WORK"
}

# raw_list PREFIX: every object under gs://bkt/PREFIX, parts too (listings skip them), "name size".
raw_list() {
	curl -fsS --max-time 10 "$FAKEGCS_URL/storage/v1/b/bkt/o?prefix=$1" |
		fakegcs_json '"\n".join(o["name"] + " " + o["size"] for o in d.get("items", []))'
}

@test "gs://: a big object comes as parallel ranged GETs, byte for byte, each byte once" {
	make_data "$WORK/f" $((5 << 20)) sliced
	fakegcs_start
	TEST_SLICE_THRESHOLD=1G "$STORE" gs://bkt put f "$WORK/f"
	fakegcs_ctl DELETE stats >/dev/null
	run "$STORE" gs://bkt get f "$WORK/back"
	assert_success
	cmp "$WORK/f" "$WORK/back"
	assert_equal "$(fakegcs_stat 'requests.GET download')" 5 # the opening range and 4 slices
	assert_equal "$(fakegcs_stat bytes_sent)" $((5 << 20))
	# below the threshold: one stream after the opening range
	fakegcs_ctl DELETE stats >/dev/null
	TEST_SLICE_THRESHOLD=6M run "$STORE" gs://bkt get f "$WORK/back2"
	assert_success
	cmp "$WORK/f" "$WORK/back2"
	assert_equal "$(fakegcs_stat 'requests.GET download')" 2
}

@test "gs://: a flipped byte in one slice fails the combined CRC32C; fetched again, then exit 5" {
	flipped_download $((3 << 20)) 2000000 5
}

@test "gs://: a killed sliced fetch continues with the slices it lacks, from the same generation" {
	make_data "$WORK/f" $((8 << 20)) resume
	fakegcs_start --conn-rate 1M
	TEST_SLICE_THRESHOLD=1G "$STORE" gs://bkt put p/f "$WORK/f"
	fakegcs_ctl DELETE stats >/dev/null
	mkdir "$WORK/stage"
	MTC_FAULT_STALL="slice-saved:$WORK/stalled" "$STORE" gs://bkt fetch p/ "$WORK/stage" >"$WORK/out1" 2>&1 &
	GETTER=$!
	# kill -9 once a slice has recorded its progress (the getter stalls there, once)
	for ((i = 0; i < 600; i++)); do
		[ -s "$WORK/stalled" ] && break
		sleep 0.1
	done
	[ -s "$WORK/stalled" ]
	kill -9 "$GETTER"
	wait "$GETTER" 2>/dev/null || true
	GETTER=
	assert_file_exists "$WORK/stage/.slices/d/f"
	assert_file_not_exists "$WORK/stage/d/f"
	sent=$(fakegcs_stat bytes_sent)
	fakegcs_ctl DELETE stats >/dev/null
	fakegcs_ctl POST config '{"conn_rate": 0}' >/dev/null || true
	run "$STORE" gs://bkt fetch p/ "$WORK/stage"
	assert_success
	cmp "$WORK/f" "$WORK/stage/d/f"
	already=$(echo "$output" | sed -n 's/^already //p')
	[ "$already" -gt 0 ]
	second=$(fakegcs_stat bytes_sent)
	echo "first run sent $sent, second $second, already $already" >&3
	# the second run fetches only what the first did not record as whole
	[ "$second" -le $(((8 << 20) - already)) ]
	[ "$second" -lt $((8 << 20)) ]
	assert_file_not_exists "$WORK/stage/.slices/d/f"
}

@test "gs://: a big file goes up as parts composed create-only; no part is left, and the object has a crc32c but no md5" {
	make_data "$WORK/f" $((5 << 20)) up
	fakegcs_start
	run "$STORE" gs://bkt put p/f "$WORK/f"
	assert_success
	assert_equal "$(fakegcs_stat 'requests.POST compose')" 1
	run raw_list ""
	assert_output "p/f 5242880"
	TEST_SLICE_THRESHOLD=1G "$STORE" gs://bkt get p/f "$WORK/back"
	cmp "$WORK/f" "$WORK/back"
	run curl -fsS "$FAKEGCS_URL/storage/v1/b/bkt/o/p%2Ff"
	assert_success
	[[ "$output" == *'"crc32c"'* && "$output" != *md5Hash* ]]
	# create-only: other bytes under the same name are refused, and leave no part behind
	make_data "$WORK/g" $((5 << 20)) other
	run "$STORE" gs://bkt put p/f "$WORK/g"
	assert_equal "$status" 6
	run raw_list ""
	assert_output "p/f 5242880"
}

@test "gs://: a part that fails leaves neither the object nor any part" {
	make_data "$WORK/f" $((5 << 20)) fail
	fakegcs_start
	fakegcs_fault '{"kind": "metadata", "object": "p/f.mtc-parts/02", "action": "status", "status": 403}'
	run "$STORE" gs://bkt put p/f "$WORK/f"
	assert_failure
	assert_output --partial "mtc-parts/02"
	run raw_list ""
	assert_output ""
}

@test "gs://: a killed composite upload reuses the parts it finished" {
	make_data "$WORK/f" $((8 << 20)) killed
	fakegcs_start
	fakegcs_fault '{"kind": "metadata", "object": "p/f.mtc-parts/03", "action": "delay", "seconds": 20}'
	"$STORE" gs://bkt put p/f "$WORK/f" &
	GETTER=$!
	for ((i = 0; i < 100; i++)); do
		[ "$(fakegcs_stat 'requests.POST upload-multipart')" -ge 3 ] && break
		sleep 0.05
	done
	sleep 0.3
	kill -9 "$GETTER"
	wait "$GETTER" 2>/dev/null || true
	GETTER=
	fakegcs_ctl DELETE faults >/dev/null
	run raw_list p/f.mtc-parts/
	assert_equal "${#lines[@]}" 3
	run "$STORE" gs://bkt list p/
	assert_output "" # listings skip parts
	fakegcs_ctl DELETE stats >/dev/null
	run "$STORE" gs://bkt put p/f "$WORK/f"
	assert_success
	assert_equal "$(fakegcs_stat 'requests.POST upload-multipart')" 1 # only the part that was missing
	run raw_list ""
	assert_output "p/f 8388608"
	TEST_SLICE_THRESHOLD=1G "$STORE" gs://bkt get p/f "$WORK/back"
	cmp "$WORK/f" "$WORK/back"
}

@test "mtc-backup and mtc-restore --from move a step's big file as parts and slices" {
	fakegcs_start
	config "$WORK/cfg" job 0 1
	h=$(saved_step "$WORK/n0" job 3 0 big $((6 << 20)))
	run mtc-backup --dir "$WORK/n0" --config "$WORK/cfg" --step 3 --to gs://bkt --name 2025-01-01_00-00 \
		--slice-threshold 2M --slices 4
	assert_success
	assert_equal "$(fakegcs_stat 'requests.POST compose')" 1
	run raw_list job/
	refute_output --partial mtc-parts
	fakegcs_ctl DELETE stats >/dev/null
	run mtc-restore --from gs://bkt --job job --name 2025-01-01_00-00 --layout hash --out "$WORK/out" \
		--slice-threshold 2MiB --slices 4
	assert_success
	diff -r "$WORK/n0/$h.data" "$WORK/out/$h.data"
	[ "$(fakegcs_stat 'requests.GET download')" -ge 5 ]
	run mtc-restore --from gs://bkt --job job --name 2025-01-01_00-00 --out "$WORK/out2" --slice-threshold 2X
	assert_equal "$status" 2
	assert_output --partial "--slice-threshold takes a size"
	# a node's restore at its start, from the backup alone, slices the same way
	fakegcs_ctl DELETE stats >/dev/null
	mkdir -p "$WORK/n1"
	run mtc-restore --dir "$WORK/n1" --config "$WORK/cfg" --backup gs://bkt --standalone \
		--slice-threshold 2M --slices 4
	assert_success
	diff -r "$WORK/n0/$h.data" "$WORK/n1/$h.data"
	# the small objects (the .metas and the backup's shape.json) and the big file's opening
	# range, then its other 3 slices (one stream: 1)
	assert_equal "$(fakegcs_stat 'requests.GET download')" 10
}
