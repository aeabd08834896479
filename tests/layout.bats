#!/usr/bin/env bats
# The shape of lib/ (lib/README.md): no two files that need each other.

load helpers

archive() { echo "$BATS_TEST_DIRNAME/../${MTC_BUILD:-build/release}/lib/libmtc.a"; }

@test "lib: no cycle between the objects of libmtc.a but an object store's API and its uploads" {
	[ -f "$(archive)" ] || skip "no $(archive)"
	run python3 "$BATS_TEST_DIRNAME/lib_cycles.py" "$(archive)" \
		--allow "store_gcs.o store_gcs_put.o" --allow "store_s3.o store_s3_put.o store_s3_uploads.o"
	assert_success
}

@test "lib: the HTTP client layer knows nothing of the peers" {
	run grep -n '#include "peer/' "$BATS_TEST_DIRNAME/../lib/http.c" "$BATS_TEST_DIRNAME/../lib/http.h"
	assert_failure
}

@test "lib: the local dir's names are written in local_dir.h alone" {
	cd "$BATS_TEST_DIRNAME/.."
	run grep -rnE '"(replicator\.(yaml|errors|failed|prerestore)|jax-init-info\.txt|\.mtc-(status|pinned|trash|upload|shape))' \
		--include='*.c' --include='*.h' --exclude=local_dir.h lib cmd
	assert_failure
	refute_output
}

@test "lib: the tables hash with hash.c alone" {
	cd "$BATS_TEST_DIRNAME/.."
	run grep -rnE '1099511628211|146959810393466|0xFF51AFD7ED558CCD' --include='*.c' --exclude=hash.c lib
	assert_failure
	refute_output
}

@test "lib: the retry constants are chosen in backoff.c alone" {
	cd "$BATS_TEST_DIRNAME/.."
	run grep -rnE 'mtc_retry_init\([^,]*, *[0-9]|backoff_(base|cap) *= *[0-9]' --include='*.c' lib
	assert_failure
	refute_output
}
