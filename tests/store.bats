#!/usr/bin/env bats
# The storage layer (lib/store*.c) on both backends, through the unit client
# build/<b>/unit/store, with the fake GCS server's faults.

load helpers
load fakegcs/fakegcs

setup() {
	gcs_setup store
	BIG=$(mktemp -d /dev/shm/mtc-store-big.XXXXXX)
	export CLOUDSDK_CONFIG="$WORK/no-gcloud" # a gcloud login of the one running the tests is not used
}

teardown() {
	fakegcs_stop
	rm -rf "$WORK" "$BIG"
}

@test "the store suite passes on a directory, a file:// URL and gs://" {
	run "$STORE" "$WORK/root" selftest
	assert_success
	refute_output --partial "not ok"
	run "$STORE" "file://$WORK/root2" selftest
	assert_success
	refute_output --partial "not ok"
	fakegcs_start --page-size 3
	run "$STORE" gs://bkt/some/prefix selftest
	assert_success
	refute_output --partial "not ok"
}

@test "directory backend: no temporary is ever listed, and a create never replaces" {
	mkdir -p "$WORK/root/a"
	: >"$WORK/root/a/.mtc-1-2.x.tmp"
	echo one >"$WORK/one"
	run "$STORE" "$WORK/root" put a/x "$WORK/one"
	assert_success
	run "$STORE" "$WORK/root" list a/
	assert_output "a/x 4"
	echo two >"$WORK/two"
	run "$STORE" "$WORK/root" put a/x "$WORK/two"
	assert_equal "$status" 6
	assert_equal "$(cat "$WORK/root/a/x")" one
}

@test "gs://: a 2 GiB upload survives three dropped connections without resending what the server holds" {
	size=$((2 << 30))
	sanitized && size=$((256 << 20))
	make_data "$BIG/big" "$size" big
	mkdir "$BIG/server"
	fakegcs_start --data-dir "$BIG/server"
	fakegcs_fault '{"kind": "upload-chunk", "action": "drop-request", "after_bytes": 5000000, "skip": 1, "times": 3}'
	TEST_SLICES=1 run "$STORE" gs://bkt/p put big "$BIG/big"
	assert_success
	[ "$(fakegcs_stat faults_fired)" -eq 3 ]
	[ "$(fakegcs_stat upload_bytes_duplicate)" -eq 0 ]
	[ "$(fakegcs_stat upload_bytes_stored)" -eq "$size" ]
	received=$(fakegcs_stat bytes_received)
	# at most what a drop loses below a 256 KiB boundary, three times
	[ $((received - size)) -lt $((3 * 262144 + 4096)) ]
	[ "$(fakegcs_stat 'requests.PUT upload-status')" -ge 3 ]
	[ "$(fakegcs_stat 'requests.POST upload-init')" -eq 1 ]
	run "$STORE" gs://bkt/p get big "$BIG/back"
	assert_success
	cmp "$BIG/big" "$BIG/back"
}

@test "gs://: a chunk the server stores only in part is resent from where the server stopped" {
	make_data "$WORK/f" $((9 << 20)) short
	fakegcs_start
	fakegcs_fault '{"kind": "upload-chunk", "action": "short-308", "keep_bytes": 262144, "times": 2}'
	MTC_GCS_CHUNK_KIB=1024 run "$STORE" gs://bkt put f "$WORK/f"
	assert_success
	"$STORE" gs://bkt get f "$WORK/back"
	cmp "$WORK/f" "$WORK/back"
	[ "$(fakegcs_stat faults_fired)" -eq 2 ]
}

@test "gs://: 503 and 429 bursts are retried; a deadline ends the retries with exit 3" {
	echo data >"$WORK/f"
	fakegcs_start
	fakegcs_fault '[{"kind": "upload-multipart", "action": "status", "status": 503, "times": 3},
	                {"kind": "download", "action": "status", "status": 429, "times": 3},
	                {"kind": "list", "action": "status", "status": 500, "times": 2}]'
	run "$STORE" gs://bkt put f "$WORK/f"
	assert_success
	run "$STORE" gs://bkt cat f
	assert_output data
	run "$STORE" gs://bkt list ""
	assert_output "f 5"
	[ "$(fakegcs_stat faults_fired)" -eq 8 ]
	fakegcs_fault '{"kind": "metadata", "action": "status", "status": 503, "times": -1}'
	TEST_DEADLINE=1 run "$STORE" gs://bkt stat f
	assert_equal "$status" 3
	assert_output --partial "gave up after"
	assert_output --partial "HTTP 503"
}

