#!/usr/bin/env bats
# The fake GCS server: fidelity against rclone (a real GCS client), and each fault mode by curl.

load helpers
load fakegcs/fakegcs

setup() {
	WORK=$(mktemp -d /dev/shm/fakegcs-test.XXXXXX)
	export RCLONE_CONFIG=/dev/null
}

teardown() {
	fakegcs_stop
	rm -rf "$WORK"
}

rc() {
	rclone --gcs-anonymous --gcs-bucket-policy-only --gcs-endpoint "$FAKEGCS_URL/storage/v1/" \
		--low-level-retries 1 --retries 1 "$@"
}

@test "rclone: uploads (multipart and resumable), downloads and checks round-trip byte for byte" {
	fakegcs_start
	mkdir -p "$WORK/src/sub/deeper"
	echo hello >"$WORK/src/a.txt"
	: >"$WORK/src/empty"
	make_data "$WORK/src/big.bin" $((40 * 1024 * 1024 + 12345)) big
	make_data "$WORK/src/sub/deeper/mid.bin" 300000 mid
	echo odd >"$WORK/src/sub/we ird+%name é.txt"
	run rc copy "$WORK/src" :gcs:bkt/dir
	assert_success
	[ "$(fakegcs_stat 'requests.POST upload-init')" -ge 1 ]
	[ "$(fakegcs_stat 'requests.POST upload-chunk')" -ge 3 ]
	[ "$(fakegcs_stat 'requests.POST upload-multipart')" -ge 3 ]
	run rc copy :gcs:bkt/dir "$WORK/dst"
	assert_success
	run diff -r "$WORK/src" "$WORK/dst"
	assert_success
	run rc check "$WORK/src" :gcs:bkt/dir
	assert_success
	assert_output --partial "0 differences found"
	run rc md5sum :gcs:bkt/dir/big.bin
	assert_output "$(md5sum <"$WORK/src/big.bin" | cut -d' ' -f1)  big.bin"
}

@test "rclone: listing many objects over small pages, with the endpoint given without a base path" {
	fakegcs_start --page-size 7
	mkdir -p "$WORK/src/d1" "$WORK/src/d2"
	for i in $(seq 1 60); do echo "$i" >"$WORK/src/d1/f$i"; done
	for i in $(seq 1 25); do echo "$i" >"$WORK/src/d2/g$i"; done
	run rclone --gcs-anonymous --gcs-bucket-policy-only --gcs-endpoint "$FAKEGCS_URL" copy "$WORK/src" :gcs:bkt/p
	assert_success
	fakegcs_ctl DELETE stats
	run rc lsf -R :gcs:bkt/p
	assert_success
	[ "$(grep -c . <<<"$output")" -eq 87 ]
	[ "$(fakegcs_stat 'requests.GET list')" -ge 13 ]
	run rc lsf --fast-list -R :gcs:bkt/p
	[ "$(grep -c '^d1/f' <<<"$output")" -eq 60 ]
	fakegcs_fault '{"kind": "list", "action": "empty-pages", "times": 3}'
	run rc lsf :gcs:bkt/p/d2
	assert_success
	[ "$(grep -c . <<<"$output")" -eq 25 ]
	[ "$(fakegcs_stat faults_fired)" -eq 3 ]
}

@test "rclone: retries through 503, 429 and 500 bursts on chunks, session starts, downloads and listings" {
	fakegcs_start
	mkdir -p "$WORK/src"
	make_data "$WORK/src/big" $((40 * 1024 * 1024)) big
	fakegcs_fault '[{"kind": "upload-chunk", "skip": 1, "action": "status", "status": 503, "times": 2},
		{"kind": "upload-init", "action": "status", "status": 429},
		{"kind": "download", "action": "status", "status": 429},
		{"kind": "list", "action": "status", "status": 500}]'
	run rc copy "$WORK/src" :gcs:bkt/r --low-level-retries 5
	assert_success
	run rc copy :gcs:bkt/r "$WORK/dst" --low-level-retries 5
	assert_success
	cmp "$WORK/src/big" "$WORK/dst/big"
	[ "$(fakegcs_stat faults_fired)" -eq 5 ]
	[ "$(fakegcs_stat upload_bytes_duplicate)" -eq 0 ]
}

@test "rclone: deletes remove the objects" {
	fakegcs_start
	mkdir -p "$WORK/src"
	for i in 1 2 3; do echo "$i" >"$WORK/src/f$i"; done
	run rc copy "$WORK/src" :gcs:bkt/del
	assert_success
	run rc delete :gcs:bkt/del --include f2
	assert_success
	run rc lsf :gcs:bkt/del
	assert_output "$(printf 'f1\nf3')"
	run curl -s -o /dev/null -w '%{http_code}' "$FAKEGCS_URL/storage/v1/b/bkt/o/del%2Ff2"
	assert_output 404
}

# ---- Google's Node.js client (@google-cloud/storage, `make node-client`)

node_client() { node "$BATS_TEST_DIRNAME/fakegcs/node_client.js" "$@"; }
# node_upload BYTES VERB NAME [ARG]: the Node.js client's VERB stores BYTES as bkt/NAME on a
# fresh server, with the right CRC32C; what it printed is in $WORK/out.
node_upload() {
	need_node_client
	fakegcs_start
	make_data "$WORK/f" "$1" f
	run node_client "$2" bkt "$3" "$WORK/f" "${@:4}"
	assert_success
	echo "$output" >"$WORK/out"
	[ "$(field '["crc32c"]')" = "$(crc_of "$WORK/f")" ]
}

@test "node client: multipart upload keeps the bytes, CRC32C and MD5" {
	node_upload 1000003 multipart n/mp
	[ "$(field '["md5Hash"]')" = "$(md5_of "$WORK/f")" ]
	[ "$(fakegcs_stat 'requests.POST upload-multipart')" -eq 1 ]
	curl -s "$(api)/n%2Fmp?alt=media" | cmp - "$WORK/f"
}

@test "node client: resumable upload of a stream of unknown length, in one request and in chunks, and resumed after a cut" {
	node_upload 3000000 resumable n/one
	[ "$(fakegcs_stat 'requests.PUT upload-chunk')" -eq 1 ]
	run node_client resumable bkt n/chunks "$WORK/f" 1048576
	assert_success
	[ "$(fakegcs_stat 'requests.PUT upload-chunk')" -eq 4 ]
	curl -s "$(api)/n%2Fchunks?alt=media" | cmp - "$WORK/f"
	fakegcs_ctl DELETE stats
	# The second chunk is cut after 600000 bytes: 524288 are kept, the client asks (bytes */*)
	# and sends the rest of that chunk again. (Sent as one request the stream cannot be resumed:
	# the client keeps only its last buffer, by design.)
	fakegcs_fault '{"kind": "upload-chunk", "skip": 1, "action": "drop-request", "after_bytes": 600000}'
	run node_client resumable bkt n/cut "$WORK/f" 1048576
	assert_success
	curl -s "$(api)/n%2Fcut?alt=media" | cmp - "$WORK/f"
	[ "$(fakegcs_stat faults_fired)" -eq 1 ]
	[ "$(fakegcs_stat 'requests.PUT upload-status')" -eq 1 ]
	[ "$(fakegcs_stat upload_bytes_stored)" -eq 3000000 ]
	[ "$(fakegcs_stat upload_bytes_duplicate)" -eq 0 ]
}

