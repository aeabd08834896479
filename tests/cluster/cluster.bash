# The cluster harness: N nodes on loopback, each with its own local dir on
# tmpfs, its own daemon port and contrib/mtc-node; rank 0 coordinates. A
# training stand-in per node (tests/standin/mtc-trainer) speaks the workload
# side as Orbax or NeMo does. Every wait is bounded; cluster_stop kills what
# cluster_start started, by pid.
#
#   cluster_init N            dirs, ports, peers file, backup dir; sets CL_ROOT
#   cluster_start [RANK...]   starts mtc-node for the ranks (default all)
#   cluster_resize M          the next start has M nodes (growth or shrink)
#   trainers STYLE ARGS...    runs one trainer per node in the background, waits for all
#   wait_for DESC SEC CMD...  polls CMD until it succeeds (tests/shell.bash)
#   node_kill RANK            stops one node's service (SIGTERM, then SIGKILL)
#   nodes_kill                stops every node's service, rank 0 last
#   node_lost RANK            SIGKILL to the service and everything it runs: a lost pod
#   supervised_kill RANK P    SIGKILL to serve or run; the service restarts it
#   flip_bit PATH             one bit flipped in a file (a tree's largest file)
#   critical_seen RANK PAT    a CRITICAL line matching PAT reached rank RANK's training job
#   cluster_stop              stops every node and removes CL_ROOT; fails on a leak
#                             the sanitizer reported in a node's log
# CL_ENV[RANK] adds environment (fault injection) to a node's service;
# CL_NETNS[RANK], CL_LISTEN[RANK] and CL_TOKEN put it on a host of its own
# (tests/cluster/hosts.bash);
# CL_RANKS limits trainers to some ranks; CL_DP=D gives each trainer its column-mate
# as peer; CL_NODE_OF[RANK] puts a rank's trainer on another node's dir (a pod
# rescheduled); MTC_CLUSTER_NODES / MTC_LONG set N.
# CL_BACKUP_URL (an s3:// location) and CL_S3_ENDPOINT put the backups in a bucket
# instead of the directory CL_BACKUP (mtc-node --backup, --s3-endpoint).
# CL_RANKSERVER=1 runs the rank server (mtc-node --nodes): pod index r then runs on the
# RAM of node CL_HOST_OF[r] (default r) and its trainer takes its rank from jax-init-info.txt.

# shellcheck source=tests/shell.bash
. "$MTC_TESTS/shell.bash"

CL_JOB=${CL_JOB:-job}

# cluster_tls: the nodes speak HTTPS to each other, mutual TLS (mtc-node --tls-dir).
cluster_tls() {
	make_tls "$CL_ROOT/pki"
	CL_TLS=$CL_ROOT/pki/node
	sed -i 's|^http://|https://|' "$CL_ROOT/peers"
	CL_COORD="https://${CL_COORD#http://}"
}

cluster_init() {
	CL_N=$1
	local base=/dev/shm
	[ -d "$base" ] && [ -w "$base" ] || base=${BATS_TEST_TMPDIR:-/tmp}
	CL_ROOT=$(mktemp -d "$base/mtc-cluster.XXXXXX")
	CL_PORTS=($(free_ports "$CL_N"))
	CL_BACKUP=$CL_ROOT/backup
	mkdir -p "$CL_BACKUP"
	: >"$CL_ROOT/peers"
	for ((r = 0; r < CL_N; r++)); do
		mkdir -p "$CL_ROOT/node$r" "$CL_ROOT/state$r"
		echo "http://127.0.0.1:${CL_PORTS[$r]}" >>"$CL_ROOT/peers"
	done
	CL_COORD="http://127.0.0.1:${CL_PORTS[0]}"
}

# cluster_setup LONG_N: cluster_init of N nodes, $MTC_CLUSTER_NODES (default 4), LONG_N with MTC_LONG.
cluster_setup() {
	N=${MTC_CLUSTER_NODES:-4}
	[ -z "${MTC_LONG:-}" ] || N=$1
	cluster_init "$N"
}

# restart_moved: every node killed, the last one's RAM lost (sets lost), every pod started
# again on the next host.
restart_moved() {
	nodes_kill
	lost=$((CL_N - 1))
	wipe_node "$lost"
	for ((r = 0; r < CL_N; r++)); do CL_HOST_OF[$r]=$(((r + 1) % CL_N)); done
	cluster_start
}

node_dir() { echo "$CL_ROOT/node$1"; }

# cluster_resize M: the job's next start has M nodes: new ones get a dir, a port and a
# line in the peers file; with fewer, the peers file ends at rank M-1 (the dirs stay).
cluster_resize() {
	local m=$1 r ports
	if [ "$m" -gt "$CL_N" ]; then
		ports=($(free_ports $((m - CL_N))))
		for ((r = CL_N; r < m; r++)); do
			CL_PORTS[$r]=${ports[$((r - CL_N))]}
			mkdir -p "$CL_ROOT/node$r" "$CL_ROOT/state$r"
			echo "http://127.0.0.1:${CL_PORTS[$r]}" >>"$CL_ROOT/peers"
		done
	else
		head -n "$m" "$CL_ROOT/peers" >"$CL_ROOT/peers.tmp"
		mv "$CL_ROOT/peers.tmp" "$CL_ROOT/peers"
	fi
	CL_N=$m
}

