#!/usr/bin/env bats
# --json in every program and mode: stdout holds only JSON, one object a line,
# and every line is in the one shape of mtc(7):
#   - keys are kebab-case ([a-z0-9] words joined by '-') at every depth, except
#     the keys of a map keyed by data (file names, hashes, a config's unknown
#     keys): the caller names such maps by their key (json_ok KEY...);
#   - a number with a fraction (a time, a duration, a rate) has at most 3
#     decimals and no exponent.
# and every line validates against man/mtc-json.schema.json, the vocabulary
# of mtc(7) 9.2 (a field the schema does not name fails).
# One helper a program runs each mode, so a change of a program's command
# line is one edit here.

load helpers
load backup

setup() {
	W=$(mktemp -d /dev/shm/mtc-json.XXXXXX)
	PIDS=()
	config "$W/cfg" job 0 1
	H=$(saved_step "$W/local" job 100 0 a 20000)
	mtc-backup --dir "$W/local" --config "$W/cfg" --step 100 --to "$W/bk" --name 2025-06-30_14-30 >/dev/null
}

teardown() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$W"
}

SCHEMA="$BATS_TEST_DIRNAME/../man/mtc-json.schema.json"
CHECK='
import json, re, sys
import jsonschema
schema = jsonschema.Draft202012Validator(json.load(open(sys.argv[1])))
data_maps = set(sys.argv[2:])
key_re = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
bad = []
def number(text):
    m = re.fullmatch(r"-?[0-9]+(\.([0-9]+))?", text)
    if not m or len(m.group(2) or "") > 3:
        bad.append("number " + text)
    return float(text)
def walk(v, path, key):
    if isinstance(v, dict):
        for k, x in v.items():
            if key not in data_maps and not key_re.fullmatch(k):
                bad.append("key " + path + "." + k)
            walk(x, path + "." + k, k)
    elif isinstance(v, list):
        for x in v:
            walk(x, path + "[]", key)
lines = sys.stdin.read().split("\n")
if lines[-1] == "":
    lines.pop()
if not lines:
    bad.append("no line")
for i, line in enumerate(lines, 1):
    try:
        o = json.loads(line, parse_float=number)
    except ValueError as e:
        bad.append("line %d is not JSON: %s: %.80s" % (i, e, line))
        continue
    if not isinstance(o, dict):
        bad.append("line %d is not an object" % i)
    walk(o, "", None)
    for e in schema.iter_errors(json.loads(line)):
        bad.append("line %d not in the vocabulary: %s: %s" % (i, "/".join(map(str, e.absolute_path)), e.message[:200]))
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
'

# json_ok [DATA_MAP_KEY...]: $output (stdout only: run --separate-stderr) is
# one JSON object a line in the one shape.
json_ok() {
	printf '%s\n' "$output" | python3 -c "$CHECK" "$SCHEMA" "$@" || fail "stdout not in the one JSON shape:
$output"
}

# json_of STATUS CMD...: runs CMD, stdout apart from stderr; checks the status
# and that stdout is in the one shape.
json_of() {
	local want=$1
	shift
	run --separate-stderr "$@"
	[ "$status" -eq "$want" ] || fail "exit $status, not $want: $*
$stderr"
	json_ok
}

# The programs other work changes (the backup location becomes the bucket
# root with --job): one helper each, so their cases follow in one place.
# A case a program does not pass yet skips, saying so.
lkg_backups() { mtc-lkg --backups "$W/bk" --job job --json "$@"; }
lkg_inventory() { mtc-lkg --inventory "$1" --json; }
prune_json() { mtc-prune "$W/bk" --job job --json "$@"; }
restore_from() { mtc-restore --from "$W/bk" --job job --name 2025-06-30_14-30 --json "$@"; }

# not_converted STATUS CMD...: skips unless CMD takes --json and prints the one shape.
not_converted() {
	local want=$1
	shift
	run --separate-stderr "$@"
	[ "$status" -eq "$want" ] || skip "$1 --json: not converted yet (exit $status: ${stderr%%$'\n'*})"
	printf '%s\n' "$output" | python3 -c "$CHECK" "$SCHEMA" >/dev/null ||
		skip "$1 --json: not converted yet ($(printf '%s\n' "$output" | python3 -c "$CHECK" "$SCHEMA" | head -1))"
}

