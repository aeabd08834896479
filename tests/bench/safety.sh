#!/bin/sh
# Time to safety on loopback: from the framework's rename of a step into the local
# dir to "committed and on its peer" (mtc-replicate run --json, to-peers), against a
# bare push of the same, already committed step to a fresh peer in the same run.
# The framework writes the step in the local dir under Orbax's tmp name and renames
# it, so run hashes it while it is written; run --no-prehash is measured beside it,
# and so is the framework's write with and without run watching.
# The peer's daemon is rank 1's and coordinates (rank 1 itself never reports).
# Best of MTC_BENCH_RUNS (default 3) each, the two alternating, with the slowest of each.
# Two steps: three shards and many small files copied in (the merkle digest names
# it), then, when the venv has them, real Orbax saving into the dir each time (OCDBT,
# named by its logical digest, so its commit hashes every byte twice: once per
# file, which run does while the data files grow, and once per value).
#   tests/bench/safety.sh [BUILD_DIR]     MTC_BENCH_MB sets the step size (default 2048)
set -eu
. tests/bench/lib/common.sh
mb=${MTC_BENCH_MB:-2048}
runs=${MTC_BENCH_RUNS:-3}
bench_root safety

printf '{"job-name":"bench","framework":"orbax","node-rank":0,"nodes":2,"peer-ranks":[1],"backup-interval-minutes":30}\n' >"$root/cfg.json"
echo "# time-to-safety bench: $mb MiB step, $(nproc) CPUs, best of $runs"

# files_step: the step as a framework leaves it before its final rename: three shards and many files
files_step() {
	shard=$((mb * 1024 * 1024 * 15 / 16 / 3))
	small=$((mb * 1024 / 16 / 64))
	mkdir -p "$root/proto/small"
	for i in 0 1 2; do head -c "$shard" /dev/urandom >"$root/proto/shard-$i"; done
	head -c $((small * 65536)) /dev/urandom | split -b 65536 -a 5 - "$root/proto/small/f-"
	: >"$root/proto/commit_success.txt"
}

# write_files DIR: the framework writes the step in DIR under Orbax's tmp name and renames it (a copy of proto)
write_files() {
	cp -r "$root/proto" "$1/1.orbax-checkpoint-tmp"
	mv "$1/1.orbax-checkpoint-tmp" "$1/1"
}

# write_orbax DIR: real Orbax's CheckpointManager saves 16 arrays on the CPU as step 1 of DIR
# (OCDBT; <step>.orbax-checkpoint-tmp renamed to <step>), as the training job does
write_orbax() {
	JAX_PLATFORMS=cpu "$venv/bin/python" - "$1" "$mb" >>"$root/orbax.log" 2>&1 <<'PY' || { tail -5 "$root/orbax.log" >&2; exit 1; }
import os, sys
import numpy as np
import orbax.checkpoint as ocp
out, mb = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(1)
state = {f"layer{i:02d}": rng.integers(0, 2**31, (mb << 20) // 64, dtype=np.int32) for i in range(16)}
mngr = ocp.CheckpointManager(os.path.abspath(out))
mngr.save(1, args=ocp.args.StandardSave(state), force=True)
mngr.wait_until_finished()
mngr.close()
PY
}

# Each bare push is of a step just saved and committed, as in the runs below: on a VM
# that hands freed pages back to its host, memory written afresh costs more than
# memory written again, so both sides of the ratio pay the same.
# bare_push: a bare push of a step just written and committed, to a fresh peer; sets t and w
bare_push() {
	coord_peer
	rm -rf "$root/committed" && mkdir -p "$root/committed"
	s=$(now)
	$write "$root/committed"
	w=$(since "$s")
	"$bin/mtc-replicate" commit --dir "$root/committed" --config "$root/cfg.json" >/dev/null
	s=$(now)
	"$bin/mtc-replicate" push --dir "$root/committed" --config "$root/cfg.json" --step 1 --peer "$PEER" >/dev/null
	t=$(since "$s")
}

# safe_run [OPTION...]: mtc-replicate run sees the step written and renamed into its dir; sets t, c and w
safe_run() {
	coord_peer
	printf 'http://127.0.0.1:9\n%s\n' "$PEER" >"$root/peers" # rank 0 (this node), rank 1
	rm -rf "$root/local" "$root/committed" && mkdir -p "$root/local"
	"$bin/mtc-replicate" run --dir "$root/local" --config "$root/cfg.json" --peers-file "$root/peers" \
		--coordinator-url "$PEER" --timeout 300 --json "$@" >"$root/run.out" 2>"$root/run.err" &
	run=$!
	sleep 1
	s=$(now)
	$write "$root/local"
	w=$(since "$s")
	for _ in $(seq 1200); do grep -q '"to-peers"' "$root/run.out" && break; sleep 0.1; done
	kill "$run" 2>/dev/null || true
	wait "$run" 2>/dev/null || true
	t=$(sed -n 's/.*"to-peers":\([0-9.]*\).*/\1/p' "$root/run.out" | head -1)
	c=$(sed -n 's/.*"to-commit":\([0-9.]*\).*/\1/p' "$root/run.out" | head -1)
	[ -n "$t" ] || { echo "no time-to-safety line:" >&2; tail -5 "$root/run.err" >&2; exit 1; }
}

# below A B / above A B: A is less / more than B, or B is not set yet
below() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(b == "" || a + 0 < b + 0) }'; }
above() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(b == "" || a + 0 > b + 0) }'; }

