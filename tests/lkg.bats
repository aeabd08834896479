#!/usr/bin/env bats
# mtc-lkg: the plan from an inventory file, from a local dir + peers + backups,
# and the backup listing. The LKG rule itself is table-tested in tests/unit/lkg.c.

load helpers

setup() {
	T=$(mktemp -d /dev/shm/mtc-lkg.XXXXXX)
	PIDS=()
}

teardown() {
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$T"
}

h() { # h WORD: a 64-hex hash made from a word
	printf '%s' "$1" | od -An -tx1 | tr -d ' \n' | awk '{ s = $0; while (length(s) < 64) s = s "0"; print s }'
}

# put DIR STEP RANK WORD [WORKER]: a .meta naming h(WORD) and its .data
put() {
	mkdir -p "$1"
	printf %s "$(h "$4")" >"$1/job-s$2-n$3-w${5:-0}.meta"
	echo "$4" >"$1/$(h "$4").data"
}

start_daemon() { serve_on "$1"; } # start_daemon DIR: sets URL

inventory() { # a 2-node inventory; node 1 wiped, its data on node 0
	cat <<-JSON
	{"job-name": "job", "nodes": 2, "ranks": [
	 {"node-rank": 0, "node-address": "http://n0", "meta-files": [[5, 0, 0, "$(h a)"], [5, 1, 0, "$(h b)"]],
	  "data-files": ["$(h a)", "$(h b)"]},
	 {"node-rank": 1, "node-address": "http://n1", "meta-files": [], "data-files": []}]}
	JSON
}

@test "--inventory FILE prints a summary a person can read" {
	inventory >"$T/inv.json"
	run mtc-lkg --inventory "$T/inv.json"
	assert_success
	assert_line --index 0 "step 5 from the cluster (2 nodes x 1 worker)"
	assert_line --regexp "^1 +yes +62(0){62} from rank 0$" # the whole hash, to paste
	assert_line "1 of 2 ranks hold everything they need"
}

@test "--inventory: a column whose replicas disagree is skipped: a node's data lost is never its column-mate's" {
	cat >"$T/inv.json" <<-JSON
	{"job-name": "job", "nodes": 2, "assume-data-parallelism": 2, "ranks": [
	 {"node-rank": 0, "meta-files": [[5, 0, 0, "$(h a)"]], "data-files": []},
	 {"node-rank": 1, "meta-files": [[5, 1, 0, "$(h b)"]], "data-files": ["$(h b)"]}]}
	JSON
	run mtc-lkg --inventory "$T/inv.json"
	assert_failure 4
	assert_output --partial "error: step 5: column 0 worker 0: replicas disagree"
	assert_output --partial "the column is skipped"
	run mtc-lkg --inventory "$T/inv.json" --json
	assert_failure 4
	[ "$(jq -r '.step, .rejected[0].reason' <<<"$output" | tr '\n' ' ')" = "null node 0 worker 0: $(h a).data is held by no rank " ]
}

@test "--inventory - --json prints the plan" {
	run bash -c "$(declare -f h inventory); inventory | mtc-lkg --inventory - --json"
	assert_success
	[ "$(jq -r '.step, .source, .ranks[1].fetch[0].from[0]' <<<"$output" | tr '\n' ' ')" = "5 cluster 0 " ]
	[ "$(jq -r '.ranks[1].fetch[0].hash' <<<"$output")" = "$(h b)" ]
}

@test "nothing valid: exit 4 with the reason" {
	echo '{"nodes": 3, "ranks": []}' >"$T/inv.json"
	run mtc-lkg --inventory "$T/inv.json"
	assert_failure 4
	assert_output --partial "nothing to restore: no checkpoint"
	run mtc-lkg --inventory "$T/inv.json" --json
	assert_failure 4
	[ "$(jq -c '[.step, .source]' <<<"$output")" = '[null,"none"]' ]
}

