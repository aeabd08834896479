#!/usr/bin/env bats
# One JSON vocabulary (mtc(7) 9.2): every line any program prints with
# --json validates against man/mtc-json.schema.json (additionalProperties
# false: an undocumented field fails), and the table in mtc(7) names the
# same fields as the schema.

load helpers
load backup

SCHEMA="$BATS_TEST_DIRNAME/../man/mtc-json.schema.json"

setup() {
	W=$(mktemp -d)
	config "$W/cfg" job 0 1
	H=$(saved_step "$W/local" job 100 0 a 20000)
}

teardown() { rm -rf "$W"; }

# valid: each line of $output validates against the schema.
valid() {
	printf '%s\n' "$output" | python3 -c '
import json, sys, jsonschema
v = jsonschema.Draft202012Validator(json.load(open(sys.argv[1])))
bad = 0
for line in sys.stdin.read().splitlines():
    for e in v.iter_errors(json.loads(line)):
        print("%s: %s" % (line[:120], e.message)); bad = 1
sys.exit(bad)' "$SCHEMA" || fail "not in the vocabulary: $output"
}

jrun() {
	local want=$1
	shift
	run --separate-stderr "$@"
	[ "$status" -eq "$want" ] || fail "exit $status, not $want: $* $stderr"
	valid
}

@test "the schema refuses an undocumented field, and mtc(7) lists every field" {
	output='{"step":1,"no-such-field":2}'
	run valid
	assert_failure
	output='{"step":-1.5}'
	run valid
	assert_failure
	fields=$(python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["properties"]))' "$SCHEMA")
	table=$(sed -n '/^NAME	TYPE	MEANING$/,/^\.TE$/p' "$BATS_TEST_DIRNAME/../man/mtc.7" | grep -v '^T}\|^\.TE' | awk -F'\t' 'NF==3 && NR>1 {print $1}')
	assert_equal "$table" "$fields"
}

@test "backup, lkg, restore --from/--verify, prune: every line in the vocabulary, one meaning of location and backup" {
	jrun 0 mtc-backup --dir "$W/local" --config "$W/cfg" --step 100 --to "$W/bk" --name 2025-06-30_14-30 --json
	assert_output --partial "\"location\":\"$W/bk\",\"job\":\"job\",\"backup\":\"2025-06-30_14-30\""
	jrun 0 mtc-lkg --backups "$W/bk" --job job --json
	assert_output --partial '"backup":"2025-06-30_14-30","state":"valid"'
	jrun 0 mtc-restore --from "$W/bk" --job job --name 2025-06-30_14-30 --out "$W/out" --json
	assert_output --partial "\"location\":\"$W/bk\",\"job\":\"job\",\"backup\":\"2025-06-30_14-30\""
	jrun 0 mtc-restore --from "$W/bk" --job job --name 2025-06-30_14-30 --verify --json
	assert_output --partial "\"location\":\"$W/bk\",\"job\":\"job\",\"backup\":\"2025-06-30_14-30\",\"step\":100,\"state\":\"valid\""
	jrun 0 mtc-prune "$W/bk" --job job --json --hourly 1 --daily 0 --weekly 0 --monthly 0 --yearly 0
	assert_output --partial "\"job-root\":\"$W/bk/job\""
	assert_output --partial '"total":1'
}

@test "restore --verify of a missing backup: state missing, step null" {
	mtc-backup --dir "$W/local" --config "$W/cfg" --step 100 --to "$W/bk" --name 2025-06-30_14-30 >/dev/null
	jrun 4 mtc-restore --from "$W/bk" --job job --name 2025-06-30_14-31 --verify --json
	assert_output --partial '"backup":"2025-06-30_14-31","step":null,"state":"missing"'
}

@test "backup and restore print for people by default, JSON with --json" {
	run --separate-stderr mtc-backup --dir "$W/local" --config "$W/cfg" --step 100 --to "$W/bk" --name 2025-06-30_14-30
	assert_success
	assert_output --regexp "^backed up step 100 of rank 0 to '$W/bk/job/2025-06-30_14-30': "
	run --separate-stderr mtc-restore --from "$W/bk" --job job --name 2025-06-30_14-30 --verify
	assert_success
	assert_output "$W/bk/job/2025-06-30_14-30: valid"
}

@test "replicate digest, commit, gc: every line in the vocabulary" {
	jrun 0 mtc-replicate digest --json --manifest "$W/local/$H.data"
	saved_step "$W/local" job 200 0 b 1000 >/dev/null
	jrun 0 mtc-replicate gc --dir "$W/local" --config "$W/cfg" --keep 200 --dry-run --json
	assert_output --partial '"would-delete-paths":["'
	jrun 0 mtc-replicate gc --dir "$W/local" --config "$W/cfg" --keep 200 --json
}
