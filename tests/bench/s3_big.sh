#!/bin/sh
# One big object on the project's fake server speaking S3 (tests/fakegcs/server.py --s3)
# capping every connection at MTC_BENCH_S3_RATE bytes/s (a stand-in for one S3 stream),
# as the gs:// bench does: mtc's download and upload as one stream against its parallel
# ranged GETs and parallel multipart upload (--slices), the AWS CLI's `aws s3 cp` and
# rclone's S3 backend with as many streams, same object, same server, same run. Wall
# seconds, MB/s, client CPU seconds (user + sys) per GiB, and each line's speed over the
# single stream's. The server does not check signatures (moto, the protocol's reference
# in tests/s3.bats, does, but tops out near 20-30 MB/s here). The server is Python and
# shares the machine's cores with the client, so the aggregate is bounded by both: the
# figures compare clients on one server, not against AWS. MTC_BENCH_S3_MB sets the size
# (default 512: the whole bench runs in about 2 minutes on 2 cores), MTC_BENCH_S3_RATE
# the cap (default 20M = 20*10^6 bytes/s), MTC_BENCH_SLICES the streams (default 8).
set -eu
. tests/bench/lib/common.sh
size_mb=${MTC_BENCH_S3_MB:-512}
rate=${MTC_BENCH_S3_RATE:-20M}
slices=${MTC_BENCH_SLICES:-8}
venv=${MTC_VENV:-$PWD/build/venv}
if [ ! -x "$venv/bin/aws" ]; then
	echo "# the AWS CLI is not in $venv (make venv): skipped"
	exit 0
fi
bench_root s3
big_object "$size_mb"
fake_gcs --s3 --conn-rate "$rate" --no-md5
export AWS_CONFIG_FILE="$root/aws.config" AWS_SHARED_CREDENTIALS_FILE="$root/aws.credentials" \
	AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench AWS_REGION=us-east-1 \
	AWS_EC2_METADATA_DISABLED=true AWS_ENDPOINT_URL_S3="$url" MTC_S3_RETRY_BASE_MS=100
aws="$venv/bin/aws --endpoint-url $url"
$aws s3 mb s3://bench > /dev/null
rc="env -u AWS_CA_BUNDLE RCLONE_CONFIG=/dev/null RCLONE_CONFIG_B_TYPE=s3 RCLONE_CONFIG_B_PROVIDER=Other
	RCLONE_CONFIG_B_ACCESS_KEY_ID=bench RCLONE_CONFIG_B_SECRET_ACCESS_KEY=bench
	RCLONE_CONFIG_B_ENDPOINT=$url RCLONE_CONFIG_B_REGION=us-east-1
	RCLONE_CONFIG_B_FORCE_PATH_STYLE=true rclone"

chunk=$(( (size_mb + slices - 1) / slices ))
[ "$chunk" -ge 5 ] || chunk=5
echo "# $size_mb MiB, fake S3 (fakegcs --s3) capped at $rate bytes/s per connection; ratios against one stream"
echo "# --- download"
TEST_SLICES="$slices" TEST_SLICE_THRESHOLD=8388608 "$store" s3://bench put big "$root/big"
base=
measure "mtc one stream (--slices 1)" "rm -f $root/back" \
	env TEST_SLICES=1 "$store" s3://bench get big "$root/back"
measure "mtc ranged GETs (--slices $slices)" "rm -f $root/back" \
	env TEST_SLICES="$slices" TEST_SLICE_THRESHOLD=8388608 "$store" s3://bench get big "$root/back"
cmp "$root/big" "$root/back" || echo "# the sliced download differs!"
measure "aws s3 cp (max_concurrent_requests $slices)" "rm -f $root/back; $venv/bin/aws configure set default.s3.max_concurrent_requests $slices; $venv/bin/aws configure set default.s3.multipart_chunksize ${chunk}MB" \
	$aws s3 cp s3://bench/big "$root/back"
cmp "$root/big" "$root/back" || echo "# the AWS CLI's download differs!"
if command -v rclone > /dev/null; then
	measure "rclone --multi-thread-streams $slices" "rm -f $root/back" \
		$rc --multi-thread-streams "$slices" --multi-thread-cutoff 8M copyto b:bench/big "$root/back"
	cmp "$root/big" "$root/back" || echo "# rclone's download differs!"
fi
rm -f "$root/back"
echo "# --- upload"
base=
measure "mtc one stream (--slices 1)" "true" \
	env TEST_SLICES=1 "$store" s3://bench put up1 "$root/big"
measure "mtc multipart (--slices $slices)" "true" \
	env TEST_SLICES="$slices" TEST_SLICE_THRESHOLD=8388608 "$store" s3://bench put up2 "$root/big"
measure "aws s3 cp (max_concurrent_requests $slices)" "true" \
	$aws s3 cp "$root/big" s3://bench/up3
if command -v rclone > /dev/null; then
	measure "rclone (--s3-upload-concurrency $slices)" "true" \
		$rc --s3-no-head --s3-upload-concurrency "$slices" --s3-chunk-size "${chunk}M" \
		--s3-upload-cutoff 8M copyto "$root/big" b:bench/up4
fi