@test "the checker fails what is not the one shape" {
	output='{"ok":true}'
	json_ok
	for bad in 'text' '{"dry_run":true}' '{"a":{"b_c":1}}' '{"seconds":0.12345}' '[1]' '{"ok":true}
would delete' '{"seconds":1e-05}' '{"no-such-field":1}' '{"ok":1}'; do
		output=$bad
		run json_ok
		assert_failure
	done
	output='{"files":{"a_b.txt":1}}'
	run json_ok files
	refute_output --partial 'key .files.a_b.txt'
	assert_output --partial 'not in the vocabulary'
}

@test "mtc-replicate digest --json: files, directories, standard input, --manifest" {
	json_of 0 mtc-replicate digest --json "$W/local/$H.data" "$W/local/job-s100-n0-w0.meta"
	assert_equal "${#lines[@]}" 2
	json_of 0 mtc-replicate digest --json --manifest "$W/local/$H.data"
	run --separate-stderr bash -c 'echo hi | mtc-replicate digest --json -'
	assert_success
	json_ok
}

@test "mtc-replicate commit --json: committed steps, pending steps, --wait timing out" {
	L=$W/c
	mkdir -p "$L/7" "$L/8"
	echo seven >"$L/7/f"
	echo eight >"$L/8/f"
	: >"$L/7/commit_success.txt"
	json_of 0 mtc-replicate commit --dir "$L" --config "$W/cfg" --quiet-time 60 --json
	assert_line --index 0 --partial '"step":7'
	assert_line --index 1 '{"pending":[8],"quiet-time":60.0}'
	json_of 3 mtc-replicate commit --dir "$L" --config "$W/cfg" --quiet-time 60 --wait 0.2 --json
	assert_output '{"pending":[8],"quiet-time":60.0}'
}

@test "mtc-replicate gc --json: a dry run says would-delete, a real run deleted" {
	saved_step "$W/local" job 200 0 b 1000 >/dev/null
	json_of 0 mtc-replicate gc --dir "$W/local" --config "$W/cfg" --keep 200 --dry-run --json
	assert_output --partial '"would-delete-paths":["'
	refute_output --partial '"deleted-'
	json_of 0 mtc-replicate gc --dir "$W/local" --config "$W/cfg" --keep 200 --json
	assert_output --partial '"deleted-meta":1'
}

@test "mtc-replicate serve, push and fetch --json; run --json prints the node's state when it stops" {
	mkdir "$W/peer"
	serve_on "$W/peer" # with --json
	json_of 0 cat "$W/peer.out"
	json_of 0 mtc-replicate push --dir "$W/local" --config "$W/cfg" --step 100 --peer "$URL" --json
	mkdir "$W/f"
	json_of 0 mtc-replicate fetch --dir "$W/f" --from "$URL" --meta job-s100-n0-w0.meta --json
	json_of 0 mtc-replicate run --dir "$W/local" --config "$W/cfg" --timeout 0.5 --json
	assert_output --regexp '^\{"rank":0,"committed":100,.*"stopped":"timeout"\}$'
}

