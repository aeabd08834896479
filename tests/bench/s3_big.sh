#!/bin/sh
# One big object on moto's S3 server (the suite's reference for the protocol) behind
# tests/s3_fault_proxy.py capping every connection at MTC_BENCH_S3_RATE bytes/s (a
# stand-in for one S3 stream): mtc's download and upload as one stream against its
# parallel ranged GETs and parallel multipart upload (--slices), the AWS CLI's
# `aws s3 cp` and rclone's S3 backend with as many streams, same object, same server,
# same run. Wall seconds, MB/s, client CPU seconds (user + sys) per GiB, and each
# line's speed over the single stream's. moto and the proxy are Python and share the
# machine's cores, so the aggregate is theirs to cap: the figures compare clients on
# one server, not against AWS. MTC_BENCH_S3_MB sets the size (default 128: the whole
# bench runs in under 2 minutes), MTC_BENCH_S3_RATE the cap (default 8M).
set -eu
build=${1:-build/release}
size_mb=${MTC_BENCH_S3_MB:-128}
rate=${MTC_BENCH_S3_RATE:-8M}
slices=${MTC_BENCH_SLICES:-8}
store="$PWD/$build/unit/store"
venv=${MTC_VENV:-$PWD/build/venv}
if [ ! -x "$venv/bin/moto_server" ] || [ ! -x "$venv/bin/aws" ]; then
	echo "# moto or the AWS CLI is not in $venv (make venv): skipped"
	exit 0
fi
dir=$(mktemp -d /dev/shm/mtc-bench-s3.XXXXXX)
moto_pid= proxy_pid=
cleanup() {
	[ -z "$proxy_pid" ] || kill "$proxy_pid" 2>/dev/null
	[ -z "$moto_pid" ] || kill "$moto_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM

avail_mb=$(df -Pm /dev/shm | awk 'NR == 2 { print $4 }')
if [ "$avail_mb" -lt $((size_mb * 4 + 256)) ]; then
	echo "# /dev/shm has $avail_mb MB free, too little for $size_mb MB: skipped"
	exit 0
fi
bytes_per_s=$(echo "$rate" | awk '/[Mm]$/ { print $1 * 1048576; next } /[Kk]$/ { print $1 * 1024; next } { print $1 }')
head -c $((size_mb * 1048576)) /dev/urandom > "$dir/big"
gib=$(echo "$size_mb" | awk '{ print $1 / 1024 }')
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$venv/bin/moto_server" -H 127.0.0.1 -p "$port" > "$dir/moto.log" 2>&1 &
moto_pid=$!
moto="http://127.0.0.1:$port"
i=0
until curl -fsS -o /dev/null "$moto/moto-api/data.json" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 300 ] || { echo "# moto did not start:"; sed 's/^/#   /' "$dir/moto.log"; exit 1; }
	sleep 0.1
done
"$venv/bin/python" tests/s3_fault_proxy.py "$moto" rate "$bytes_per_s" > "$dir/proxy.port" 2>"$dir/proxy.err" &
proxy_pid=$!
i=0
while [ ! -s "$dir/proxy.port" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
url="http://127.0.0.1:$(cat "$dir/proxy.port")"
export AWS_CONFIG_FILE="$dir/aws.config" AWS_SHARED_CREDENTIALS_FILE="$dir/aws.credentials" \
	AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench AWS_REGION=us-east-1 \
	AWS_EC2_METADATA_DISABLED=true AWS_ENDPOINT_URL_S3="$url" MTC_S3_RETRY_BASE_MS=100
aws="$venv/bin/aws --endpoint-url $url"
$aws s3 mb s3://bench > /dev/null
rc="env -u AWS_CA_BUNDLE RCLONE_CONFIG=/dev/null RCLONE_CONFIG_B_TYPE=s3 RCLONE_CONFIG_B_PROVIDER=Other
	RCLONE_CONFIG_B_ACCESS_KEY_ID=bench RCLONE_CONFIG_B_SECRET_ACCESS_KEY=bench
	RCLONE_CONFIG_B_ENDPOINT=$url RCLONE_CONFIG_B_REGION=us-east-1
	RCLONE_CONFIG_B_FORCE_PATH_STYLE=true rclone"

# measure LABEL PREP CMD...: PREP (a shell snippet) runs untimed first; one run each.
base=
measure() {
	label=$1 prep=$2
	shift 2
	sh -c "$prep"
	/usr/bin/time -f '%e %U %S' -o "$dir/time" "$@" > /dev/null 2>"$dir/err" || {
		echo "# $label failed:"; sed 's/^/#   /' "$dir/err" | tail -5; return 0; }
	set -- $(cat "$dir/time")
	[ -n "$base" ] || base=$1
	printf '%-46s' "$label"
	echo "$1 $2 $3 $base" | awk -v g="$gib" '{
		printf " %7.2f s  %8.1f MB/s  %6.2f CPU s/GiB  %5.2fx\n", $1, g * 1073.741824 / $1, ($2 + $3) / g, $4 / $1 }'
}

chunk=$(( (size_mb + slices - 1) / slices ))
[ "$chunk" -ge 5 ] || chunk=5
echo "# $size_mb MiB, moto behind a proxy capping each connection at $rate bytes/s; ratios against one stream"
echo "# --- download"
TEST_SLICES=1 "$store" s3://bench put big "$dir/big"
base=
measure "mtc one stream (--slices 1)" "rm -f $dir/back" \
	env TEST_SLICES=1 "$store" s3://bench get big "$dir/back"
measure "mtc ranged GETs (--slices $slices)" "rm -f $dir/back" \
	env TEST_SLICES="$slices" TEST_SLICE_THRESHOLD=8388608 "$store" s3://bench get big "$dir/back"
cmp "$dir/big" "$dir/back" || echo "# the sliced download differs!"
measure "aws s3 cp (max_concurrent_requests $slices)" "rm -f $dir/back; $venv/bin/aws configure set default.s3.max_concurrent_requests $slices; $venv/bin/aws configure set default.s3.multipart_chunksize ${chunk}MB" \
	$aws s3 cp s3://bench/big "$dir/back"
if command -v rclone > /dev/null; then
	measure "rclone --multi-thread-streams $slices" "rm -f $dir/back" \
		$rc --multi-thread-streams "$slices" --multi-thread-cutoff 8M copyto b:bench/big "$dir/back"
fi
rm -f "$dir/back"
echo "# --- upload"
base=
measure "mtc one stream (--slices 1)" "true" \
	env TEST_SLICES=1 "$store" s3://bench put up1 "$dir/big"
measure "mtc multipart (--slices $slices)" "true" \
	env TEST_SLICES="$slices" TEST_SLICE_THRESHOLD=8388608 "$store" s3://bench put up2 "$dir/big"
measure "aws s3 cp (max_concurrent_requests $slices)" "true" \
	$aws s3 cp "$dir/big" s3://bench/up3
if command -v rclone > /dev/null; then
	measure "rclone (--s3-upload-concurrency $slices)" "true" \
		$rc --s3-no-head --s3-upload-concurrency "$slices" --s3-chunk-size "${chunk}M" \
		--s3-upload-cutoff 8M copyto "$dir/big" b:bench/up4
fi
