#!/usr/bin/env bats
# What mtc(7) §9 asks of every program: the same options, exit codes,
# one-line errors, a man page with the exit-code table, and completions.

load helpers

programs() { ls "$MTC_BIN" | grep '^mtc-'; }

@test "the six programs are built" {
	for p in mtc-handshake mtc-replicate mtc-backup mtc-restore mtc-lkg mtc-prune; do
		assert_file_executable "$MTC_BIN/$p"
	done
}

@test "every program answers --help, --usage and --version with exit 0" {
	for p in $(programs); do
		run "$p" --help
		assert_success
		assert_output --partial "Usage"
		run "$p" --usage
		assert_success
		run "$p" --version
		assert_success
		assert_output --regexp "^$p \(mtc\) [0-9]+\.[0-9]+\.[0-9]+$"
	done
}

@test "-h is --help everywhere, and a verb's usage names its program and verb" {
	for p in $(programs); do
		run "$p" -h
		assert_success
		assert_output --partial "Usage: $p"
	done
	for v in digest commit gc serve push fetch run; do
		run mtc-replicate "$v" --help
		assert_success
		assert_line --index 0 --regexp "^Usage: mtc-replicate $v "
	done
}

@test "every program refuses an unknown option with exit 2 and one line" {
	for p in $(programs); do
		run --separate-stderr "$p" --no-such-option
		[ "$status" -eq 2 ] || fail "$p exited $status"
		[ "${#stderr_lines[@]}" -eq 1 ] || fail "$p said: $stderr"
		[[ "${stderr_lines[0]}" == "$p: "* ]] || fail "$p said: $stderr"
	done
}

@test "every program refuses an unknown --log-format with exit 2, naming it" {
	for cmd in mtc-handshake "mtc-replicate digest" mtc-backup mtc-restore mtc-lkg mtc-prune; do
		run --separate-stderr $cmd --log-format yaml-please
		[ "$status" -eq 2 ] || fail "$cmd exited $status"
		[[ "$stderr" == "${cmd%% *}"*": unknown log format 'yaml-please'"* ]] ||
			fail "$cmd said: $stderr"
	done
}

@test "--token-file, which named two different secrets, is refused everywhere, naming both flags" {
	echo "a-secret-of-at-least-16-bytes" >"$BATS_TEST_TMPDIR/tok"
	for cmd in "mtc-backup" "mtc-restore" "mtc-lkg" "mtc-prune" "mtc-replicate serve" \
		"mtc-replicate push" "mtc-replicate fetch" "mtc-replicate run"; do
		run --separate-stderr $cmd --token-file "$BATS_TEST_TMPDIR/tok"
		[ "$status" -eq 2 ] || fail "$cmd exited $status"
		[[ "$stderr" == *"--peer-token-file"*"--gcs-token-file"* ]] || fail "$cmd said: $stderr"
	done
	run "$MTC_TESTS/../contrib/mtc-node" --token-file=x
	assert_failure 2
	assert_output --partial "--peer-token-file"
}

@test "every program has a man page with the exit-code table" {
	for p in $(programs); do
		local page="$MTC_TESTS/../man/$p.1"
		assert_file_exists "$page"
		run sed -n '/^\.SH EXIT STATUS/,/^\.SH/p' "$page"
		for code in 0 1 2 3 4 5; do
			echo "$output" | grep -qE "^$code[[:space:]]" || fail "$p.1 lacks exit code $code"
		done
		run --separate-stderr env MANWIDTH=80 man --warnings -l "$page"
		assert_success
		[ -z "$stderr" ] || fail "$p.1: $stderr"
	done
	assert_file_exists "$MTC_TESTS/../man/mtc.7"
}

@test "every program has bash and zsh completions that load" {
	for p in $(programs); do
		assert_file_exists "$MTC_TESTS/../completions/$p.bash"
		assert_file_exists "$MTC_TESTS/../completions/_$p"
		run bash -c "source '$MTC_TESTS/../completions/$p.bash' && complete -p $p"
		assert_success
		head -1 "$MTC_TESTS/../completions/_$p" | grep -q "^#compdef $p"
	done
}

@test "a plain make does not stop on warnings; make check (WERROR=1) does" {
	cd "$MTC_TESTS/.."
	run make -n -B B="$BATS_TEST_TMPDIR/b" "$BATS_TEST_TMPDIR/b/lib/log.o"
	assert_success
	assert_output --partial " -Wall -Wextra "
	refute_output --partial "-Werror"
	run make -n -B WERROR=1 B="$BATS_TEST_TMPDIR/b" "$BATS_TEST_TMPDIR/b/lib/log.o"
	assert_output --partial "-Werror"
	run make -n check-builds B="$BATS_TEST_TMPDIR/b"
	assert_output --regexp "cc .*-Werror.* -o $BATS_TEST_TMPDIR/b/lib/log.o "
}

@test "contrib/demo.sh writes no colour codes into a redirected file" {
	local out="$BATS_TEST_TMPDIR/demo.out"
	timeout 300 "$MTC_TESTS/../contrib/demo.sh" "$MTC_BIN" >"$out" 2>&1
	grep -q '^== 1. four nodes start' "$out"
	run grep -c $'\e' "$out"
	assert_output 0
}