@test "mtc-replicate serve, push and fetch print a line for a person, JSON only with --json" {
	mkdir "$W/peer" "$W/f"
	mtc-replicate serve --dir "$W/peer" --listen 127.0.0.1:0 >"$W/serve.out" 2>"$W/serve.err" &
	PIDS+=($!)
	wait_for "the daemon's line" 30 grep -q . "$W/serve.out"
	run cat "$W/serve.out"
	assert_output --regexp "^serving '$W/peer' on http://127\.0\.0\.1:[0-9]+$"
	URL=${output##* on }
	run --separate-stderr mtc-replicate push --dir "$W/local" --config "$W/cfg" --step 100 --peer "$URL"
	assert_success
	assert_output --regexp "^pushed step 100 to '$URL': 1 metas, 1 data sent, 0 skipped, [0-9]+ bytes in [0-9.]+ s$"
	run --separate-stderr mtc-replicate fetch --dir "$W/f" --from "$URL" --meta job-s100-n0-w0.meta
	assert_success
	assert_output --regexp "^fetched 1 of 1 objects from '$URL': [0-9]+ bytes in [0-9.]+ s$"
}

@test "mtc-replicate commit prints a line for a person, JSON only with --json" {
	L=$W/c
	mkdir -p "$L/7" "$L/8"
	echo seven >"$L/7/f"
	echo eight >"$L/8/f"
	: >"$L/7/commit_success.txt"
	run --separate-stderr mtc-replicate commit --dir "$L" --config "$W/cfg" --quiet-time 60
	assert_success
	assert_output --regexp "^committed step 7 worker 0: D[0-9a-f]{64} \([0-9]+ bytes, [0-9.]+ s, [0-9]+ of them hashed while it was written\)$"
	[ "$stderr" = "mtc-replicate: warning: step 8 is pending: written to within the last 60 s (--quiet-time); not committed (--wait SEC waits for it)" ]
	h=$(cat "$L/job-s7-n0-w0.meta")
	cp -a "$L/$h.data" "$L/9"
	run --separate-stderr mtc-replicate commit --dir "$L" --config "$W/cfg" --quiet-time 60
	assert_success
	assert_output --regexp "^committed step 9 worker 0: $h \(.*; the same data was already there\)$"
	cp -a "$L/$h.data" "$L/10"
	json_of 0 mtc-replicate commit --dir "$L" --config "$W/cfg" --quiet-time 60 --json
	assert_line --index 0 --regexp "^\{\"step\":10,\"worker\":0,\"hash\":\"$h\",.*\"redundant\":true\}$"
	assert_line --index 1 '{"pending":[8],"quiet-time":60.0}'
}

@test "mtc-backup --json: the summary line" {
	saved_step "$W/local" job 300 0 c 1000 >/dev/null
	json_of 0 mtc-backup --dir "$W/local" --config "$W/cfg" --step 300 --to "$W/bk" --name 2025-07-01_00-00 --json
	run --separate-stderr mtc-backup --dir "$W/local" --config "$W/cfg" --step 300 --to "$W/bk" --name 2025-07-01_00-00
	assert_success
	assert_output --regexp '^backed up step 300 '
}

@test "mtc-handshake --json: check, accept, watch, offer --wait-restore" {
	D=$W/hs
	mkdir "$D"
	yaml='job-name: job
framework: orbax
node-rank: 0
nodes: 2
peer-ranks: [1]
backup-interval-minutes: 30'
	printf '%s\n' "$yaml" >"$W/r.yaml"
	json_of 0 mtc-handshake check --json "$W/r.yaml"
	json_of 0 mtc-handshake check "$W/r.yaml"
	printf '%s\n' "$yaml" >"$D/replicator.yaml"
	json_of 0 mtc-handshake watch --dir "$D" --timeout 5 --json
	json_of 0 mtc-handshake accept --dir "$D" --timeout 5 --json
	{ mtc-handshake accept --dir "$D" --timeout 10 >/dev/null && mkdir "$D/Dabc.data" &&
		ln -s Dabc.data "$D/job-s42-n0-w0.restore"; } &
	PIDS+=($!)
	json_of 0 mtc-handshake offer --dir "$D" --job-name job --node-rank 0 --nodes 2 --peer-ranks 1 \
		--backup-interval-minutes 30 --timeout 10 --wait-restore --restore-timeout 10 --json
	assert_output "{\"step\":42,\"path\":\"$D/job-s42-n0-w0.restore\"}"
}

@test "mtc-handshake rank prints a line for a person, JSON only with --json" {
	mkdir "$W/p" "$W/a" "$W/b"
	saved_step "$W/a" job 100 1 a 1000 >/dev/null # index 0 holds rank 1, index 1 rank 0
	saved_step "$W/b" job 100 0 b 1000 >/dev/null
	serve_on "$W/p" --coordinator --nodes 2 --round-timeout 60
	mtc-handshake rank --dir "$W/a" --coordinator-url "$URL" --index 0 --host a --timeout 30 --json \
		>"$W/a.out" 2>"$W/a.err" &
	apid=$!
	PIDS+=($apid)
	run --separate-stderr mtc-handshake rank --dir "$W/b" --coordinator-url "$URL" --index 1 --host b \
		--jax-port 9000 --timeout 30
	assert_success
	assert_output "process id 0 of 2 for pod index 1, moved off its own index: JAX coordinator 'b:9000', 2 of 2 nodes on data they hold of step 100"
	wait "$apid" # bounded by its --timeout
	json_of 0 cat "$W/a.out"
	assert_output '{"coordinator-host":"b","step":100,"on-data":2,"moved":[[1,0],[0,1]],"nodes":2,"process-id":1}'
}

@test "mtc-lkg --backups --json, and with --verify" {
	not_converted 0 lkg_backups
	json_ok
	not_converted 0 lkg_backups --verify
	json_ok
}

@test "mtc-lkg --inventory --json" {
	cat >"$W/inv.json" <<-JSON
	{"job-name": "job", "nodes": 1, "ranks": [
	 {"node-rank": 0, "node-address": "http://n0", "meta-files": [[100, 0, 0, "$H"]], "data-files": ["$H"]}]}
	JSON
	not_converted 0 lkg_inventory "$W/inv.json"
	json_ok
}

@test "mtc-prune --json: a dry run and --delete" {
	mtc-backup --dir "$W/local" --config "$W/cfg" --step 100 --to "$W/bk" --name 2025-06-30_15-30 >/dev/null
	not_converted 0 prune_json --hourly 1 --daily 0 --weekly 0 --monthly 0 --yearly 0
	json_ok
	not_converted 0 prune_json --hourly 1 --daily 0 --weekly 0 --monthly 0 --yearly 0 --delete
	json_ok
}

@test "mtc-restore --from --json: --out, --verify" {
	not_converted 0 restore_from --rank 0 --out "$W/out"
	json_ok
	not_converted 0 restore_from --verify
	json_ok
}

@test "mtc-replicate run --json: each step's time to safety, and the daemon's histograms of it" {
	# rank 0 of two; rank 1's daemon is its peer and coordinates (rank 1 never reports)
	printf '{"job-name":"job","framework":"orbax","node-rank":0,"nodes":2,"peer-ranks":[1],"backup-interval-minutes":30}\n' >"$W/cfg2"
	mkdir "$W/peer"
	serve_on "$W/peer" --coordinator --nodes 2
	PEER=$URL
	serve_on "$W/local"
	LOCAL=$URL
	printf '%s\n%s\n' "$LOCAL" "$PEER" >"$W/peers"
	mtc-replicate run --dir "$W/local" --config "$W/cfg2" --peers-file "$W/peers" --coordinator-url "$PEER" \
		--quiet-time 0.3 --timeout 8 --json >"$W/run.out" 2>"$W/run.err" &
	RUN=$!
	PIDS+=("$RUN")
	sleep 1
	mkdir "$W/local/300.tmp" && head -c 100000 /dev/urandom >"$W/local/300.tmp/w" && mv "$W/local/300.tmp" "$W/local/300"
	for _ in $(seq 60); do grep -q '"step":300' "$W/run.out" && break; sleep 0.1; done
	json_of 0 cat "$W/run.out"
	jq -e 'select(.step == 300) | .["to-commit"] >= 0 and .["to-peers"] > .["to-commit"] and .["to-peers"] < 8' "$W/run.out"
	ls "$W/peer"/job-s300-n0-w0.meta
	for _ in $(seq 30); do curl -sf "$LOCAL/metrics" | grep -q '^mtc_step_seconds_to_peers_count 1$' && break; sleep 0.1; done
	run curl -sf "$LOCAL/metrics"
	assert_line 'mtc_step_seconds_to_commit_count 1'
	assert_line 'mtc_step_seconds_to_peers_count 1'
	assert_line 'mtc_step_seconds_to_backup_count 0'
	assert_line --regexp '^mtc_step_seconds_to_peers_bucket\{le="30"\} 1$'
}
