#!/usr/bin/env bats
# mtc-handshake: both sides of the replicator.yaml handshake (mtc(7) §3.1–3.2).

load helpers

setup() {
	D="$BATS_TEST_TMPDIR/local"
	mkdir -p "$D"
}

teardown() {
	[ -z "${BG:-}" ] || kill $BG 2>/dev/null || true
}

orbax_yaml() { # rank nodes peers — the bytes Orbax writes, no final newline
	printf 'job-name: job\nframework: orbax\nassume-data-parallelism: 2\nnode-rank: %s\nnodes: %s\npeer-ranks: %s\nbackup-interval-minutes: 30' "$1" "$2" "$3"
}

accept() { run --separate-stderr mtc-handshake accept --dir "$D" --timeout 10 "$@"; }

# A config that must be refused: exit 2 (a restart cannot fix it), a one-line error, replicator.failed with the reason, yaml gone.
invalid_config() {
	local why=$1
	rm -f "$D"/replicator.*
	cat > "$D/replicator.yaml"
	touch -d '-2 seconds' "$D/replicator.yaml" # found at start, already settled
	accept
	assert_failure 2
	assert_equal "${#stderr_lines[@]}" 1
	assert_output ""
	[[ "$stderr" == *"$why"* ]] || fail "stderr '$stderr' lacks '$why'"
	assert_file_not_exists "$D/replicator.yaml"
	assert_file_exists "$D/replicator.failed"
	grep -qF -- "$why" "$D/replicator.failed"
	grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8}\.[0-9]{3} [0-9A-F]{4,}:[0-9A-F]{4,} init \[CRI\] handshake\.main\(0\): invalid config' "$D/replicator.failed"
	grep -qF -- "$why" "$D/replicator.errors"
}

@test "accepts the Orbax byte form: tmp + rename, flow list, no final newline" {
	orbax_yaml 1 4 '[3]' > "$D/replicator.yaml.tmp"
	mv "$D/replicator.yaml.tmp" "$D/replicator.yaml"
	accept
	assert_success
	assert_output '{"job-name":"job","framework":"orbax","node-rank":1,"nodes":4,"peer-ranks":[3],"peers-per-node":1,"assume-data-parallelism":2,"backup-interval-minutes":30,"workers-per-node":1}'
	assert_file_not_exists "$D/replicator.yaml"
}

@test "accepts the Orbax form with an empty peer list (one slice)" {
	orbax_yaml 0 1 '[]' | sed 's/parallelism: 2/parallelism: 1/' > "$D/replicator.yaml"
	accept
	assert_success
	assert_output --partial '"peer-ranks":[],"peers-per-node":0'
}

@test "accepts the NeMo form that PyYAML's yaml.dump writes in place" {
	mtc-handshake accept --dir "$D" --timeout 20 > "$BATS_TEST_TMPDIR/accepted" &
	BG=$!
	NODE_RANK=1 NNODES=2 python3 -c '
import sys, yaml
config = {"job-name": "llama", "framework": "pytorch.distributed", "node-rank": 1, "nodes": 2,
          "peers-per-node": 1, "backup-interval-minutes": 30, "peer-ranks": [0]}
with open(sys.argv[1] + "/replicator.yaml", "w") as f:
    yaml.dump(config, f, default_flow_style=False, sort_keys=False)' "$D"
	wait $BG
	BG=
	run cat "$BATS_TEST_TMPDIR/accepted"
	assert_output '{"job-name":"llama","framework":"pytorch.distributed","node-rank":1,"nodes":2,"peer-ranks":[0],"peers-per-node":1,"backup-interval-minutes":30,"workers-per-node":1}'
}

@test "waits for a slow in-place writer to close the file" {
	mtc-handshake accept --dir "$D" --timeout 20 > "$BATS_TEST_TMPDIR/accepted" &
	BG=$!
	python3 -c '
import sys, time
with open(sys.argv[1] + "/replicator.yaml", "w") as f:
    f.write("job-name: slow\nframework: pytorch\n"); f.flush(); time.sleep(0.6)
    f.write("node-rank: 0\nnodes: 1\npeers-per-node: 0\nbackup-interval-minutes: 5\n")' "$D"
	wait $BG
	BG=
	run cat "$BATS_TEST_TMPDIR/accepted"
	assert_output --partial '"job-name":"slow"'
}

