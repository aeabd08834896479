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

# Writes N bytes of pseudo-random data (deterministic per seed) to FILE.
make_data() { openssl enc -aes-128-ctr -pass "pass:$3" -nosalt -pbkdf2 </dev/zero 2>/dev/null | head -c "$2" >"$1"; }

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