@test "node client: listing with prefix, delimiter and small pages" {
	need_node_client
	fakegcs_start --page-size 2
	echo x >"$WORK/x"
	for n in a/1 a/2 a/b/3 c d/4 e; do put_media "$n" "$WORK/x" >/dev/null; done
	run node_client list bkt "" /
	assert_success
	echo "$output" >"$WORK/out"
	[ "$(field '["items"]')" = '["c", "e"]' ]
	[ "$(field '["prefixes"]')" = '["a/", "d/"]' ]
	[ "$(field '["pages"]')" -ge 2 ]
	run node_client list bkt a/ / 1
	assert_success
	echo "$output" >"$WORK/out"
	[ "$(field '["items"]')" = '["a/1", "a/2"]' ]
	[ "$(field '["prefixes"]')" = '["a/b/"]' ]
	run node_client list bkt a/ ""
	echo "$output" >"$WORK/out"
	[ "$(field '["items"]')" = '["a/1", "a/2", "a/b/3"]' ]
}

@test "node client: downloads are checked by CRC32C; a flipped byte is caught" {
	need_node_client
	fakegcs_start
	make_data "$WORK/f" 2000000 f
	put_media f "$WORK/f" >/dev/null
	run node_client download bkt f "$WORK/got"
	assert_success
	cmp "$WORK/got" "$WORK/f"
	fakegcs_fault '{"kind": "download", "action": "flip", "offset": 1500000}'
	run node_client download bkt f "$WORK/bad"
	assert_failure
	assert_output --partial "node_client: download: CONTENT_DOWNLOAD_MISMATCH"
}

@test "node client: TransferManager sliced download (ranged GETs in parallel, whole-file CRC32C)" {
	need_node_client
	fakegcs_start
	make_data "$WORK/f" $((40 << 20)) f
	put_media f "$WORK/f" >/dev/null
	fakegcs_ctl DELETE stats
	run node_client sliced bkt f "$WORK/got" $((8 << 20))
	assert_success
	cmp "$WORK/got" "$WORK/f"
	[ "$(fakegcs_stat 'requests.GET download')" -eq 5 ]
	[ "$(fakegcs_stat 'status.206')" -eq 5 ]
	fakegcs_fault '{"kind": "download", "action": "flip", "offset": 20000000, "times": -1}'
	run node_client sliced bkt f "$WORK/bad" $((8 << 20))
	assert_failure
	assert_output --partial CONTENT_DOWNLOAD_MISMATCH
}

@test "node client: TransferManager chunked upload (XML API multipart upload); parts under 5 MiB are refused" {
	node_upload 12000000 chunked n/xml $((5 << 20))
	[ "$(field '["md5Hash"]')" = null ]
	[ "$(fakegcs_stat 'requests.PUT xml-mpu-part')" -eq 3 ]
	[ "$(fakegcs_stat 'requests.POST xml-mpu-complete')" -eq 1 ]
	curl -s "$(api)/n%2Fxml?alt=media" | cmp - "$WORK/f"
	run node_client chunked bkt n/small "$WORK/f" $((1 << 20))
	assert_failure
	[ "$(fakegcs_stat 'status.400')" -eq 1 ]
	[ "$(fakegcs_stat 'requests.DELETE xml-mpu-abort')" -eq 1 ]
	run curl -s -o /dev/null -w '%{http_code}' "$(api)/n%2Fsmall"
	assert_output 404
}

@test "node client: reads what mtc-backup wrote, byte for byte" {
	need_node_client
	load backup
	fakegcs_start
	unset MTC_GCS_ENDPOINT GOOGLE_APPLICATION_CREDENTIALS MTC_GCS_TOKEN
	config "$WORK/cfg" job 0 1
	h=$(saved_step "$WORK/local" job 12 0 nodeclient 700000)
	run mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 12 --to gs://bkt/root --name 2025-01-01_00-00
	assert_success
	run node_client mirror bkt root/job/2025-01-01_00-00/ "$WORK/got"
	assert_success
	[ "$(cat "$WORK/got/job-s12-n0-w0.meta")" = "$h" ]
	cmp "$WORK/got/$h.data/weights" "$WORK/local/$h.data/weights"
	cmp "$WORK/got/$h.data/sub/note.txt" "$WORK/local/$h.data/sub/note.txt"
	[ -s "$WORK/got/$h.manifest" ]
}

# ---- the API by curl

B=bkt
api() { printf '%s/storage/v1/b/%s/o' "$FAKEGCS_URL" "$B"; }
upload_url() { printf '%s/upload/storage/v1/b/%s/o' "$FAKEGCS_URL" "$B"; }
enc() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
crc_of() { python3 "$BATS_TEST_DIRNAME/fakegcs/crc32c.py" <"$1"; }
md5_of() { openssl dgst -md5 -binary <"$1" | openssl base64 -A; }
# put_media NAME FILE [QUERY] [CURL ARGS...]: prints the HTTP status, the body goes to $WORK/out
put_media() {
	local name=$1 file=$2 query=${3:-}
	shift 3 2>/dev/null || shift $#
	curl -s -o "$WORK/out" -w '%{http_code}' -X POST --data-binary @"$file" "$@" \
		"$(upload_url)?uploadType=media&name=$(enc "$name")$query"
}
# start_session NAME [QUERY]: prints the session URI
start_session() {
	curl -s -D - -o /dev/null -X POST -H 'Content-Type: application/json' --data-binary '{}' \
		"$(upload_url)?uploadType=resumable&name=$(enc "$1")${2:-}" | tr -d '\r' | sed -n 's/^[Ll]ocation: //p'
}
# put_chunk URI FILE OFFSET LENGTH TOTAL|*: prints "status range" of the answer
put_chunk() {
	local uri=$1 file=$2 off=$3 len=$4 total=$5
	tail -c +$((off + 1)) "$file" | head -c "$len" >"$WORK/chunk"
	curl -s -D "$WORK/headers" -o "$WORK/out" -w '%{http_code}' -X PUT --data-binary @"$WORK/chunk" \
		-H "Content-Range: bytes $off-$((off + len - 1))/$total" "$uri"
	printf ' %s\n' "$(tr -d '\r' <"$WORK/headers" | sed -n 's/^[Rr]ange: //p')"
}
query_session() {
	curl -s -D "$WORK/headers" -o "$WORK/out" -w '%{http_code}' -X PUT -H "Content-Range: bytes */${2:-*}" "$1"
	printf ' %s\n' "$(tr -d '\r' <"$WORK/headers" | sed -n 's/^[Rr]ange: //p')"
}
field() { fakegcs_json "d$1" <"$WORK/out"; }