# measure LABEL: the two alternate, so that both sides of the ratio see the same moments of a noisy host
measure() {
	best_push="" best_safe="" worst_push="" worst_safe="" best_cold="" worst_cold=""
	best_w0="" best_w1=""
	for _ in $(seq "$runs"); do
		bare_push
		below "$t" "$best_push" && best_push=$t
		above "$t" "$worst_push" && worst_push=$t
		below "$w" "$best_w0" && best_w0=$w
		safe_run
		below "$t" "$best_safe" && best_safe=$t best_commit=$c
		above "$t" "$worst_safe" && worst_safe=$t
		below "$w" "$best_w1" && best_w1=$w
		safe_run --no-prehash
		below "$t" "$best_cold" && best_cold=$t best_cold_commit=$c
		above "$t" "$worst_cold" && worst_cold=$t
	done
	awk -v p="$best_push" -v s="$best_safe" -v c="$best_commit" -v mb="$mb" -v wp="$worst_push" \
		-v ws="$worst_safe" -v k="$best_cold" -v kc="$best_cold_commit" -v wk="$worst_cold" \
		-v w0="$best_w0" -v w1="$best_w1" -v l="$1" 'BEGIN {
		printf "%s\n", l
		printf "  %-46s %7.2f s %8.0f MiB/s  (slowest %.2f s)\n", "bare push of the committed step", p, mb / p, wp
		printf "  %-46s %7.2f s %8.0f MiB/s  (slowest %.2f s)\n", "time to safety (rename -> on its peer)", s, mb / s, ws
		printf "  %-46s %7.2f s\n", "  of which to committed (hashed, renamed)", c
		printf "  %-46s %7.2f s %8.0f MiB/s  (slowest %.2f s)\n", "the same, run --no-prehash", k, mb / k, wk
		printf "  %-46s %7.2f s\n", "  of which to committed", kc
		printf "  %-46s %7.2f s alone, %.2f s with run hashing it\n", "the framework'"'"'s write of the step", w0, w1
		printf "  time to safety / push: %.2fx (target <= 1.3x); --no-prehash: %.2fx\n", s / p, k / p
	}'
}

files_step
write=write_files
measure "a step of three shards and small files, copied in:"
venv=$(dirname "$build")/venv
if "$venv/bin/python" -c 'import orbax.checkpoint' 2>/dev/null; then
	rm -rf "$root/proto" "$root/committed" "$root/local" "$root/peer" # room for Orbax's copies
	write=write_orbax
	measure "a step saved by real Orbax (OCDBT, named by its logical digest):"
else
	echo "# no Orbax in $venv (make venv): the Orbax step is skipped"
fi