@test "a stale replicator.yaml from a previous run is accepted at start" {
	orbax_yaml 0 2 '[1]' > "$D/replicator.yaml"
	touch -d '-1 hour' "$D/replicator.yaml"
	accept
	assert_success
	assert_output --partial '"node-rank":0'
}

# Its time set ahead, the yaml never settles: only the read lease tells that it is whole.
@test "a replicator.yaml found at start that no one has open for writing is taken at once" {
	orbax_yaml 0 2 '[1]' > "$D/replicator.yaml"
	touch -d '+1 hour' "$D/replicator.yaml"
	accept
	assert_success
	assert_output --partial '"node-rank":0'
}

@test "a replicator.yaml found at start that a writer still holds open is taken once it closes it" {
	orbax_yaml 0 2 '[1]' > "$D/replicator.yaml"
	touch -d '+1 hour' "$D/replicator.yaml"
	exec {w}>>"$D/replicator.yaml"
	accept --timeout 1
	exec {w}>&-
	assert_failure 3
	assert_file_exists "$D/replicator.yaml"
	accept
	assert_success
	assert_output --partial '"node-rank":0'
}

@test "cleanup keeps exactly *.meta, *.data, the manifests of data there and jax-init-info.txt" {
	h=D$(printf '%064d' 1) gone=D$(printf '%064d' 2) odd=D$(printf '%064d' 3)
	# a tree's data and manifest; a manifest whose data is gone; one that is not a file
	mkdir -p "$D/7" "$D/$h.data" "$D/$odd.data" "$D/$odd.manifest" "$D/D0123.data/sub" "$D/8.orbax-checkpoint-tmp" "$D/step=9" "$BATS_TEST_TMPDIR/outside"
	touch "$D/job-s7-n0-w0.meta" "$D/abc.data" "$D/D0123.data/sub/f" "$D/jax-init-info.txt" \
		"$D/job-s7-n0-w0.save" "$D/job-s7-n0-w0.tmp" "$D/replicator.errors" "$D/replicator.failed" \
		"$D/replicator.prerestore" "$D/.hidden" "$D/7/x" "$D/notes.txt" "$BATS_TEST_TMPDIR/outside/keep" \
		"$D/$h.manifest" "$D/$gone.manifest" "$D/.mtc-upload-manifest-$h"
	ln -s "$BATS_TEST_TMPDIR/outside" "$D/job-s5-n0-w0.restore"
	ln -s "$BATS_TEST_TMPDIR/outside" "$D/5"
	orbax_yaml 0 2 '[1]' > "$D/replicator.yaml"
	accept
	assert_success
	run ls -A "$D"
	assert_output "$(printf '%s\n' "$h.data" "$h.manifest" "$odd.data" D0123.data abc.data jax-init-info.txt job-s7-n0-w0.meta)"
	assert_file_exists "$D/D0123.data/sub/f"
	assert_file_exists "$BATS_TEST_TMPDIR/outside/keep"
}

@test "the yaml is deleted only after the cleanup (seen from a second process)" {
	for i in $(seq 1 200); do touch "$D/junk-$i"; done
	inotifywait -m -e delete --format '%f' "$D" >"$BATS_TEST_TMPDIR/events" 2>"$BATS_TEST_TMPDIR/watching" &
	BG=$!
	for _ in $(seq 300); do grep -q "Watches established" "$BATS_TEST_TMPDIR/watching" && break; sleep 0.1; done
	grep -q "Watches established" "$BATS_TEST_TMPDIR/watching"
	orbax_yaml 0 2 '[1]' > "$D/replicator.yaml"
	accept
	assert_success
	# every deletion seen (the 200 and the yaml), in the order they happened
	seen() { [ "$(grep -c '^junk-' "$BATS_TEST_TMPDIR/events")" = 200 ] && grep -qx replicator.yaml "$BATS_TEST_TMPDIR/events"; }
	for _ in $(seq 300); do seen && break; sleep 0.1; done
	kill $BG
	BG=
	run tail -n 1 "$BATS_TEST_TMPDIR/events"
	assert_output replicator.yaml
	run grep -c '^junk-' "$BATS_TEST_TMPDIR/events"
	assert_output 200
}

