#!/bin/bash
# make demo: a 4-node job on this machine. Each node has a local dir on a RAM
# disk (or a temp dir), its own daemon on loopback run by contrib/mtc-node
# (rank 0's is also the coordinator), and a training stand-in that speaks the
# Orbax side of the protocol. Backups go to a local directory. The story:
# a few steps, a node lost with its RAM, a restart that restores it from its
# peers, then every node lost, and a restart from the backup.
# Nothing is needed beyond `make deps` and `make`; all in one temp dir.
set -eu
BIN=$(cd "${1:-build/release/bin}" && pwd)
TOP=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$BIN:$TOP/tests/standin:$PATH"
base=/dev/shm
[ -d "$base" ] && [ -w "$base" ] || base=${TMPDIR:-/tmp}
W=$(mktemp -d "$base/mtc-demo.XXXXXX")
N=4
JOB=demo
declare -a node_pid

stop_node() {
	local p=${node_pid[$1]:-}
	[ -n "$p" ] || return 0
	kill -TERM "$p" 2>/dev/null || true
	for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
	node_pid[$1]=
}
cleanup() {
	for ((r = 0; r < N; r++)); do stop_node "$r"; done
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Bold headings on a terminal only, as no-color.org asks: never into a redirected file.
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold= plain=; fi
say() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }
ports=($(python3 -c '
import socket
s = [socket.socket() for _ in range(4)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))'))
: >"$W/peers"
for ((r = 0; r < N; r++)); do
	mkdir -p "$W/node$r" "$W/state$r"
	echo "http://127.0.0.1:${ports[$r]}" >>"$W/peers"
done

start_node() {
	"$TOP/contrib/mtc-node" --dir "$W/node$1" --listen "127.0.0.1:${ports[$1]}" \
		--coordinator-url "http://127.0.0.1:${ports[0]}" --peers-file "$W/peers" \
		--backup "$W/backup" --state-dir "$W/state$1" --heartbeat 0.5 --heartbeat-timeout 5 \
		--sync-interval 0.5 --quiet-time 0.5 >>"$W/node$1.log" 2>&1 &
	node_pid[$1]=$!
}

# One training stand-in per node, in parallel; prints what each restored.
train() {
	local steps=$1 r pids=()
	for ((r = 0; r < N; r++)); do
		mtc-trainer --dir "$W/node$r" --style orbax --job "$JOB" --rank "$r" --nodes "$N" \
			--peer-ranks $((r ^ 1)) --tick 0.1 --steps "$steps" --save-every 0.4 \
			--shard-bytes $((1 << 20)) >"$W/trainer$r.out" 2>"$W/trainer$r.err" &
		pids+=($!)
	done
	for ((r = 0; r < N; r++)); do wait "${pids[$r]}"; done
	for ((r = 0; r < N; r++)); do
		printf '   node %d: %s' "$r" "$(sed -n 's/^restored /restored step /p' "$W/trainer$r.out")"
		[ "$steps" -gt 0 ] && printf ', then saved steps up to %s' "$(sed -n 's/^saved //p' "$W/trainer$r.out" | tail -1)"
		echo
	done
}

wait_until() {
	local i
	for ((i = 0; i < 300; i++)); do "$@" && return 0; sleep 0.2; done
	echo "demo: timed out" >&2
	exit 1
}
replicated() { [ "$(ls "$W"/node*/ | grep -c "^$JOB-s$1-n[0-9]-w0\.meta$")" -ge $((2 * N)) ]; }
backed_up() { [ "$(ls "$W/backup/$JOB"/20*/ 2>/dev/null | grep -c '\.meta$')" -ge "$N" ]; }
summary() {
	for ((r = 0; r < N; r++)); do
		printf '   node %d: %s\n' "$r" "$(ls "$W/node$r" | grep -E '\.(meta|restore)$|^[0-9]+$' | tr '\n' ' ')"
	done
}

say "1. four nodes start: handshake, an empty restore (nothing yet), then the steady state"
for ((r = 0; r < N; r++)); do start_node "$r"; done
train 4
wait_until replicated 4
wait_until backed_up
echo "   every step is committed as <hash>.data + .meta and pushed to the node's peer (rank XOR 1):"
summary
b=$(basename "$(ls -d "$W/backup/$JOB"/20*/ | head -1)")
bstep=$(ls "$W/backup/$JOB/$b" | sed -n "s/^$JOB-s\([0-9]*\)-n0-w0\.meta$/\1/p")
echo "   the coordinator scheduled backup '$b' (step $bstep) to $W/backup/$JOB/"

say "2. node 2 is lost with its RAM; the job restarts"
stop_node 2
rm -rf "${W:?}/node2"/*
start_node 2
echo "   node 2's local dir is empty; its peer (node 3) holds a copy of its step"
train 0
s2=$(sed -n 's/^restored //p' "$W/trainer2.out")
grep -h '"source"' "$W/state2/restore.json" | sed 's/^/   node 2 restore: /'

say "3. every node is lost; the job restarts from the backup"
for ((r = 0; r < N; r++)); do stop_node "$r"; rm -rf "${W:?}/node$r"/*; done
for ((r = 0; r < N; r++)); do start_node "$r"; done
train 0
grep -h '"source"' "$W/state0/restore.json" | sed 's/^/   node 0 restore: /'
echo "   replicator.prerestore (what NeMo reads): $(tr "\n" " " < "$W/node0/replicator.prerestore")"

say "Summary"
cat <<EOF
   4 nodes, loopback only, local dirs in $base, backups in a local directory.
   - steps 1-4 saved; each replicated to one peer; backup '$b' holds step $bstep
   - node 2 lost: restored step $s2 from its peer, the others from their own RAM
   - all nodes lost: restored step $(sed -n 's/^restored //p' "$W/trainer0.out") from backup '$b'
   The training job was woken each time by .restore markers, created last.
EOF
