#!/usr/bin/env bats
# Per-rank credentials (mtc(7) §4.2): a node speaks only for its own rank, to
# the peers and to the coordinator; the job's plain secret reads, and writes
# only where the daemon is not --strict-ranks.

load helpers

SECRET=the-shared-secret-of-the-job-0123

setup() {
	T=$(mktemp -d /dev/shm/mtc-ranks.XXXXXX)
	PIDS=()
	echo "$SECRET" >"$T/token"
	chmod 600 "$T/token"
}

teardown() {
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$T"
}

# cred RANK [JOB [SECRET]]: that rank's bearer credential, computed as mtc(7) §4.2 says.
cred() {
	local rank=$1 job=${2:-job} secret=${3:-$SECRET} mac
	mac=$(printf 'mtc-rank:%s:%s' "$job" "$rank" | openssl dgst -sha256 -hmac "$secret" -r | cut -d' ' -f1)
	printf 'mtc-r%s.%s.%s' "$rank" "$mac" "$job"
}

# code AUTH METHOD PATH [curl args]: the HTTP code of one request to the daemon.
code() {
	local auth=$1 method=$2 path=$3
	shift 3
	curl -s -o "$T/body" -w '%{http_code}' -X "$method" -H "Authorization: Bearer $auth" "$@" "$URL$path"
}

# put AUTH NAME FILE: the HTTP code of a PUT of FILE as /v1/objects/NAME.
put() { code "$1" PUT "/v1/objects/$2" -T "$3"; }

# beat AUTH RANK: the HTTP code of a heartbeat for RANK to the coordinator.
beat() { code "$1" POST /v1/coord/heartbeat -d "{\"rank\":$2,\"session\":\"s\"}"; }

# small_step RANK: one saved file of step 1 and its meta for RANK in $T/src; sets HASH.
small_step() {
	mkdir -p "$T/src"
	head -c 1000 /dev/urandom >"$T/src/blob"
	HASH=$(mtc-replicate digest "$T/src/blob" | cut -d' ' -f1)
	mv "$T/src/blob" "$T/src/$HASH.data"
	printf %s "$HASH" >"$T/src/job-s1-n$1-w0.meta"
}

@test "a node's credential pushes its own metas and reports for its own rank" {
	start=$SECONDS
	mkdir "$T/p"
	serve_on "$T/p" --peer-token-file "$T/token" --strict-ranks --coordinator --nodes 2
	small_step 1
	printf '{"job-name":"job","framework":"orbax","node-rank":1,"nodes":2,"peers-per-node":1,"backup-interval-minutes":30}\n' >"$T/cfg.json"
	run mtc-replicate push --dir "$T/src" --config "$T/cfg.json" --step 1 --peer "$URL" --peer-token-file "$T/token"
	assert_success
	[ "$(cat "$T/p/job-s1-n1-w0.meta")" = "$HASH" ]
	run beat "$(cred 1)" 1
	assert_output 200
	run code "$(cred 1)" GET /v1/coord/status
	assert_output 200
	[ $((SECONDS - start)) -lt 20 ]
}

@test "the coordinator answers 403 to a credential reporting for another rank, and logs it once" {
	mkdir "$T/p"
	serve_on "$T/p" --peer-token-file "$T/token" --coordinator --nodes 3
	run beat "$(cred 0)" 2
	assert_output 403
	grep -q "rank 0 cannot speak for rank 2" "$T/body"
	run beat "$(cred 0)" 2
	assert_output 403
	[ "$(grep -c "report for rank 2" "$T/p.err")" = 1 ]
	# a report whose config names another job than the credential's
	run code "$(cred 1 other-job)" POST /v1/coord/sync -d '{"rank":1,"session":"s","replicated-step":-1,"config":{"job-name":"job"}}'
	assert_output 403
	grep -q "job 'other-job' cannot speak for job 'job'" "$T/body"
	run beat "$(cred 2)" 2
	assert_output 200
}

