#!/usr/bin/env bats
# mtc-replicate digest --framework orbax: the logical digest of an OCDBT
# store against the reference rule run on the real tensorstore and blake3
# (tests/oracle/orbax_digest.py), on stores of varied layouts written by the
# real tensorstore and on real Orbax saves (tests/oracle/ocdbt_stores.py).
# The stores and the oracle's digests are made once for the whole file.

load helpers

setup_file() {
	need_frameworks
	G=$(mktemp -d /dev/shm/mtc-ocdbt.XXXXXX)
	export G
	"$MTC_PY" "$MTC_TESTS/oracle/ocdbt_stores.py" "$G/steps" >"$G/gen.log" 2>&1
	(cd "$G/steps" && "$MTC_PY" "$MTC_TESTS/oracle/orbax_digest.py" * orbax_manager/1) \
		>"$G/oracle" 2>"$G/oracle.log"
}

teardown_file() {
	rm -rf "${G:-/nonexistent}"
}

setup() {
	need_frameworks
	T=$(mktemp -d /dev/shm/mtc-ocdbt-t.XXXXXX)
}

teardown() {
	rm -rf "$T"
}

oracle_of() { awk -v s="$1" '$2 == s { print $1 }' "$G/oracle"; }

logical() { mtc-replicate digest --framework orbax "$@" | awk '{ print $1 }'; }

# same_as_oracle STEP...: our logical digest of each step is the reference's
same_as_oracle() {
	local s want got
	for s in "$@"; do
		want=$(oracle_of "$s")
		[ -n "$want" ] && [ "$want" != none ] || fail "no oracle digest for $s"
		got=$(cd "$G/steps" && logical "$s")
		[ "$got" = "$want" ] || fail "$s: got '$got', the reference gives '$want'"
	done
}

@test "stores of every tensorstore layout digest as the reference does" {
	same_as_oracle inline_raw indirect_zstd deep_versions numbered files large emptied changed
}

@test "keys with quotes, backslashes, control bytes and 0xff digest as the reference does" {
	same_as_oracle odd_keys
}

@test "real Orbax saves digest as the reference does" {
	same_as_oracle orbax_a orbax_b orbax_manager/1
}

@test "the same keys and values in different layouts give one digest" {
	local d
	d=$(oracle_of inline_raw)
	for s in indirect_zstd deep_versions numbered files; do
		[ "$(logical "$G/steps/$s")" = "$d" ] || fail "$s differs from inline_raw"
	done
	[ "$(logical "$G/steps/orbax_a")" = "$(logical "$G/steps/orbax_b")" ]
	[ "$(mtc-replicate digest "$G/steps/orbax_a" | cut -c1-66)" != \
	  "$(mtc-replicate digest "$G/steps/orbax_b" | cut -c1-66)" ]
}

@test "one changed value byte changes the digest" {
	[ "$(logical "$G/steps/changed")" != "$(logical "$G/steps/inline_raw")" ]
}

@test "the first subdirectory holding manifest.ocdbt in directory order is the store" {
	same_as_oracle two_stores
	local first
	first=$(ls -U "$G/steps/two_stores" | head -1)
	[ "$(logical "$G/steps/two_stores")" = "$(oracle_of "$first")" ]
}

@test "a step without an OCDBT store gives the merkle digest" {
	mkdir -p "$T/step/sub"
	echo data > "$T/step/sub/f"
	echo more > "$T/step/g"
	run -0 mtc-replicate digest --framework orbax "$T/step" "$T/step/g"
	[ "$output" = "$(mtc-replicate digest "$T/step" "$T/step/g")" ]
}

# corrupt STEP: copies a step to $T/s, where the caller damages it
corrupt() { cp -r "$G/steps/$1" "$T/s"; }

# integrity_failure WANT: the digest fails with exit 5 and one line saying WANT
integrity_failure() {
	run -5 --separate-stderr mtc-replicate digest --framework orbax "$T/s"
	[ -z "$output" ] || fail "printed a digest: $output"
	[ "${#stderr_lines[@]}" -eq 1 ] || fail "not one line: $stderr"
	[[ "$stderr" == *"$1"* ]] || fail "'$stderr' does not say '$1'"
}

@test "a corrupted manifest is an integrity failure" {
	corrupt inline_raw
	flip_byte "$T/s/store/manifest.ocdbt" 30
	integrity_failure "manifest.ocdbt': bad CRC-32C"
}

@test "a truncated manifest is an integrity failure" {
	corrupt indirect_zstd
	truncate -s -1 "$T/s/store/manifest.ocdbt"
	integrity_failure "manifest.ocdbt': length in header"
	: > "$T/s/store/manifest.ocdbt"
	integrity_failure "too short"
}

@test "a corrupted B+tree node is an integrity failure" {
	corrupt inline_raw
	local f
	for f in "$T"/s/store/d/*; do flip_byte "$f" 20; done
	integrity_failure "bad CRC-32C"
}

@test "a truncated data file is an integrity failure" {
	corrupt large
	local f
	for f in "$T"/s/store/d/*; do truncate -s 1000 "$f"; done
	integrity_failure "truncated"
}

@test "a missing data file is an integrity failure" {
	corrupt files
	rm "$T"/s/store/vals/*
	integrity_failure "cannot open data file"
}

@test "a symlinked data file is refused" {
	corrupt indirect_zstd
	local f
	f=$(ls "$T"/s/store/d | head -1)
	mv "$T/s/store/d/$f" "$T/s/store/$f"
	ln -s "../$f" "$T/s/store/d/$f"
	integrity_failure "cannot open data file"
}

@test "--framework takes orbax, pytorch or pytorch.distributed" {
	run -2 mtc-replicate digest --framework tensorflow "$G/steps/orbax_a"
	run -0 mtc-replicate digest --framework pytorch "$G/steps/orbax_a"
	[ "$output" = "$(mtc-replicate digest "$G/steps/orbax_a")" ]
}
