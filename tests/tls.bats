#!/usr/bin/env bats
# TLS between the nodes (mtc(7) §4.4): the daemon serves HTTPS only, the
# data needs a client certificate signed by the job's CA, and every client
# checks the server against it.

load helpers

setup() {
	T=$(mktemp -d /dev/shm/mtc-tls.XXXXXX)
	PIDS=()
	make_tls "$T/pki"
	CERT=(--cacert "$T/pki/ca.crt" --cert "$T/pki/node/tls.crt" --key "$T/pki/node/tls.key")
}

teardown() {
	local clean=0
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	no_sanitizer_reports "$T" || clean=1
	rm -rf "$T"
	return "$clean"
}

# a step in DIR: <hash>.data (a tree) and job-s<STEP>-n0-w0.meta; sets HASH
make_step() {
	local dir=$1 step=$2
	mkdir -p "$dir/tmp/sub"
	head -c 3000000 /dev/urandom >"$dir/tmp/shard-0"
	head -c 70000 /dev/urandom >"$dir/tmp/sub/shard-1"
	echo "step $step" >"$dir/tmp/sub/note.txt"
	HASH=$(mtc-replicate digest "$dir/tmp" | cut -d' ' -f1)
	mv "$dir/tmp" "$dir/$HASH.data"
	printf %s "$HASH" >"$dir/job-s$step-n0-w0.meta"
	printf '{"job-name":"job","framework":"orbax","node-rank":0,"nodes":2,"peers-per-node":1,"backup-interval-minutes":30}\n' >"$T/cfg.json"
}

code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }

# idle PID: PID uses under 30% of a core over the next second (a busy loop takes it all)
idle() {
	local before after
	before=$(awk '{ print $14 + $15 }' "/proc/$1/stat")
	sleep 1
	after=$(awk '{ print $14 + $15 }' "/proc/$1/stat")
	[ $((after - before)) -lt 30 ] || { echo "$((after - before)) ticks of CPU in 1 s" >&2; false; }
}

# handshakes RESULT: the daemon's count of TLS handshakes that ended so (ok, failed, timeout, cut)
handshakes() {
	curl -s --cacert "$T/pki/ca.crt" "$URL/metrics" |
		awk -v m="mtc_peer_tls_handshakes_total{result=\"$1\"}" '$1 == m { print $2 }'
}