@test "a peer answers 403 to a meta named for another rank or job, and takes the data" {
	mkdir "$T/p"
	serve_on "$T/p" --peer-token-file "$T/token"
	small_step 1
	run put "$(cred 0)" "$HASH.data" "$T/src/$HASH.data"
	assert_output 201
	run put "$(cred 0)" job-s1-n1-w0.meta "$T/src/job-s1-n1-w0.meta"
	assert_output 403
	grep -q "rank 0 cannot speak for rank 1" "$T/body"
	run put "$(cred 1 other-job)" job-s1-n1-w0.meta "$T/src/job-s1-n1-w0.meta"
	assert_output 403
	[ ! -e "$T/p/job-s1-n1-w0.meta" ]
	run put "$(cred 1)" job-s1-n1-w0.meta "$T/src/job-s1-n1-w0.meta"
	assert_output 201
	# reads take any rank's credential of the job
	run code "$(cred 5)" GET /v1/objects/job-s1-n1-w0.meta
	assert_output 200
	run code "$(cred 5)" GET /v1/inventory
	assert_output 200
}

@test "on a --strict-ranks daemon the plain secret reads but cannot write; without it, it still writes" {
	mkdir "$T/p" "$T/q"
	serve_on "$T/p" --peer-token-file "$T/token" --strict-ranks --coordinator --nodes 2
	small_step 0
	run put "$SECRET" "$HASH.data" "$T/src/$HASH.data"
	assert_output 403
	run put "$SECRET" job-s1-n0-w0.meta "$T/src/job-s1-n0-w0.meta"
	assert_output 403
	grep -q "shared secret cannot speak for rank 0" "$T/body"
	run code "$SECRET" POST "/v1/uploads/$HASH.data"
	assert_output 403
	run beat "$SECRET" 0
	assert_output 403
	run code "$SECRET" GET /v1/inventory
	assert_output 200
	run code "$SECRET" GET /v1/coord/status
	assert_output 200
	[ -z "$(ls "$T/p")" ]
	# an older node sends the plain secret: a daemon without --strict-ranks takes it
	serve_on "$T/q" --peer-token-file "$T/token" --coordinator --nodes 2
	run put "$SECRET" "$HASH.data" "$T/src/$HASH.data"
	assert_output 201
	run put "$SECRET" job-s1-n0-w0.meta "$T/src/job-s1-n0-w0.meta"
	assert_output 201
	run beat "$SECRET" 1
	assert_output 200
}

@test "a wrong secret, a forged or malformed credential is 401 as before" {
	mkdir "$T/p"
	serve_on "$T/p" --peer-token-file "$T/token" --coordinator --nodes 2
	run code wrong-secret-of-another-job-42 GET /v1/inventory
	assert_output 401
	run code "$(cred 0 job another-secret-of-the-job-99)" GET /v1/inventory
	assert_output 401
	run beat "$(cred 0 job another-secret-of-the-job-99)" 0
	assert_output 401
	good=$(cred 0)
	run code "${good%job}jab" GET /v1/inventory
	assert_output 401
	run code "mtc-r1${good#mtc-r0}" GET /v1/inventory
	assert_output 401
	run code "mtc-r00${good#mtc-r0}" GET /v1/inventory
	assert_output 401
	run code "$good" GET /v1/inventory
	assert_output 200
}

@test "--strict-ranks needs a token file" {
	mkdir "$T/p"
	run mtc-replicate serve --dir "$T/p" --listen 127.0.0.1:0 --strict-ranks
	assert_failure 2
	assert_output --partial "--strict-ranks needs --peer-token-file"
}

# report RANK KIND JSON: the HTTP code of RANK's report with its own credential (answer in $T/body).
report() { code "$(cred "$1")" POST "/v1/coord/$2" -H 'Content-Type: application/json' --data-binary "$3"; }

