#!/usr/bin/env bats
# s3:// as a backup location (lib/store/store_s3.c on the transfer engine), against
# moto's server checking every request's signature; the AWS CLI and boto3 read what
# mtc wrote and mtc reads what they wrote; so does rclone's S3 backend.

load helpers
load s3
load backup

setup() {
	aws_setup s3
	unset MTC_FAULT_STALL
	export AWS_EC2_METADATA_DISABLED=true
	need_moto
	moto_start "$WORK"
	moto bucket bkt
	read -r KEY SECRET < <(moto user alice)
	moto enforce
	export AWS_ACCESS_KEY_ID=$KEY AWS_SECRET_ACCESS_KEY=$SECRET AWS_DEFAULT_REGION=us-east-1
	AWS="${MTC_PY%/*}/aws --endpoint-url $MOTO_URL"
}

teardown() {
	[ -z "${BG_PID:-}" ] || { kill -9 "$BG_PID" 2>/dev/null; wait "$BG_PID" 2>/dev/null || true; }
	[ -z "${PROXY_PID:-}" ] || { kill "$PROXY_PID" 2>/dev/null; wait "$PROXY_PID" 2>/dev/null || true; }
	moto_stop
	rm -rf "$WORK"
}

# boto3_get KEY FILE: the object as boto3 reads it
boto3_get() {
	"$MTC_PY" -c '
import sys, boto3
c = boto3.client("s3", endpoint_url=sys.argv[1])
c.download_file("bkt", sys.argv[2], sys.argv[3])' "$MOTO_URL" "$1" "$2"
}

@test "s3://: backup (one PUT and a parallel multipart upload), lkg, restore to a dir and as a workstation; the AWS CLI and boto3 read the same bytes" {
	config "$WORK/cfg" job 0 1
	h=$(saved_step "$WORK/local" job 100 0 seed $((21 << 20)))
	run mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 100 --to s3://bkt/root \
		--s3-endpoint "$MOTO_URL" --name 2025-06-30_14-30 --slice-threshold 8M --slices 4
	assert_success
	grep -q "CreateMultipartUpload\|POST /bkt/root/job/2025-06-30_14-30/$h.data/weights?uploads" "$WORK/moto.log"
	[ "$(grep -c "PUT /bkt/root/job/2025-06-30_14-30/$h.data/weights?partNumber=" "$WORK/moto.log")" -ge 4 ]
	run mtc-lkg --backups s3://bkt/root --s3-endpoint "$MOTO_URL" --job job --json
	assert_success
	[ "$(jq -r '.backups[0].state' <<<"$output")" = valid ]
	# the AWS CLI lists and copies it; boto3 reads the big object
	run $AWS s3 ls --recursive s3://bkt/root/job/2025-06-30_14-30/
	assert_success
	assert_output --partial "job-s100-n0-w0.meta"
	assert_output --partial "$h.data/weights"
	run $AWS s3 cp --recursive s3://bkt/root/job/2025-06-30_14-30/ "$WORK/cli"
	assert_success
	cmp "$WORK/cli/$h.data/weights" "$WORK/local/$h.data/weights"
	cmp "$WORK/cli/$h.data/sub/note.txt" "$WORK/local/$h.data/sub/note.txt"
	[ "$(cat "$WORK/cli/job-s100-n0-w0.meta")" = "$h" ]
	boto3_get "root/job/2025-06-30_14-30/$h.data/weights" "$WORK/boto3.weights"
	cmp "$WORK/boto3.weights" "$WORK/local/$h.data/weights"
	# mtc restores it: ranged parallel GETs into one file, verified
	export AWS_ENDPOINT_URL_S3=$MOTO_URL
	run mtc-restore --from s3://bkt/root --job job --name 2025-06-30_14-30 --rank 0 --layout hash \
		--out "$WORK/out" --slice-threshold 8M --slices 4
	assert_success
	diff -r "$WORK/local/$h.data" "$WORK/out/$h.data"
	[ "$(grep -c "GET /bkt/root/job/2025-06-30_14-30/$h.data/weights" "$WORK/moto.log")" -ge 4 ]
	run mtc-restore --from s3://bkt/root --job job --out "$WORK/ws"
	assert_success
	diff -r "$WORK/local/$h.data" "$WORK/ws/100"
}

