#!/bin/sh
# Backup transfer speed on a tmpfs step of about 1 GiB (four large shards and
# many small files): mtc-backup / mtc-restore to a directory against cp -r, and
# to the fake GCS server against rclone copy to the same server, same data,
# same run. Wall seconds and client CPU seconds (user + sys) per GiB, best of 2.
# mtc-backup also hashes the data to check it against its name; the
# --no-verify line is the transfer alone. The server's own CPU is not counted.
set -eu
size_mb=${MTC_BENCH_MB:-1024}
dir=$(mktemp -d /dev/shm/mtc-bench-backup.XXXXXX)
server_pid=
cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM

mkdir -p "$dir/local/step/shards" "$dir/local/step/small"
shard_mb=$(( (size_mb - 32) / 4 ))
for i in 1 2 3 4; do
	head -c $((shard_mb * 1048576 + i * 4099)) /dev/urandom > "$dir/local/step/shards/shard$i"
done
i=0
while [ $i -lt 512 ]; do
	head -c $(( (i % 127 + 1) * 509 )) /dev/urandom > "$dir/local/step/small/f$i"
	i=$((i + 1))
done
i=0
while [ $i -lt 16 ]; do
	head -c 1048576 /dev/urandom > "$dir/local/step/small/m$i"
	i=$((i + 1))
done
hash=$(mtc-replicate digest "$dir/local/step" | awk '{print $1}')
mv "$dir/local/step" "$dir/local/$hash.data"
printf %s "$hash" > "$dir/local/job-s1-n0-w0.meta"
printf '{"job-name":"job","framework":"orbax","node-rank":0,"nodes":1,"peer-ranks":[],"backup-interval-minutes":30}\n' > "$dir/cfg"
bytes=$(du -sb "$dir/local/$hash.data" | cut -f1)
gib=$(echo "$bytes" | awk '{ print $1 / 1073741824 }')

# measure LABEL PREP CMD...: PREP (a shell snippet) runs untimed before each of 2 runs.
measure() {
	label=$1 prep=$2
	shift 2
	best_w=999999 best_c=0
	for _ in 1 2; do
		sh -c "$prep"
		/usr/bin/time -f '%e %U %S' -o "$dir/time" "$@" > /dev/null 2>"$dir/err" || {
			echo "# $label failed:"; sed 's/^/#   /' "$dir/err"; return 1; }
		read -r w u s < "$dir/time"
		c=$(echo "$u $s" | awk '{ print $1 + $2 }')
		if [ "$(echo "$w $best_w" | awk '{ print ($1 < $2) }')" = 1 ]; then best_w=$w best_c=$c; fi
	done
	printf '%-36s' "$label"
	echo "$best_w $best_c" | awk -v g="$gib" '{
		printf " %7.2f s  %8.1f MB/s  %6.2f CPU s/GiB\n", $1, g * 1073.741824 / $1, $2 / g }'
}

echo "# $(echo "$bytes" | awk '{ printf "%.2f", $1 / 1073741824 }') GiB in $(find "$dir/local/$hash.data" -type f | wc -l) files"
echo "# --- directory backend (tmpfs to tmpfs)"
measure "upload:   cp -r" "rm -rf $dir/cp" cp -r "$dir/local/$hash.data" "$dir/cp"
measure "upload:   mtc-backup" "rm -rf $dir/bk" \
	mtc-backup --dir "$dir/local" --config "$dir/cfg" --step 1 --to "$dir/bk" --name 2025-01-01_00-00
measure "upload:   mtc-backup --no-verify" "rm -rf $dir/bk" \
	mtc-backup --dir "$dir/local" --config "$dir/cfg" --step 1 --to "$dir/bk" --name 2025-01-01_00-00 --no-verify
mtc-backup --dir "$dir/local" --config "$dir/cfg" --step 1 --to "$dir/bk" --name 2025-01-01_00-01 > /dev/null
measure "download: cp -r" "rm -rf $dir/cpback" cp -r "$dir/cp" "$dir/cpback"
measure "download: mtc-restore (verified)" "rm -rf $dir/out" \
	mtc-restore --from "$dir/bk" --job job --name 2025-01-01_00-01 --layout hash --out "$dir/out"
rm -rf "$dir/bk" "$dir/cp" "$dir/cpback" "$dir/out"

command -v rclone > /dev/null || { echo "# rclone not installed: gs:// comparison skipped"; exit 0; }
mkdir "$dir/server"
python3 tests/fakegcs/server.py --host 127.0.0.1 --port 0 --port-file "$dir/port" \
	--data-dir "$dir/server" > "$dir/server.log" 2>&1 &
server_pid=$!
i=0
while [ ! -s "$dir/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
url="http://127.0.0.1:$(cat "$dir/port")"
export STORAGE_EMULATOR_HOST="$url"
echo "# --- gs:// to the fake GCS server on loopback (client CPU only; 32 transfers each)"
measure "upload:   rclone copy" "true" \
	sh -c "rclone --gcs-anonymous --gcs-bucket-policy-only --gcs-endpoint '$url/storage/v1/' --transfers 32 \
	copy '$dir/local/$hash.data' :gcs:rc/r\$(date +%s%N)"
measure "upload:   mtc-backup" "true" \
	sh -c "mtc-backup --dir '$dir/local' --config '$dir/cfg' --step 1 --to gs://mtc/r\$(date +%s%N) --name 2025-01-01_00-00"
measure "upload:   mtc-backup --no-verify" "true" \
	sh -c "mtc-backup --dir '$dir/local' --config '$dir/cfg' --step 1 --to gs://mtc/n\$(date +%s%N) --name 2025-01-01_00-00 --no-verify"
mtc-backup --dir "$dir/local" --config "$dir/cfg" --step 1 --to gs://mtc/src --name 2025-01-01_00-00 > /dev/null
measure "download: rclone copy" "rm -rf $dir/rcback" \
	rclone --gcs-anonymous --gcs-bucket-policy-only --gcs-endpoint "$url/storage/v1/" --transfers 32 \
	copy ":gcs:mtc/src/job/2025-01-01_00-00/$hash.data" "$dir/rcback"
measure "download: mtc-restore (verified)" "rm -rf $dir/out" \
	mtc-restore --from gs://mtc/src --job job --name 2025-01-01_00-00 --layout hash --out "$dir/out"