# restore_body RANK EXTRA: RANK's restore report of step 5 (meta and data of its own), 3 nodes.
restore_body() {
	local h
	h=$(printf '%063d%s' 0 "$1")
	printf '{"rank":%s,"session":"s","wait":0,"address":"http://127.0.0.1:1","config":{"job-name":"job","framework":"orbax","node-rank":%s,"nodes":3,"peers-per-node":1},"meta-files":[[5,%s,0,"%s"]],"data-files":["%s"]%s}' \
		"$1" "$1" "$1" "$h" "$h" "$2"
}

@test "the coordinator takes restore.version and the backups from rank 0 only" {
	mkdir "$T/p"
	serve_on "$T/p" --peer-token-file "$T/token" --strict-ranks --coordinator --nodes 3
	run report 0 restore "$(restore_body 0 '')"
	assert_output 200
	run report 1 restore "$(restore_body 1 '')"
	assert_output 200
	run report 2 restore "$(restore_body 2 ',"restore-version":"2020-01-01_00-00"')"
	assert_output 200
	jq -e '.status == "done" and ."plan-step" == 5' "$T/body"
	grep -q "ignored \"restore-version\" in rank 2's 'restore' report" "$T/p.err"
	# rank 0 sends no backups, rank 2 a backup that would be the plan: it is not used
	b=',"backups":[{"name":"2025-01-01_00-00","meta-files":[[7,0,0,"'$(printf 'b%.0s' $(seq 64))'"],[7,1,0,"'$(printf 'c%.0s' $(seq 64))'"],[7,2,0,"'$(printf 'd%.0s' $(seq 64))'"]],"data-files":["'$(printf 'b%.0s' $(seq 64))'","'$(printf 'c%.0s' $(seq 64))'","'$(printf 'd%.0s' $(seq 64))'"]}]'
	for r in 0 1; do
		run report $r restore '{"rank":'$r',"session":"t","wait":0,"config":{"job-name":"job","framework":"orbax","node-rank":'$r',"nodes":3,"peers-per-node":1},"meta-files":[],"data-files":[]}'
		assert_output 200
	done
	run report 2 restore '{"rank":2,"session":"t","wait":0,"config":{"job-name":"job","framework":"orbax","node-rank":2,"nodes":3,"peers-per-node":1},"meta-files":[],"data-files":[]'"$b"'}'
	assert_output 200
	jq -e '.status == "done" and ."plan-step" == null' "$T/body"
	[ "$(grep -c "ignored .* in rank 2's" "$T/p.err")" = 1 ]
}

@test "a credential of another job is refused on every coordinator endpoint and never counted" {
	mkdir "$T/p" "$T/q"
	serve_on "$T/p" --peer-token-file "$T/token" --strict-ranks --coordinator --nodes 3 --job job
	other=$(cred 1 other)
	for kind in sync heartbeat restore restore-done; do
		run code "$other" POST "/v1/coord/$kind" -d '{"rank":1,"session":"s","wait":0,"replicated-step":1,"ok":true,"meta-files":[],"data-files":[]}'
		assert_output 403
		grep -q "job 'other' cannot speak for job 'job'" "$T/body"
	done
	run code "$other" GET /v1/coord/status
	assert_output 403
	run code "$(cred 2)" GET /v1/coord/status
	assert_output 200
	jq -e '."seconds-since-seen" == [null, null, null] and .reported.restore == 0 and .reported.sync == 0' "$T/body"
	run beat "$(cred 1)" 1
	assert_output 200
	# without --job the first job a report names is the one served
	serve_on "$T/q" --peer-token-file "$T/token" --coordinator --nodes 3
	run beat "$(cred 0)" 0
	assert_output 200
	run beat "$(cred 1 other)" 1
	assert_output 403
	run code "$(cred 0)" GET /v1/coord/status
	jq -e '."seconds-since-seen"[1] == null' "$T/body"
}