@test "expands \$VAR and \${VAR} from the environment, then reads integers" {
	printf 'job-name: ${JOB}-x\nframework: $FW\nnode-rank: $RANK\nnodes: ${N}\npeer-ranks: [$PEER]\nbackup-interval-minutes: $UNSET_MTC_VAR\n' > "$D/replicator.yaml"
	JOB=llama FW=orbax RANK=2 N=4 PEER=3 accept
	assert_failure 2
	[[ "$stderr" == *"'backup-interval-minutes' must be an integer, not '\$UNSET_MTC_VAR'"* ]]
	printf 'job-name: ${JOB}-x\nframework: $FW\nnode-rank: $RANK\nnodes: ${N}\npeer-ranks: [$PEER]\nbackup-interval-minutes: 5\n' > "$D/replicator.yaml"
	JOB=llama FW=orbax RANK=2 N=4 PEER=3 accept
	assert_success
	assert_output --partial '"job-name":"llama-x","framework":"orbax","node-rank":2,"nodes":4,"peer-ranks":[3]'
}

@test "every invalid config gets a one-line error and replicator.failed" {
	invalid_config "file is empty" < /dev/null
	printf 'framework: orbax\nnode-rank: 0\nnodes: 2\npeer-ranks: [1]\nbackup-interval-minutes: 1' | invalid_config "missing required key 'job-name'"
	printf 'job-name: j\nnode-rank: 0\nnodes: 2\npeer-ranks: [1]\nbackup-interval-minutes: 1' | invalid_config "missing required key 'framework'"
	printf 'job-name: j\nframework: orbax\nnodes: 2\npeer-ranks: [1]\nbackup-interval-minutes: 1' | invalid_config "missing required key 'node-rank'"
	printf 'job-name: j\nframework: orbax\nnode-rank: 0\npeer-ranks: [1]\nbackup-interval-minutes: 1' | invalid_config "missing required key 'nodes'"
	printf 'job-name: j\nframework: orbax\nnode-rank: 0\nnodes: 2\npeer-ranks: [1]' | invalid_config "missing required key 'backup-interval-minutes'"
	printf 'job-name: j\nframework: orbax\nnode-rank: 2\nnodes: 2\npeer-ranks: [1]\nbackup-interval-minutes: 1' | invalid_config "'node-rank' 2 is out of range for 2 nodes"
	printf 'job-name: j\nframework: orbax\nnode-rank: 0\nnodes: 0\npeer-ranks: []\nbackup-interval-minutes: 1' | invalid_config "'nodes' must be at least 1, not 0"
	printf 'job-name: j\nframework: orbax\nnode-rank: -1\nnodes: 2\npeer-ranks: [1]\nbackup-interval-minutes: 1' | invalid_config "'node-rank' must be at least 0, not -1"
	printf 'job-name: j\nframework: orbax\nnode-rank: 1\nnodes: 3\npeer-ranks: [1]\nbackup-interval-minutes: 1' | invalid_config "'peer-ranks' names this node's own rank 1"
	printf 'job-name: j\nframework: orbax\nnode-rank: 0\nnodes: 3\npeer-ranks: [2, 2]\nbackup-interval-minutes: 1' | invalid_config "'peer-ranks' names rank 2 twice"
	printf 'job-name: j\nframework: orbax\nnode-rank: 0\nnodes: 3\npeer-ranks: [5]\nbackup-interval-minutes: 1' | invalid_config "'peer-ranks' names rank 5, out of range for 3 nodes"
	printf 'job-name: j\nframework: orbax\nnode-rank: 0\nnodes: 3\nbackup-interval-minutes: 1' | invalid_config "missing required key 'peer-ranks' (or 'peers-per-node')"
	printf 'job-name: j\nframework: orbax\nnode-rank: 0\nnodes: 3\npeers-per-node: 3\nbackup-interval-minutes: 1' | invalid_config "'peers-per-node' 3 is more than the 2 other nodes"
	printf 'job-name: j\nframework: tensorflow\nnode-rank: 0\nnodes: 2\npeer-ranks: [1]\nbackup-interval-minutes: 1' | invalid_config "'framework' must be orbax, pytorch.distributed or pytorch, not 'tensorflow'"
	printf 'job-name: a/b\nframework: orbax\nnode-rank: 0\nnodes: 2\npeer-ranks: [1]\nbackup-interval-minutes: 1' | invalid_config "'job-name' 'a/b' cannot be used in file names"
	printf 'job-name: j\nframework: orbax\nnode-rank: zero\nnodes: 2\npeer-ranks: [1]\nbackup-interval-minutes: 1' | invalid_config "'node-rank' must be an integer, not 'zero'"
	printf 'job-name: j\njob-name: k\n' | invalid_config "key 'job-name' appears twice"
	printf 'job-name: [unclosed\n' | invalid_config "not valid YAML"
	printf -- '- just\n- a list\n' | invalid_config "the top level is not a YAML mapping"
	printf '\t\x01\x02binary' | invalid_config "not valid YAML"
}

