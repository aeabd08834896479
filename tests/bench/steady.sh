#!/bin/sh
# What the training job sees of mtc, as ratios within one run (the machine is
# shared: each pair alternates, MTC_BENCH_RUNS times, default 3, medians):
#   - the framework's write of a step (one large OCDBT data file written in
#     8 MiB chunks, as Orbax appends it, and 300 small files, then the rename)
#     with mtc-replicate run watching the dir, against the same write with no
#     mtc process at all;
#   - write start -> on the peer, rename -> committed, rename -> on the peer;
#   - replication CPU (the sender's run and the peer's daemon) per GiB, against its
#     floor (the bytes over loopback TCP into tmpfs, hashed at both ends) and cp;
#   - the write while a peer's step arrives, the receiving daemon idle-class or not;
#   - the restore of a wiped node from its peer (mtc-replicate fetch, verified)
#     against cp -r of the same step, time and CPU;
#   - the copy to a directory backup (mtc-backup, verified) against cp -r.
# The load of the machine at the start and the end is printed with the figures.
#   tests/bench/steady.sh [BUILD_DIR]     MTC_BENCH_MB sets the step size (default 1024),
#   MTC_BENCH_BACKGROUND the run --background classes to measure (default idle; e.g.
#   "normal nice idle"), MTC_BENCH_KEEP=1 keeps the files (run's log) for a look.
set -eu
. tests/bench/lib/common.sh
mb=${MTC_BENCH_MB:-1024}
runs=${MTC_BENCH_RUNS:-3}
bench_root steady

# cpu PID: its user + system seconds so far
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat"; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# the framework's stand-in: writes DIR/<step>.orbax-checkpoint-tmp from the template, every
# file made unique by a header, renames it to DIR/<step>; prints its write seconds
cat >"$root/write.py" <<'PY'
import os, shutil, sys, time
tmpl, local, step, tag = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
t = os.path.join(local, f"{step}.orbax-checkpoint-tmp")
d = os.path.join(t, "state", "ocdbt.process_0", "d")
os.makedirs(d)
hdr = f"{tag} step {step} ".encode().ljust(64, b".")
s = time.time()
with open(os.path.join(tmpl, "big"), "rb") as fi, open(os.path.join(d, "e46f94127a44b0909c1e9ee2c33bc8ab"), "wb") as fo:
    fo.write(hdr)
    fi.seek(len(hdr))
    shutil.copyfileobj(fi, fo, 8 << 20)
for i in range(300):
    with open(os.path.join(tmpl, f"small{i:03d}"), "rb") as fi, open(os.path.join(d, f"{i:032x}"), "wb") as fo:
        b = fi.read()
        fo.write(hdr + b[len(hdr):])
with open(os.path.join(t, "commit_success.txt"), "w") as f:
    f.write("ok")
e = time.time()
os.rename(t, os.path.join(local, step))
print(f"{s:.6f} {e - s:.6f}")
PY
mkdir -p "$root/tmpl"
python3 - "$root/tmpl" "$mb" <<'PY'
import os, subprocess, sys
d, mib = sys.argv[1], int(sys.argv[2])
small = 0
for i in range(300):
    sz = 4096 << (i % 5)
    open(os.path.join(d, f"small{i:03d}"), "wb").write(os.urandom(sz))
    small += sz
subprocess.run(["head", "-c", str(mib * 2**20 - small), "/dev/urandom"], stdout=open(os.path.join(d, "big"), "wb"), check=True)
PY
printf '{"job-name":"bench","framework":"orbax","node-rank":0,"nodes":2,"peer-ranks":[1],"backup-interval-minutes":30}\n' >"$root/cfg.json"
gib=$(awk -v m="$mb" 'BEGIN { print m / 1024 }')

n=0
# stopped: the write with no mtc process; sets w
stopped() {
	stop_all
	rm -rf "$root/local" && mkdir -p "$root/local"
	n=$((n + 1))
	set -- $(python3 "$root/write.py" "$root/tmpl" "$root/local" 1 "off$n")
	w=$2
}

# running [OPTION...]: run watches the dir while the step is written; sets w, ws (write
# start -> on peer), rp (rename -> on peer), rc (rename -> committed) and c (CPU seconds)
running() {
	coord_peer
	printf 'http://127.0.0.1:9\n%s\n' "$PEER" >"$root/peers" # rank 0 (this node), rank 1
	rm -rf "$root/local" && mkdir -p "$root/local"
	"$bin/mtc-replicate" run --dir "$root/local" --config "$root/cfg.json" --peers-file "$root/peers" \
		--coordinator-url "$PEER" --timeout 300 --json -v "$@" >"$root/run.out" 2>"$root/run.err" &
	run=$!
	pids="$pids $run"
	for _ in $(seq 100); do grep -q "steady state" "$root/run.err" && break; sleep 0.1; done
	sleep 0.5
	c0=$(awk -v a="$(cpu "$run")" -v b="$(cpu "$PEER_PID")" 'BEGIN { print a + b }')
	n=$((n + 1))
	set -- $(python3 "$root/write.py" "$root/tmpl" "$root/local" 1 "on$n")
	w=$2
	for _ in $(seq 1200); do grep -q '"to-peers"' "$root/run.out" && break; sleep 0.05; done
	c=$(awk -v a="$(cpu "$run")" -v b="$(cpu "$PEER_PID")" -v c0="$c0" 'BEGIN { print a + b - c0 }')
	rp=$(sed -n 's/.*"to-peers":\([0-9.]*\).*/\1/p' "$root/run.out" | head -1)
	rc=$(sed -n 's/.*"to-commit":\([0-9.]*\).*/\1/p' "$root/run.out" | head -1)
	[ -n "$rp" ] || { echo "no time-to-safety line:" >&2; tail -5 "$root/run.err" >&2; exit 1; }
	ws=$(awk -v w="$w" -v r="$rp" 'BEGIN { print w + r }')
}

