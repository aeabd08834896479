# Shared by every tests/*.bats: the programs under test come first on PATH.
bats_require_minimum_version 1.5.0
bats_load_library bats-support
bats_load_library bats-assert
bats_load_library bats-file

: "${MTC_BIN:=$BATS_TEST_DIRNAME/../build/release/bin}"
export PATH="$MTC_BIN:$BATS_TEST_DIRNAME/standin:$PATH"
export MTC_TESTS="$BATS_TEST_DIRNAME"
# shellcheck source=tests/shell.bash
. "$MTC_TESTS/shell.bash"

# need_frameworks: skips the test, saying why, unless `make venv` installed
# the real Orbax, JAX and tensorstore; sets MTC_PY to that venv's python.
need_frameworks() {
	local venv=${MTC_VENV:-$BATS_TEST_DIRNAME/../build/venv}
	[ -e "$venv/.complete" ] || skip "the real frameworks are not installed: make venv (needs PyPI)"
	MTC_PY=$venv/bin/python
}

# need_node_client: skips the test, saying why, unless `make node-client` installed
# Google's Node.js client for Cloud Storage; exports NODE_PATH so node finds it.
need_node_client() {
	local dir=${MTC_NODE:-$BATS_TEST_DIRNAME/../build/node}
	command -v node >/dev/null || skip "node is not installed: make deps"
	[ -e "$dir/.complete" ] || skip "Google's Node.js client is not installed: make node-client (needs the npm registry)"
	export NODE_PATH=$dir/node_modules
}

# True when the programs run under ASan/UBSan (slower; big inputs are scaled down).
sanitized() { case "${MTC_BUILD:-}" in *asan*) return 0 ;; esac; return 1; }

# no_sanitizer_reports DIR: fails, showing the reports, when the standard error of a
# program kept in DIR/*.err (serve_on's DIR.err) holds one of ASan or UBSan: a
# daemon that a report ended may leave nothing else a test would notice.
no_sanitizer_reports() {
	local f bad=0
	for f in "$1"/*.err; do
		[ -e "$f" ] || continue
		grep -qE 'runtime error:|ERROR: [A-Za-z]+Sanitizer|SUMMARY: [A-Za-z]+Sanitizer' "$f" || continue
		echo "# a sanitizer's report in $(basename "$f"):"
		grep -E -A30 'runtime error:|ERROR: [A-Za-z]+Sanitizer' "$f" | head -40 | sed 's/^/#   /'
		bad=1
	done
	return "$bad"
}

# paused_at FILE: the process a fault point (MTC_FAULT_PAUSE=POINT:FILE) wrote to FILE has stopped there
paused_at() { [ -s "$1" ] && [ "$(cut -d' ' -f3 "/proc/$(cat "$1")/stat" 2>/dev/null)" = T ]; }

# sched_of PID TID: "<policy> <nice>" of one of PID's threads (policy 0: normal, 5: SCHED_IDLE)
sched_of() { sed 's/.*) //' "/proc/$1/task/$2/stat" 2>/dev/null | awk '{ print $39, $17 }'; }

# flip_byte FILE OFFSET: inverts one byte in place (writing a fixed value
# would change nothing when the byte already held it).
flip_byte() {
	python3 -c 'import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2])); b = f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0xff]))' "$1" "$2"
}

# serve_on DIR [serve options]: a peer daemon on DIR on a free loopback port,
# its output in DIR.out (its --json line) and DIR.err; sets URL and PID and adds PID to PIDS
# (the caller's teardown kills them).
serve_on() {
	local dir=$1
	shift
	mtc-replicate serve --dir "$dir" --listen 127.0.0.1:0 --json "$@" >"$dir.out" 2>"$dir.err" &
	PID=$!
	PIDS+=("$PID")
	for _ in $(seq 600); do
		grep -q listen "$dir.out" 2>/dev/null && break
		sleep 0.05
	done
	URL="$(sed -n 's/.*"scheme":"\([^"]*\)".*/\1/p' "$dir.out")://$(sed -n 's/.*"listen":"\([^"]*\)".*/\1/p' "$dir.out")"
	[ "${URL#*://}" != "" ]
}

