# The cluster harness: N nodes on loopback, each with its own local dir on
# tmpfs, its own daemon port and contrib/mtc-node; rank 0 coordinates. A
# training stand-in per node (tests/standin/mtc-trainer) speaks the workload
# side as Orbax or NeMo does. Every wait is bounded; cluster_stop kills what
# cluster_start started, by pid.
#
#   cluster_init N            dirs, ports, peers file, backup dir; sets CL_ROOT
#   cluster_start [RANK...]   starts mtc-node for the ranks (default all)
#   trainers STYLE ARGS...    runs one trainer per node in the background, waits for all
#   wait_for DESC SEC CMD...  polls CMD every 0.2 s until it succeeds
#   cluster_stop              stops every node and removes CL_ROOT

CL_JOB=${CL_JOB:-job}

free_ports() {
	python3 - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
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

node_dir() { echo "$CL_ROOT/node$1"; }

cluster_start() {
	local ranks=("$@") r
	[ ${#ranks[@]} -gt 0 ] || ranks=($(seq 0 $((CL_N - 1))))
	for r in "${ranks[@]}"; do
		env ${CL_ENV[$r]:-} "$MTC_TESTS/../contrib/mtc-node" --dir "$CL_ROOT/node$r" \
			--listen "127.0.0.1:${CL_PORTS[$r]}" --coordinator-url "$CL_COORD" \
			--peers-file "$CL_ROOT/peers" --backup "$CL_BACKUP" --state-dir "$CL_ROOT/state$r" \
			--heartbeat 0.5 --heartbeat-timeout 3 --round-timeout 60 --sync-interval 0.5 \
			--quiet-time 0.5 >>"$CL_ROOT/node$r.log" 2>&1 &
		echo $! >"$CL_ROOT/node$r.pid"
	done
}

# Stops one node's service (it stops its children); by pid, SIGKILL after 5 s.
node_kill() {
	local pid
	pid=$(cat "$CL_ROOT/node$1.pid" 2>/dev/null) || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$pid" 2>/dev/null; then
		pkill -KILL -P "$pid" 2>/dev/null || true
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$CL_ROOT/node$1.pid"
	return 0
}

cluster_stop() {
	[ -n "${CL_ROOT:-}" ] || return 0
	for ((r = 0; r < CL_N; r++)); do node_kill "$r"; done
	for f in "$CL_ROOT"/trainer*.pid; do
		[ -e "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null
	done
	if [ -n "${CL_KEEP:-}" ]; then echo "# kept $CL_ROOT" >&3; return; fi
	rm -rf "$CL_ROOT"
}

# trainers STYLE [trainer options]: one per node, all in parallel; fails if one fails.
trainers() {
	local style=$1 r rc=0
	shift
	for ((r = 0; r < CL_N; r++)); do
		local peer=$((r ^ 1))
		[ "$peer" -lt "$CL_N" ] || peer=
		mtc-trainer --dir "$CL_ROOT/node$r" --style "$style" --job "$CL_JOB" --rank "$r" \
			--nodes "$CL_N" --peer-ranks "$peer" --tick 0.1 --restore-timeout 900 \
			--shard-bytes 65536 --save-every 0.3 "$@" >"$CL_ROOT/trainer$r.out" \
			2>"$CL_ROOT/trainer$r.err" &
		echo $! >"$CL_ROOT/trainer$r.pid"
	done
	for ((r = 0; r < CL_N; r++)); do
		wait "$(cat "$CL_ROOT/trainer$r.pid")" || rc=1
	done
	return $rc
}

restored_steps() {
	for ((r = 0; r < CL_N; r++)); do
		sed -n 's/^restored //p' "$CL_ROOT/trainer$r.out"
	done | sort -u | tr '\n' ' ' | sed 's/ $//'
}

wait_for() {
	local desc=$1 secs=$2 i
	shift 2
	for ((i = 0; i < secs * 5; i++)); do
		"$@" && return 0
		sleep 0.2
	done
	echo "# timed out waiting for: $desc" >&3
	return 1
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

wipe_node() { find "$CL_ROOT/node$1" -mindepth 1 -delete; }