# MTC_BENCH_BACKGROUND: the --background classes of run to measure, each beside the stopped
# write in every run ("-": run without the option)
classes=${MTC_BENCH_BACKGROUND:-idle}
echo "# steady bench: $mb MiB step (one large file, 300 small), $(nproc) CPUs, $runs alternating runs, medians"
echo "# load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
W0=""
for k in $classes; do
	v=$(echo "$k" | tr -c 'a-z\n' _)
	eval "W1_$v='' WS_$v='' RP_$v='' RC_$v='' C_$v=''"
done
for _ in $(seq "$runs"); do
	stopped
	W0="$W0 $w"
	for k in $classes; do
		if [ "$k" = - ]; then running; else running --background "$k"; fi
		v=$(echo "$k" | tr -c 'a-z\n' _)
		eval "W1_$v=\"\$W1_$v $w\" WS_$v=\"\$WS_$v $ws\" RP_$v=\"\$RP_$v $rp\" RC_$v=\"\$RC_$v $rc\" C_$v=\"\$C_$v $c\""
	done
done
w0=$(echo "$W0" | median)
printf 'framework write, mtc stopped            %6.2f s   (runs:%s)\n' "$w0" "$W0"

# the floor under the replication CPU: the large file over loopback TCP into tmpfs with no
# HTTP, framing or hashing (tcp_floor.c), and one hash of it, which mtc takes twice (to
# name the step at the sender, to verify it at the receiver); cp's kernel copy beside it
# (L*: the floor's runs)
cc -O2 -D_GNU_SOURCE -o "$root/tcp_floor" tests/bench/tcp_floor.c
big=$(awk -v b="$(stat -c %s "$root/tmpl/big")" 'BEGIN { print b / 1073741824 }')
LT="" LH="" LK=""
for _ in $(seq "$runs"); do
	rm -f "$root/floor"
	LT="$LT $("$root/tcp_floor" "$root/tmpl/big" "$root/floor" | awk '{ print $1 + $2 }')"
	rm -f "$root/floor"
	/usr/bin/time -f '%U %S' -o "$root/time" "$bin/mtc-replicate" digest --threads 1 "$root/tmpl/big" >/dev/null
	LH="$LH $(awk '{ print $1 + $2 }' "$root/time")"
	/usr/bin/time -f '%U %S' -o "$root/time" cp "$root/tmpl/big" "$root/floor"
	LK="$LK $(awk '{ print $1 + $2 }' "$root/time")"
done
rm -f "$root/floor"
lt=$(echo "$LT" | median) lh=$(echo "$LH" | median) lk=$(echo "$LK" | median)
floor=$(awk -v t="$lt" -v h="$lh" -v b="$big" 'BEGIN { print (t + 2 * h) / b }')
awk -v t="$lt" -v h="$lh" -v k="$lk" -v b="$big" -v f="$floor" 'BEGIN {
	printf "floor: loopback TCP into tmpfs          %6.2f CPU s/GiB, + a hash %.2f, twice: %.2f s/GiB\n", t / b, h / b, f
	printf "cp of the large file (a kernel copy)    %6.2f CPU s/GiB\n", k / b
}'
for k in $classes; do
	v=$(echo "$k" | tr -c 'a-z\n' _)
	eval "a1=\$W1_$v ws=\$WS_$v rp=\$RP_$v rc=\$RC_$v c=\$C_$v"
	echo "# mtc-replicate run --background $k"
	awk -v w0="$w0" -v w1="$(echo "$a1" | median)" -v ws="$(echo "$ws" | median)" -v rp="$(echo "$rp" | median)" \
		-v rc="$(echo "$rc" | median)" -v c="$(echo "$c" | median)" -v g="$gib" -v a1="$a1" -v f="$floor" 'BEGIN {
		printf "framework write, mtc running            %6.2f s   (runs:%s)\n", w1, a1
		printf "  running / stopped                     %6.2fx  (target <= 1.05x)\n", w1 / w0
		printf "rename -> committed                     %6.2f s   (target <= 0.15 s a GiB: %.2f s)\n", rc, 0.15 * g
		printf "rename -> on peer                       %6.2f s\n", rp
		printf "write start -> on peer                  %6.2f s   (%.2fx the write alone)\n", ws, ws / w0
		printf "replication CPU (run + peer daemon)     %6.2f s/GiB  (%.2fx the floor)\n", c / g, c / g / f
	}'
