#!/usr/bin/env bats
# s3:// credentials in the AWS SDKs' order (lib/store/s3_auth.c), each source against a
# real server: moto (S3 checking every signature, STS AssumeRoleWithWebIdentity) and
# tests/s3_creds_server.py (the container endpoint, IMDSv2). tests/unit/s3_client.c
# signs with what the chain found (lib/store/s3_sign.c).

load helpers
load s3

setup() {
	aws_setup s3-auth
	CLIENT="$MTC_BIN/../unit/s3_client"
	unset TEST_S3_ENDPOINT TEST_UNSIGNED
	# never the real instance metadata service, should a test fall through to it
	export AWS_EC2_METADATA_SERVICE_ENDPOINT="http://127.0.0.1:$(free_port)"
	CREDS_PID=
}

teardown() {
	moto_stop
	[ -z "$CREDS_PID" ] || { kill "$CREDS_PID" 2>/dev/null; wait "$CREDS_PID" 2>/dev/null || true; }
	rm -rf "$WORK"
}

# creds_server [options]: tests/s3_creds_server.py on loopback; sets CREDS_URL.
creds_server() {
	python3 "$BATS_TEST_DIRNAME/s3_creds_server.py" "$@" >"$WORK/creds.port" 2>"$WORK/creds.err" &
	CREDS_PID=$!
	for _ in $(seq 600); do
		[ -s "$WORK/creds.port" ] && break
		sleep 0.05
	done
	CREDS_URL="http://127.0.0.1:$(cat "$WORK/creds.port")"
	[ -s "$WORK/creds.port" ]
}

stat_of() { curl -fsS "$CREDS_URL/stats" | python3 -c "import json, sys; print(json.load(sys.stdin)['$1'])"; }

# moto_user NAME: a moto user allowed s3:*; sets KEY and SECRET.
moto_user() { read -r KEY SECRET < <(moto user "$1"); [ -n "$SECRET" ]; }

start_moto() {
	need_moto
	moto_start "$WORK"
	moto bucket bkt
	export TEST_S3_ENDPOINT=$MOTO_URL
}

@test "environment keys sign PUT and GET that moto checks; a wrong secret or key is refused" {
	start_moto
	moto_user alice
	moto enforce
	export AWS_ACCESS_KEY_ID=$KEY AWS_SECRET_ACCESS_KEY=$SECRET
	run "$CLIENT" put bkt 'dir/a b+c~!é(1).txt' hello
	assert_success
	assert_output 200
	run "$CLIENT" get bkt 'dir/a b+c~!é(1).txt'
	assert_output hello
	TEST_UNSIGNED=1 run "$CLIENT" put bkt streamed 'sent as UNSIGNED-PAYLOAD'
	assert_success
	wrong=${SECRET%?}x
	[ "$wrong" != "$SECRET" ] || wrong=${SECRET%?}y # a secret that ends in x stays right
	AWS_SECRET_ACCESS_KEY=$wrong run "$CLIENT" get bkt streamed
	assert_failure 1
	assert_output "s3_client: HTTP 403: SignatureDoesNotMatch"
	AWS_ACCESS_KEY_ID=AKIAUNKNOWNKEY000000 run "$CLIENT" get bkt streamed
	assert_failure 1
	assert_output "s3_client: HTTP 403: InvalidAccessKeyId"
	run "$CLIENT" get bkt streamed
	assert_output 'sent as UNSIGNED-PAYLOAD'
}