# make_tls DIR: a test CA in DIR/ca and, as a Kubernetes TLS Secret is
# mounted, DIR/node (ca.crt, tls.crt, tls.key) for 127.0.0.1 and localhost;
# DIR/rogue is the same from another CA, DIR/client-ca just the CA.
make_tls() {
	local d=$1 who
	mkdir -p "$d/client-ca"
	for who in ca rogue-ca; do
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
			-subj "/CN=mtc test $who" -keyout "$d/$who.key" -out "$d/$who.crt" 2>/dev/null
	done
	printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n' >"$d/ext"
	for who in node rogue; do
		local ca=ca
		[ "$who" = rogue ] && ca=rogue-ca
		mkdir -p "$d/$who"
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$who" \
			-keyout "$d/$who/tls.key" -out "$d/$who.csr" 2>/dev/null
		openssl x509 -req -in "$d/$who.csr" -CA "$d/$ca.crt" -CAkey "$d/$ca.key" -CAcreateserial \
			-days 2 -extfile "$d/ext" -out "$d/$who/tls.crt" 2>/dev/null
		cp "$d/$ca.crt" "$d/$who/ca.crt"
		chmod 600 "$d/$who/tls.key"
	done
	cp "$d/ca.crt" "$d/client-ca/ca.crt"
}

# many_files DIR N: N empty files in DIR, 1000 to a subdirectory.
many_files() {
	python3 - "$1" "$2" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, "d%03d" % (i // 1000))
    if i % 1000 == 0:
        os.makedirs(d)
    open(os.path.join(d, "f%04d" % (i % 1000)), "w").close()
PY
}

# tree_manifest DIR OUT: writes DIR's manifest, as peers send it, to OUT; prints DIR's digest.
tree_manifest() {
	mtc-replicate digest --json --manifest "$1" | python3 -c '
import json, sys
j = json.load(sys.stdin)
json.dump(j["manifest"], open(sys.argv[1], "w"), separators=(",", ":"))
print(j["digest"])' "$2"
}

# make_data FILE BYTES SEED: BYTES bytes that are the same for the same SEED.
make_data() { openssl enc -aes-128-ctr -pass "pass:$3" -nosalt -pbkdf2 </dev/zero 2>/dev/null | head -c "$2" >"$1"; }

# gcs_setup NAME: a fresh WORK (mtc-NAME.*), STORE the store client of the unit tests, quick
# gs:// retries, and no GCS endpoint or credentials from the caller's environment.
gcs_setup() {
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/mtc-$1.XXXXXX")
	STORE="$MTC_BIN/../unit/store"
	export MTC_GCS_RETRY_BASE_MS=20
	unset STORAGE_EMULATOR_HOST MTC_GCS_ENDPOINT GOOGLE_APPLICATION_CREDENTIALS MTC_GCS_TOKEN GCE_METADATA_HOST
}

# gcs_sa_json KEYDIR OUT: a service-account key file at OUT for the running fake GCS
# server, of the key fakegcs_make_key made in KEYDIR.
gcs_sa_json() {
	python3 -c 'import json, sys
print(json.dumps({"type": "service_account", "project_id": "p", "private_key_id": "k1",
    "private_key": open(sys.argv[1]).read(), "client_email": "sa@p.iam.gserviceaccount.com",
    "client_id": "1", "token_uri": sys.argv[2]}))' "$1/key.pem" "$FAKEGCS_URL/token" >"$2"
}

# flipped_download BYTES OFFSET TIMES: gs://bkt/f of BYTES on the fake GCS server, read with
# the byte at OFFSET flipped TIMES times, is whole and says why it read again; flipped
# every time, the read fails with exit 5 and leaves no file and no temporary.
flipped_download() {
	make_data "$WORK/f" "$1" flip
	fakegcs_start
	"$STORE" gs://bkt put f "$WORK/f"
	fakegcs_fault "{\"kind\": \"download\", \"action\": \"flip\", \"offset\": $2, \"times\": $3}"
	run "$STORE" gs://bkt get f "$WORK/back"
	assert_success
	assert_output --partial "crc32c mismatch"
	cmp "$WORK/f" "$WORK/back"
	fakegcs_fault "{\"kind\": \"download\", \"action\": \"flip\", \"offset\": $2, \"times\": -1}"
	run "$STORE" gs://bkt get f "$WORK/back2"
	assert_equal "$status" 5
	assert_file_not_exists "$WORK/back2"
	run ls -A "$WORK"
	refute_output --partial ".tmp"
}