done

# restore of a wiped node: its step fetched back from the peer, against cp -r of it
hash=$(sed -n 's/.*"hash":"\([^"]*\)".*/\1/p' "$root/run.out" | head -1)
[ -n "$hash" ] || hash=$(cat "$root/local/"*-n0-w0.meta)
meta=$(cd "$root/local" && ls *-n0-w0.meta)
FT="" FC="" CT="" CC=""
for _ in $(seq "$runs"); do
	rm -rf "$root/cp" "$root/wiped" && mkdir -p "$root/wiped"
	s=$(now)
	cp -r "$root/peer/$hash.data" "$root/cp"
	CT="$CT $(since "$s")"
	c0=$(cpu "$PEER_PID")
	/usr/bin/time -f '%e %U %S' -o "$root/time" "$bin/mtc-replicate" fetch --dir "$root/wiped" \
		--from "$PEER" --hash "$hash" --meta "$meta" >/dev/null 2>"$root/fetch.err" ||
		{ echo "fetch failed:" >&2; cat "$root/fetch.err" >&2; exit 1; }
	read -r e u sy <"$root/time"
	FT="$FT $e"
	FC="$FC $(awk -v u="$u" -v s="$sy" -v c0="$c0" -v c1="$(cpu "$PEER_PID")" 'BEGIN { print u + s + c1 - c0 }')"
done
ft=$(echo "$FT" | median) ct=$(echo "$CT" | median)
awk -v ft="$ft" -v fc="$(echo "$FC" | median)" -v ct="$ct" -v g="$gib" 'BEGIN {
	printf "restore of a wiped node from its peer   %6.2f s   %.2f CPU s/GiB (both ends), %.2fx cp -r (%.2f s)\n", ft, fc / g, ft / ct, ct
}'

# the copy to a directory backup, against cp -r of the same step
BT="" BC="" KT=""
for _ in $(seq "$runs"); do
	rm -rf "$root/cp" "$root/bk"
	s=$(now)
	cp -r "$root/local/$hash.data" "$root/cp"
	KT="$KT $(since "$s")"
	/usr/bin/time -f '%e %U %S' -o "$root/time" "$bin/mtc-backup" --dir "$root/local" --config "$root/cfg.json" \
		--step 1 --to "$root/bk" --name 2025-01-01_00-00 >/dev/null 2>"$root/backup.err" ||
		{ echo "backup failed:" >&2; cat "$root/backup.err" >&2; exit 1; }
	read -r e u sy <"$root/time"
	BT="$BT $e"
	BC="$BC $(awk -v u="$u" -v s="$sy" 'BEGIN { print u + s }')"
done
bt=$(echo "$BT" | median) kt=$(echo "$KT" | median)
awk -v bt="$bt" -v bc="$(echo "$BC" | median)" -v kt="$kt" -v g="$gib" 'BEGIN {
	printf "backup copy to a directory              %6.2f s/GiB  %.2f CPU s/GiB, %.2fx cp -r (%.2f s/GiB)\n", bt / g, bc / g, bt / kt, kt / g
}'

# the framework's write on a node while a peer's step arrives, by the receiving daemon's
# class (serve --background), the pusher idle-class as on a host of its own: the write
# (against the stopped write of the same run) and the push's seconds
mkdir -p "$root/src"
python3 "$root/write.py" "$root/tmpl" "$root/src" 1 src >/dev/null
"$bin/mtc-replicate" commit --dir "$root/src" --config "$root/cfg.json" --quiet-time 0 >/dev/null
receiving() {
	stop_all
	rm -rf "$root/local" && mkdir -p "$root/local"
	serve recv "$root/local" --background "$1"
	s=$(now)
	chrt -i 0 "$bin/mtc-replicate" push --dir "$root/src" --config "$root/cfg.json" --step 1 \
		--peer "$SERVED_URL" >/dev/null 2>"$root/push.err" &
	push=$!
	n=$((n + 1))
	set -- $(python3 "$root/write.py" "$root/tmpl" "$root/local" 2 "in$n")
	w=$2
	wait "$push" || { echo "push failed:" >&2; cat "$root/push.err" >&2; exit 1; }
	p=$(since "$s")
}
R0="" RI="" RN="" PI="" PN=""
for _ in $(seq "$runs"); do
	stopped
	R0="$R0 $w"
	receiving idle
	RI="$RI $w" PI="$PI $p"
	receiving normal
	RN="$RN $w" PN="$PN $p"
done
awk -v w0="$(echo "$R0" | median)" -v wi="$(echo "$RI" | median)" -v wn="$(echo "$RN" | median)" \
	-v pi="$(echo "$PI" | median)" -v pn="$(echo "$PN" | median)" 'BEGIN {
	printf "framework write while a peer step arrives  %.2fx the write alone (serve --background idle), %.2fx (normal)\n", wi / w0, wn / w0
	printf "  the push meanwhile                    %6.2f s (idle), %.2f s (normal)\n", pi, pn
}'

echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