@test "web identity (EKS IRSA): the token exchanged at moto's STS; its session credentials sign for S3" {
	start_moto
	arn=$(moto role irsa)
	echo 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6bWw6dHJhaW4ifQ.c2ln' >"$WORK/token"
	export AWS_ENDPOINT_URL_STS=$MOTO_URL AWS_WEB_IDENTITY_TOKEN_FILE=$WORK/token AWS_ROLE_ARN=$arn
	moto enforce 1 # STS's AssumeRoleWithWebIdentity is unsigned; moto would ask a signature of it
	run "$CLIENT" put bkt irsa.txt from-a-pod
	assert_success
	moto enforce 1
	run "$CLIENT" creds
	assert_success
	assert_output --regexp "^web identity \(\\\$AWS_WEB_IDENTITY_TOKEN_FILE, role '$arn'\) ASIA[A-Z0-9]+ [^ -][^ ]+ [0-9]+$"
	moto enforce 1
	run "$CLIENT" get bkt irsa.txt
	assert_output from-a-pod
}

@test "web identity: a refusal names STS's code, a missing role or token file names what is missing" {
	start_moto
	echo tok >"$WORK/token"
	export AWS_ENDPOINT_URL_STS=$MOTO_URL AWS_WEB_IDENTITY_TOKEN_FILE=$WORK/token
	run "$CLIENT" creds
	assert_failure 1
	assert_output 's3_client: $AWS_WEB_IDENTITY_TOKEN_FILE is set but $AWS_ROLE_ARN is not'
	export AWS_ROLE_ARN=arn:aws:iam::123456789012:role/r AWS_WEB_IDENTITY_TOKEN_FILE=$WORK/none
	run "$CLIENT" creds
	assert_failure 1
	assert_output --partial "cannot read web identity token file '$WORK/none': No such file or directory"
	export AWS_WEB_IDENTITY_TOKEN_FILE=$WORK/token AWS_ENDPOINT_URL_STS="http://127.0.0.1:$(free_port)"
	run "$CLIENT" creds
	assert_failure 1
	assert_output --partial "s3_client: web identity: AssumeRoleWithWebIdentity at 'http://127.0.0.1:"
	assert_output --partial "for role 'arn:aws:iam::123456789012:role/r': "
}

@test "the container endpoint (EKS Pod Identity): the token file read as Authorization at each refresh" {
	echo pod-identity-token-1 >"$WORK/eks-token"
	creds_server --token-file "$WORK/eks-token" --lifetime 60
	export AWS_CONTAINER_CREDENTIALS_FULL_URI=$CREDS_URL/creds \
		AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=$WORK/eks-token
	run "$CLIENT" creds
	assert_success
	assert_output --regexp "^container endpoint '$CREDS_URL/creds' ASIATEST1 token1 [0-9]+$"
	# the agent rotates the token: the next refresh reads the new one
	echo pod-identity-token-2 >"$WORK/eks-token"
	run "$CLIENT" creds 2
	assert_success
	assert_line --index 1 --regexp " ASIATEST3 token3 "
	[ "$(stat_of refused)" -eq 0 ]
	AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE= AWS_CONTAINER_AUTHORIZATION_TOKEN=wrong run "$CLIENT" creds
	assert_failure 1
	assert_output "s3_client: container endpoint '$CREDS_URL/creds': HTTP 401: bad Authorization"
	[ "$(stat_of refused)" -eq 1 ]
	AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE= AWS_CONTAINER_AUTHORIZATION_TOKEN=pod-identity-token-2 run "$CLIENT" creds
	assert_success
}

@test "a plain-http container endpoint on a host that is not loopback or the agent's is refused" {
	AWS_CONTAINER_CREDENTIALS_FULL_URI=http://198.51.100.7/creds run "$CLIENT" creds
	assert_failure 1
	assert_output --partial "container endpoint 'http://198.51.100.7/creds' is plain http to a host that is neither loopback nor the ECS or EKS agent: refused"
}

