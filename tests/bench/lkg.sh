#!/bin/sh
# The LKG plan of a restore round (mtc(7) §7): mtc-lkg --inventory over
# generated inventories of 1024 ranks, each reporting several steps of its own
# and copies of its 2 peers' metas and data. CPU seconds of the whole program
# (JSON in, plan, JSON out), best of 3. The goal: well under a second.
set -eu
ranks=${MTC_BENCH_RANKS:-1024}
dir=$(mktemp -d /dev/shm/mtc-bench-lkg.XXXXXX)
trap 'rm -rf "$dir"' EXIT INT TERM

# gen RANKS WORKERS STEPS D WIPED: the newest step lacks node RANKS-1's meta
# everywhere, so the plan walks past it; rank WIPED reports nothing.
gen() {
	awk -v n="$1" -v w="$2" -v steps="$3" -v d="$4" -v wiped="$5" '
	function h(step, node, worker,  col) {
		col = d > 1 ? node % (n / d) : node
		return sprintf("%016x%016x%016x%016x", step, col, worker, 12345)
	}
	function metas_of(node, r,  s, k, sep) {
		sep = ""
		for (s = 1; s <= steps; s++)
			for (k = 0; k < w; k++) {
				if (s == steps && node == n - 1) continue
				printf "%s[%d,%d,%d,\"%s\"]", sep, s * 100, node, k, h(s * 100, node, k)
				sep = ","
			}
		return sep
	}
	function data_of(node,  s, k, sep) {
		sep = ""
		for (s = 1; s <= steps; s++)
			for (k = 0; k < w; k++) {
				printf "%s\"%s\"", sep, h(s * 100, node, k)
				sep = ","
			}
	}
	BEGIN {
		printf "{\"job-name\":\"bench\",\"nodes\":%d,\"workers-per-node\":%d,", n, w
		if (d > 1) printf "\"assume-data-parallelism\":%d,", d
		printf "\"peers-per-node\":2,\"ranks\":["
		for (r = 0; r < n; r++) {
			if (r) printf ","
			printf "{\"node-rank\":%d,\"node-address\":\"http://node-%d:7070\",\"meta-files\":[", r, r
			if (r != wiped) {
				p1 = (r + 1) % n; p2 = (r + n - 1) % n
				metas_of(r); printf ","; metas_of(p1); printf ","; metas_of(p2)
			}
			printf "],\"data-files\":["
			if (r != wiped) {
				data_of(r); printf ","; data_of(p1); printf ","; data_of(p2)
			}
			printf "]}"
		}
		printf "]}\n"
	}'
}

cpu() { # best user+system CPU seconds of 3 runs of mtc-lkg on $1
	b=999
	for _ in 1 2 3; do
		if [ -x /usr/bin/time ]; then
			t=$( { /usr/bin/time -f '%U %S' mtc-lkg --inventory "$1" --json > "$dir/plan.json"; } 2>&1 | tail -1 | awk '{ print $1 + $2 }')
		else
			t0=$(date +%s.%N)
			mtc-lkg --inventory "$1" --json > "$dir/plan.json"
			t=$(echo "$t0 $(date +%s.%N)" | awk '{ print $2 - $1 }')
		fi
		b=$(echo "$t $b" | awk '{ print ($1 < $2 ? $1 : $2) }')
	done
	echo "$b"
}

run() { # name workers steps d
	gen "$ranks" "$2" "$3" "$4" 7 > "$dir/inv.json"
	size=$(wc -c < "$dir/inv.json")
	t=$(cpu "$dir/inv.json")
	step=$(sed -n 's/.*"step":\([0-9]*\),"source":"\([a-z]*\)".*/\1 from the \2/p' "$dir/plan.json")
	printf '%-34s %6d ranks %9d bytes in  %6.3f s CPU  (plan: step %s)\n' "$1" "$ranks" "$size" "$t" "$step"
}

echo "# mtc-lkg --inventory: CPU of a restore round's plan"
run "4 steps, 1 worker" 1 4 0
run "4 steps, 8 workers" 8 4 0
run "4 steps, 8 workers, D=4" 8 4 4
run "20 steps, 1 worker" 1 20 0
