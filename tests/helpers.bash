# Shared by every tests/*.bats: the programs under test come first on PATH.
bats_require_minimum_version 1.5.0
bats_load_library bats-support
bats_load_library bats-assert
bats_load_library bats-file

: "${MTC_BIN:=$BATS_TEST_DIRNAME/../build/release/bin}"
export PATH="$MTC_BIN:$BATS_TEST_DIRNAME/standin:$PATH"
export MTC_TESTS="$BATS_TEST_DIRNAME"

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

# flip_byte FILE OFFSET: inverts one byte in place (writing a fixed value
# would change nothing when the byte already held it).
flip_byte() {
	python3 -c 'import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2])); b = f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0xff]))' "$1" "$2"
}

# serve_on DIR [serve options]: a peer daemon on DIR on a free loopback port,
# its output in DIR.out and DIR.err; sets URL and PID and adds PID to PIDS
# (the caller's teardown kills them).
serve_on() {
	local dir=$1
	shift
	mtc-replicate serve --dir "$dir" --listen 127.0.0.1:0 "$@" >"$dir.out" 2>"$dir.err" &
	PID=$!
	PIDS+=("$PID")
	for _ in $(seq 100); do
		grep -q listen "$dir.out" 2>/dev/null && break
		sleep 0.05
	done
	URL="http://$(sed -n 's/.*"listen":"\([^"]*\)".*/\1/p' "$dir.out")"
	[ "$URL" != "http://" ]
}