@test "gs://: the deadline is each transfer's own, from its start: one started late in a long queue still has its retries" {
	mkdir -p "$WORK/t"
	for i in $(seq 1 12); do echo "$i" >"$WORK/t/f$i"; done
	fakegcs_start --first-byte-latency 0.25
	# one transfer at a time, 0.25 s each, 1 s for each with its retries: the last start after 2 s
	fakegcs_fault '{"kind": "upload-multipart", "action": "status", "status": 503, "skip": 10, "times": 1}'
	TEST_PARALLEL=1 TEST_DEADLINE=1 run "$STORE" gs://bkt/r puttree t "$WORK/t"
	assert_success
	[ "$(fakegcs_stat faults_fired)" -eq 1 ]
	run "$STORE" gs://bkt/r gettree t/ "$WORK/back"
	assert_success
	diff -r "$WORK/t" "$WORK/back"
}

@test "gs://: a listing follows nextPageToken over many small and empty pages" {
	mkdir -p "$WORK/t/d1" "$WORK/t/d2"
	for i in $(seq 1 40); do echo "$i" >"$WORK/t/f$i"; done
	echo x >"$WORK/t/d1/y"
	echo x >"$WORK/t/d2/y"
	fakegcs_start --page-size 3
	run "$STORE" gs://bkt/r puttree t "$WORK/t"
	assert_success
	fakegcs_fault '{"kind": "list", "action": "empty-pages", "skip": 2, "times": 4}'
	run "$STORE" gs://bkt/r list t/
	assert_success
	assert_equal "$(echo "$output" | wc -l)" 42
	run "$STORE" gs://bkt/r list t/ /
	assert_success
	assert_line --index 0 "t/d1/"
	assert_line --index 1 "t/d2/"
	assert_equal "$(echo "$output" | wc -l)" 42
	[ "$(fakegcs_stat 'requests.GET list')" -ge 28 ]
	run "$STORE" gs://bkt/r gettree t/ "$WORK/back"
	assert_success
	diff -r "$WORK/t" "$WORK/back"
}

@test "gs://: a full page of long names is read whole" {
	mkdir "$WORK/t"
	for i in $(seq 1 1100); do : >"$WORK/t/a-rather-long-object-name-to-make-a-large-page-$i"; done
	fakegcs_start
	TEST_PARALLEL=32 run "$STORE" gs://bkt puttree t "$WORK/t"
	assert_success
	run "$STORE" gs://bkt list t/
	assert_success
	assert_equal "$(echo "$output" | wc -l)" 1100
}

@test "gs://: a flipped byte in a download is caught; retried once, then exit 5" {
	flipped_download $((1 << 20)) 1000 1
}

@test "gs://: ranged parallel downloads are pinned to one generation and checked" {
	make_data "$WORK/f" $((5 << 20)) parts
	fakegcs_start
	"$STORE" gs://bkt put f "$WORK/f"
	fakegcs_fault '{"kind": "download", "action": "drop-response", "after_bytes": 100000, "skip": 2, "times": 2}'
	TEST_SLICE_THRESHOLD=1M TEST_SLICES=8 run "$STORE" gs://bkt get f "$WORK/back"
	assert_success
	cmp "$WORK/f" "$WORK/back"
	[ "$(fakegcs_stat 'requests.GET download')" -ge 10 ]
	run "$STORE" gs://bkt range f 1048576 16
	assert_success
	assert_equal "$output" "$(tail -c +1048577 "$WORK/f" | head -c 16)"
}

@test "gs://: a 412 after a retry is checked: our own lost create succeeds, someone else's object fails" {
	echo mine >"$WORK/mine"
	echo theirs >"$WORK/theirs"
	fakegcs_start
	# the create takes effect but its answer is lost: the retry meets 412, finds our bytes
	fakegcs_fault '{"kind": "upload-multipart", "action": "drop-response", "after_bytes": 0}'
	run "$STORE" gs://bkt put a "$WORK/mine"
	assert_success
	[ "$(fakegcs_stat 'status.412')" -eq 1 ]
	# a first attempt that meets 412 is EEXIST straight away
	run "$STORE" gs://bkt put a "$WORK/theirs"
	assert_equal "$status" 6
	# a retried attempt that meets someone else's object is EEXIST too
	"$STORE" gs://bkt put b "$WORK/theirs"
	fakegcs_fault '{"kind": "upload-multipart", "action": "status", "status": 503}'
	run "$STORE" gs://bkt put b "$WORK/mine"
	assert_equal "$status" 6
	run "$STORE" gs://bkt cat b
	assert_output theirs
}

@test "gs://: object names are percent-encoded" {
	echo odd >"$WORK/f"
	fakegcs_start
	for name in 'a b/c' 'x%2Fy' 'q?r#s' 'ü/é+&='; do
		run "$STORE" gs://bkt put "$name" "$WORK/f"
		assert_success
		run "$STORE" gs://bkt cat "$name"
		assert_output odd
	done
	run "$STORE" gs://bkt list ""
	assert_line "x%2Fy 4"
	assert_line "q?r#s 4"
}