@test "IMDSv2: a session token first, then the role and its credentials; the server refuses a GET without it" {
	creds_server
	run curl -s -o /dev/null -w '%{http_code}' "$CREDS_URL/latest/meta-data/iam/security-credentials/"
	assert_output 401
	AWS_EC2_METADATA_SERVICE_ENDPOINT=$CREDS_URL run "$CLIENT" creds
	assert_success
	assert_output --regexp "^instance metadata '$CREDS_URL' ASIATEST1 token1 [0-9]+$"
	[ "$(stat_of imds_tokens)" -eq 1 ]
	[ "$(stat_of refused)" -eq 1 ]
	AWS_EC2_METADATA_SERVICE_ENDPOINT=$CREDS_URL AWS_EC2_METADATA_DISABLED=true run "$CLIENT" creds
	assert_failure 1
	assert_output --partial "instance metadata disabled (\$AWS_EC2_METADATA_DISABLED)"
	[ "$(stat_of imds_tokens)" -eq 1 ]
}

@test "temporary credentials within 5 minutes of their expiry are fetched again; others are kept" {
	creds_server --lifetime 240
	export AWS_CONTAINER_CREDENTIALS_FULL_URI=$CREDS_URL/creds
	run "$CLIENT" creds 2
	assert_success
	assert_line --index 0 --partial " ASIATEST1 token1 "
	assert_line --index 1 --partial " ASIATEST2 token2 "
	[ "$(stat_of issued)" -eq 2 ]
	kill "$CREDS_PID"
	creds_server --lifetime 3600
	AWS_CONTAINER_CREDENTIALS_FULL_URI=$CREDS_URL/creds run "$CLIENT" creds 3
	assert_success
	[ "$(echo "$output" | grep -c ' ASIATEST1 token1 ')" -eq 3 ]
	[ "$(stat_of issued)" -eq 1 ]
}

@test "threads asking at once share one fetch: the refresh is under a lock" {
	creds_server --lifetime 3600
	AWS_CONTAINER_CREDENTIALS_FULL_URI=$CREDS_URL/creds run "$CLIENT" creds 5 16
	assert_success
	[ "${#lines[@]}" -eq 80 ]
	[ "$(echo "$output" | grep -c ' ASIATEST1 token1 ')" -eq 80 ]
	[ "$(stat_of issued)" -eq 1 ]
}

@test "a failed refresh keeps credentials that have not expired yet, and is not retried at every request" {
	creds_server --lifetime 240 --fail-after 1
	export AWS_CONTAINER_CREDENTIALS_FULL_URI=$CREDS_URL/creds
	run "$CLIENT" creds 3
	assert_success
	[ "$(echo "$output" | grep -c ' ASIATEST1 token1 ')" -eq 3 ]
	# the 500 is retried within the first refresh, then answered again for 30 s
	failed=$(stat_of failed)
	[ "$failed" -ge 1 ] && [ "$failed" -le 3 ]
}

@test "shared files: the profile's keys, AWS_PROFILE choosing, the file variables naming them" {
	start_moto
	moto_user bob
	moto enforce
	mkdir -p "$HOME/.aws"
	printf '[default]\naws_access_key_id = AKIAWRONGKEY00000000\naws_secret_access_key = nope\n\n[dev]\naws_access_key_id = %s\naws_secret_access_key = %s\n' \
		"$KEY" "$SECRET" >"$HOME/.aws/credentials"
	run "$CLIENT" put bkt p default-profile
	assert_failure 1
	assert_output "s3_client: HTTP 403: InvalidAccessKeyId"
	AWS_PROFILE=dev run "$CLIENT" put bkt p dev-profile
	assert_success
	# keys in the config file, under [profile NAME], as `aws configure --profile` may leave them
	printf '[profile ops]\nregion = us-east-1\naws_access_key_id = %s\naws_secret_access_key = %s\n' \
		"$KEY" "$SECRET" >"$WORK/config"
	AWS_CONFIG_FILE=$WORK/config AWS_PROFILE=ops run "$CLIENT" get bkt p
	assert_output dev-profile
	mv "$HOME/.aws/credentials" "$WORK/creds"
	AWS_SHARED_CREDENTIALS_FILE=$WORK/creds AWS_PROFILE=dev run "$CLIENT" creds
	assert_output "profile 'dev' $KEY - 0"
}