@test "serve --tls-dir: HTTPS only; probes and metrics without a client certificate, the data only with one from the job's CA" {
	mkdir "$T/p"
	serve_on "$T/p" --tls-dir "$T/pki/node"
	[[ "$URL" == https://127.0.0.1:* ]]
	[ "$(code --cacert "$T/pki/ca.crt" "$URL/healthz")" = 200 ]
	[ "$(code --cacert "$T/pki/ca.crt" "$URL/readyz")" = 200 ]
	[ "$(code --cacert "$T/pki/ca.crt" "$URL/metrics")" = 200 ]
	[ "$(code --cacert "$T/pki/ca.crt" "$URL/v1/inventory")" = 403 ]
	run curl -s --cacert "$T/pki/ca.crt" "$URL/v1/inventory"
	assert_output --partial "client certificate signed by the job's CA"
	[ "$(code "${CERT[@]}" "$URL/v1/inventory")" = 200 ]
	# a certificate from another CA: no handshake at all
	[ "$(code --cacert "$T/pki/ca.crt" --cert "$T/pki/rogue/tls.crt" --key "$T/pki/rogue/tls.key" "$URL/healthz")" = 000 ]
	# the server is checked too: a client that trusts another CA goes no further
	[ "$(code --cacert "$T/pki/rogue-ca.crt" "$URL/healthz")" = 000 ]
	# no plain HTTP on the TLS port
	[ "$(code "http://${URL#https://}/healthz")" = 000 ]
	[ "$(handshakes failed)" -ge 3 ]
	[ "$(handshakes ok)" -ge 6 ]
	# the same with $MTC_TLS_DIR instead of the flag
	mkdir "$T/q"
	MTC_TLS_DIR="$T/pki/node" serve_on "$T/q"
	[[ "$URL" == https://* ]]
	[ "$(code "${CERT[@]}" "$URL/v1/inventory")" = 200 ]
}

@test "a client certificate's TLS session is resumed on a new connection (the clients share their TLS sessions)" {
	mkdir "$T/p"
	serve_on "$T/p" --tls-dir "$T/pki/node"
	# one curl, two transfers, each on its own connection: the second resumes the first's session
	run curl -s -H 'Connection: close' -o /dev/null -o /dev/null -w '%{http_code} %{num_connects}\n' \
		"${CERT[@]}" "$URL/v1/inventory" "$URL/v1/inventory"
	assert_success
	assert_output $'200 1\n200 1'
}

@test "a TLS dir that cannot serve is refused in one line naming what is wrong" {
	mkdir "$T/p" "$T/bad"
	cp "$T/pki/node/tls.crt" "$T/pki/node/ca.crt" "$T/bad/"
	run mtc-replicate serve --dir "$T/p" --listen 127.0.0.1:0 --tls-dir "$T/bad"
	assert_failure 2
	assert_output --partial "has tls.crt but not tls.key"
	cp "$T/pki/rogue/tls.key" "$T/bad/"
	run mtc-replicate serve --dir "$T/p" --listen 127.0.0.1:0 --tls-dir "$T/bad"
	assert_failure 2
	assert_output --partial "is not the key of"
	run mtc-replicate serve --dir "$T/p" --listen 127.0.0.1:0 --tls-dir "$T/pki/client-ca"
	assert_failure 2
	assert_output --partial "has no tls.crt and tls.key"
	run mtc-replicate serve --dir "$T/p" --listen 127.0.0.1:0 --tls-dir "$T/missing"
	assert_failure 2
	assert_output --partial "is not a directory"
	[ "${#lines[@]}" -eq 1 ]
	# a client's dir needs ca.crt
	rm "$T/bad/ca.crt"
	run mtc-replicate fetch --dir "$T/p" --from https://127.0.0.1:1 --hash "$(printf '%064d' 0)" --tls-dir "$T/bad"
	assert_failure 2
	assert_output --partial "has no ca.crt"
	# a key others can read is used, with a warning
	cp -r "$T/pki/node" "$T/open"
	chmod 644 "$T/open/tls.key"
	serve_on "$T/p" --tls-dir "$T/open"
	grep -q "readable by group or others" "$T/p.err"
}

@test "push and fetch over mutual TLS: byte-identical trees, a one-file object both ways in byte ranges; an http:// peer with TLS set up is refused before a byte is sent" {
	make_step "$T/src" 5
	mkdir "$T/p"
	serve_on "$T/p" --tls-dir "$T/pki/node"
	run mtc-replicate push --dir "$T/src" --config "$T/cfg.json" --step 5 --peer "$URL" --tls-dir "$T/pki/node"
	assert_success
	assert_output --regexp "^pushed step 5 to '$URL': 1 metas, 1 data sent, "
	diff -r "$T/src/$HASH.data" "$T/p/$HASH.data"
	cmp "$T/src/job-s5-n0-w0.meta" "$T/p/job-s5-n0-w0.meta"
	mkdir "$T/back"
	MTC_TLS_DIR="$T/pki/node" run mtc-replicate fetch --dir "$T/back" --from "$URL" --meta job-s5-n0-w0.meta
	assert_success
	diff -r "$T/src/$HASH.data" "$T/back/$HASH.data"
	# without a client certificate the data is refused, and nothing is written
	mkdir "$T/none"
	run mtc-replicate fetch --dir "$T/none" --from "$URL" --hash "$HASH" --tls-dir "$T/pki/client-ca" --retries 0
	assert_failure
	assert_output --partial "HTTP 403"
	[ -z "$(ls -A "$T/none")" ]
	# a client that trusts another CA stops at the handshake, saying why
	run mtc-replicate fetch --dir "$T/none" --from "$URL" --hash "$HASH" --tls-dir "$T/pki/rogue" --retries 0
	assert_failure
	assert_output --regexp "SSL certificate problem: self-signed certificate in certificate chain|TLS handshake with '127.0.0.1' failed: "
	[ -z "$(ls -A "$T/none")" ]
	# one stream and three: the same bytes
	for n in 1 3; do
		rm -rf "$T/p/$HASH.data" "$T/back"
		mkdir "$T/back"
		run mtc-replicate push --dir "$T/src" --config "$T/cfg.json" --step 5 --peer "$URL" --tls-dir "$T/pki/node" --streams "$n"
		assert_success
		diff -r "$T/src/$HASH.data" "$T/p/$HASH.data"
		run mtc-replicate fetch --dir "$T/back" --from "$URL" --hash "$HASH" --tls-dir "$T/pki/node" --streams "$n"
		assert_success
		diff -r "$T/src/$HASH.data" "$T/back/$HASH.data"
	done
	# a one-file object of 40 MiB: byte ranges, each over its own TLS connection
	head -c $((40 * 1048576 + 99)) /dev/urandom >"$T/f"
	F=$(b3sum --no-names "$T/f")
	cp "$T/f" "$T/p/$F.data"
	run mtc-replicate fetch --dir "$T/back" --from "$URL" --hash "$F" --tls-dir "$T/pki/node" --streams 4
	assert_success
	cmp "$T/f" "$T/back/$F.data"
	[ "$(curl -sf --cacert "$T/pki/ca.crt" "$URL/metrics" | sed -n 's/^mtc_peer_requests_total{code="206"} //p')" = 2 ]
	# and pushed the same way: two ranges in one upload session, joined into its name
	mkdir "$T/one"
	mv "$T/p/$F.data" "$T/one/"
	printf %s "$F" >"$T/one/job-s6-n0-w0.meta"
	ok200() { curl -sf --cacert "$T/pki/ca.crt" "$URL/metrics" | sed -n 's/^mtc_peer_requests_total{code="200"} //p'; }
	before=$(ok200)
	run mtc-replicate push --dir "$T/one" --config "$T/cfg.json" --step 6 --peer "$URL" --tls-dir "$T/pki/node" --streams 4
	assert_success
	cmp "$T/f" "$T/p/$F.data"
	[ "$(ok200)" = $((before + 3)) ] # the two ranges' answers, and the first /metrics
	# TLS set up, a plain http:// URL: refused at once, the token never sent
	run mtc-replicate push --dir "$T/src" --config "$T/cfg.json" --step 5 --peer "http://${URL#https://}" --tls-dir "$T/pki/node"
	assert_failure
	assert_output --partial "must be https://"
	# without TLS set up, an https:// peer whose CA the system does not trust is refused
	run mtc-replicate fetch --dir "$T/none" --from "$URL" --hash "$HASH" --retries 0
	assert_failure
	[ -z "$(ls -A "$T/none")" ]
	# kernel TLS: the daemon's line says whether this kernel offers it, and /metrics counts
	# the connections whose records the kernel took over (none where it is not offered)
	kernel_send=$(curl -s --cacert "$T/pki/ca.crt" "$URL/metrics" | awk '$1 == "mtc_peer_tls_kernel_total{direction=\"send\"}" { print $2 }')
	if grep -qw tls /proc/sys/net/ipv4/tcp_available_ulp 2>/dev/null; then
		grep -q '"kernel-tls":true' "$T/p.out"
		[ "$kernel_send" -ge 1 ]
	else
		grep -q '"kernel-tls":false' "$T/p.out"
		[ "$kernel_send" = 0 ]
	fi
}

@test "a push over TLS whose peer stops reading mid-object fails at its --timeout; its relays wait without spinning" {
	mkdir -p "$T/src/tmp" "$T/p"
	head -c 200000000 /dev/urandom >"$T/src/tmp/shard-0"
	HASH=$(mtc-replicate digest "$T/src/tmp" | cut -d' ' -f1)
	mv "$T/src/tmp" "$T/src/$HASH.data"
	printf %s "$HASH" >"$T/src/job-s5-n0-w0.meta"
	printf '{"job-name":"job","framework":"orbax","node-rank":0,"nodes":2,"peers-per-node":1,"backup-interval-minutes":30}\n' >"$T/cfg.json"
	serve_on "$T/p" --tls-dir "$T/pki/node"
	mtc-replicate push --dir "$T/src" --config "$T/cfg.json" --step 5 --peer "$URL" --tls-dir "$T/pki/node" \
		--timeout 5 --retries 0 >"$T/push.out" 2>&1 &
	local push=$! i
	for i in $(seq 600); do
		[ "$(du -sb "$T/p" | cut -f1)" -gt 10000000 ] && break
		sleep 0.05
	done
	[ "$(du -sb "$T/p" | cut -f1)" -gt 10000000 ] || { cat "$T/push.out" >&3; false; }
	kill -STOP "$PID" # the peer stops reading; the connections stay open
	for i in $(seq 600); do
		grep -q "deadline passed" "$T/push.out" && break
		sleep 0.05
	done
	grep -q "deadline passed" "$T/push.out" || { cat "$T/push.out" >&3; false; }
	# the push gave up; its relays hold unsent bytes for a peer that takes none: they wait
	# idle, or the push has ended already (a busy machine: its second's look came too late)
	idle "$push" || ! kill -0 "$push" 2>/dev/null
	# at exit the relays get up to 2 s to end
	for i in $(seq 300); do
		kill -0 "$push" 2>/dev/null || break
		sleep 0.1
	done
	run wait "$push"
	assert_failure 1
	run cat "$T/push.out"
	refute_output --partial "Sanitizer"
	kill -CONT "$PID"
}

@test "a client over TLS that stops reading a fetch is given up at the daemon's --timeout: the daemon's relay waits without spinning, then closes the connection" {
	mkdir -p "$T/p/tmp"
	head -c 200000000 /dev/urandom >"$T/p/tmp/shard-0"
	HASH=$(mtc-replicate digest "$T/p/tmp" | cut -d' ' -f1)
	mv "$T/p/tmp" "$T/p/$HASH.data"
	serve_on "$T/p" --tls-dir "$T/pki/node" --timeout 1
	# curl blocks on a full pipe that nothing reads, and stops reading its connection
	curl -s "${CERT[@]}" "$URL/v1/objects/$HASH.data" 3>&- | sleep 60 3>&- &
	local reader=$! # sleep: when it ends, curl's next write fails and curl ends too
	PIDS+=("$reader")
	sleep 3 # the daemon's sender gives up after 1 s idle; its relay still holds bytes for the client
	idle "$PID"
	# and once the client has taken nothing for --timeout more, the daemon closes the connection
	local port=${URL##*:} i
	for i in $(seq 50); do
		[ -z "$(ss -Htn state established "( sport = :$port )")" ] && break
		sleep 0.1
	done
	[ -z "$(ss -Htn state established "( sport = :$port )")" ]
	kill "$reader" 2>/dev/null || true
	[ "$(code --cacert "$T/pki/ca.crt" "$URL/healthz")" = 200 ]
}

@test "TLS handshakes cannot lock the daemon out: the hostile probe set over TLS, silent connections cut at --head-timeout, /healthz throughout" {
	local n=20000 hash hwm
	many_files "$T/tree" "$n"
	hash=$(tree_manifest "$T/tree" "$T/man")
	rm -rf "$T/tree"
	head -c 32 /dev/urandom | base64 >"$T/tok"
	chmod 600 "$T/tok"
	mkdir "$T/p"
	serve_on "$T/p" --tls-dir "$T/pki/node" --peer-token-file "$T/tok" --timeout 6 --head-timeout 2 \
		--max-body 33554432 --max-conns-per-ip 0
	MTC_TEST_TLS_DIR="$T/pki/node" run timeout 120 python3 "$MTC_TESTS/peer_hostile.py" probes "$URL" "$T/tok" "$T/man" "$hash" 2
	echo "$output"
	[ "$status" -eq 0 ]
	assert_output --partial "100 connections that never start the TLS handshake"
	hwm=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$PID/status")
	echo "VmHWM: $hwm kB"
	sanitized || [ "$hwm" -lt 65536 ] # the sanitizers' shadow memory and quarantine are not the daemon's
	sleep 0.5
	run ls -A "$T/p"
	assert_output ".mtc-upload-manifest-$hash"
}

@test "beyond --max-unauth handshakes at once the oldest is cut, once the burst allowance of fresh ones is spent" {
	mkdir "$T/p"
	serve_on "$T/p" --tls-dir "$T/pki/node" --max-unauth 2 --head-timeout 30
	run timeout 20 python3 - "${URL#https://}" <<'PY'
import select, socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
def opened():
    s = socket.create_connection((host, int(port)))
    time.sleep(0.1)
    return s
def closed(s):
    return bool(select.select([s], [], [], 0)[0]) and s.recv(1) == b""
old = [opened() for _ in range(3)]   # three fresh ones: within twice the limit, none cut
time.sleep(0.3)
print("fresh burst:", [closed(s) for s in old])
time.sleep(1.0)
new = opened()                       # a fourth, the others now older than a second
time.sleep(0.3)
print("after one more:", [closed(s) for s in old + [new]])
PY
	assert_success
	assert_line "fresh burst: [False, False, False]"
	assert_line "after one more: [True, False, False, False]"
	[ "$(code --cacert "$T/pki/ca.crt" "$URL/healthz")" = 200 ]
	[ "$(handshakes cut)" = 1 ]
}

@test "--head-timeout 0 leaves the handshake the idle --timeout as its deadline" {
	mkdir "$T/p"
	serve_on "$T/p" --tls-dir "$T/pki/node" --head-timeout 0 --timeout 2
	[ "$(code "${CERT[@]}" "$URL/v1/inventory")" = 200 ]
	run timeout 10 python3 - "${URL#https://}" <<'PY'
import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((host, int(port)))
t0 = time.monotonic()
s.settimeout(8)
print("closed" if s.recv(1) == b"" else "data", round(time.monotonic() - t0))
PY
	assert_success
	assert_output "closed 2"
	[ "$(handshakes timeout)" = 1 ]
}

@test "over TLS too, a request whose body has no one length is 400 and ends its connection, by the daemon and the coordinator" {
	mkdir "$T/p" "$T/c"
	serve_on "$T/p" --tls-dir "$T/pki/node"
	MTC_TEST_TLS_DIR="$T/pki/node" run timeout 120 python3 "$MTC_TESTS/peer_hostile.py" framing "$URL" \
		"PUT /v1/objects/$(printf '%064x' 7).data" "GET /healthz"
	echo "$output"
	[ "$status" -eq 0 ]
	serve_on "$T/c" --tls-dir "$T/pki/node" --coordinator --nodes 2
	MTC_TEST_TLS_DIR="$T/pki/node" run timeout 120 python3 "$MTC_TESTS/peer_hostile.py" framing "$URL" \
		"POST /v1/coord/sync" "POST /v1/coord/nope"
	echo "$output"
	[ "$status" -eq 0 ]
	run ls -A "$T/p"
	assert_output ""
}

@test "the coordinator over TLS: no report without a client certificate, the size judged before the body, a round completes" {
	mkdir "$T/p"
	serve_on "$T/p" --tls-dir "$T/pki/node" --coordinator --nodes 1
	head -c $((16 << 20)) /dev/zero | tr '\0' ' ' >"$T/big"
	post() { curl -s -o "$T/body" -w '%{http_code}' --max-time 10 -H 'Content-Type: application/json' "$@"; }
	[ "$(post --cacert "$T/pki/ca.crt" --data-binary '{"rank": 0}' "$URL/v1/coord/sync")" = 403 ]
	[ "$(post "${CERT[@]}" --data-binary "@$T/big" "$URL/v1/coord/sync")" = 413 ]
	[ "$(awk '/^VmHWM/ { print $2 }' "/proc/$PID/status")" -lt $((64 << 10)) ]
	[ "$(post "${CERT[@]}" --data-binary '{"rank": 0, "session": "s", "replicated-step": 5}' "$URL/v1/coord/sync")" = 200 ]
	run cat "$T/body"
	assert_output --partial '"status":"done"'
}
