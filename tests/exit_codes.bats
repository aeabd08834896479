#!/usr/bin/env bats
# mtc(7) §9.4 in every program: each class of bad input gives its one exit
# code and one line on stderr naming what the user gave; §9.1: one meaning
# per short option.

load helpers
load fakegcs/fakegcs

setup() {
	T=$BATS_TEST_TMPDIR
	cd "$T"
	mkdir d root
	echo x >afile
	printf '{"job-name": "j", "framework": "orbax", "node-rank": 0, "nodes": 1, "peer-ranks": [], "backup-interval-minutes": 30}\n' >cfg.json
	echo '{' >broken.json
	mkdir cfgdir
}

teardown() { fakegcs_stop 2>/dev/null || true; }

# Every program and verb, as a command line.
EVERY=(mtc-backup mtc-restore mtc-lkg mtc-prune 'mtc-handshake '{accept,watch,offer,check,rank}
	'mtc-replicate '{digest,commit,gc,serve,push,fetch,run})

# Rows: CODE | ERE the one stderr line matches | the command (words without spaces).
# Every program and verb, each class of bad input.
TABLE='
2|unknown verb .bogus.|mtc-replicate bogus
2|--parallel takes a number, 1 or more, not .0.|mtc-backup -d d -c cfg.json -s 1 --to root --parallel 0
2|--parallel takes a number, 1 or more, not .-3.|mtc-backup -d d -c cfg.json -s 1 --to root --parallel -3
2|--parallel takes a number, 1 or more, not .0.|mtc-restore --from root --job j --out o --parallel 0
2|--parallel takes a number, 1 or more, not .-3.|mtc-restore --from root --job j --out o -j -3
2|--parallel takes a number, 1 or more, not .0.|mtc-lkg --backups root --job j --parallel 0
2|--parallel takes a number, 1 or more, not .-3.|mtc-lkg --backups root --job j -j -3
2|--parallel takes a number, 1 or more, not .0.|mtc-prune -p root --parallel 0
2|--parallel takes a number, 1 or more, not .-3.|mtc-prune -p root -j -3
2|invalid numeric value: .abc.|mtc-handshake watch -d d --timeout abc
2|--keep takes steps|mtc-replicate gc --dir d --config cfg.json --keep x
2|listen address .bogus. has no port|mtc-replicate serve --dir d --listen bogus
2|the port is 0 to 65535|mtc-replicate serve --dir d --listen 127.0.0.1:99999
2|--config is required \(see|mtc-backup -d d -s 1 --to root
2|--step is required \(see|mtc-backup -d d -c cfg.json --to root
2|--dir, --step and --to are required \(see|mtc-backup -c cfg.json
2|say what to do|mtc-restore
2|say what to compute|mtc-lkg
2|is needed|mtc-prune
2|check needs a FILE|mtc-handshake check
2|--keep is required \(see|mtc-replicate gc --dir d --config cfg.json
2|--step is required \(see|mtc-replicate push --dir d --config cfg.json --peer http://127.0.0.1:9
2|--from is required \(see|mtc-replicate fetch --dir d --meta j-s1-n0-w0.meta
2|--config is required \(see|mtc-replicate run --dir d
4|cannot read config .nosuch.json.: No such file|mtc-backup -d d -c nosuch.json -s 1 --to root
4|cannot read config .nosuch.json.: No such file|mtc-restore --dir d --config nosuch.json
4|cannot read config .nosuch.json.: No such file|mtc-restore --from root --config nosuch.json --out o
4|cannot read config .nosuch.json.: No such file|mtc-lkg --dir d --config nosuch.json
4|cannot read config .nosuch.json.: No such file|mtc-lkg --backups root --config nosuch.json
4|cannot read config .nosuch.json.: No such file|mtc-prune -c nosuch.json
4|cannot read config .nosuch.json.: No such file|mtc-replicate commit --dir d --config nosuch.json
4|cannot read config .nosuch.json.: No such file|mtc-replicate gc --dir d --config nosuch.json --keep 1
4|cannot read config .nosuch.json.: No such file|mtc-replicate push --dir d --config nosuch.json --step 1 --peer http://127.0.0.1:9
4|cannot read config .nosuch.json.: No such file|mtc-replicate run --dir d --config nosuch.json
4|cannot read the local dir .nosuch. \(--dir\)|mtc-lkg --dir nosuch
4|cannot read the local dir .nosuch. \(--dir\)|mtc-backup -d nosuch -c cfg.json -s 1 --to root
4|cannot read inventory .nosuch.json.: No such file|mtc-lkg --inventory nosuch.json
4|cannot read .nosuch.yaml.: No such file|mtc-handshake check nosuch.yaml
4|cannot digest .nosuch.|mtc-replicate digest nosuch
4|no such location: .nosuch.|mtc-restore --from nosuch --job j --out o
4|no such location: .nosuch.|mtc-lkg --backups nosuch --job j
4|no such location: .nosuch.|mtc-prune nosuch --job j
4|no such location: .nosuch.|mtc-prune -p nosuch
4|no step 1 of job .j. in .d. \(--step\)|mtc-backup -d d -c cfg.json -s 1 --to root
2|invalid config .broken.json.: not a JSON config|mtc-backup -d d -c broken.json -s 1 --to root
2|invalid config .broken.json.: not a JSON config|mtc-restore --dir d --config broken.json
2|invalid config .broken.json.: not a JSON config|mtc-lkg --dir d --config broken.json
2|invalid config .broken.json.: not a JSON config|mtc-replicate commit --dir d --config broken.json
2|invalid config .cfgdir.|mtc-replicate gc --dir d --config cfgdir --keep 1
2|invalid config .cfgdir.|mtc-backup -d d -c cfgdir -s 1 --to root
2|cannot read backup-warden config .cfgdir.: Is a directory|mtc-prune -c cfgdir
2|cannot read inventory .cfgdir.: Is a directory|mtc-lkg --inventory cfgdir
2|.afile. is a file, not a backup location|mtc-restore --from afile --job j --out o
2|.afile. is a file, not a backup location|mtc-lkg --backups afile --job j
2|.afile. is a file, not a backup location|mtc-prune afile --job j
2|.afile. is a file, not a backup location|mtc-prune -p afile
2|cannot read the local dir .afile. \(--dir\): Not a directory|mtc-lkg --dir afile
'

@test "exit codes: every program and verb, each class of bad input, one code and one line" {
	local failed=0 code pattern cmd rc lines
	while IFS='|' read -r code pattern cmd; do
		[ -n "$code" ] || continue
		# shellcheck disable=SC2086
		timeout 20 $cmd >/dev/null 2>"$T/err" </dev/null && rc=0 || rc=$?
		lines=$(grep -cv 'warning: created the local dir' "$T/err" || true)
		if [ "$rc" != "$code" ] || [ "$lines" != 1 ] ||
			! grep -v 'warning: created' "$T/err" | grep -Eq "^${cmd%% *}: .*$pattern"; then
			echo "want $code /$pattern/, got $rc: $cmd" >&2
			sed 's/^/    /' "$T/err" >&2
			failed=$((failed + 1))
		fi
	done < <(printf '2|unknown option: .--bogus.|%s --bogus\n' "${EVERY[@]}"; echo "$TABLE")
	[ "$failed" = 0 ]
}

@test "exit codes: mtc(7) gives the not-found row to a path the command line names" {
	run grep -A3 '^4	' "$MTC_TESTS/../man/mtc.7"
	assert_output --partial 'a path the command line names'
}

# ---- one meaning per short option

@test "short options: a letter means one long option across every program and verb" {
	local c
	{
		# shellcheck disable=SC2086
		for c in "${EVERY[@]}"; do $c --help; done
	} | sed -nE 's/^ +-([A-Za-z?]), --([a-z-]+).*/\1 \2/p' | sort -u >"$T/pairs"
	# --backup and --backups are the one backup location (mtc(7) §9.1)
	sed -i 's/^b backups$/b backup/' "$T/pairs"
	run bash -c "sort -u '$T/pairs' | cut -d' ' -f1 | uniq -d"
	assert_output ''
	grep -qx 'n dry-run' "$T/pairs"
	grep -qx 'p path' "$T/pairs"
	grep -qx 'j parallel' "$T/pairs"
}

@test "short options: the old clashing letters are refused where they meant something else" {
	run mtc-backup -d d -c cfg.json -s 1 -t root
	assert_failure 2
	assert_output --partial "unknown option: '-t'"
	run mtc-restore --from root --job j -n 2025-01-01_00-00 --out o
	assert_failure 2
	run mtc-lkg --dir d -p http://127.0.0.1:9
	assert_failure 2
	run mtc-handshake watch -d d -t 1
	assert_failure 2
	run mtc-replicate digest -t 2 afile
	assert_failure 2
}

@test "short options: -q is errors only everywhere, so mtc-prune -q prints no table" {
	mkdir -p root/j/2025-06-30_10-00
	run mtc-prune -p root/j
	assert_success
	assert_output --partial '1 backups'
	run mtc-prune -p root/j -q
	assert_success
	assert_output ''
	run mtc-prune -p root/j -q --print-kept
	assert_success
	assert_output --partial '2025-06-30_10-00'
}

# ---- errors that name what the user gave, one test per message

@test "errors: a file given as a location is named as a file, not 'no such location'" {
	run mtc-restore --from afile --job j --out o
	assert_failure 2
	assert_output "mtc-restore: 'afile' is a file, not a backup location: give the directory that holds the backups"
}

@test "errors: a missing --dir names the dir and the option, not a .meta path" {
	run mtc-backup -d nosuch -c cfg.json -s 3 --to root
	assert_failure 4
	assert_output "mtc-backup: cannot read the local dir 'nosuch' (--dir): No such file or directory"
	run mtc-lkg --dir nosuch
	assert_failure 4
	assert_output "mtc-lkg: cannot read the local dir 'nosuch' (--dir): No such file or directory"
}

@test "errors: a step missing from --dir names the step, not a .meta path" {
	run mtc-backup -d d -c cfg.json -s 3 --to root
	assert_failure 4
	assert_output "mtc-backup: no step 3 of job 'j' in 'd' (--step): 'j-s3-n0-w0.meta' is missing"
}

@test "errors: a missing --config says so, not 'unable to open ... at line -1'" {
	run mtc-backup -d d -c nosuch.json -s 1 --to root
	assert_failure 4
	assert_output "mtc-backup: cannot read config 'nosuch.json': No such file or directory"
	refute_output --partial 'line -1'
}

@test "errors: a --name no backup has names the option and the newest backup" {
	mtc-replicate digest afile >/dev/null
	mkdir -p root/j/2025-06-30_10-00
	run mtc-restore --from root --job j --name 2025-01-01_00-00 --out o
	assert_failure 4
	assert_output "mtc-restore: no backup '2025-01-01_00-00' at 'root/j' (--name): the newest is 2025-06-30_10-00"
	refute_output --partial '.meta of rank'
}

@test "errors: of --dir, --config, --step and --to only the missing ones are named" {
	run mtc-backup -d d -c cfg.json --to root
	assert_failure 2
	assert_output "mtc-backup: --step is required (see 'mtc-backup --help')"
	run mtc-backup -c cfg.json -s 1
	assert_failure 2
	assert_output "mtc-backup: --dir and --to are required (see 'mtc-backup --help')"
}

@test "errors: an HTTP 401 from gs:// says which credential to check" {
	fakegcs_start --require-auth --accept-token good-token
	echo bad-token >"$T/token"
	run mtc-lkg --backups gs://bkt --job j --gcs-token-file "$T/token"
	assert_failure
	assert_output --partial 'HTTP 401'
	assert_output --partial 'check the gs:// credential: --gcs-token-file'
	[ "${#lines[@]}" = 1 ]
}

@test "errors: a misspelt s3:// or gs:// is never taken for a local path" {
	run mtc-restore --from s3:/bkt --job j --out o
	assert_failure 2
	assert_output "mtc-restore: 's3:/bkt' is not a URL: write s3://BUCKET[/PREFIX]"
	run mtc-lkg --backups S3://bkt --job j
	assert_failure 2
	assert_output "mtc-lkg: 'S3://bkt' is not a URL: write s3://BUCKET[/PREFIX]"
	run mtc-backup -d d -c cfg.json -s 1 --to gs:bkt
	assert_failure 2
	assert_output "mtc-backup: cannot open 'gs:bkt': not a URL: write gs://BUCKET[/PREFIX]"
	[ ! -e s3: ] && [ ! -e gs:bkt ]
	# no bucket: refused at once, never a wait on a store nor a job taken for the bucket
	run timeout 10 mtc-restore --from s3:// --job j --out o --s3-endpoint http://127.0.0.1:9
	assert_failure 2
	assert_output "mtc-restore: 's3://' is a URL without a bucket: write s3://BUCKET[/PREFIX]"
	run timeout 10 mtc-lkg --backups gs:///x --job j
	assert_failure 2
	assert_output "mtc-lkg: 'gs:///x' is a URL without a bucket: write gs://BUCKET[/PREFIX]"
}