@test "metadata carries CRC32C (base64, big-endian) and MD5 of the data" {
	fakegcs_start
	printf 123456789 >"$WORK/nine"
	run put_media nine "$WORK/nine"
	assert_output 200
	[ "$(field '["crc32c"]')" = 4waSgw== ]
	[ "$(field '["md5Hash"]')" = "$(md5_of "$WORK/nine")" ]
	[ "$(field '["size"]')" = 9 ]
	[ "$(field '["metageneration"]')" = 1 ]
	make_data "$WORK/r" 1000003 r
	run put_media r "$WORK/r"
	[ "$(field '["crc32c"]')" = "$(crc_of "$WORK/r")" ]
	[ "$(FAKEGCS_PURE_CRC=1 crc_of "$WORK/r")" = "$(crc_of "$WORK/r")" ]
}

# compose DEST BODY: prints the HTTP status, the body goes to $WORK/out
compose() {
	curl -s -o "$WORK/out" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
		--data-binary "$2" "$(api)/$(enc "$1")/compose"
}

@test "compose joins its sources in place: the CRC32C combined, composites of composites, sources deleted under it" {
	for dir in "" "$WORK/data"; do
		fakegcs_start ${dir:+--data-dir "$dir"}
		[ -z "$dir" ] || mkdir -p "$dir"
		make_data "$WORK/a" 1000003 a
		make_data "$WORK/b" 70001 b
		assert_equal "$(put_media a "$WORK/a")" 200
		assert_equal "$(put_media b "$WORK/b")" 200
		assert_equal "$(compose c '{"sourceObjects": [{"name": "a"}, {"name": "b"}, {"name": "a"}]}')" 200
		cat "$WORK/a" "$WORK/b" "$WORK/a" >"$WORK/c"
		[ "$(field '["crc32c"]')" = "$(crc_of "$WORK/c")" ]
		[ "$(field '["size"]')" = 2070007 ]
		assert_equal "$(compose d '{"sourceObjects": [{"name": "c"}, {"name": "b"}]}')" 200
		cat "$WORK/c" "$WORK/b" >"$WORK/d"
		[ "$(field '["crc32c"]')" = "$(crc_of "$WORK/d")" ]
		assert_equal "$(compose e '{"sourceObjects": [{"name": "a"}, {"name": "b"}], "deleteSourceObjects": true}')" 200
		run curl -s -o /dev/null -w '%{http_code}' "$(api)/a"
		assert_output 404
		curl -s "$(api)/c?alt=media" | cmp - "$WORK/c"
		curl -s "$(api)/d?alt=media" | cmp - "$WORK/d"
		# a range across the joins: the end of a, all of b, the start of a again
		curl -s -H 'Range: bytes=999000-1080000' "$(api)/d?alt=media" >"$WORK/got"
		tail -c +999001 "$WORK/d" | head -c 81001 | cmp - "$WORK/got"
		curl -s -X DELETE "$(api)/c" && curl -s -X DELETE "$(api)/d"
		curl -s "$(api)/e?alt=media" | cmp - <(cat "$WORK/a" "$WORK/b")
		curl -s -X DELETE "$(api)/e"
		[ -z "$dir" ] || [ -z "$(ls -A "$dir")" ]
		fakegcs_stop
	done
}

@test "multipart upload: metadata is kept, a wrong crc32c or x-goog-hash is refused with 400" {
	fakegcs_start
	mp() {
		printf -- '--XyZ\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n%s\r\n--XyZ\r\nContent-Type: text/plain\r\n\r\n' "$1"
		cat "$2"
		printf -- '\r\n--XyZ--\r\n'
	}
	printf 'some\r\n--XyZ body\r\n' >"$WORK/data"
	mp '{"name": "m/one", "metadata": {"k": "v"}, "crc32c": "'"$(crc_of "$WORK/data")"'"}' "$WORK/data" >"$WORK/body"
	run curl -s -o "$WORK/out" -w '%{http_code}' -H 'Content-Type: multipart/related; boundary=XyZ' \
		--data-binary @"$WORK/body" "$(upload_url)?uploadType=multipart"
	assert_output 200
	[ "$(field '["metadata"]["k"]')" = v ]
	[ "$(field '["contentType"]')" = text/plain ]
	curl -s "$(api)/m%2Fone?alt=media" | cmp - "$WORK/data"
	mp '{"name": "m/two", "crc32c": "AAAAAA=="}' "$WORK/data" >"$WORK/body"
	run curl -s -o "$WORK/out" -w '%{http_code}' -H 'Content-Type: multipart/related; boundary=XyZ' \
		--data-binary @"$WORK/body" "$(upload_url)?uploadType=multipart"
	assert_output 400
	grep -q "CRC32C" "$WORK/out"
	run put_media m/three "$WORK/data" "" -H "x-goog-hash: crc32c=AAAAAA==,md5=$(md5_of "$WORK/data")"
	assert_output 400
	run put_media m/three "$WORK/data" "" -H "x-goog-hash: crc32c=$(crc_of "$WORK/data"),md5=$(md5_of "$WORK/data")"
	assert_output 200
	run curl -s -o /dev/null -w '%{http_code}' "$(api)/m%2Ftwo"
	assert_output 404
}

@test "gcloud's upload forms: LF multipart with a single-quoted boundary, /resumable/upload, storageLayout" {
	fakegcs_start
	# as Python's email package writes it for apitools: bare LF line breaks, the boundary in ''
	printf 'a\r\nb\n\n--x\n' >"$WORK/data"
	{
		printf -- "--===7==\nContent-Type: application/json\nMIME-Version: 1.0\n\n"
		printf -- '{"bucket": "%s", "name": "g/mp", "crc32c": "%s"}\n' "$B" "$(crc_of "$WORK/data")"
		printf -- "--===7==\nContent-Type: application/octet-stream\nContent-Transfer-Encoding: binary\n\n"
		cat "$WORK/data"
		printf -- "\n--===7==--"
	} >"$WORK/body"
	run curl -s -o "$WORK/out" -w '%{http_code}' -H "Content-Type: multipart/related; boundary='===7=='" \
		--data-binary @"$WORK/body" "$(upload_url)?alt=json&uploadType=multipart"
	assert_output 200
	curl -s "$(api)/g%2Fmp?alt=media" | cmp - "$WORK/data"
	printf 'no closing delimiter\n' >>"$WORK/body"
	sed -i 's/--===7==--/--===7==/' "$WORK/body"
	run curl -s -o "$WORK/out" -w '%{http_code}' -H "Content-Type: multipart/related; boundary='===7=='" \
		--data-binary @"$WORK/body" "$(upload_url)?uploadType=multipart"
	assert_output 400
	# apitools' resumable path: a session started there is completed at its Location
	run curl -s -D "$WORK/h" -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
		--data '{"name": "g/rs"}' "$FAKEGCS_URL/resumable/upload/storage/v1/b/$B/o?alt=json&uploadType=resumable"
	assert_output 200
	loc=$(tr -d '\r' <"$WORK/h" | sed -n 's/^[Ll]ocation: //p')
	run curl -s -o /dev/null -w '%{http_code}' -X PUT --data-binary @"$WORK/data" "$loc"
	assert_output 200
	curl -s "$(api)/g%2Frs?alt=media" | cmp - "$WORK/data"
	run curl -s "$FAKEGCS_URL/storage/v1/b/$B/storageLayout"
	assert_output --partial '"kind": "storage#storageLayout"'
}

