#!/usr/bin/env bats
# gs:// credentials a workstation has: gcloud's application-default login (a user's
# refresh token) found where gcloud leaves it or named by GOOGLE_APPLICATION_CREDENTIALS,
# and the error when there are none (lib/gcs_auth.c), against the fake GCS server.

load helpers
load fakegcs/fakegcs
load backup

setup() {
	gcs_setup gcs-auth
	export HOME="$WORK/home"
	unset CLOUDSDK_CONFIG MTC_GCS_METADATA_WAIT
	mkdir -p "$HOME"
}

teardown() {
	fakegcs_stop
	rm -rf "$WORK"
}

# login FILE [REFRESH_TOKEN] [TYPE]: a credentials file as
# `gcloud auth application-default login` writes it, its token_uri the fake's.
login() {
	mkdir -p "$(dirname "$1")"
	printf '{"account": "", "client_id": "cid.apps.example", "client_secret": "s3cret",
	  "quota_project_id": "p", "refresh_token": "%s", "token_uri": "%s",
	  "type": "%s", "universe_domain": "googleapis.com"}\n' \
		"${2:-1//rtok}" "$FAKEGCS_URL/token" "${3:-authorized_user}" >"$1"
}

# start_fake [options]: the fake requiring auth, knowing the login's refresh
# token; requests go to it with authentication (not as an emulator).
start_fake() {
	fakegcs_start --require-auth --refresh-token 'cid.apps.example:s3cret:1//rtok' "$@"
	unset STORAGE_EMULATOR_HOST
	export MTC_GCS_ENDPOINT="$FAKEGCS_URL"
}

closed_port() { free_port; }

# put_with_one_token VAR=VALUE: with VAR so, a put succeeds on one token, no request refused.
put_with_one_token() {
	echo x >"$WORK/x"
	run env "$1" "$STORE" gs://bkt put x "$WORK/x"
	assert_success
	[ "$(fakegcs_stat tokens_issued)" -eq 1 ]
	[ "$(fakegcs_stat auth_failures)" -eq 0 ]
}

@test "a gcloud login in ~/.config/gcloud lets mtc-backup, mtc-lkg and a workstation restore work with no other credentials" {
	start_fake
	login "$HOME/.config/gcloud/application_default_credentials.json"
	config "$WORK/cfg" job 0 1
	h=$(saved_step "$WORK/local" job 3 0 a)
	run mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 3 --to gs://bkt --name 2025-01-01_00-00
	assert_success
	run mtc-lkg --backups gs://bkt --job job --json
	assert_success
	echo "$output" | fakegcs_json 'd["backups"][0]["state"]' | grep -qx valid
	run mtc-restore --from gs://bkt --job job --name 2025-01-01_00-00 --out "$WORK/ckpt"
	assert_success
	diff -r "$WORK/local/$h.data" "$WORK/ckpt/3"
	[ "$(fakegcs_stat tokens_issued)" -ge 3 ]
	[ "$(fakegcs_stat auth_failures)" -eq 0 ]
}

@test "CLOUDSDK_CONFIG names gcloud's directory instead of ~/.config/gcloud" {
	start_fake
	login "$HOME/.config/gcloud/application_default_credentials.json" 1//not-this-one
	login "$WORK/gcloud/application_default_credentials.json"
	put_with_one_token CLOUDSDK_CONFIG="$WORK/gcloud"
}

@test "GOOGLE_APPLICATION_CREDENTIALS naming a user's login works, and comes before gcloud's file" {
	start_fake
	login "$HOME/.config/gcloud/application_default_credentials.json" 1//not-this-one
	login "$WORK/user.json"
	put_with_one_token GOOGLE_APPLICATION_CREDENTIALS="$WORK/user.json"
	login "$WORK/other.json" 1//rtok external_account
	GOOGLE_APPLICATION_CREDENTIALS="$WORK/other.json" run mtc-lkg --backups gs://bkt --job job
	assert_failure 1
	assert_output --partial "credentials '$WORK/other.json' are of type 'external_account': mtc takes service_account or authorized_user"
}

@test "a user's token is refreshed before it expires, within one run" {
	start_fake --token-lifetime 62
	login "$HOME/.config/gcloud/application_default_credentials.json"
	mkdir "$WORK/t"
	for i in 1 2 3 4 5 6; do echo "$i" >"$WORK/t/$i"; done
	fakegcs_fault '{"kind": "upload-multipart", "action": "delay", "seconds": 0.7, "times": -1}'
	TEST_PARALLEL=1 run "$STORE" gs://bkt puttree t "$WORK/t"
	assert_success
	[ "$(fakegcs_stat tokens_issued)" -ge 2 ]
	[ "$(fakegcs_stat auth_failures)" -eq 0 ]
	run "$STORE" gs://bkt cat t/6
	assert_output 6
}

@test "a refused login fails at once, naming the file, Google's answer and how to log in again" {
	start_fake
	f="$HOME/.config/gcloud/application_default_credentials.json"
	login "$f" 1//revoked
	run mtc-lkg --backups gs://bkt --job job
	assert_failure 1
	assert_output --partial "user credentials '$f': token request at '$FAKEGCS_URL/token': HTTP 400: invalid_grant"
	assert_output --partial "gcloud auth application-default login"
	[ "${#lines[@]}" -eq 1 ]
	[ "$(fakegcs_stat 'requests.POST token')" -eq 1 ]
	sed -i 's/s3cret/wrong/' "$f"
	run mtc-lkg --backups gs://bkt --job job
	assert_failure 1
	assert_output --partial "HTTP 401: invalid_client: Unauthorized"
}

@test "no credentials at all: one line naming every source tried and what to do, without waiting per request" {
	export GCE_METADATA_HOST="127.0.0.1:$(closed_port)" MTC_GCS_METADATA_WAIT=1
	config "$WORK/cfg" job 0 1
	saved_step "$WORK/local" job 3 0 a >/dev/null
	start=$EPOCHREALTIME
	run mtc-backup --dir "$WORK/local" --config "$WORK/cfg" --step 3 --to gs://bkt --name 2025-01-01_00-00
	elapsed=$(python3 -c "print(int($EPOCHREALTIME - $start))")
	assert_failure 1
	assert_output --partial "no gs:// credentials: no --gcs-token-file, \$MTC_GCS_TOKEN unset, \$GOOGLE_APPLICATION_CREDENTIALS unset, no gcloud login at $HOME/.config/gcloud/application_default_credentials.json, metadata server unreachable ("
	assert_output --partial 'MTC_GCS_TOKEN=$(gcloud auth print-access-token)'
	[ "${#lines[@]}" -eq 1 ]
	[ "$elapsed" -lt 6 ]
}

@test "a metadata host that does not resolve is a workstation: no waiting" {
	grep -qs '^Google' /sys/class/dmi/id/product_name && skip "on Google Cloud a name that does not resolve is retried"
	export GCE_METADATA_HOST=metadata.invalid MTC_GCS_METADATA_WAIT=20
	start=$EPOCHREALTIME
	run mtc-lkg --backups gs://bkt --job job
	elapsed=$(python3 -c "print(int($EPOCHREALTIME - $start))")
	assert_failure 1
	assert_output --partial "metadata server unreachable ("
	[ "$elapsed" -lt 10 ]
}