@test "a malformed inventory is exit 1 with what is wrong" {
	echo '{"nodes": 2, "ranks": [{"node-rank": 2}]}' >"$T/inv.json"
	run mtc-lkg --inventory "$T/inv.json"
	assert_failure 1
	assert_output "mtc-lkg: invalid inventory '$T/inv.json': ranks[0]: node-rank 2 is out of range (nodes: 2)"
	echo '{"nodes": ' >"$T/bad.json"
	run mtc-lkg --inventory "$T/bad.json"
	assert_failure 1
	assert_output --partial "invalid inventory '$T/bad.json': line"
	run mtc-lkg --inventory "$T/missing.json"
	assert_failure 4
	assert_output "mtc-lkg: cannot read inventory '$T/missing.json': No such file or directory"
}

@test "modes do not mix, and one must be given" {
	run mtc-lkg --inventory x --dir "$T"
	assert_failure 2
	run mtc-lkg --peer http://x
	assert_failure 2
	run mtc-lkg
	assert_failure 2
	assert_output --partial "--inventory FILE, --dir DIR or --backups"
	run mtc-lkg --dir "$T" --peer 'x=http://y'
	assert_failure 2
	assert_output --partial "RANK=URL"
}

@test "--dir alone: one node's own steps" {
	put "$T/l" 4 0 a4
	put "$T/l" 5 0 a5
	run mtc-lkg --dir "$T/l" --json
	assert_success
	[ "$(jq -c '[.step, .source, .nodes, ."job-name"]' <<<"$output")" = '[5,"cluster",1,"job"]' ]
}

@test "--dir with peers: a wiped node's data is planned from the peers that hold it" {
	put "$T/n0" 7 0 a
	put "$T/n0" 7 1 b
	mkdir -p "$T/n1"
	put "$T/n2" 7 2 c
	put "$T/n2" 7 1 b
	start_daemon "$T/n0"
	u0=$URL
	start_daemon "$T/n1"
	u1=$URL
	start_daemon "$T/n2"
	u2=$URL
	run mtc-lkg --dir "$T/n0" --peer "$u1" --peer "$u2" --json
	assert_success
	[ "$(jq -c '[.step, .nodes, .ranks[1].reported, .ranks[1].fetch[0].from]' <<<"$output")" = '[7,3,true,[2,0]]' ]
	[ "$(jq -r '.ranks[2]."node-address"' <<<"$output")" = "$u2" ]
	# the same from rank 2, with the ranks given explicitly
	run mtc-lkg --dir "$T/n2" --rank 2 --peer "1=$u1" --peer "0=$u0" --json
	assert_success
	[ "$(jq -c '[.step, .ranks[1].fetch[0].from]' <<<"$output")" = '[7,[2,0]]' ]
	[ "$(jq -r '.ranks[0]."node-address"' <<<"$output")" = "$u0" ]
	# and by a template over the config's nodes
	printf '{"job-name":"job","framework":"orbax","node-rank":0,"nodes":3,"peers-per-node":1,"backup-interval-minutes":30}\n' >"$T/cfg.json"
	run mtc-lkg --dir "$T/n0" --config "$T/cfg.json" --peer-url-template "http://127.0.0.1:{rank}" --peer-timeout 1 --json
	assert_failure 4
	assert_output --partial "rank 1 'http://127.0.0.1:1' is left out"
	assert_output --partial "rank 2 'http://127.0.0.1:2' is left out"
	run mtc-lkg --dir "$T/n0" --rank 0 --peer "1=$u1" --peer "1=$u2"
	assert_failure 2
	assert_output --partial "rank 1 is given twice"
}

@test "--dir with a peer down: a warning, and the plan without it" {
	put "$T/n0" 3 0 a
	put "$T/n0" 3 1 b
	run mtc-lkg --dir "$T/n0" --peer http://127.0.0.1:9 --peer-timeout 1 --json
	assert_success
	assert_output --partial "rank 1 'http://127.0.0.1:9' is left out"
	assert_output --partial "1 of 1 peers did not answer"
}