@test "shared files: a missing AWS_PROFILE, a half key pair and what mtc does not run are errors" {
	mkdir -p "$HOME/.aws"
	printf '[a]\naws_access_key_id = AKIA\n[b]\ncredential_process = /bin/echo\n[c]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = a\n' >"$HOME/.aws/credentials"
	AWS_PROFILE=nope run "$CLIENT" creds
	assert_failure 1
	assert_output "s3_client: profile 'nope' (\$AWS_PROFILE) is in neither '$HOME/.aws/credentials' nor '$HOME/.aws/config'"
	AWS_PROFILE=a run "$CLIENT" creds
	assert_output "s3_client: profile 'a' has aws_access_key_id but not aws_secret_access_key"
	AWS_PROFILE=b run "$CLIENT" creds
	assert_output --partial "s3_client: profile 'b' uses credential_process, which mtc does not run"
	AWS_PROFILE=c run "$CLIENT" creds
	assert_output --partial "s3_client: profile 'c' uses source_profile, which mtc does not run"
	AWS_SECRET_ACCESS_KEY=x run "$CLIENT" creds
	assert_output 's3_client: $AWS_SECRET_ACCESS_KEY is set but $AWS_ACCESS_KEY_ID is not'
}

@test "the order: environment, web identity, shared files, container endpoint, instance metadata" {
	creds_server
	mkdir -p "$HOME/.aws"
	printf '[default]\naws_access_key_id = AKIAFROMFILE\naws_secret_access_key = s\n' >"$HOME/.aws/credentials"
	echo tok >"$WORK/token"
	export AWS_EC2_METADATA_SERVICE_ENDPOINT=$CREDS_URL AWS_CONTAINER_CREDENTIALS_FULL_URI=$CREDS_URL/creds \
		AWS_WEB_IDENTITY_TOKEN_FILE=$WORK/token AWS_ROLE_ARN=arn:aws:iam::1:role/r \
		AWS_ACCESS_KEY_ID=AKIAFROMENV AWS_SECRET_ACCESS_KEY=s
	run "$CLIENT" creds
	assert_output "environment AKIAFROMENV - 0"
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
	export AWS_ENDPOINT_URL_STS="http://127.0.0.1:$(free_port)"
	run "$CLIENT" creds
	assert_output --partial "web identity: AssumeRoleWithWebIdentity at '$AWS_ENDPOINT_URL_STS'"
	unset AWS_WEB_IDENTITY_TOKEN_FILE
	run "$CLIENT" creds
	assert_output "profile 'default' AKIAFROMFILE - 0"
	rm "$HOME/.aws/credentials"
	run "$CLIENT" creds
	assert_output --regexp "^container endpoint '$CREDS_URL/creds' ASIATEST1 "
	unset AWS_CONTAINER_CREDENTIALS_FULL_URI
	run "$CLIENT" creds
	assert_output --regexp "^instance metadata '$CREDS_URL' ASIATEST2 "
}

@test "no credentials at all: one line naming every source tried and what to do, at once" {
	start=$EPOCHREALTIME
	run "$CLIENT" creds
	elapsed=$(python3 -c "print(int($EPOCHREALTIME - $start))")
	assert_failure 1
	assert_output --partial "s3_client: no s3:// credentials: \$AWS_ACCESS_KEY_ID unset, \$AWS_WEB_IDENTITY_TOKEN_FILE unset, no keys for profile 'default' in $HOME/.aws/credentials or its config file, \$AWS_CONTAINER_CREDENTIALS_FULL_URI and _RELATIVE_URI unset, instance metadata '$AWS_EC2_METADATA_SERVICE_ENDPOINT' unreachable (Failed to connect to 127.0.0.1 port ${AWS_EC2_METADATA_SERVICE_ENDPOINT##*:}"
	assert_output --partial "); set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run 'aws configure'"
	[ "${#lines[@]}" -eq 1 ]
	[ "$elapsed" -lt 5 ]
}