@test "generations, metagenerations and preconditions" {
	fakegcs_start
	echo one >"$WORK/one"
	echo two >"$WORK/two"
	run put_media g "$WORK/one" "&ifGenerationMatch=0"
	assert_output 200
	g1=$(field '["generation"]')
	run put_media g "$WORK/two" "&ifGenerationMatch=0"
	assert_output 412
	grep -q conditionNotMet "$WORK/out"
	run put_media g "$WORK/two" "&ifGenerationMatch=$g1"
	assert_output 200
	g2=$(field '["generation"]')
	[ "$g2" -gt "$g1" ]
	run curl -s -o /dev/null -w '%{http_code}' "$(api)/g?alt=media&generation=$g1"
	assert_output 404
	[ "$(curl -s "$(api)/g?alt=media&generation=$g2")" = two ]
	run curl -s -o "$WORK/out" -w '%{http_code}' -X PATCH -H 'Content-Type: application/json' \
		--data '{"metadata": {"a": "b"}}' "$(api)/g?ifMetagenerationMatch=1"
	assert_output 200
	[ "$(field '["metageneration"]')" = 2 ]
	[ "$(field '["generation"]')" = "$g2" ]
	run curl -s -o /dev/null -w '%{http_code}' "$(api)/g?ifMetagenerationMatch=1"
	assert_output 412
	run curl -s -o /dev/null -w '%{http_code}' -X DELETE "$(api)/g?ifGenerationMatch=$g1"
	assert_output 412
	run curl -s -o /dev/null -w '%{http_code}' -X DELETE "$(api)/g"
	assert_output 204
	run curl -s -o /dev/null -w '%{http_code}' -X DELETE "$(api)/g"
	assert_output 404
}

@test "resumable: 308 with the stored range, status queries, 256 KiB rounding, completion" {
	fakegcs_start
	make_data "$WORK/f" 1000000 f
	uri=$(start_session res/f "&ifGenerationMatch=0")
	[[ "$uri" == "$FAKEGCS_URL/upload/storage/v1/b/bkt/o?"*upload_id=* ]]
	run query_session "$uri"
	assert_output "308 "
	run put_chunk "$uri" "$WORK/f" 0 262144 '*'
	assert_output "308 bytes=0-262143"
	run query_session "$uri"
	assert_output "308 bytes=0-262143"
	run put_chunk "$uri" "$WORK/f" 262144 400000 '*'
	assert_output "308 bytes=0-524287"
	run put_chunk "$uri" "$WORK/f" 786432 100 '*'
	assert_output --partial 400
	[ "$(fakegcs_stat upload_bytes_duplicate)" -eq 0 ]
	run put_chunk "$uri" "$WORK/f" 262144 $((1000000 - 262144)) 1000000
	assert_output "200 "
	[ "$(field '["crc32c"]')" = "$(crc_of "$WORK/f")" ]
	[ "$(field '["size"]')" = 1000000 ]
	curl -s "$(api)/res%2Ff?alt=media" | cmp - "$WORK/f"
	[ "$(fakegcs_stat upload_bytes_duplicate)" -eq 262144 ]
	run query_session "$uri" 1000000
	assert_output "200 "
	uri=$(start_session res/f "&ifGenerationMatch=0")
	[ -z "$uri" ]
}

@test "resumable: a total given by a status query completes; x-goog-hash on the last chunk is checked; 412 at completion" {
	fakegcs_start
	make_data "$WORK/f" 300000 f
	uri=$(start_session h)
	run put_chunk "$uri" "$WORK/f" 0 300000 '*'
	assert_output "308 bytes=0-262143"
	tail -c +262145 "$WORK/f" >"$WORK/rest"
	run curl -s -o "$WORK/out" -w '%{http_code}' -X PUT --data-binary @"$WORK/rest" \
		-H "x-goog-hash: crc32c=AAAAAA==" -H "Content-Range: bytes 262144-299999/300000" "$uri"
	assert_output 400
	uri=$(start_session h "&ifGenerationMatch=0")
	uri2=$(start_session h "&ifGenerationMatch=0")
	run put_chunk "$uri" "$WORK/f" 0 300000 300000
	assert_output "200 "
	run put_chunk "$uri2" "$WORK/f" 0 300000 300000
	assert_output --partial 412
	printf 'abc' >"$WORK/small"
	uri=$(start_session small)
	run put_chunk "$uri" "$WORK/small" 0 3 '*'
	assert_output "308 "
	run put_chunk "$uri" "$WORK/small" 0 3 3
	assert_output "200 "
	uri=$(start_session empty)
	run query_session "$uri" 0
	assert_output "200 "
	[ "$(field '["size"]')" = 0 ]
}

@test "downloads: ranges give 206, whole-object x-goog-hash and the generation in headers" {
	fakegcs_start
	make_data "$WORK/f" 100000 f
	run put_media d "$WORK/f"
	g=$(field '["generation"]')
	curl -s -D "$WORK/h" -o "$WORK/got" -H 'Range: bytes=1000-1999' "$(api)/d?alt=media"
	tr -d '\r' <"$WORK/h" >"$WORK/hh"
	grep -q '^HTTP/1.1 206' "$WORK/hh"
	grep -qi '^content-range: bytes 1000-1999/100000$' "$WORK/hh"
	grep -qi "^x-goog-hash: crc32c=$(crc_of "$WORK/f"),md5=$(md5_of "$WORK/f")$" "$WORK/hh"
	grep -qi "^x-goog-generation: $g$" "$WORK/hh"
	tail -c +1001 "$WORK/f" | head -c 1000 | cmp - "$WORK/got"
	curl -s -H 'Range: bytes=-10' "$FAKEGCS_URL/download/storage/v1/b/bkt/o/d?generation=$g" | cmp - <(tail -c 10 "$WORK/f")
	curl -s -H 'Range: bytes=99990-' "$(api)/d?alt=media" | cmp - <(tail -c 10 "$WORK/f")
	run curl -s -o /dev/null -w '%{http_code}' -H 'Range: bytes=100000-' "$(api)/d?alt=media"
	assert_output 416
	run curl -s -I "$(api)/d?alt=media"
	assert_output --partial "Content-Length: 100000"
	assert_output --partial "x-goog-generation: $g"
}

@test "--no-md5 gives objects with a crc32c and no md5Hash, like composite objects" {
	fakegcs_start --no-md5
	printf 123456789 >"$WORK/nine"
	run put_media nine "$WORK/nine"
	[ "$(field '["crc32c"]')" = 4waSgw== ]
	[ "$(field '.get("md5Hash")')" = null ]
	run curl -s -I "$(api)/nine?alt=media"
	assert_output --partial "x-goog-hash: crc32c=4waSgw=="$'\r'
}