@test "a value cannot forge a line in the status files, and a variable's value never reaches them" {
	printf 'job-name: "a\\n2025-01-01 00:00:00.000 1:1 init [CRI] forged"\nframework: orbax\nnode-rank: 0\nnodes: 1\npeer-ranks: []\nbackup-interval-minutes: 30' |
		invalid_config "cannot be used in file names"
	assert_equal "$(wc -l <"$D/replicator.failed")" 1
	grep -qF 'a\n2025-01-01' "$D/replicator.failed"
	export MTC_SECRET=hunter2-topsecret
	printf 'job-name: ${MTC_SECRET}/x\nframework: orbax\nnode-rank: 0\nnodes: 1\npeer-ranks: []\nbackup-interval-minutes: 30' |
		invalid_config "'\${MTC_SECRET}/x' cannot be used"
	printf 'job-name: j\nframework: $MTC_SECRET\nnode-rank: 0\nnodes: 1\npeer-ranks: []\nbackup-interval-minutes: 30' |
		invalid_config "not '\$MTC_SECRET'"
	printf 'job-name: j\nframework: orbax\nnode-rank: $MTC_SECRET\nnodes: 1\npeer-ranks: []\nbackup-interval-minutes: 30' |
		invalid_config "'node-rank' must be an integer, not '\$MTC_SECRET'"
	refute grep -q hunter2 "$D/replicator.errors"
}

@test "a replicator.yaml that is a directory, a symlink or a FIFO is refused at once through replicator.failed" {
	echo 'job-name: j' >"$BATS_TEST_TMPDIR/target"
	for kind in dir link fifo; do
		rm -rf "$D" && mkdir -p "$D"
		case $kind in
		dir) mkdir "$D/replicator.yaml" ;;
		link) ln -s "$BATS_TEST_TMPDIR/target" "$D/replicator.yaml" ;;
		fifo) mkfifo "$D/replicator.yaml" ;;
		esac
		accept
		assert_failure 2
		[[ "$stderr" == *"not a regular file"* ]]
		grep -q "not a regular file" "$D/replicator.failed"
		assert_not_exist "$D/replicator.yaml"
	done
	assert_file_exists "$BATS_TEST_TMPDIR/target" # a symlink's target is left alone
}

@test "a data parallelism that does not divide the nodes is accepted with dedup off and an error line" {
	printf 'job-name: j\nframework: orbax\nnode-rank: 0\nnodes: 1\nassume-data-parallelism: 8\npeer-ranks: []\nbackup-interval-minutes: 1' > "$D/replicator.yaml"
	accept
	assert_success
	assert_output --partial '"assume-data-parallelism":8'
	grep -qF "[ERR] handshake.main(0): 'assume-data-parallelism' 8 does not divide 'nodes' 1: data-parallel deduplication is off" "$D/replicator.errors"
	assert_file_not_exists "$D/replicator.failed"
}

@test "a peers-per-node that disagrees with peer-ranks is accepted; peer-ranks wins, with an error line" {
	# NeMo always writes peers-per-node (default 1) and adds peer-ranks when given.
	printf 'job-name: j\nframework: pytorch.distributed\nnode-rank: 0\nnodes: 3\npeers-per-node: 1\nbackup-interval-minutes: 1\npeer-ranks:\n- 1\n- 2\n' > "$D/replicator.yaml"
	accept
	assert_success
	assert_output --partial '"peer-ranks":[1,2],"peers-per-node":2'
	grep -qF "'peers-per-node' 1 does not match the 2 entries of 'peer-ranks': 'peer-ranks' is used" "$D/replicator.errors"
	assert_file_not_exists "$D/replicator.failed"
}

