#!/bin/sh
# make demo: a two-node job on this machine. Each node has a local dir on a
# RAM disk (or a temp dir), a training stand-in that speaks the Orbax side of
# the protocol, and mtc's programs on the replicator side; peers talk over
# loopback and backups go to a local directory. Nothing is needed beyond
# `make deps` and `make`; everything lives in one temp dir, removed at the end.
set -eu
BIN=$(cd "${1:-build/release/bin}" && pwd)
TOP=$(cd "$(dirname "$0")/.." && pwd)
PATH="$BIN:$TOP/tests/standin:$PATH"
base=/dev/shm
[ -w "$base" ] || base=${TMPDIR:-/tmp}
W=$(mktemp -d "$base/mtc-demo.XXXXXX")
pids=
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT INT TERM

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

N=2
mkdir -p "$W/backup"
for r in 0 1; do mkdir -p "$W/node$r/local"; done
P0=$(free_port); P1=$(free_port)

say "1. handshake: each training stand-in writes replicator.yaml the way Orbax does"
for r in 0 1; do
	peer=$((1 - r))
	mtc-trainer --dir "$W/node$r/local" --style orbax --job demo --rank $r --nodes $N \
		--dp 1 --peer-ranks $peer --minutes 30 --tick 0.1 --steps 2 --save-every 0.5 \
		--shards 3 --shard-bytes 4000000 > "$W/node$r/trainer.log" 2>&1 &
	pids="$pids $!"
done
for r in 0 1; do
	mtc-handshake accept --dir "$W/node$r/local" --timeout 30 > "$W/node$r/config.json"
	echo "node $r accepted: $(cat "$W/node$r/config.json")"
done

say "2. nothing to restore yet: each node gets the empty step-0 marker"
for r in 0 1; do
	printf '{}\n' > "$W/node$r/local/replicator.prerestore"
	: > "$W/node$r/local/demo-s0-n$r-w0.restore"
done

say "3. peer daemons on loopback"
mtc-replicate serve --dir "$W/node0/local" --listen 127.0.0.1:$P0 > "$W/node0/serve.log" 2>&1 &
pids="$pids $!"
mtc-replicate serve --dir "$W/node1/local" --listen 127.0.0.1:$P1 > "$W/node1/serve.log" 2>&1 &
pids="$pids $!"

say "4. training saves steps 1 and 2; mtc-replicate commit turns them into content-addressed data"
for r in 0 1; do
	for _ in $(seq 100); do grep -q 'saved 2' "$W/node$r/trainer.log" 2>/dev/null && break; sleep 0.1; done
	mtc-replicate commit --dir "$W/node$r/local" --config "$W/node$r/config.json"
done
ls "$W/node0/local"

say "5. each node pushes step 2 to its peer"
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$P0/healthz" >/dev/null && curl -sf "http://127.0.0.1:$P1/healthz" >/dev/null && break; sleep 0.1; done
mtc-replicate push --dir "$W/node0/local" --config "$W/node0/config.json" --step 2 --peer "http://127.0.0.1:$P1"
mtc-replicate push --dir "$W/node1/local" --config "$W/node1/config.json" --step 2 --peer "http://127.0.0.1:$P0"
echo "node 1 now holds:"; ls "$W/node1/local"

say "6. backup of step 2 to a local directory (data first, .meta last)"
name=$(date -u +%Y-%m-%d_%H-%M)
for r in 0 1; do
	mtc-backup --dir "$W/node$r/local" --config "$W/node$r/config.json" --step 2 --to "$W/backup" --name "$name"
done

say "7. what the backups hold"
mtc-lkg --backups "$W/backup/demo"

say "8. on a workstation: download node 1's part of the backup, verified"
mtc-restore --from "$W/backup/demo/$name" --rank 1 --out "$W/restored"
find "$W/restored" -type f | sed "s|$W/||" | sort

say "9. retention, dry run"
mtc-prune "$W/backup/demo" --hourly 24 --daily 7 --weekly 5 --monthly always --yearly always --prefer-recent

say "done: the handshake, commit, peer push, backup, listing, restore and retention all ran on this machine"