@test "--dir with --config: the job, the nodes and data parallelism come from it" {
	printf '{"job-name":"job","framework":"orbax","node-rank":0,"nodes":4,"peers-per-node":1,"assume-data-parallelism":2,"backup-interval-minutes":30}\n' >"$T/cfg.json"
	put "$T/l" 9 0 p
	put "$T/l" 9 1 q
	printf %s "$(h x)" >"$T/l/otherjob-s9-n2-w0.meta"
	echo x >"$T/l/$(h x).data"
	run mtc-lkg --dir "$T/l" --config "$T/cfg.json" --json
	assert_success
	[ "$(jq -c '[.step, .nodes, .ranks[2].metas[0].inferred, .ranks[3].metas[0].inferred, .ranks[0]."replication-peers"]' <<<"$output")" = '[9,4,true,true,[2]]' ]
}

backup() { # backup ROOT NAME STEP NODES...: a complete backup of STEP for these nodes
	local root=$1 name=$2 step=$3
	shift 3
	mkdir -p "$root/$name"
	for n in "$@"; do put "$root/$name" "$step" "$n" "bk$step-$n"; done
}

@test "--dir with --backups: the newest valid backup when the cluster has nothing" {
	mkdir -p "$T/l"
	backup "$T/bk/job" 2025-06-30_14-00 10 0
	backup "$T/bk/job" 2025-06-30_15-00 11 0
	rm "$T/bk/job/2025-06-30_15-00/$(h bk11-0).data"
	run mtc-lkg --dir "$T/l" --backups "$T/bk" --job job --json
	assert_success
	[ "$(jq -c '[.step, .source, .backup, .ranks[0].fetch[0].backup]' <<<"$output")" = '[10,"backup","2025-06-30_14-00",true]' ]
	run mtc-lkg --dir "$T/l" --backups "$T/bk" --job job
	assert_success
	assert_line --index 0 "step 10 from backup 2025-06-30_14-00 (1 nodes x 1 worker)"
}

@test "--dir with --backups: a valid cluster step is preferred, the backups are not read" {
	put "$T/l" 20 0 a
	backup "$T/bk/job" 2025-06-30_14-00 30 0
	run mtc-lkg --dir "$T/l" --backups "$T/bk" --job job --json
	assert_success
	[ "$(jq -c '[.step, .source]' <<<"$output")" = '[20,"cluster"]' ]
}

@test "--dir with --backups: restore.version forces its backup, or nothing" {
	put "$T/l" 20 0 a
	backup "$T/bk/job" 2025-06-30_14-00 10 0
	backup "$T/bk/job" 2025-06-30_15-00 11 0
	echo 2025-06-30_14-00 >"$T/bk/job/restore.version"
	run mtc-lkg --dir "$T/l" --backups "$T/bk" --job job --json
	assert_success
	[ "$(jq -c '[.step, .source, .backup, ."restore-version"]' <<<"$output")" = '[10,"backup","2025-06-30_14-00","2025-06-30_14-00"]' ]
	run mtc-lkg --dir "$T/l" --backups "$T/bk" --job job
	assert_line --index 0 "step 10 from backup 2025-06-30_14-00, forced by restore.version (1 nodes x 1 worker)"
	echo 2025-01-01_00-00 >"$T/bk/job/restore.version"
	run mtc-lkg --dir "$T/l" --backups "$T/bk" --job job
	assert_failure 4
	assert_output "nothing to restore: restore.version names backup '2025-01-01_00-00', which does not exist"
	echo 2025-06-30_15-00 >"$T/bk/job/restore.version"
	rm "$T/bk/job/2025-06-30_15-00/job-s11-n0-w0.meta"
	run mtc-lkg --dir "$T/l" --backups "$T/bk" --job job --json
	assert_failure 4
	[ "$(jq -c '[.step, .source]' <<<"$output")" = '[null,"none"]' ]
	assert_output --partial "which is not valid"
}

@test "--backups alone still lists the backups" {
	backup "$T/bk/job" 2025-06-30_14-00 10 0 1
	backup "$T/bk/job" 2025-06-30_15-00 11 0
	run mtc-lkg --backups "$T/bk" --job job --json
	assert_success
	[ "$(jq -c '[.["newest-valid"], (.backups | length)]' <<<"$output")" = '["2025-06-30_15-00",2]' ]
	run mtc-lkg --backups "$T/bk" --job job --nodes 2 --json
	assert_success
	[ "$(jq -r '.["newest-valid"]' <<<"$output")" = "2025-06-30_14-00" ]
}