@test "a YAML bomb is refused without expanding it" {
	{
		echo 'a: &a ["x","x","x","x","x","x","x","x","x"]'
		for l in b c d e f g h i j; do echo "$l: &$l [*a,*a,*a,*a,*a,*a,*a,*a,*a]"; done
	} | sed 's/\*a/*PREV/g' | awk 'BEGIN{p="a"} NR>1{gsub(/PREV/,p); p=substr($1,1,1)} {print}' | invalid_config "YAML anchors and aliases are not allowed"
}

@test "a 100 MB file is refused at once" {
	head -c 100000000 /dev/zero | tr '\0' 'a' | invalid_config "file is larger than 65536 bytes"
}

@test "accept times out with exit 3" {
	run mtc-handshake accept --dir "$D" --timeout 0.5
	assert_failure 3
	assert_output --partial "timed out after 0.5 s waiting for '$D/replicator.yaml'"
}

@test "accept creates a missing directory and refuses one it cannot use, in one line" {
	run mtc-handshake accept --dir "$D/nope/local" --timeout 0.2
	assert_failure 3
	assert_line "mtc-handshake: warning: created the local dir '$D/nope/local' (mode 2770): it was missing, so nothing from before is in it"
	[ "$(stat -c %a "$D/nope/local")" = 2770 ]
	touch "$D/file"
	run mtc-handshake accept --dir "$D/file/local" --timeout 1
	assert_failure 2
	assert_output "mtc-handshake: cannot use '$D/file/local': Not a directory"
}

@test "watch returns when a new replicator.yaml appears by rename or in place" {
	mtc-handshake watch --dir "$D" --timeout 10 > "$BATS_TEST_TMPDIR/watched" &
	BG=$!
	sleep 0.3
	orbax_yaml 0 2 '[1]' > "$D/x.tmp" && mv "$D/x.tmp" "$D/replicator.yaml"
	wait $BG
	BG=
	assert_file_exists "$BATS_TEST_TMPDIR/watched"
	run cat "$BATS_TEST_TMPDIR/watched"
	assert_output "$D/replicator.yaml"
	rm "$D/replicator.yaml"
	mtc-handshake watch --dir "$D" --timeout 10 &
	BG=$!
	sleep 0.3
	echo 'job-name: j' > "$D/replicator.yaml"
	wait $BG
}

@test "watch times out with exit 3" {
	run mtc-handshake watch --dir "$D" --timeout 0.3
	assert_failure 3
}

@test "check validates a file or stdin and prints the config" {
	orbax_yaml 0 2 '[1]' > "$BATS_TEST_TMPDIR/r.yaml"
	run mtc-handshake check "$BATS_TEST_TMPDIR/r.yaml"
	assert_success
	assert_output --partial '"peer-ranks":[1]'
	run mtc-handshake check - < "$BATS_TEST_TMPDIR/r.yaml"
	assert_success
	printf 'job-name: j\n' | { run mtc-handshake check -; assert_failure 2; assert_output "mtc-handshake: invalid config '-': missing required key 'framework'"; }
	assert_file_exists "$BATS_TEST_TMPDIR/r.yaml"
}

@test "offer writes the exact Orbax bytes by tmp + rename" {
	inotifywait -q -e moved_to --format '%f' "$D" > "$BATS_TEST_TMPDIR/moved" &
	BG=$!
	sleep 0.3
	run mtc-handshake offer --dir "$D" --job-name job --node-rank 1 --nodes 4 --peer-ranks 3 --assume-data-parallelism 2 --backup-interval-minutes 30 --timeout 0.3
	assert_failure 3
	wait $BG
	BG=
	orbax_yaml 1 4 '[3]' > "$BATS_TEST_TMPDIR/want"
	cmp "$D/replicator.yaml" "$BATS_TEST_TMPDIR/want"
	run cat "$BATS_TEST_TMPDIR/moved"
	assert_output replicator.yaml
}