@test "s3://: restore.version written by the AWS CLI is read; --pin and --unpin write and remove it" {
	config "$WORK/cfg" job 0 1
	export AWS_ENDPOINT_URL=$MOTO_URL
	saved_step "$WORK/local" job 100 0 a >/dev/null
	mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 100 --to s3://bkt --name 2025-06-30_14-30 >/dev/null
	saved_step "$WORK/local" job 200 0 b >/dev/null
	mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 200 --to s3://bkt --name 2025-06-30_15-30 >/dev/null
	printf 2025-06-30_14-30 | $AWS s3 cp - s3://bkt/job/restore.version
	run mtc-lkg --backups s3://bkt --job job
	assert_success
	assert_line "restore.version: 2025-06-30_14-30"
	run mtc-restore --from s3://bkt --job job --out "$WORK/ws"
	assert_success
	[ "$(ls -A "$WORK/ws")" = 100 ]
	run mtc-restore --pin s3://bkt --job job 2025-06-30_15-30
	assert_success
	run $AWS s3 cp s3://bkt/job/restore.version -
	assert_output 2025-06-30_15-30
	run mtc-restore --unpin s3://bkt --job job
	assert_success
	run $AWS s3 ls s3://bkt/job/restore.version
	assert_failure
}

@test "s3://: a wrong secret fails with one line naming the server's refusal" {
	config "$WORK/cfg" job 0 1
	saved_step "$WORK/local" job 100 0 a >/dev/null
	wrong=${SECRET%?}x
	[ "$wrong" != "$SECRET" ] || wrong=${SECRET%?}y # a secret that ends in x stays right
	AWS_SECRET_ACCESS_KEY=$wrong run --separate-stderr mtc-backup --dir "$WORK/local" \
		--config "$WORK/cfg" --step 100 --to s3://bkt --s3-endpoint "$MOTO_URL" --name 2025-06-30_14-30
	assert_failure
	[ "$(wc -l <<<"$stderr")" -eq 1 ]
	[[ "$stderr" == "mtc-backup: "*"HTTP 403: SignatureDoesNotMatch"* ]]
}

@test "s3://: kill -9 mid multipart upload, then the same command completes the backup, keeping the parts sent" {
	config "$WORK/cfg" job 0 1
	export AWS_ENDPOINT_URL_S3=$MOTO_URL
	h=$(killed_upload 100 2025-06-30_14-30)
	run mtc-lkg --backups s3://bkt --job job --json
	[ "$(jq -r '.backups[0].state' <<<"$output")" != valid ]
	parts="PUT /bkt/job/2025-06-30_14-30/$h.data/weights?partNumber="
	[ "$(grep -c "$parts" "$WORK/moto.log")" -eq 2 ]
	run mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 100 --to s3://bkt \
		--name 2025-06-30_14-30 --slice-threshold 6M --slices 2
	assert_success
	# the killed run's upload is found and its whole parts kept: none is sent again
	[ "$(grep -c "$parts" "$WORK/moto.log")" -eq 2 ]
	grep -q "GET /bkt/job/2025-06-30_14-30/$h.data/weights?uploadId=" "$WORK/moto.log"
	run mtc-lkg --backups s3://bkt --job job --json
	assert_success
	[ "$(jq -r '.backups[0].state' <<<"$output")" = valid ]
	run $AWS s3 cp "s3://bkt/job/2025-06-30_14-30/$h.data/weights" "$WORK/w"
	cmp "$WORK/w" "$WORK/local/$h.data/weights"
}

@test "s3://: mtc-prune --delete removes the old backups by DeleteObjects, keeping the newest" {
	config "$WORK/cfg" job 0 1
	export AWS_ENDPOINT_URL_S3=$MOTO_URL
	for s in 1 2 3; do
		saved_step "$WORK/local" job $s 0 "p$s" >/dev/null
		mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step $s --to s3://bkt \
			--name "2025-06-0${s}_00-00" >/dev/null
	done
	run mtc-prune s3://bkt --job job --minutely 0 --hourly 0 --daily 1 --weekly 0 --monthly 0 \
		--yearly 0 --delete
	assert_success
	# a backup's objects go in DeleteObjects batches
	grep -q "POST /bkt?delete" "$WORK/moto.log"
	run $AWS s3 ls --recursive s3://bkt/job/
	assert_success
	assert_output --partial 2025-06-03_00-00/job-s3-n0-w0.meta
	refute_output --partial 2025-06-01_00-00
	refute_output --partial 2025-06-02_00-00
	run mtc-lkg --backups s3://bkt --job job --json
	assert_success
	[ "$(jq -r '.backups | length' <<<"$output")" = 1 ]
}