@test "gs://: a token file; an expired token is refreshed once on 401" {
	fakegcs_start --require-auth
	tok() { fakegcs_ctl POST tokens "{\"lifetime\": $1}" | fakegcs_json 'd["access_token"]'; }
	unset STORAGE_EMULATOR_HOST
	export MTC_GCS_ENDPOINT="$FAKEGCS_URL"
	mkdir "$WORK/t"
	for i in $(seq 1 16); do echo "$i" >"$WORK/t/$i"; done
	# The new token is minted first, so only a rename stands between the
	# uploads and it: it is in place as soon as the first upload is stored,
	# long before the old one (minted last, just before the uploads) expires.
	tok 3600 >"$WORK/token.new"
	# the old token lives 6 s, the uploads take 8 s: it expires among them
	fakegcs_fault '{"kind": "upload-multipart", "action": "delay", "seconds": 0.5, "times": -1}'
	tok 6 >"$WORK/token"
	(for _ in $(seq 600); do
		curl -s --max-time 5 "$FAKEGCS_URL/_fake/stats" | grep -q '"upload_bytes_stored": [1-9]' && break
		sleep 0.05
	done
	mv "$WORK/token.new" "$WORK/token") 3>&- &
	renewer=$!
	TEST_TOKEN_FILE="$WORK/token" TEST_PARALLEL=1 run "$STORE" gs://bkt puttree t "$WORK/t"
	wait "$renewer"
	assert_success
	[ "$(fakegcs_stat auth_failures)" -ge 1 ]
	MTC_GCS_TOKEN=wrong run "$STORE" gs://bkt cat t/1
	assert_equal "$status" 7
	assert_output --partial "HTTP 401"
	MTC_GCS_TOKEN=$(tok 60) run "$STORE" gs://bkt cat t/1
	assert_output 1
}

@test "gs://: a service-account key signs an RS256 JWT exchanged at its token_uri" {
	mkdir "$WORK/k"
	fakegcs_make_key "$WORK/k"
	fakegcs_start --require-auth --public-key "$WORK/k/pub.pem"
	gcs_sa_json "$WORK/k" "$WORK/sa.json"
	unset STORAGE_EMULATOR_HOST
	export MTC_GCS_ENDPOINT="$FAKEGCS_URL" GOOGLE_APPLICATION_CREDENTIALS="$WORK/sa.json"
	echo secret >"$WORK/s"
	fakegcs_fault '{"kind": "token", "action": "status", "status": 503}'
	run "$STORE" gs://bkt put s "$WORK/s"
	assert_success
	run "$STORE" gs://bkt cat s
	assert_output secret
	[ "$(fakegcs_stat tokens_issued)" -ge 1 ]
	[ "$(fakegcs_stat auth_failures)" -eq 0 ]
	mkdir "$WORK/other"
	fakegcs_make_key "$WORK/other"
	sed "s|$(head -2 "$WORK/k/key.pem" | tail -1)|X|" "$WORK/sa.json" >/dev/null
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1])); d["private_key"] = open(sys.argv[2]).read()
print(json.dumps(d))' "$WORK/sa.json" "$WORK/other/key.pem" >"$WORK/bad.json"
	GOOGLE_APPLICATION_CREDENTIALS="$WORK/bad.json" run "$STORE" gs://bkt cat s
	assert_failure
	assert_output --partial "HTTP 400"
}

@test "gs://: the metadata server, asked with Metadata-Flavor: Google and retried while it starts" {
	fakegcs_start --require-auth
	unset STORAGE_EMULATOR_HOST
	export MTC_GCS_ENDPOINT="$FAKEGCS_URL" GCE_METADATA_HOST="$FAKEGCS_HOST"
	fakegcs_fault '{"kind": "metadata-server", "action": "status", "status": 503, "times": 3}'
	echo m >"$WORK/m"
	run "$STORE" gs://bkt put m "$WORK/m"
	assert_success
	run "$STORE" gs://bkt cat m
	assert_output m
	[ "$(fakegcs_stat faults_fired)" -eq 3 ]
}

@test "gs://: rclone reads what mtc wrote and mtc reads what rclone wrote" {
	command -v rclone || skip "rclone is not installed"
	mkdir -p "$WORK/a/sub"
	make_data "$WORK/a/big" $((9 << 20)) rc1
	echo small >"$WORK/a/sub/small"
	fakegcs_start
	rc() { rclone --gcs-anonymous --gcs-bucket-policy-only --gcs-endpoint "$FAKEGCS_URL/storage/v1/" --retries 1 "$@"; }
	run "$STORE" gs://bkt/m puttree a "$WORK/a"
	assert_success
	run rc copy :gcs:bkt/m/a "$WORK/by-rclone"
	assert_success
	diff -r "$WORK/a" "$WORK/by-rclone"
	run rc check "$WORK/a" :gcs:bkt/m/a
	assert_success
	run rc copy "$WORK/a" :gcs:bkt/r/a
	assert_success
	run "$STORE" gs://bkt/r gettree a/ "$WORK/by-mtc"
	assert_success
	diff -r "$WORK/a" "$WORK/by-mtc"
}
