#!/bin/sh
# One big object on the fake GCS server capped at 100 MB/s per connection (a
# stand-in for one GCS stream): upload and download as one stream against the
# sliced download and the parallel composite upload (--slices, default 16), and
# rclone's multi-thread download and upload of the same object on the same
# server, same run. Wall seconds, MB/s, client CPU seconds (user + sys) per GiB,
# and each line's speed over the single stream's. The server's own CPU is not
# counted. MTC_BENCH_BIG_MB sets the size (default 1024; 4096 when /dev/shm
# has room for 7 copies), MTC_BENCH_CONN_RATE the cap (default 100M).
set -eu
build=${1:-build/release}
size_mb=${MTC_BENCH_BIG_MB:-1024}
rate=${MTC_BENCH_CONN_RATE:-100M}
slices=${MTC_BENCH_SLICES:-16}
store="$build/unit/store"
dir=$(mktemp -d /dev/shm/mtc-bench-big.XXXXXX)
server_pid=
cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM

avail_mb=$(df -Pm /dev/shm | awk 'NR == 2 { print $4 }')
if [ "$avail_mb" -lt $((size_mb * 7 + 256)) ]; then
	echo "# /dev/shm has $avail_mb MB free, too little for the 7 copies of $size_mb MB this takes: skipped"
	exit 0
fi
head -c $((size_mb * 1048576)) /dev/urandom > "$dir/big"
gib=$(echo "$size_mb" | awk '{ print $1 / 1024 }')
mkdir "$dir/server"
python3 tests/fakegcs/server.py --host 127.0.0.1 --port 0 --port-file "$dir/port" \
	--conn-rate "$rate" --no-md5 --data-dir "$dir/server" > "$dir/server.log" 2>&1 &
server_pid=$!
i=0
while [ ! -s "$dir/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$dir/port" ] || { echo "# the fake server did not start:"; sed 's/^/#   /' "$dir/server.log"; exit 1; }
url="http://127.0.0.1:$(cat "$dir/port")"
export STORAGE_EMULATOR_HOST="$url" MTC_GCS_RETRY_BASE_MS=100

# measure LABEL PREP CMD...: PREP (a shell snippet) runs untimed first; one run (the object is big).
base=
measure() {
	label=$1 prep=$2
	shift 2
	sh -c "$prep"
	/usr/bin/time -f '%e %U %S' -o "$dir/time" "$@" > /dev/null 2>"$dir/err" || {
		echo "# $label failed:"; sed 's/^/#   /' "$dir/err"; return 0; }
	read -r w u s < "$dir/time"
	[ -n "$base" ] || base=$w
	printf '%-44s' "$label"
	echo "$w $u $s $base" | awk -v g="$gib" '{
		printf " %7.2f s  %8.1f MB/s  %6.2f CPU s/GiB  %5.2fx\n",
			$1, g * 1073.741824 / $1, ($2 + $3) / g, $4 / $1 }'
}

rc="rclone --gcs-anonymous --gcs-bucket-policy-only --gcs-endpoint $url/storage/v1/"
echo "# $size_mb MiB, fake GCS capped at $rate bytes/s per connection; ratios against one stream"
echo "# --- download"
TEST_SLICES=1 "$store" gs://b put big "$dir/big"
base=
measure "mtc one stream (--slices 1)" "rm -f $dir/back" \
	env TEST_SLICES=1 "$store" gs://b get big "$dir/back"
measure "mtc sliced (--slices $slices)" "rm -f $dir/back" \
	env TEST_SLICES="$slices" "$store" gs://b get big "$dir/back"
cmp "$dir/big" "$dir/back" || echo "# the sliced download differs!"
if command -v rclone > /dev/null; then
	measure "rclone --multi-thread-streams $slices" "rm -f $dir/back" \
		$rc --multi-thread-streams "$slices" --multi-thread-cutoff 64M copyto :gcs:b/big "$dir/back"
	measure "rclone --multi-thread-streams 4 (default)" "rm -f $dir/back" \
		$rc --multi-thread-cutoff 64M copyto :gcs:b/big "$dir/back"
else
	echo "# rclone not installed: its lines skipped"
fi
rm -f "$dir/back"
echo "# --- upload"
base=
measure "mtc one stream (--slices 1)" "true" \
	env TEST_SLICES=1 "$store" gs://b put up1 "$dir/big"
measure "mtc composite (--slices $slices)" "true" \
	env TEST_SLICES="$slices" "$store" gs://b put up2 "$dir/big"
if command -v rclone > /dev/null; then
	measure "rclone copyto (chunked resumable)" "true" \
		$rc copyto "$dir/big" :gcs:b/up3
fi