@test "s3://: mtc-replicate run backs a committed step up to s3:// (--s3-endpoint handed to mtc-backup); a node restores from it alone" {
	printf '{"job-name":"job","framework":"orbax","node-rank":0,"nodes":1,"peer-ranks":[],"backup-interval-minutes":1}\n' >"$WORK/cfg1"
	mkdir "$WORK/local"
	mtc-replicate run --dir "$WORK/local" --config "$WORK/cfg1" --backup s3://bkt \
		--s3-endpoint "$MOTO_URL" --quiet-time 0.2 --timeout 60 2>"$WORK/run.err" &
	BG_PID=$!
	mkdir "$WORK/local/7.tmp"
	make_data "$WORK/local/7.tmp/w" 100000 s7
	mv "$WORK/local/7.tmp" "$WORK/local/7"
	valid() { [ "$(mtc-lkg --backups s3://bkt --s3-endpoint "$MOTO_URL" --job job --json 2>/dev/null |
		jq -r '.backups[0].state')" = valid ]; }
	wait_for "a valid backup" 30 valid || { cat "$WORK/run.err"; false; }
	kill "$BG_PID"
	wait "$BG_PID" || true
	BG_PID=
	h=$(cat "$WORK/local/job-s7-n0-w0.meta")
	mkdir "$WORK/n1"
	run mtc-restore --dir "$WORK/n1" --config "$WORK/cfg1" --backup s3://bkt --s3-endpoint "$MOTO_URL" \
		--standalone
	assert_success
	diff -r "$WORK/local/$h.data" "$WORK/n1/$h.data"
	[ "$(cat "$WORK/n1/job-s7-n0-w0.meta")" = "$h" ]
}

@test "s3://: the store suite passes on s3:// (create-only writes refused by If-None-Match, listings, ranges, deletes)" {
	export AWS_ENDPOINT_URL_S3=$MOTO_URL
	run "$MTC_BIN/../unit/store" s3://bkt/some/prefix selftest
	assert_success
	refute_output --partial "not ok"
}

# fault_proxy METHOD STATUS CODE TIMES: tests/s3_fault_proxy.py in front of moto; sets PROXY_URL.
fault_proxy() {
	rm -f "$WORK/proxy.port"
	"$MTC_PY" "$BATS_TEST_DIRNAME/s3_fault_proxy.py" "$MOTO_URL" "$@" >"$WORK/proxy.port" 2>"$WORK/proxy.err" &
	PROXY_PID=$!
	wait_for "the proxy's port" 30 test -s "$WORK/proxy.port"
	PROXY_URL="http://127.0.0.1:$(cat "$WORK/proxy.port")"
}

proxy_stop() {
	kill "$PROXY_PID"
	wait "$PROXY_PID" 2>/dev/null || true
}
# proxy_faults: how many answers the proxy has changed so far
proxy_faults() { curl -fsS "$PROXY_URL/proxy-stats" | cut -d' ' -f1; }

@test "s3://: 503 SlowDown is retried with the one backoff policy; an ExpiredToken fetches the credentials again" {
	config "$WORK/cfg" job 0 1
	h=$(saved_step "$WORK/local" job 100 0 seed $((12 << 20)))
	fault_proxy PUT 503 SlowDown 5
	MTC_S3_RETRY_BASE_MS=10 run mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 100 \
		--to s3://bkt --s3-endpoint "$PROXY_URL" --name 2025-06-30_14-30 --slice-threshold 6M --slices 2
	assert_success
	[ "$(proxy_faults)" -eq 5 ]
	proxy_stop
	fault_proxy GET 400 ExpiredToken 1
	run mtc-restore --from s3://bkt --s3-endpoint "$PROXY_URL" --job job --name 2025-06-30_14-30 \
		--rank 0 --layout hash --out "$WORK/out"
	assert_success
	[ "$(proxy_faults)" -eq 1 ]
	diff -r "$WORK/local/$h.data" "$WORK/out/$h.data"
	proxy_stop
	# a refusal that is not transient is not retried: one line, at once
	fault_proxy GET 403 AccessDenied 1000
	run --separate-stderr mtc-lkg --backups s3://bkt --s3-endpoint "$PROXY_URL" --job job
	assert_failure
	[ "$(wc -l <<<"$stderr")" -eq 1 ]
	[[ "$stderr" == *"HTTP 403: AccessDenied: injected by the test"* ]]
	[ "$(proxy_faults)" -eq 1 ]
	proxy_stop
}

# killed_upload STEP NAME: mtc-backup of STEP (12 MiB, two parts) to s3://bkt/NAME killed -9
# with both parts sent and the upload not completed; prints the data's hash.
killed_upload() {
	local h
	h=$(saved_step "$WORK/local" job "$1" 0 "seed$1" $((12 << 20)))
	rm -f "$WORK/stalled"
	MTC_FAULT_STALL="s3-complete=*/weights:$WORK/stalled" mtc-backup --dir "$WORK/local" \
		--config "$WORK/cfg" --step "$1" --to s3://bkt --name "$2" \
		--slice-threshold 6M --slices 2 >/dev/null 2>&1 &
	BG_PID=$!
	wait_for "the stall" 30 grep -qs "^[0-9]*$" "$WORK/stalled"
	kill -9 "$BG_PID"
	wait "$BG_PID" || true
	BG_PID=
	echo "$h"
}

# uploads: the multipart uploads in bkt as the AWS CLI lists them, "key initiated" a line
uploads() {
	$AWS s3api list-multipart-uploads --bucket bkt --output json |
		jq -r '(.Uploads // [])[] | "\(.Key) \(.Initiated)"'
}

@test "s3://: a killed run's multipart upload is dated by its parts; mtc-prune aborts it once stale, and a deleted backup's at once" {
	config "$WORK/cfg" job 0 1
	export AWS_ENDPOINT_URL_S3=$MOTO_URL
	saved_step "$WORK/local" job 1 0 a >/dev/null
	mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 1 --to s3://bkt --name 2025-06-01_00-00 >/dev/null
	h=$(killed_upload 2 2025-06-02_00-00)
	run uploads
	# moto dates every upload's start 2010-11-10: by that alone this one would look stale
	assert_output "job/2025-06-02_00-00/$h.data/weights 2010-11-10T20:48:33.000Z"
	# its parts are young: a prune keeping the backup in its grace leaves the upload
	prune() { mtc-prune s3://bkt --job job --minutely 0 --hourly 0 --daily 9 --weekly 0 \
		--monthly 0 --yearly 0 --delete -v "$@"; }
	run prune
	assert_success
	[ "$(uploads | wc -l)" -eq 1 ]
	# once its newest part is older than the stale age, it is aborted, its bytes said
	sleep 2
	MTC_TMP_STALE_S=1 run --separate-stderr prune
	assert_success
	[[ "$stderr" == *"removed 's3://bkt/job/2025-06-02_00-00/$h.data/weights (upload "*")' ($((12 << 20)) bytes): a dead writer's temporary"* ]]
	[ -z "$(uploads)" ]
	grep -q "DELETE /bkt/job/2025-06-02_00-00/$h.data/weights?uploadId=" "$WORK/moto.log"
	run mtc-lkg --backups s3://bkt --job job --json
	[ "$(jq -r '.backups | length' <<<"$output")" = 2 ]
	# a backup deleted (past its grace) takes its uploads with it, however young
	h=$(killed_upload 3 2025-05-31_00-00)
	[ "$(uploads | wc -l)" -eq 1 ]
	prune() { mtc-prune s3://bkt --job job --minutely 0 --hourly 0 --daily 2 --weekly 0 \
		--monthly 0 --yearly 0 --grace 0 --delete; }
	run prune
	assert_success
	assert_output --partial "deleted      2025-05-31_00-00"
	[ -z "$(uploads)" ]
	run $AWS s3 ls --recursive s3://bkt/job/2025-05-31_00-00/
	refute_output --partial "$h"
}

@test "s3://: a killed run's upload older than the stale age is aborted by the next run, which sends every part again" {
	config "$WORK/cfg" job 0 1
	export AWS_ENDPOINT_URL_S3=$MOTO_URL
	h=$(killed_upload 100 2025-06-30_14-30)
	parts="PUT /bkt/job/2025-06-30_14-30/$h.data/weights?partNumber="
	[ "$(grep -c "$parts" "$WORK/moto.log")" -eq 2 ]
	sleep 2
	MTC_TMP_STALE_S=1 run --separate-stderr mtc-backup --dir "$WORK/local" --config "$WORK/cfg" \
		--step 100 --to s3://bkt --name 2025-06-30_14-30 --slice-threshold 6M --slices 2 -v
	assert_success
	[[ "$stderr" == *"removed 's3://bkt/job/2025-06-30_14-30/$h.data/weights (upload "* ]]
	[ "$(grep -c "$parts" "$WORK/moto.log")" -eq 4 ]
	[ -z "$(uploads)" ]
	run mtc-lkg --backups s3://bkt --job job --json
	[ "$(jq -r '.backups[0].state' <<<"$output")" = valid ]
}

# rclone ARGS...: rclone's S3 backend on moto as remote "m:", configured from the environment alone
rclone_moto() {
	env -u AWS_CA_BUNDLE RCLONE_CONFIG=/dev/null RCLONE_CONFIG_M_TYPE=s3 RCLONE_CONFIG_M_PROVIDER=Other \
		RCLONE_CONFIG_M_ACCESS_KEY_ID=$KEY RCLONE_CONFIG_M_SECRET_ACCESS_KEY=$SECRET \
		RCLONE_CONFIG_M_ENDPOINT=$MOTO_URL RCLONE_CONFIG_M_REGION=us-east-1 \
		RCLONE_CONFIG_M_FORCE_PATH_STYLE=true rclone --retries 1 "$@"
}

@test "s3://: rclone's S3 backend reads the backup mtc wrote byte for byte, and mtc restores one rclone uploaded in parts" {
	command -v rclone >/dev/null || skip "rclone is not installed"
	config "$WORK/cfg" job 0 1
	export AWS_ENDPOINT_URL_S3=$MOTO_URL
	h=$(saved_step "$WORK/local" job 100 0 seed $((21 << 20)))
	mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 100 --to s3://bkt/root \
		--name 2025-06-30_14-30 --slice-threshold 8M --slices 4 >/dev/null
	# rclone lists and downloads mtc's backup (its big object a multipart one)
	run rclone_moto lsf -R m:bkt/root/job/2025-06-30_14-30
	assert_success
	assert_line "job-s100-n0-w0.meta"
	assert_line "$h.data/weights"
	rclone_moto copy m:bkt/root/job/2025-06-30_14-30 "$WORK/rc"
	# (rclone 1.60 makes no directory of a "sub/empty/" marker: the files are compared)
	cmp "$WORK/rc/$h.data/weights" "$WORK/local/$h.data/weights"
	cmp "$WORK/rc/$h.data/sub/note.txt" "$WORK/local/$h.data/sub/note.txt"
	[ "$(cat "$WORK/rc/job-s100-n0-w0.meta")" = "$h" ]
	# rclone uploads a backup made in a directory, its big file in 5 MiB chunks, and
	# writes restore.version from a pipe; mtc judges it valid and restores it
	mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 100 --to "$WORK/dirbk" \
		--name 2025-07-01_00-00 >/dev/null
	rclone_moto copy --s3-no-head --s3-upload-cutoff 5M --s3-chunk-size 5M "$WORK/dirbk" m:bkt/rc
	grep -q "POST /bkt/rc/job/2025-07-01_00-00/$h.data/weights?uploads" "$WORK/moto.log"
	# rclone 1.60 writes no marker for the empty directory, which its name covers: without one
	# the backup is not what its name says (exit 5); the AWS CLI adds it
	run mtc-restore --from s3://bkt/rc --job job --name 2025-07-01_00-00 --rank 0 --layout hash --out "$WORK/o1"
	[ "$status" -eq 5 ]
	$AWS s3api put-object --bucket bkt --key "rc/job/2025-07-01_00-00/$h.data/sub/empty/" >/dev/null
	printf 2025-07-01_00-00 | rclone_moto rcat m:bkt/rc/job/restore.version
	run mtc-lkg --backups s3://bkt/rc --job job
	assert_success
	assert_line "restore.version: 2025-07-01_00-00"
	run mtc-restore --from s3://bkt/rc --job job --name 2025-07-01_00-00 --rank 0 --layout hash \
		--out "$WORK/out" --slice-threshold 8M --slices 4
	assert_success
	diff -r "$WORK/local/$h.data" "$WORK/out/$h.data"
}

@test "s3://: connection resets and 500s are retried, mid multipart upload and mid ranged restore" {
	config "$WORK/cfg" job 0 1
	h=$(saved_step "$WORK/local" job 100 0 seed $((12 << 20)))
	fault_proxy PUT reset - 3
	MTC_S3_RETRY_BASE_MS=10 run mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 100 \
		--to s3://bkt --s3-endpoint "$PROXY_URL" --name 2025-06-30_14-30 --slice-threshold 6M --slices 2
	assert_success
	[ "$(proxy_faults)" -eq 3 ]
	proxy_stop
	fault_proxy GET reset - 3
	MTC_S3_RETRY_BASE_MS=10 run mtc-restore --from s3://bkt --s3-endpoint "$PROXY_URL" --job job \
		--name 2025-06-30_14-30 --rank 0 --layout hash --out "$WORK/out" --slice-threshold 4M --slices 3
	assert_success
	[ "$(proxy_faults)" -eq 3 ]
	diff -r "$WORK/local/$h.data" "$WORK/out/$h.data"
	proxy_stop
	fault_proxy POST 500 InternalError 2
	MTC_S3_RETRY_BASE_MS=10 run mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 100 \
		--to s3://bkt/again --s3-endpoint "$PROXY_URL" --name 2025-06-30_14-30 --slice-threshold 6M --slices 2
	assert_success
	[ "$(proxy_faults)" -eq 2 ]
	run mtc-lkg --backups s3://bkt/again --s3-endpoint "$MOTO_URL" --job job --json
	[ "$(jq -r '.backups[0].state' <<<"$output")" = valid ]
}

@test "s3://: a wrong region is answered as S3 does; mtc moves to the bucket's region once, saying so" {
	config "$WORK/cfg" job 0 1
	h=$(saved_step "$WORK/local" job 100 0 seed $((12 << 20)))
	"$MTC_PY" "$BATS_TEST_DIRNAME/s3_fault_proxy.py" "$MOTO_URL" region eu-west-1 >"$WORK/proxy.port" 2>"$WORK/proxy.err" &
	PROXY_PID=$!
	wait_for "the proxy's port" 30 test -s "$WORK/proxy.port"
	PROXY_URL="http://127.0.0.1:$(cat "$WORK/proxy.port")"
	# the AWS CLI meets the refusal too, and follows it
	run env AWS_REGION=us-west-2 ${MTC_PY%/*}/aws --endpoint-url "$PROXY_URL" s3 ls s3://bkt/
	assert_success
	cli=$(proxy_faults)
	[ "$cli" -ge 1 ]
	AWS_REGION=us-west-2 run --separate-stderr mtc-backup --dir "$WORK/local" --config "$WORK/cfg" \
		--step 100 --to s3://bkt --s3-endpoint "$PROXY_URL" --name 2025-06-30_14-30 \
		--slice-threshold 6M --slices 2
	assert_success
	[ "$(grep -c "is in region 'eu-west-1', not 'us-west-2'" <<<"$stderr")" -eq 1 ]
	AWS_REGION=us-west-2 run mtc-restore --from s3://bkt --s3-endpoint "$PROXY_URL" --job job \
		--name 2025-06-30_14-30 --rank 0 --layout hash --out "$WORK/out" --slice-threshold 4M --slices 3
	assert_success
	diff -r "$WORK/local/$h.data" "$WORK/out/$h.data"
	# each run is refused once a request in flight at the time, then all go to eu-west-1
	fired=$(proxy_faults)
	[ "$((fired - cli))" -ge 2 ] && [ "$((fired - cli))" -le 8 ]
	AWS_REGION=eu-west-1 run --separate-stderr mtc-lkg --backups s3://bkt --s3-endpoint "$PROXY_URL" --job job
	assert_success
	[ -z "$stderr" ]
	[ "$(proxy_faults)" -eq "$fired" ]
}