cluster_start() {
	local ranks=("$@") r
	[ ${#ranks[@]} -gt 0 ] || ranks=($(seq 0 $((CL_N - 1))))
	for r in "${ranks[@]}"; do
		${CL_NETNS[$r]:+ip netns exec "${CL_NETNS[$r]}"} \
			env ${CL_ENV[$r]:-} "$MTC_TESTS/../contrib/mtc-node" --dir "$CL_ROOT/node${CL_HOST_OF[$r]:-$r}" \
			${CL_RANKSERVER:+--nodes "$CL_N" --index "$r" --host 127.0.0.1 --jax-port "${CL_JAX_PORT:-8482}" --rank-timeout "${CL_ROUND_TIMEOUT:-60}"} \
			--listen "${CL_LISTEN[$r]:-127.0.0.1:${CL_PORTS[$r]}}" --coordinator-url "$CL_COORD" \
			${CL_TOKEN:+--peer-token-file "$CL_TOKEN"} ${CL_TLS:+--tls-dir "$CL_TLS"} \
			--peers-file "$CL_ROOT/peers" --backup "${CL_BACKUP_URL:-$CL_BACKUP}" \
			${CL_S3_ENDPOINT:+--s3-endpoint "$CL_S3_ENDPOINT"} --state-dir "$CL_ROOT/state$r" \
			--heartbeat 0.5 --heartbeat-timeout 3 --round-timeout "${CL_ROUND_TIMEOUT:-60}" --sync-interval 0.5 \
			--quiet-time 0.5 --verbose >>"$CL_ROOT/node$r.log" 2>&1 &
		echo $! >"$CL_ROOT/node$r.pid"
	done
}

# The service's processes: mtc-node, its children, and what its supervisors run.
node_pids() {
	local pid=$1 f
	echo "$pid"
	pgrep -P "$pid" 2>/dev/null
	for f in "$CL_ROOT/state$2"/*.pid; do
		[ -e "$f" ] && cat "$f"
	done
	return 0
}

# Stops one node's service (it stops its children); by pid, SIGKILL after 5 s.
node_kill() {
	local pid
	pid=$(cat "$CL_ROOT/node$1.pid" 2>/dev/null) || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$pid" 2>/dev/null && node_lost "$1"
	rm -f "$CL_ROOT/node$1.pid" "$CL_ROOT/state$1"/*.pid
	return 0
}

node_lost() {
	local pid
	pid=$(cat "$CL_ROOT/node$1.pid" 2>/dev/null) || return 0
	kill -KILL $(node_pids "$pid" "$1") 2>/dev/null || true
	rm -f "$CL_ROOT/node$1.pid" "$CL_ROOT/state$1"/*.pid
	return 0
}

# kill -9 of one program the service supervises (serve or run); it restarts it.
supervised_kill() {
	local f=$CL_ROOT/state$1/$2.pid
	[ -s "$f" ] && kill -KILL "$(cat "$f")"
}

# Stops every node's service, rank 0 (the coordinator) last.
nodes_kill() {
	local r
	for ((r = CL_N - 1; r >= 0; r--)); do node_kill "$r"; done
}

# The leaks the sanitizer reported in the nodes' logs as their programs exited; a
# daemon's exit code, which would carry them, is lost when the test stops it.
node_leaks() {
	awk '/^(Direct|Indirect) leak of/ { block = $0; inblock = 1; next }
	     inblock && /^$/ { print block; inblock = 0; next }
	     inblock { block = block "\n" $0 }' "$CL_ROOT"/node*.log 2>/dev/null
}

# Stops everything; fails, after the clean-up, if a node's program leaked.
cluster_stop() {
	local leaks
	[ -n "${CL_ROOT:-}" ] || return 0
	nodes_kill
	for f in "$CL_ROOT"/trainer*.pid; do
		[ -e "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null
	done
	leaks=$(node_leaks)
	# a failed test shows what the trainers said and the nodes' last errors
	[ -n "${BATS_TEST_COMPLETED:-}" ] || for f in "$CL_ROOT"/trainer*.err "$CL_ROOT"/node*.log; do
		[ -s "$f" ] && grep -hE "error|fail|cannot|timed out|Error" "$f" | tail -n 5 | sed "s|^|# ${f##*/}: |" >&3
	done
	if [ -n "${CL_KEEP:-}" ]; then
		echo "# kept $CL_ROOT" >&3
	else
		rm -rf "$CL_ROOT"
	fi
	[ -z "$leaks" ] || { echo "# a node's program leaked:" >&3; echo "$leaks" | sed 's/^/#   /' >&3; return 1; }
}

# trainers STYLE [trainer options]: one per node (those in CL_RANKS when set), all in
# parallel; fails if one fails.
trainers() {
	local style=$1 r rc=0 ranks
	shift
	ranks=(${CL_RANKS:-$(seq 0 $((CL_N - 1)))})
	for r in "${ranks[@]}"; do
		local peer=$((r ^ 1))
		[ "$peer" -lt "$CL_N" ] || peer=
		# CL_DP=D: the peer is the next replica of the same column, as data-parallel peers are
		[ -n "${CL_DP:-}" ] && peer=$(((r + CL_N / CL_DP) % CL_N))
		mtc-trainer --dir "$CL_ROOT/node${CL_NODE_OF[$r]:-${CL_HOST_OF[$r]:-$r}}" --style "$style" --job "$CL_JOB" --rank "$r" \
			${CL_RANKSERVER:+--mtc-process-ids} \
			--nodes "$CL_N" --peer-ranks "$peer" --tick 0.1 --restore-timeout 900 \
			--shard-bytes 65536 --save-every 0.3 "$@" >"$CL_ROOT/trainer$r.out" \
			2>"$CL_ROOT/trainer$r.err" &
		echo $! >"$CL_ROOT/trainer$r.pid"
	done
	for r in "${ranks[@]}"; do
		wait "$(cat "$CL_ROOT/trainer$r.pid")" || rc=1
	done
	return $rc
}

restored_steps() {
	for ((r = 0; r < CL_N; r++)); do
		sed -n 's/^restored //p' "$CL_ROOT/trainer$r.out"
	done | sort -u | tr '\n' ' ' | sed 's/ $//'
}

# Every node holds its own .meta of step S and its peer's copy.
replicated() {
	local s=$1 n
	n=$(ls "$CL_ROOT"/node*/ 2>/dev/null | grep -c -- "^$CL_JOB-s$s-n[0-9]*-w0\.meta$")
	[ "$n" -ge "$((2 * CL_N))" ]
}

# A backup with every node's .meta; prints its step.
backup_step() {
	local b
	if [ -n "${CL_BACKUP_URL:-}" ]; then
		b=$(mtc-lkg --backups "$CL_BACKUP_URL" ${CL_S3_ENDPOINT:+--s3-endpoint "$CL_S3_ENDPOINT"} \
			--job "$CL_JOB" --nodes "$CL_N" --json 2>/dev/null |
			jq -r '[.backups[] | select(.state == "valid")][0].step // empty')
		[ -n "$b" ] && echo "$b"
		return
	fi
	for b in "$CL_BACKUP/$CL_JOB"/*/; do
		[ -d "$b" ] || continue
		local n
		n=$(ls "$b" | grep -c -- "^$CL_JOB-s[0-9]*-n[0-9]*-w0\.meta$")
		if [ "$n" -ge "$CL_N" ]; then
			ls "$b" | sed -n "s/^$CL_JOB-s\([0-9]*\)-n0-w0\.meta$/\1/p" | sort -n | tail -1
			return 0
		fi
	done
	return 1
}
has_backup() { backup_step >/dev/null; }

# wipe_node R: node R's RAM disk is gone, and with it the node: its service is killed
# first (as in node_lost), so nothing of it writes or deletes there while it is wiped.
wipe_node() {
	node_lost "$1"
	find "$CL_ROOT/node$1" -mindepth 1 -delete
}

# A step whose every node's .meta is in one backup.
backup_of() {
	local b n
	for b in "$CL_BACKUP/$CL_JOB"/*/; do
		[ -d "$b" ] || continue
		n=$(ls "$b" | grep -c -- "^$CL_JOB-s$1-n[0-9]*-w0\.meta$")
		[ "$n" -ge "$CL_N" ] && return 0
	done
	return 1
}

backups_count() { ls -d "$CL_BACKUP/$CL_JOB"/20*/ 2>/dev/null | wc -l; }

# The coordinator's count of reports in an open round: coord_reported ROUND N.
# critical_seen RANK PATTERN: a CRITICAL line matching PATTERN reached rank
# RANK's training job: still in replicator.failed, or already read and
# deleted by the NeMo stand-in, which then fails with its text (as NeMo does).
critical_seen() {
	grep -q "\[CRI\].*$2" "$CL_ROOT/node$1/replicator.failed" 2>/dev/null ||
		grep -q "\[CRI\].*$2" "$CL_ROOT/trainer$1.err" 2>/dev/null
}

coord_reported() {
	curl -s --max-time 2 ${CL_TLS:+--cacert "$CL_TLS/ca.crt" --cert "$CL_TLS/tls.crt" --key "$CL_TLS/tls.key"} \
		"$CL_COORD/v1/coord/status" | grep -q "\"$1\":$2[,}]"
}

# Flips one bit in the middle of a file (the largest file of a tree), by a new
# file renamed over it so that no hard link shares the change.
flip_bit() {
	python3 - "$1" <<'PY'
import os, sys
p = sys.argv[1]
if os.path.isdir(p):
    p = max((os.path.join(d, f) for d, _, fs in os.walk(p) for f in fs), key=os.path.getsize)
b = bytearray(open(p, "rb").read())
b[len(b) // 2] ^= 0x10
with open(p + ".flip", "wb") as f:
    f.write(b)
os.chmod(p + ".flip", os.stat(p).st_mode)
os.replace(p + ".flip", p)
PY
}