@test "listing: prefix, delimiter, maxResults and pageToken" {
	fakegcs_start
	echo x >"$WORK/x"
	for n in a/1 a/2 a/b/3 c d/4 e; do put_media "$n" "$WORK/x" >/dev/null; done
	curl -s "$(api)?delimiter=/&maxResults=2" >"$WORK/out"
	[ "$(field '["prefixes"]')" = '["a/"]' ]
	[ "$(field '["items"][0]["name"]')" = c ]
	tok=$(field '["nextPageToken"]')
	curl -s "$(api)?delimiter=/&maxResults=2&pageToken=$tok" >"$WORK/out"
	[ "$(field '["prefixes"]')" = '["d/"]' ]
	[ "$(field '["items"][0]["name"]')" = e ]
	[ "$(field '.get("nextPageToken")')" = null ]
	curl -s "$(api)?prefix=a/&delimiter=/" >"$WORK/out"
	[ "$(fakegcs_json '[i["name"] for i in d["items"]]' <"$WORK/out")" = '["a/1", "a/2"]' ]
	[ "$(field '["prefixes"]')" = '["a/b/"]' ]
	curl -s "$(api)?prefix=a/" >"$WORK/out"
	[ "$(field '["items"].__len__()')" = 3 ]
	fakegcs_ctl POST config '{"page_size": 1}' >/dev/null
	curl -s "$(api)" >"$WORK/out"
	[ "$(field '["items"].__len__()')" = 1 ]
	[ "$(field '["nextPageToken"] != ""')" = true ]
}

@test "object names are percent-decoded in paths and round-trip exactly" {
	fakegcs_start
	echo weird >"$WORK/w"
	name='dir one/é+%#?&=.bin'
	run put_media "$name" "$WORK/w"
	assert_output 200
	[ "$(field '["name"]')" = "$name" ]
	curl -s "$(api)/$(enc "$name")?alt=media" | cmp - "$WORK/w"
	curl -s "$(api)?prefix=$(enc 'dir one/')" >"$WORK/out"
	[ "$(field '["items"][0]["name"]')" = "$name" ]
	run curl -s -o /dev/null -w '%{http_code}' -X DELETE "$(api)/$(enc "$name")"
	assert_output 204
}

@test "strict buckets: created by POST, 404 before, 409 twice, delete refused while not empty" {
	fakegcs_start --strict-buckets
	run curl -s -o /dev/null -w '%{http_code}' "$(api)"
	assert_output 404
	run curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' --data '{"name": "bkt"}' "$FAKEGCS_URL/storage/v1/b?project=p"
	assert_output 200
	run curl -s -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' --data '{"name": "bkt"}' "$FAKEGCS_URL/storage/v1/b?project=p"
	assert_output 409
	echo x >"$WORK/x"
	put_media x "$WORK/x"
	run curl -s -o /dev/null -w '%{http_code}' -X DELETE "$FAKEGCS_URL/storage/v1/b/bkt"
	assert_output 409
}

@test "keep-alive: many requests share one connection" {
	fakegcs_start
	echo x >"$WORK/x"
	put_media x "$WORK/x"
	before=$(fakegcs_stat connections)
	curl -s -o /dev/null -o /dev/null -o /dev/null -o /dev/null "$(api)/x" "$(api)/x?alt=media" "$(api)" "$(api)/nope"
	[ "$(fakegcs_stat connections)" -eq $((before + 2)) ]
}

@test "--data-dir keeps objects in files and frees them on overwrite and delete" {
	mkdir "$WORK/store"
	fakegcs_start --data-dir "$WORK/store"
	make_data "$WORK/f" 3000000 f
	uri=$(start_session big)
	run put_chunk "$uri" "$WORK/f" 0 2000000 '*'
	assert_output "308 bytes=0-1835007"
	run put_chunk "$uri" "$WORK/f" 1835008 $((3000000 - 1835008)) 3000000
	assert_output "200 "
	[ "$(field '["crc32c"]')" = "$(crc_of "$WORK/f")" ]
	[ "$(find "$WORK/store" -type f | wc -l)" -eq 1 ]
	curl -s "$(api)/big?alt=media" | cmp - "$WORK/f"
	put_media big "$WORK/f"
	[ "$(find "$WORK/store" -type f | wc -l)" -eq 1 ]
	curl -s -X DELETE "$(api)/big"
	[ "$(find "$WORK/store" -type f | wc -l)" -eq 0 ]
}

# ---- faults

@test "fault: bursts of 503 and 429 (with Retry-After), then normal answers" {
	fakegcs_start
	echo x >"$WORK/x"
	put_media o "$WORK/x"
	fakegcs_fault '[{"kind": "download", "action": "status", "status": 503, "times": 2},
		{"kind": "metadata", "action": "status", "status": 429, "retry_after": 1}]'
	run curl -s -o /dev/null -w '%{http_code}' "$(api)/o?alt=media"
	assert_output 503
	run curl -s -o /dev/null -w '%{http_code}' "$(api)/o?alt=media"
	assert_output 503
	run curl -s -o /dev/null -w '%{http_code}' "$(api)/o?alt=media"
	assert_output 200
	run curl -s -D - -o /dev/null "$(api)/o"
	assert_output --partial "429"
	assert_output --partial "Retry-After: 1"
	run curl -s -o /dev/null -w '%{http_code}' "$(api)/o"
	assert_output 200
	run put_media o2 "$WORK/x"
	assert_output 200
	[ "$(fakegcs_stat faults_fired)" -eq 3 ]
	[ "$(fakegcs_stat status.503)" -eq 2 ]
}

@test "fault: skip, times and an object glob choose which requests fail" {
	fakegcs_start
	echo x >"$WORK/x"
	for n in a.data b.meta c.meta; do put_media "$n" "$WORK/x" >/dev/null; done
	fakegcs_fault '{"kind": "download", "object": "*.meta", "skip": 1, "times": -1, "action": "status", "status": 500}'
	codes=""
	for n in a.data b.meta c.meta b.meta a.data; do
		codes="$codes $(curl -s -o /dev/null -w '%{http_code}' "$(api)/$n?alt=media")"
	done
	[ "$codes" = " 200 200 500 500 200" ]
}

@test "fault: a connection dropped mid-chunk keeps a 256 KiB multiple; the resumed upload resends nothing held" {
	fakegcs_start
	make_data "$WORK/f" 1500000 f
	uri=$(start_session r)
	fakegcs_fault '{"kind": "upload-chunk", "action": "drop-request", "after_bytes": 600000}'
	run put_chunk "$uri" "$WORK/f" 0 1048576 '*'
	assert_output --partial "000"
	run query_session "$uri"
	assert_output "308 bytes=0-524287"
	fakegcs_ctl DELETE stats
	run put_chunk "$uri" "$WORK/f" 524288 $((1500000 - 524288)) 1500000
	assert_output "200 "
	[ "$(field '["crc32c"]')" = "$(crc_of "$WORK/f")" ]
	[ "$(fakegcs_stat upload_bytes_duplicate)" -eq 0 ]
	[ "$(fakegcs_stat bytes_received)" -eq $((1500000 - 524288)) ]
}