@test "offer --style nemo writes what PyYAML's yaml.dump writes" {
	for job in llama 123 'yes' 'a:b' '-lead' 'trail:' 'On' 'my-job_2' 1.5 0x10 '~' y 1e3 07 '%x' 'a#b' 1:30 1_000; do
		mtc-handshake offer --dir "$D" --style nemo --framework pytorch.distributed --job-name "$job" \
			--node-rank 0 --nodes 4 --peers-per-node 2 --peer-ranks 1,2 --backup-interval-minutes 30 --timeout 0.2 || true
		python3 -c '
import sys, yaml
config = {"job-name": sys.argv[1], "framework": "pytorch.distributed", "node-rank": 0, "nodes": 4,
          "peers-per-node": 2, "backup-interval-minutes": 30, "peer-ranks": [1, 2]}
sys.stdout.write(yaml.dump(config, default_flow_style=False, sort_keys=False))' "$job" > "$BATS_TEST_TMPDIR/want"
		cmp "$D/replicator.yaml" "$BATS_TEST_TMPDIR/want" || fail "job '$job': $(diff "$D/replicator.yaml" "$BATS_TEST_TMPDIR/want")"
		rm "$D/replicator.yaml"
	done
}

@test "offer waits for a stale yaml to go, or replaces it with --replace-stale" {
	echo stale > "$D/replicator.yaml"
	run mtc-handshake offer --dir "$D" --job-name j --node-rank 0 --nodes 1 --peer-ranks '' --backup-interval-minutes 5 --timeout 0.3
	assert_failure 3
	assert_output --partial "to disappear"
	run grep -c stale "$D/replicator.yaml"
	assert_output 1
	mtc-handshake offer --dir "$D" --replace-stale --job-name j --node-rank 0 --nodes 1 --peer-ranks '' --backup-interval-minutes 5 --timeout 10 &
	BG=$!
	wait_for "offer to replace the stale yaml" 10 grep -q job-name "$D/replicator.yaml"
	accept
	assert_success
	assert_output --partial '"job-name":"j"'
	wait $BG
	BG=
}

@test "offer refuses to write an invalid config" {
	run mtc-handshake offer --dir "$D" --job-name j --node-rank 0 --nodes 2 --peers-per-node 1 --backup-interval-minutes 5 --workers-per-node 70000 --timeout 10
	assert_failure 2
	assert_output --partial "'workers-per-node' must be at most 65536, not 70000"
	run mtc-handshake offer --dir "$D" --job-name j --node-rank 2 --nodes 2 --peers-per-node 1 --backup-interval-minutes 5
	assert_failure 2
	assert_output --partial "'node-rank' 2 is out of range for 2 nodes"
	assert_file_not_exists "$D/replicator.yaml"
}

@test "offer exits 1 with the text of replicator.failed once its yaml is gone" {
	(
		for _ in $(seq 600); do [ -e "$D/replicator.yaml" ] && break; sleep 0.05; done
		echo "2026-01-01 00:00:00.000 0001:0001 init [ERR] x.y(0): a warning" > "$D/replicator.errors"
		echo "2026-01-01 00:00:00.000 0001:0001 init [CRI] x.y(0): disk on fire" > "$D/replicator.failed"
		rm "$D/replicator.yaml"
	) &
	BG=$!
	run mtc-handshake offer --dir "$D" --job-name j --node-rank 0 --nodes 2 --peer-ranks 1 --backup-interval-minutes 5 --timeout 10
	assert_failure 1
	assert_output --partial "a warning"
	assert_output --partial "mtc-handshake: replicator failed: 2026-01-01 00:00:00.000 0001:0001 init [CRI] x.y(0): disk on fire"
	assert_file_not_exists "$D/replicator.failed"
	assert_file_not_exists "$D/replicator.errors"
}

