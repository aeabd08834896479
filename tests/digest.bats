#!/usr/bin/env bats
# mtc-replicate digest against b3sum, and the directory digest against a
# small reimplementation of the reference rule on top of b3sum.

load helpers

setup() {
	T=$(mktemp -d /dev/shm/mtc-digest.XXXXXX)
}

teardown() {
	rm -rf "$T"
}

# The reference merkle.py rule, from b3sum: files hash their content; a dir
# is "D" + BLAKE3 of its children's digests sorted bytewise, joined by \n.
ref_digest() {
	local p=$1
	if [ -d "$p" ]; then
		local kids=() e
		while IFS= read -r -d '' e; do
			kids+=("$(ref_digest "$e")")
		done < <(find "$p" -mindepth 1 -maxdepth 1 -print0)
		printf 'D'
		if [ ${#kids[@]} -eq 0 ]; then
			printf '' | b3sum --no-names
		else
			printf '%s\n' "${kids[@]}" | LC_ALL=C sort | head -c -1 | b3sum --no-names
		fi
	else
		b3sum --no-names "$p"
	fi
}

file_of() { head -c "$2" /dev/urandom > "$T/$1"; }

@test "file digests equal b3sum at chunk and SIMD boundaries" {
	for n in 0 1 63 64 65 1023 1024 1025 2048 2049 4095 16385 65535 65536 65537 1048575 1048576 1048577 3000001; do
		file_of "f$n" "$n"
	done
	cd "$T"
	run mtc-replicate digest f*
	assert_success
	assert_output "$(b3sum f*)"
}

@test "a large odd-sized file is the same on 1 thread and on all" {
	n=$((67108864 + 12345)); sanitized && n=$((8388608 + 12345))
	file_of big "$n"
	want=$(b3sum --no-names "$T/big")
	run mtc-replicate digest --threads 1 "$T/big"
	assert_output "$want  $T/big"
	run mtc-replicate digest --threads 4 "$T/big"
	assert_output "$want  $T/big"
}

@test "directory digest matches the reference rule: empty files, empty and nested dirs" {
	mkdir -p "$T/d/a/b/c" "$T/d/empty" "$T/d/x/empty2"
	: > "$T/d/zero"
	: > "$T/d/a/zero"
	file_of d/one 1
	file_of d/a/b/mid 100000
	file_of d/a/b/c/deep 2049
	printf 'same' > "$T/d/x/dup1"
	printf 'same' > "$T/d/x/dup2"
	run mtc-replicate digest "$T/d"
	assert_success
	assert_output "$(ref_digest "$T/d")  $T/d"
	[[ $output == D* ]]
}

@test "an empty directory is D + BLAKE3 of nothing, unlike an empty file" {
	mkdir "$T/e"
	: > "$T/f"
	run mtc-replicate digest "$T/e" "$T/f"
	assert_line --index 0 "Daf1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262  $T/e"
	assert_line --index 1 "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262  $T/f"
}

@test "names are not hashed, but the manifest sees a swap" {
	mkdir "$T/a" "$T/b"
	printf one > "$T/a/x"; printf two > "$T/a/y"
	printf two > "$T/b/x"; printf one > "$T/b/y"
	a=$(mtc-replicate digest "$T/a" | cut -d' ' -f1)
	b=$(mtc-replicate digest "$T/b" | cut -d' ' -f1)
	[ "$a" = "$b" ]
	run mtc-replicate digest --json --manifest "$T/a" "$T/b"
	assert_success
	ma=$(sed -n 1p <<<"$output" | python3 -c 'import json,sys; print(json.load(sys.stdin)["manifest"])')
	mb=$(sed -n 2p <<<"$output" | python3 -c 'import json,sys; print(json.load(sys.stdin)["manifest"])')
	[ "$ma" != "$mb" ]
}

@test "many small files hashed in parallel give the serial digest" {
	mkdir "$T/m"
	for i in $(seq 1 300); do head -c $((i * 37)) /dev/urandom > "$T/m/f$i"; done
	one=$(mtc-replicate digest --threads 1 "$T/m")
	all=$(mtc-replicate digest --threads 8 "$T/m")
	[ "$one" = "$all" ]
	assert_equal "$one" "$(ref_digest "$T/m")  $T/m"
}

@test "--json prints path, digest and bytes" {
	file_of j 5000
	run mtc-replicate digest --json "$T/j"
	assert_success
	assert_output --regexp '^\{"path":"[^"]*/j","digest":"[0-9a-f]{64}","bytes":5000,"seconds":'
}

@test "a missing path is exit 4 with a one-line error; others still print" {
	file_of ok 10
	run mtc-replicate digest "$T/nope" "$T/ok"
	assert_failure 4
	assert_line --partial "mtc-replicate: cannot digest '$T/nope': No such file or directory"
	assert_line "$(b3sum "$T/ok")"
}

@test "usage errors are exit 2" {
	run mtc-replicate digest
	assert_failure 2
	run mtc-replicate frobnicate
	assert_failure 2
	run mtc-replicate digest --threads -1 x
	assert_failure 2
}

@test "a fifo is refused, not hashed" {
	mkdir "$T/p"
	mkfifo "$T/p/fifo"
	run mtc-replicate digest "$T/p"
	assert_failure 1
	assert_output --partial "cannot digest '$T/p'"
}

@test "digest - hashes standard input, as b3sum - does" {
	head -c 3000001 /dev/urandom >"$BATS_TEST_TMPDIR/in"
	run bash -c "mtc-replicate digest - <'$BATS_TEST_TMPDIR/in'"
	assert_success
	assert_output "$(b3sum - <"$BATS_TEST_TMPDIR/in")"
	run bash -c ": | mtc-replicate digest -"
	assert_output "$(: | b3sum -)"
}