@test "fault: a request whose whole body arrived takes effect and only the answer is lost" {
	fakegcs_start
	echo x >"$WORK/x"
	fakegcs_fault '{"kind": "upload-media", "action": "drop-request", "after_bytes": 1000000}'
	run put_media once "$WORK/x" "&ifGenerationMatch=0"
	assert_output 000
	run curl -s -o /dev/null -w '%{http_code}' "$(api)/once"
	assert_output 200
	run put_media once "$WORK/x" "&ifGenerationMatch=0"
	assert_output 412
}

@test "fault: a 308 that stores fewer bytes than were sent, even for the last chunk" {
	fakegcs_start
	make_data "$WORK/f" 700000 f
	uri=$(start_session s)
	fakegcs_fault '{"kind": "upload-chunk", "action": "short-308", "keep_bytes": 262144}'
	run put_chunk "$uri" "$WORK/f" 0 700000 700000
	assert_output "308 bytes=0-262143"
	run put_chunk "$uri" "$WORK/f" 262144 $((700000 - 262144)) 700000
	assert_output "200 "
	curl -s "$(api)/s?alt=media" | cmp - "$WORK/f"
}

@test "fault: one flipped byte in one download, ranges included" {
	fakegcs_start
	make_data "$WORK/f" 3000000 f
	put_media f "$WORK/f"
	fakegcs_fault '[{"kind": "download", "action": "flip", "offset": 2500000},
		{"kind": "download", "action": "flip", "offset": 2500000, "xor": 128}]'
	curl -s "$(api)/f?alt=media" >"$WORK/got"
	run cmp -l "$WORK/f" "$WORK/got"
	[ "${#lines[@]}" -eq 1 ]
	[ "$(awk '{print $1}' <<<"$output")" -eq 2500001 ]
	curl -s -H 'Range: bytes=2000000-' "$(api)/f?alt=media" >"$WORK/got"
	run cmp -l <(tail -c +2000001 "$WORK/f") "$WORK/got"
	[ "${#lines[@]}" -eq 1 ]
	[ "$(awk '{print $1}' <<<"$output")" -eq 500001 ]
	curl -s "$(api)/f?alt=media" | cmp - "$WORK/f"
}

@test "fault: a download cut after K bytes" {
	fakegcs_start
	make_data "$WORK/f" 3000000 f
	put_media f "$WORK/f"
	fakegcs_fault '{"kind": "download", "action": "drop-response", "after_bytes": 1234567}'
	run curl -s -o "$WORK/got" "$(api)/f?alt=media"
	[ "$status" -eq 18 ] || [ "$status" -eq 56 ]
	[ "$(stat -c %s "$WORK/got")" -eq 1234567 ]
	cmp "$WORK/got" <(head -c 1234567 "$WORK/f")
	curl -s "$(api)/f?alt=media" | cmp - "$WORK/f"
}

@test "fault: empty listing pages still carry a token to the same place" {
	fakegcs_start
	echo x >"$WORK/x"
	for n in a b c; do put_media "$n" "$WORK/x" >/dev/null; done
	fakegcs_fault '{"kind": "list", "action": "empty-pages", "times": 2}'
	curl -s "$(api)?maxResults=2" >"$WORK/out"
	[ "$(field '.get("items")')" = null ]
	tok=$(field '["nextPageToken"]')
	curl -s "$(api)?maxResults=2&pageToken=$tok" >"$WORK/out"
	[ "$(field '.get("items")')" = null ]
	tok=$(field '["nextPageToken"]')
	curl -s "$(api)?maxResults=2&pageToken=$tok" >"$WORK/out"
	[ "$(fakegcs_json '[i["name"] for i in d["items"]]' <"$WORK/out")" = '["a", "b"]' ]
}

@test "faults can be installed from a file at start, listed and cleared" {
	echo '{"faults": [{"kind": "metadata", "action": "status", "status": 502, "times": 5}]}' >"$WORK/faults.json"
	fakegcs_start --faults "$WORK/faults.json"
	run curl -s -o /dev/null -w '%{http_code}' "$(api)/x"
	assert_output 502
	fakegcs_ctl GET faults >"$WORK/out"
	[ "$(field '["faults"][0]["fired"]')" = 1 ]
	fakegcs_ctl DELETE faults
	run curl -s -o /dev/null -w '%{http_code}' "$(api)/x"
	assert_output 404
}

# ---- authentication

@test "auth: 401 without a token; the metadata server needs Metadata-Flavor; tokens expire" {
	fakegcs_start --require-auth --token-lifetime 5 --accept-token static-token
	run curl -s -o /dev/null -w '%{http_code}' "$(api)"
	assert_output 401
	run curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer static-token" "$(api)"
	assert_output 200
	run curl -s -o /dev/null -w '%{http_code}' "$FAKEGCS_URL/computeMetadata/v1/instance/service-accounts/default/token"
	assert_output 403
	curl -s -H 'Metadata-Flavor: Google' "$FAKEGCS_URL/computeMetadata/v1/instance/service-accounts/default/token" >"$WORK/out"
	# the token lives 5 s: it is used at once (sed, not Python), then it expires
	tok=$(sed -n 's/.*"access_token": *"\([^"]*\)".*/\1/p' "$WORK/out")
	run curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok" "$(api)"
	assert_output 200
	[ "$(field '["access_token"]')" = "$tok" ]
	[ "$(field '["token_type"]')" = Bearer ]
	[ "$(field '["expires_in"]')" = 5 ]
	run curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer nonsense" "$(api)"
	assert_output 401
	for _ in $(seq 300); do
		[ "$(curl -s -o "$WORK/out" -w '%{http_code}' -H "Authorization: Bearer $tok" "$(api)")" = 401 ] && break
		sleep 0.1
	done
	run curl -s -o "$WORK/out" -w '%{http_code}' -H "Authorization: Bearer $tok" "$(api)"
	assert_output 401
	grep -q expired "$WORK/out"
	fakegcs_ctl POST tokens '{"lifetime": 60}' >"$WORK/out"
	run curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(field '["access_token"]')" "$(api)"
	assert_output 200
}