@test "offer --wait-restore reports the marker; --rename consumes it like each framework" {
	offer() { # accept, then place the marker as the restore phase would
		local marker=$1 target=$2
		shift 2
		{ mtc-handshake accept --dir "$D" --timeout 10 > /dev/null &&
			if [ -n "$target" ]; then ln -s "$target" "$D/$marker"; else touch "$D/$marker"; fi; } &
		BG=$!
		run mtc-handshake offer --dir "$D" --job-name j --node-rank 0 --nodes 2 --peer-ranks 1 \
			--backup-interval-minutes 5 --timeout 10 --wait-restore --restore-timeout 10 "$@"
		wait $BG
		BG=
	}
	mkdir "$D/Dabc.data"
	offer j-s42-n0-w0.restore Dabc.data
	assert_success
	assert_output "42 $D/j-s42-n0-w0.restore"
	offer j-s42-n0-w0.restore Dabc.data --rename --json
	assert_success
	assert_output "{\"step\":42,\"path\":\"$D/42\"}"
	assert [ -L "$D/42" ]
	offer j-s43-n0-w0.restore Dabc.data --rename --style nemo --framework pytorch.distributed
	assert_output "43 $D/step=43"
	offer j-s0-n0-w0.restore ""
	assert_failure 4
	assert_output "0 $D/j-s0-n0-w0.restore"
}

@test "offer --wait-restore times out with exit 3" {
	mtc-handshake accept --dir "$D" --timeout 10 > /dev/null &
	BG=$!
	run mtc-handshake offer --dir "$D" --job-name j --node-rank 0 --nodes 1 --peer-ranks '' --backup-interval-minutes 5 --timeout 10 --wait-restore --restore-timeout 0.3
	assert_failure 3
	assert_output --partial "waiting for a '*.restore' marker"
}

@test "the Orbax and NeMo stand-ins complete the handshake with accept" {
	for style in orbax nemo; do
		rm -rf "$D" && mkdir "$D"
		mtc-handshake accept --dir "$D" --timeout 10 > /dev/null &
		BG=$!
		mtc-trainer --dir "$D" --style $style --rank 0 --nodes 2 --peer-ranks 1 --tick 0.05 --restore-timeout 100 > "$BATS_TEST_TMPDIR/out" 2>&1 &
		local T=$!
		wait $BG
		BG=
		# What the restore phase does when there is nothing: prerestore {} and an empty s0 marker.
		printf '{}\n' > "$D/replicator.prerestore"
		touch "$D/demo-s0-n0-w0.restore"
		wait $T
		run cat "$BATS_TEST_TMPDIR/out"
		assert_output --partial "restored 0"
	done
}

@test "the NeMo stand-in fails at once on replicator.failed" {
	mtc-trainer --dir "$D" --style nemo --rank 5 --nodes 2 --peer-ranks 1 --tick 0.05 > "$BATS_TEST_TMPDIR/out" 2>&1 &
	BG=$!
	run mtc-handshake accept --dir "$D" --timeout 10
	assert_failure 2
	local rc=0
	wait $BG || rc=$?
	BG=
	assert_equal "$rc" 1
	run cat "$BATS_TEST_TMPDIR/out"
	assert_output --partial "replicator failed with error"
	assert_output --partial "'node-rank' 5 is out of range for 2 nodes"
}

@test "usage errors exit 2; --help and --version exit 0" {
	run mtc-handshake
	assert_failure 2
	run mtc-handshake frobnicate
	assert_failure 2
	assert_output "mtc-handshake: unknown command 'frobnicate' (see 'mtc-handshake --help')"
	run mtc-handshake accept --bogus
	assert_failure 2
	run mtc-handshake accept
	assert_failure 2
	assert_output "mtc-handshake: --dir is required (see 'mtc-handshake accept --help')"
	run mtc-handshake accept --help
	assert_success
	assert_line --index 0 "Usage: mtc-handshake accept --dir DIR [--timeout SEC] [--json]"
	run mtc-handshake accept --dir "$D" --job-name x
	assert_failure 2
	run mtc-handshake --help
	assert_success
	assert_output --partial "accept|watch|offer|check"
	run mtc-handshake --version
	assert_success
	assert_output --regexp '^mtc-handshake \(mtc\) [0-9]+\.[0-9]+\.[0-9]+$'
}

@test "--log-format json writes JSON log lines" {
	run mtc-handshake accept --dir "$D" --timeout 0.2 --log-format json
	assert_failure 3
	echo "$output" | python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); assert d["level"]=="error" and d["prog"]=="mtc-handshake", d'
}
