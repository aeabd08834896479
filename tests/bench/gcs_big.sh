#!/bin/sh
# One big object on the fake GCS server capped at 100 MB/s per connection (a
# stand-in for one GCS stream): upload and download as one stream against the
# sliced download and the parallel composite upload (--slices, default 16), and
# rclone's multi-thread download and upload and Google's Node.js client's
# TransferManager (sliced download, chunked XML multipart upload) with as many
# streams, same object, same server, same run. Wall seconds, MB/s, client CPU
# seconds (user + sys) per GiB, and each line's speed over the single stream's:
# the single streams run once, every other line best of MTC_BENCH_RUNS (3), its
# spread (slowest over fastest) shown. The server's own CPU is not counted.
# MTC_BENCH_BIG_MB sets the size (default 1024; 4096 when /dev/shm has room for
# 7 copies), MTC_BENCH_CONN_RATE the cap (default 100M).
set -eu
. tests/bench/lib/common.sh
size_mb=${MTC_BENCH_BIG_MB:-1024}
rate=${MTC_BENCH_CONN_RATE:-100M}
slices=${MTC_BENCH_SLICES:-16}
bench_root big

big_object "$size_mb"
fake_gcs --conn-rate "$rate" --no-md5
export STORAGE_EMULATOR_HOST="$url" MTC_GCS_RETRY_BASE_MS=100 FAKEGCS_URL="$url"
node=
[ -d build/node/node_modules ] && command -v node > /dev/null && node=1
export NODE_PATH="$PWD/build/node/node_modules"

# one_and_sliced LABEL PREP ARGS1 ARGS2: `store gs://bench ARGS1` as one stream, the ratios'
# base, run once; then ARGS2 over $slices streams, best of MTC_BENCH_RUNS.
one_and_sliced() {
	base= runs=1
	# shellcheck disable=SC2086
	measure "mtc one stream (--slices 1)" "$2" env TEST_SLICES=1 "$store" gs://bench $3
	runs=${MTC_BENCH_RUNS:-3}
	# shellcheck disable=SC2086
	measure "mtc $1 (--slices $slices)" "$2" env TEST_SLICES="$slices" "$store" gs://bench $4
}

rc="rclone --gcs-anonymous --gcs-bucket-policy-only --gcs-endpoint $url/storage/v1/"
echo "# $size_mb MiB, fake GCS capped at $rate bytes/s per connection; ratios against one stream"
echo "# --- download"
TEST_SLICES=1 "$store" gs://bench put big "$root/big"
one_and_sliced sliced "rm -f $root/back" "get big $root/back" "get big $root/back"
cmp "$root/big" "$root/back" || echo "# the sliced download differs!"
if command -v rclone > /dev/null; then
	measure "rclone --multi-thread-streams $slices" "rm -f $root/back" \
		$rc --multi-thread-streams "$slices" --multi-thread-cutoff 64M copyto :gcs:bench/big "$root/back"
	measure "rclone --multi-thread-streams 4 (default)" "rm -f $root/back" \
		$rc --multi-thread-cutoff 64M copyto :gcs:bench/big "$root/back"
else
	echo "# rclone not installed: its lines skipped"
fi
chunk=$(( (size_mb * 1048576 + slices - 1) / slices ))
if [ -n "$node" ]; then
	measure "node TransferManager sliced ($slices at a time)" "rm -f $root/back" \
		node tests/fakegcs/node_client.js sliced bench big "$root/back" "$chunk" "$slices"
	cmp "$root/big" "$root/back" || echo "# the node client's download differs!"
else
	echo "# Google's Node.js client not installed (make node-client): its lines skipped"
fi
rm -f "$root/back"
echo "# --- upload"
one_and_sliced composite true "put up1 $root/big" "put up2 $root/big"
if command -v rclone > /dev/null; then
	measure "rclone copyto (chunked resumable)" "curl -s -o /dev/null -X DELETE $url/storage/v1/b/bench/o/up3" \
		$rc copyto "$root/big" :gcs:bench/up3
fi
[ -z "$node" ] || measure "node TransferManager chunked ($slices at a time)" "true" \
	node tests/fakegcs/node_client.js chunked bench up4 "$root/big" "$chunk" "$slices"
