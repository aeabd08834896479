# S3 for the tests: moto's server (PyPI moto[server], installed by `make venv`) on a
# free loopback port, with request signatures checked once moto_enforce_auth is called.

# aws_setup NAME: a fresh WORK (mtc-NAME.*) and HOME in it, and no AWS setting (credentials,
# profile, region, endpoint) from the caller's environment.
aws_setup() {
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/mtc-$1.XXXXXX")
	export HOME="$WORK/home"
	mkdir -p "$HOME"
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE \
		AWS_DEFAULT_PROFILE AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE AWS_REGION \
		AWS_DEFAULT_REGION AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_ENDPOINT_URL_STS \
		AWS_WEB_IDENTITY_TOKEN_FILE AWS_ROLE_ARN AWS_ROLE_SESSION_NAME \
		AWS_CONTAINER_CREDENTIALS_FULL_URI AWS_CONTAINER_CREDENTIALS_RELATIVE_URI \
		AWS_CONTAINER_AUTHORIZATION_TOKEN AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE \
		AWS_EC2_METADATA_SERVICE_ENDPOINT AWS_EC2_METADATA_DISABLED
}

# need_moto: skips the test, saying why, unless the venv has moto and boto3;
# sets MTC_PY to the venv's python.
need_moto() {
	local venv=${MTC_VENV:-$BATS_TEST_DIRNAME/../build/venv}
	[ -x "$venv/bin/moto_server" ] || skip "moto is not installed: make venv (needs PyPI)"
	"$venv/bin/python" -c 'import boto3' 2>/dev/null || skip "boto3 is not installed: make venv (needs PyPI)"
	MTC_PY=$venv/bin/python
	MOTO_SERVER=$venv/bin/moto_server
}

# need_boto3: skips the test, saying why, unless the venv has boto3; sets MTC_PY.
need_boto3() {
	local venv=${MTC_VENV:-$BATS_TEST_DIRNAME/../build/venv}
	"$venv/bin/python" -c 'import boto3' 2>/dev/null || skip "boto3 is not installed: make venv (needs PyPI)"
	MTC_PY=$venv/bin/python
}

# moto_start DIR: moto on loopback, its log in DIR/moto.log; sets MOTO_URL and
# MOTO_PID. Waits at most 30 s for it to answer (a bound, not a guess).
moto_start() {
	local port
	port=$(free_port)
	"$MOTO_SERVER" -H 127.0.0.1 -p "$port" >"$1/moto.log" 2>&1 &
	MOTO_PID=$!
	MOTO_URL="http://127.0.0.1:$port"
	for _ in $(seq 300); do
		curl -fsS -o /dev/null "$MOTO_URL/moto-api/data.json" 2>/dev/null && return 0
		kill -0 "$MOTO_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "# moto did not start:"; sed 's/^/#   /' "$1/moto.log"
	return 1
}

moto_stop() {
	[ -n "${MOTO_PID:-}" ] || return 0
	kill "$MOTO_PID" 2>/dev/null || true
	wait "$MOTO_PID" 2>/dev/null || true
	MOTO_PID=
}

# moto ARGS...: tests/s3_moto.py against the running moto (user, role, bucket, enforce).
moto() { "$MTC_PY" "$BATS_TEST_DIRNAME/s3_moto.py" "$MOTO_URL" "$@"; }
