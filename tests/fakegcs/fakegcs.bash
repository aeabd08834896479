# Helpers for bats tests that talk to the fake GCS server (load with `load fakegcs/fakegcs`).
#   fakegcs_start [server options...]   start on 127.0.0.1 with a free port; sets FAKEGCS_PID,
#                                       FAKEGCS_PORT, FAKEGCS_URL, FAKEGCS_HOST and exports
#                                       STORAGE_EMULATOR_HOST=$FAKEGCS_URL
#   fakegcs_stop                        stop it (call from teardown)
#   fakegcs_ctl METHOD PATH [JSON]      call the control API /_fake/PATH, print the answer
#   fakegcs_fault JSON                  install one fault (or a JSON list of them)
#   fakegcs_stat KEY                    one counter, e.g. bytes_received or 'requests.PUT upload-chunk'
#   fakegcs_json EXPR                   evaluate a Python expression over stdin's JSON as `d`
#   fakegcs_make_key DIR                RSA key pair DIR/key.pem (private) and DIR/pub.pem
#   fakegcs_jwt KEY ISS AUD SCOPE [IAT_SHIFT] [LIFETIME]   an RS256 JWT assertion, signed by openssl

FAKEGCS_SERVER="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/server.py"

fakegcs_start() {
	local dir="${BATS_TEST_TMPDIR:-${BATS_FILE_TMPDIR:-${TMPDIR:-/tmp}}}"
	local portfile="$dir/fakegcs.port.$$.$RANDOM"
	FAKEGCS_LOG="${FAKEGCS_LOG:-$dir/fakegcs.log}"
	rm -f "$portfile"
	python3 "$FAKEGCS_SERVER" --host 127.0.0.1 --port 0 --port-file "$portfile" \
		--exit-with "$$" "$@" >>"$FAKEGCS_LOG" 2>&1 3>&- &
	FAKEGCS_PID=$!
	local i
	for ((i = 0; i < 200; i++)); do
		[ -s "$portfile" ] && break
		kill -0 "$FAKEGCS_PID" 2>/dev/null || break
		sleep 0.05
	done
	if [ ! -s "$portfile" ]; then
		echo "fakegcs: server did not start; log:" >&2
		cat "$FAKEGCS_LOG" >&2
		return 1
	fi
	FAKEGCS_PORT=$(cat "$portfile")
	rm -f "$portfile"
	FAKEGCS_HOST="127.0.0.1:$FAKEGCS_PORT"
	FAKEGCS_URL="http://$FAKEGCS_HOST"
	export FAKEGCS_PID FAKEGCS_PORT FAKEGCS_HOST FAKEGCS_URL
	export STORAGE_EMULATOR_HOST="$FAKEGCS_URL"
	for ((i = 0; i < 100; i++)); do
		curl -fsS -o /dev/null --max-time 2 "$FAKEGCS_URL/_fake/health" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "fakegcs: server on port $FAKEGCS_PORT does not answer" >&2
	return 1
}

fakegcs_stop() {
	[ -n "${FAKEGCS_PID:-}" ] || return 0
	kill "$FAKEGCS_PID" 2>/dev/null || true
	local i
	for ((i = 0; i < 100; i++)); do
		kill -0 "$FAKEGCS_PID" 2>/dev/null || break
		sleep 0.05
	done
	kill -9 "$FAKEGCS_PID" 2>/dev/null || true
	wait "$FAKEGCS_PID" 2>/dev/null || true
	unset FAKEGCS_PID STORAGE_EMULATOR_HOST
}

fakegcs_ctl() {
	local method=$1 path=$2
	if [ $# -ge 3 ]; then
		curl -fsS --max-time 10 -X "$method" -H 'Content-Type: application/json' \
			--data-binary "$3" "$FAKEGCS_URL/_fake/$path"
	else
		curl -fsS --max-time 10 -X "$method" "$FAKEGCS_URL/_fake/$path"
	fi
}

fakegcs_fault() { fakegcs_ctl POST faults "$1" >/dev/null; }

fakegcs_json() {
	python3 -c 'import json, sys
d = json.load(sys.stdin)
r = eval(sys.argv[1])
print(json.dumps(r) if isinstance(r, (dict, list, bool)) or r is None else r)' "$1"
}

fakegcs_stat() {
	fakegcs_ctl GET stats | python3 -c 'import json, sys
d = json.load(sys.stdin)
for k in sys.argv[1].split(".", 1):
    d = d.get(k, 0) if isinstance(d, dict) else 0
print(d)' "$1"
}

fakegcs_make_key() {
	openssl genrsa -out "$1/key.pem" 2048 2>/dev/null &&
		openssl rsa -in "$1/key.pem" -pubout -out "$1/pub.pem" 2>/dev/null
}

fakegcs_b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }

fakegcs_jwt() {
	local key=$1 iss=$2 aud=$3 scope=$4 shift_s=${5:-0} life=${6:-3600}
	local now=$(($(date +%s) + shift_s))
	local head body sig
	head=$(printf '{"alg":"RS256","typ":"JWT"}' | fakegcs_b64url)
	body=$(printf '{"iss":"%s","scope":"%s","aud":"%s","iat":%d,"exp":%d}' \
		"$iss" "$scope" "$aud" "$now" "$((now + life))" | fakegcs_b64url)
	sig=$(printf '%s.%s' "$head" "$body" | openssl dgst -sha256 -sign "$key" -binary | fakegcs_b64url)
	printf '%s.%s.%s\n' "$head" "$body" "$sig"
}
