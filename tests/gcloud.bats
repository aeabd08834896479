#!/usr/bin/env bats
# Google's documented gcloud commands on mtc's backups, against the fake GCS server:
# `gcloud storage ls`, a pin written with `gcloud storage cp -`, downloads, and uploads in
# gcloud's multipart and resumable forms (tests/fakegcs/README.md).

load helpers
load fakegcs/fakegcs
load backup

setup() {
	command -v gcloud >/dev/null || skip "gcloud (Google Cloud SDK) is not installed"
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/mtc-gcloud.XXXXXX")
	export MTC_GCS_RETRY_BASE_MS=20
	unset MTC_GCS_ENDPOINT GOOGLE_APPLICATION_CREDENTIALS MTC_GCS_TOKEN
	fakegcs_start
	# gcloud as a workstation runs it, its storage API pointed at the server, its own
	# configuration in $WORK (no login of the one running the tests is used)
	printf gcloud-token >"$WORK/token"
	export CLOUDSDK_CONFIG="$WORK/gcloud" CLOUDSDK_CORE_DISABLE_PROMPTS=1 \
		CLOUDSDK_CORE_PROJECT=test-project CLOUDSDK_AUTH_ACCESS_TOKEN_FILE="$WORK/token" \
		CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE="$FAKEGCS_URL/" \
		CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK=1 CLOUDSDK_CORE_DISABLE_USAGE_REPORTING=1
}

teardown() {
	fakegcs_stop
	rm -rf "${WORK:-/nonexistent}"
}

# files DIR: each regular file's digest and path below DIR (an object store keeps no empty dir).
files() { (cd "$1" && find . -type f -exec sha256sum {} + | sort -k2); }

# backup STEP NAME: node 0's step STEP backed up to gs://bkt as NAME; prints its hash.
backup() {
	local h
	config "$WORK/cfg0" job 0 1
	h=$(saved_step "$WORK/n0" job "$1" 0 "seed$1")
	mtc-backup --dir "$WORK/n0" --config "$WORK/cfg0" --step "$1" --to gs://bkt --name "$2" >/dev/null
	echo "$h"
}

@test "gcloud storage ls gs://BUCKET/JOB/ lists mtc's backups and restore.version" {
	backup 100 2025-06-30_14-00 >/dev/null
	backup 200 2025-06-30_14-30 >/dev/null
	mtc-restore --pin gs://bkt --job job 2025-06-30_14-00
	run gcloud storage ls gs://bkt/job/
	assert_success
	assert_output "gs://bkt/job/restore.version
gs://bkt/job/2025-06-30_14-00/
gs://bkt/job/2025-06-30_14-30/"
	run gcloud storage cat gs://bkt/job/restore.version
	assert_success
	assert_output 2025-06-30_14-00
}

@test "echo NAME | gcloud storage cp - gs://BUCKET/JOB/restore.version pins the restore to that step" {
	h100=$(backup 100 2025-06-30_14-00)
	backup 200 2025-06-30_14-30 >/dev/null
	run mtc-restore --from gs://bkt --job job --out "$WORK/newest"
	assert_success
	[ -d "$WORK/newest/200" ]
	echo 2025-06-30_14-00 | gcloud storage cp - gs://bkt/job/restore.version
	[ "$(fakegcs_stat 'requests.POST upload-init')" -ge 1 ]
	run mtc-lkg --backups gs://bkt --job job
	assert_success
	assert_output --partial "restore.version: 2025-06-30_14-00"
	run mtc-restore --from gs://bkt --job job --out "$WORK/pinned"
	assert_success
	assert_equal "$(ls "$WORK/pinned")" 100
	diff -r "$WORK/n0/$h100.data" "$WORK/pinned/100"
	gcloud storage rm gs://bkt/job/restore.version
	run mtc-restore --from gs://bkt --job job --out "$WORK/unpinned"
	assert_success
	assert_equal "$(ls "$WORK/unpinned")" 200
}

@test "gcloud storage cp -r downloads a backup byte for byte" {
	h=$(backup 100 2025-06-30_14-00)
	mkdir "$WORK/dl"
	run gcloud storage cp -r gs://bkt/job/2025-06-30_14-00 "$WORK/dl"
	assert_success
	assert_equal "$(files "$WORK/dl/2025-06-30_14-00/$h.data")" "$(files "$WORK/n0/$h.data")"
	assert_equal "$(cat "$WORK/dl/2025-06-30_14-00/job-s100-n0-w0.meta")" "$h"
}

@test "a backup copied by gcloud (multipart and resumable uploads) verifies and restores" {
	config "$WORK/cfg0" job 0 1
	# no empty directory: an object store holds none, so gcloud's copy would not either
	mkdir -p "$WORK/n0/100/sub"
	make_data "$WORK/n0/100/weights" 3000000 seed
	echo note >"$WORK/n0/100/sub/note.txt"
	h=$(mtc-replicate digest "$WORK/n0/100" | awk '{print $1}')
	mv "$WORK/n0/100" "$WORK/n0/$h.data"
	printf %s "$h" >"$WORK/n0/job-s100-n0-w0.meta"
	mtc-backup --dir "$WORK/n0" --config "$WORK/cfg0" --step 100 --to gs://bkt --name 2025-06-30_14-00 >/dev/null
	mkdir "$WORK/dl"
	gcloud storage cp -r gs://bkt/job/2025-06-30_14-00 "$WORK/dl"
	# over gcloud's resumable threshold the weights go in a resumable session, the rest multipart
	CLOUDSDK_STORAGE_RESUMABLE_THRESHOLD=1000000 \
		gcloud storage cp -r "$WORK/dl/2025-06-30_14-00" gs://bkt/copy/job/
	[ "$(fakegcs_stat 'requests.POST upload-multipart')" -ge 2 ]
	[ "$(fakegcs_stat 'requests.POST upload-init')" -ge 1 ]
	run mtc-restore --from gs://bkt/copy --job job --name 2025-06-30_14-00 --verify
	assert_success
	run mtc-restore --from gs://bkt/copy --job job --name 2025-06-30_14-00 --out "$WORK/out"
	assert_success
	diff -r "$WORK/n0/$h.data" "$WORK/out/100"
}