@test "auth: the JWT bearer exchange verifies the RS256 signature and the claims" {
	mkdir "$WORK/k" "$WORK/other"
	fakegcs_make_key "$WORK/k"
	fakegcs_make_key "$WORK/other"
	fakegcs_start --require-auth --public-key "$WORK/k/pub.pem"
	aud="$FAKEGCS_URL/token"
	scope=https://www.googleapis.com/auth/devstorage.read_write
	exchange() {
		curl -s -o "$WORK/out" -w '%{http_code}' --data-urlencode 'grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer' \
			--data-urlencode "assertion=$1" "$FAKEGCS_URL/token"
	}
	run exchange "$(fakegcs_jwt "$WORK/k/key.pem" sa@p.iam "$aud" "$scope")"
	assert_output 200
	tok=$(field '["access_token"]')
	run curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok" "$(api)"
	assert_output 200
	run exchange "$(fakegcs_jwt "$WORK/other/key.pem" sa@p.iam "$aud" "$scope")"
	assert_output 400
	grep -q 'Invalid JWT Signature' "$WORK/out"
	run exchange "$(fakegcs_jwt "$WORK/k/key.pem" sa@p.iam https://oauth2.example/token "$scope")"
	assert_output 400
	run exchange "$(fakegcs_jwt "$WORK/k/key.pem" sa@p.iam "$aud" "$scope" -7200)"
	assert_output 400
	run exchange "$(fakegcs_jwt "$WORK/k/key.pem" sa@p.iam "$aud" https://www.googleapis.com/auth/userinfo.email)"
	assert_output 400
	good=$(fakegcs_jwt "$WORK/k/key.pem" sa@p.iam "$aud" "$scope")
	forged="${good%%.*}.$(printf '{"iss":"x","scope":"%s","aud":"%s","iat":1,"exp":9999999999}' "$scope" "$aud" | fakegcs_b64url).${good##*.}"
	run exchange "$forged"
	assert_output 400
}

@test "auth: the refresh-token grant checks the client and the token, and answers as Google does" {
	fakegcs_start --require-auth --token-lifetime 30 --refresh-token 'cid:sec:1//a:b'
	refresh() {
		curl -s -o "$WORK/out" -w '%{http_code}' --data-urlencode "grant_type=${4:-refresh_token}" \
			--data-urlencode "client_id=$1" --data-urlencode "client_secret=$2" \
			--data-urlencode "refresh_token=$3" "$FAKEGCS_URL/token"
	}
	run refresh cid sec 1//a:b
	assert_output 200
	[ "$(field '["expires_in"]')" = 30 ]
	run curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(field '["access_token"]')" "$(api)"
	assert_output 200
	run refresh cid sec 1//other
	assert_output 400
	[ "$(field '["error"]')" = invalid_grant ]
	run refresh cid wrong 1//a:b
	assert_output 401
	[ "$(field '["error"]')" = invalid_client ]
	run refresh nobody sec 1//a:b
	assert_output 401
	[ "$(field '["error_description"]')" = "The OAuth client was not found." ]
	run refresh cid sec ""
	assert_output 400
	[ "$(field '["error"]')" = invalid_request ]
	run refresh cid sec 1//a:b password
	assert_output 400
	[ "$(field '["error"]')" = unsupported_grant_type ]
	[ "$(fakegcs_stat tokens_issued)" -eq 1 ]
}

@test "rclone with a service-account key file authenticates through the token endpoint" {
	mkdir "$WORK/k"
	fakegcs_make_key "$WORK/k"
	fakegcs_start --require-auth --public-key "$WORK/k/pub.pem"
	gcs_sa_json "$WORK/k" "$WORK/sa.json"
	echo secret >"$WORK/s"
	run rclone --gcs-service-account-file "$WORK/sa.json" --gcs-bucket-policy-only \
		--gcs-endpoint "$FAKEGCS_URL/storage/v1/" --retries 1 copyto "$WORK/s" :gcs:bkt/s
	assert_success
	[ "$(fakegcs_stat tokens_issued)" -ge 1 ]
	[ "$(fakegcs_stat auth_failures)" -eq 0 ]
	run rc cat :gcs:bkt/s
	assert_failure
	[ "$(fakegcs_stat auth_failures)" -ge 1 ]
}

@test "chunked request bodies are accepted; a chunk inside what is stored only reports the range" {
	fakegcs_start
	make_data "$WORK/f" 600000 f
	run put_media c "$WORK/f" "" -H 'Transfer-Encoding: chunked'
	assert_output 200
	[ "$(field '["crc32c"]')" = "$(crc_of "$WORK/f")" ]
	uri=$(start_session c2)
	head -c 524288 "$WORK/f" >"$WORK/chunk"
	run curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'Transfer-Encoding: chunked' \
		-H 'Content-Range: bytes 0-524287/*' --data-binary @"$WORK/chunk" "$uri"
	assert_output 308
	run put_chunk "$uri" "$WORK/f" 0 262144 '*'
	assert_output "308 bytes=0-524287"
	run curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'Transfer-Encoding: chunked' \
		-H 'Content-Range: bytes 524288-599999/600000' --data-binary @"$WORK/chunk" "$uri"
	assert_output 400
	run put_chunk "$uri" "$WORK/f" 524288 75712 600000
	assert_output "200 "
	curl -s "$(api)/c2?alt=media" | cmp - "$WORK/f"
}

@test "resumable: the Content-Range forms of a stream of unknown length (A-*/*, A-B/*, A-*/N, */N) all work as on GCS" {
	fakegcs_start
	make_data "$WORK/f" 1000000 f
	# The whole stream in one request whose end is the end of the object.
	uri=$(start_session u1)
	run curl -s -o "$WORK/out" -w '%{http_code}' -X PUT -H 'Transfer-Encoding: chunked' \
		-H 'Content-Range: bytes 0-*/*' --data-binary @"$WORK/f" "$uri"
	assert_output 200
	[ "$(field '["size"]')" = 1000000 ]
	[ "$(field '["crc32c"]')" = "$(crc_of "$WORK/f")" ]
	# Cut mid-stream: what arrived is kept to a 256 KiB multiple, and the rest goes as N-*/*.
	uri=$(start_session u2)
	fakegcs_fault '{"kind": "upload-chunk", "action": "drop-request", "after_bytes": 600000}'
	run curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'Content-Range: bytes 0-*/*' --data-binary @"$WORK/f" "$uri"
	assert_output 000
	run query_session "$uri"
	assert_output "308 bytes=0-524287"
	tail -c +524289 "$WORK/f" >"$WORK/rest"
	run curl -s -o "$WORK/out" -w '%{http_code}' -X PUT -H 'Content-Range: bytes 524288-*/*' --data-binary @"$WORK/rest" "$uri"
	assert_output 200
	curl -s "$(api)/u2?alt=media" | cmp - "$WORK/f"
	# A-*/N whose body does not end at N is refused; A-B/* chunks, then */N with no data completes.
	uri=$(start_session u3)
	run curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'Content-Range: bytes 0-*/999999' --data-binary @"$WORK/f" "$uri"
	assert_output 400
	run curl -s -o "$WORK/out" -w '%{http_code}' -X PUT -H 'Content-Range: bytes 0-*/1000000' --data-binary @"$WORK/f" "$uri"
	assert_output 200
	uri=$(start_session u4)
	run put_chunk "$uri" "$WORK/f" 0 524288 '*'
	assert_output "308 bytes=0-524287"
	run put_chunk "$uri" "$WORK/f" 524288 475712 '*'
	assert_output "308 bytes=0-786431"
	run put_chunk "$uri" "$WORK/f" 786432 213568 '*'
	assert_output "308 bytes=0-786431"
	head -c 786432 "$WORK/f" >"$WORK/head"
	uri=$(start_session u5)
	run put_chunk "$uri" "$WORK/head" 0 786432 '*'
	assert_output "308 bytes=0-786431"
	run query_session "$uri" 786432
	assert_output "200 "
	[ "$(field '["crc32c"]')" = "$(crc_of "$WORK/head")" ]
	run curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'Content-Range: bytes 0-*/x' --data-binary @"$WORK/f" "$(start_session u6)"
	assert_output 400
}

