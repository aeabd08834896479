# Shared by backup.bats and restore.bats: local dirs holding a saved step.


# config FILE JOB RANK NODES [D]: an accepted config.
config() {
	local dp=""
	[ -n "${5:-}" ] && dp=", \"assume-data-parallelism\": $5"
	printf '{"job-name": "%s", "framework": "orbax", "node-rank": %d, "nodes": %d, "peer-ranks": [], "backup-interval-minutes": 30%s}\n' \
		"$2" "$3" "$4" "$dp" >"$1"
}

# saved_step DIR JOB STEP RANK SEED [BYTES]: a step directory hashed into
# <hash>.data with its .meta, as mtc-replicate leaves it. Prints the hash.
saved_step() {
	local dir=$1 job=$2 step=$3 rank=$4 seed=$5 bytes=${6:-300000} hash
	mkdir -p "$dir/$step.tmp/sub/empty"
	make_data "$dir/$step.tmp/weights" "$bytes" "$seed"
	echo "$seed" >"$dir/$step.tmp/sub/note.txt"
	hash=$(mtc-replicate digest "$dir/$step.tmp" | awk '{print $1}')
	if [ -e "$dir/$hash.data" ]; then rm -rf "$dir/$step.tmp"; else mv "$dir/$step.tmp" "$dir/$hash.data"; fi
	printf %s "$hash" >"$dir/$job-s$step-n$rank-w0.meta"
	echo "$hash"
}