# secs_between A B C: true when A <= B <= C (decimal seconds).
secs_between() { awk -v a="$1" -v b="$2" -v c="$3" 'BEGIN { exit !(a <= b && b <= c) }'; }

@test "--conn-rate caps each connection (one stream at the cap, four ranged GETs near four times it); --first-byte-latency delays answers; both settable by /_fake/config" {
	fakegcs_start --conn-rate 20M
	make_data "$WORK/f" 20000000 f
	t_up=$(curl -s --max-time 10 -o /dev/null -w '%{time_total}' --data-binary @"$WORK/f" "$(upload_url)?uploadType=media&name=f")
	t_one=$(curl -s --max-time 10 -o "$WORK/got" -w '%{time_total}' "$(api)/f?alt=media")
	cmp "$WORK/got" "$WORK/f"
	t0=$(date +%s.%N)
	pids=()
	for i in 0 1 2 3; do
		curl -s --max-time 10 -o "$WORK/part$i" -H "Range: bytes=$((i * 5000000))-$((i * 5000000 + 4999999))" "$(api)/f?alt=media" &
		pids+=($!)
	done
	wait "${pids[@]}"
	t_four=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
	cat "$WORK"/part[0-3] | cmp - "$WORK/f"
	echo "# upload $t_up s, one stream $t_one s, four ranges $t_four s" >&3
	secs_between 0.8 "$t_up" 3
	secs_between 0.8 "$t_one" 3
	secs_between 0.2 "$t_four" "$(awk -v a="$t_one" 'BEGIN { print a * 0.6 }')"
	fakegcs_ctl POST config '{"conn_rate": 0, "first_byte_latency": 0.3}' >"$WORK/out"
	[ "$(field '["first_byte_latency"]')" = 0.3 ]
	t=$(curl -s -o /dev/null -w '%{time_total}' "$(api)/f?alt=media")
	secs_between 0.3 "$t" 1.2
	t=$(curl -s -o /dev/null -w '%{time_total}' "$FAKEGCS_URL/_fake/stats")
	secs_between 0 "$t" 0.25
	run curl -s -o /dev/null -w '%{http_code}' -d '{"conn_rate": "fast"}' "$FAKEGCS_URL/_fake/config"
	assert_output 400
}

@test "--s3: the AWS CLI and mtc round-trip objects byte for byte (PutObject, multipart, ranged GETs), list and delete; checksums and If-None-Match are enforced" {
	local venv=${MTC_VENV:-$BATS_TEST_DIRNAME/../build/venv}
	[ -x "$venv/bin/aws" ] || skip "the AWS CLI is not installed: make venv (needs PyPI)"
	fakegcs_start --s3 --data-dir "$WORK"
	export AWS_ACCESS_KEY_ID=k AWS_SECRET_ACCESS_KEY=s AWS_REGION=us-east-1 \
		AWS_EC2_METADATA_DISABLED=true AWS_CONFIG_FILE="$WORK/aws.config" \
		AWS_SHARED_CREDENTIALS_FILE="$WORK/aws.credentials" AWS_ENDPOINT_URL_S3="$FAKEGCS_URL"
	local aws="$venv/bin/aws --endpoint-url $FAKEGCS_URL" store="$MTC_BIN/../unit/store"
	$aws s3 mb s3://bkt
	make_data "$WORK/big" $((21 * 1024 * 1024 + 777)) big
	make_data "$WORK/small" 4321 small
	# mtc writes (one PUT, a 4-part multipart upload); the AWS CLI reads and lists
	TEST_SLICES=1 "$store" s3://bkt put d/small "$WORK/small"
	TEST_SLICES=4 TEST_SLICE_THRESHOLD=8388608 "$store" s3://bkt put d/big "$WORK/big"
	[ "$(fakegcs_stat 'requests.PUT s3-mpu-part')" -eq 4 ]
	[ "$(fakegcs_stat 'requests.POST s3-mpu-complete')" -eq 1 ]
	$aws s3 cp s3://bkt/d/big "$WORK/cli.big"
	$aws s3 cp s3://bkt/d/small "$WORK/cli.small"
	cmp "$WORK/cli.big" "$WORK/big"
	cmp "$WORK/cli.small" "$WORK/small"
	run $aws s3 ls --recursive s3://bkt/d/
	assert_success
	assert_output --partial "$((21 * 1024 * 1024 + 777)) d/big"
	assert_output --partial "4321 d/small"
	# the AWS CLI writes (multipart, and one PUT under an odd name); mtc reads, in ranges
	$aws s3 cp "$WORK/big" s3://bkt/e/big
	$aws s3 cp "$WORK/small" "s3://bkt/e/we ird+%é"
	[ "$(fakegcs_stat 'requests.PUT s3-mpu-part')" -ge 6 ]
	TEST_SLICES=4 TEST_SLICE_THRESHOLD=8388608 "$store" s3://bkt get e/big "$WORK/mtc.big"
	TEST_SLICES=1 "$store" s3://bkt get "e/we ird+%é" "$WORK/mtc.small"
	cmp "$WORK/mtc.big" "$WORK/big"
	cmp "$WORK/mtc.small" "$WORK/small"
	[ "$(fakegcs_stat 'requests.GET s3-get')" -ge 6 ]
	# create-only: mtc's If-None-Match: * refuses other bytes under a taken name
	run env TEST_SLICES=1 "$store" s3://bkt put d/small "$WORK/big"
	assert_failure
	cmp <($aws s3 cp s3://bkt/d/small -) "$WORK/small"
	# a body that does not match its checksum is refused; an unsigned request is refused
	auth='Authorization: AWS4-HMAC-SHA256 Credential=k/20250101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00'
	run curl -s -w '%{http_code}' -X PUT -H "$auth" -H 'x-amz-checksum-crc32c: AAAAAA==' \
		--data-binary @"$WORK/small" "$FAKEGCS_URL/bkt/bad"
	assert_output --partial "<Code>BadDigest</Code>"
	assert_output --partial 400
	run curl -s -o /dev/null -w '%{http_code}' "$FAKEGCS_URL/bkt/d/small"
	assert_output 403
	run $aws s3 ls s3://bkt/bad
	assert_failure
	$aws s3 rm --recursive s3://bkt/
	run $aws s3 ls --recursive s3://bkt/
	assert_output ""
}
