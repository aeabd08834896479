#!/bin/sh
# Backup transfer speed on a tmpfs step of about 1 GiB (four large shards and
# many small files): mtc-backup / mtc-restore to a directory against cp -r, and
# to the fake GCS server against rclone copy to the same server, same data,
# same run. Wall seconds and client CPU seconds (user + sys) per GiB, best of 2.
# mtc-backup also hashes the data to check it against its name; the
# --no-verify line is the transfer alone. The server's own CPU is not counted.
set -eu
. tests/bench/lib/common.sh
size_mb=${MTC_BENCH_MB:-1024}
bench_root backup

make_step "$root/local/step" $(((size_mb - 32) / 4)) 512 127 509 16
# as a commit leaves it: the data and its manifest beside it (a directory backup copies each
# file checked against that manifest; "hashed first" drops the manifest to time the other way)
mtc-replicate digest --json --manifest "$root/local/step" >"$root/digest.json"
hash=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["digest"])
open(sys.argv[2], "w").write(json.dumps(d["manifest"], separators=(",", ":")))' "$root/digest.json" "$root/manifest")
mv "$root/local/step" "$root/local/$hash.data"
mv "$root/manifest" "$root/local/$hash.manifest"
printf %s "$hash" > "$root/local/job-s1-n0-w0.meta"
printf '{"job-name":"job","framework":"orbax","node-rank":0,"nodes":1,"peer-ranks":[],"backup-interval-minutes":30}\n' > "$root/cfg"
bytes=$(du -sb "$root/local/$hash.data" | cut -f1)
gib=$(echo "$bytes" | awk '{ print $1 / 1073741824 }')

# measure LABEL PREP CMD...: PREP (a shell snippet) runs untimed before each of 2 runs.
measure() {
	label=$1 prep=$2
	shift 2
	best_w=999999 best_c=0
	for _ in 1 2; do
		sh -c "$prep"
		/usr/bin/time -f '%e %U %S' -o "$root/time" "$@" > /dev/null 2>"$root/err" || {
			echo "# $label failed:"; sed 's/^/#   /' "$root/err"; return 1; }
		read -r w u s < "$root/time"
		c=$(echo "$u $s" | awk '{ print $1 + $2 }')
		if [ "$(echo "$w $best_w" | awk '{ print ($1 < $2) }')" = 1 ]; then best_w=$w best_c=$c; fi
	done
	printf '%-36s' "$label"
	echo "$best_w $best_c" | awk -v g="$gib" '{
		printf " %7.2f s  %8.1f MB/s  %6.2f CPU s/GiB\n", $1, g * 1073.741824 / $1, $2 / g }'
}

echo "# $(echo "$bytes" | awk '{ printf "%.2f", $1 / 1073741824 }') GiB in $(find "$root/local/$hash.data" -type f | wc -l) files"
echo "# --- directory backend (tmpfs to tmpfs)"
measure "upload:   cp -r" "rm -rf $root/cp" cp -r "$root/local/$hash.data" "$root/cp"
measure "upload:   mtc-backup" "rm -rf $root/bk" \
	mtc-backup --dir "$root/local" --config "$root/cfg" --step 1 --to "$root/bk" --name 2025-01-01_00-00
measure "upload:   mtc-backup --no-verify" "rm -rf $root/bk" \
	mtc-backup --dir "$root/local" --config "$root/cfg" --step 1 --to "$root/bk" --name 2025-01-01_00-00 --no-verify
mv "$root/local/$hash.manifest" "$root/manifest"
measure "upload:   mtc-backup, hashed first" "rm -rf $root/bk" \
	mtc-backup --dir "$root/local" --config "$root/cfg" --step 1 --to "$root/bk" --name 2025-01-01_00-00
mv "$root/manifest" "$root/local/$hash.manifest"
mtc-backup --dir "$root/local" --config "$root/cfg" --step 1 --to "$root/bk" --name 2025-01-01_00-01 > /dev/null
measure "download: cp -r" "rm -rf $root/cpback" cp -r "$root/cp" "$root/cpback"
measure "download: mtc-restore (verified)" "rm -rf $root/out" \
	mtc-restore --from "$root/bk" --job job --name 2025-01-01_00-01 --layout hash --out "$root/out"
rm -rf "$root/bk" "$root/cp" "$root/cpback" "$root/out"

command -v rclone > /dev/null || { echo "# rclone not installed: gs:// comparison skipped"; exit 0; }
fake_gcs
export STORAGE_EMULATOR_HOST="$url"
echo "# --- gs:// to the fake GCS server on loopback (client CPU only; 32 transfers each)"
measure "upload:   rclone copy" "true" \
	sh -c "rclone --gcs-anonymous --gcs-bucket-policy-only --gcs-endpoint '$url/storage/v1/' --transfers 32 \
	copy '$root/local/$hash.data' :gcs:rc/r\$(date +%s%N)"
measure "upload:   mtc-backup" "true" \
	sh -c "mtc-backup --dir '$root/local' --config '$root/cfg' --step 1 --to gs://mtc/r\$(date +%s%N) --name 2025-01-01_00-00"
measure "upload:   mtc-backup --no-verify" "true" \
	sh -c "mtc-backup --dir '$root/local' --config '$root/cfg' --step 1 --to gs://mtc/n\$(date +%s%N) --name 2025-01-01_00-00 --no-verify"
mtc-backup --dir "$root/local" --config "$root/cfg" --step 1 --to gs://mtc/src --name 2025-01-01_00-00 > /dev/null
measure "download: rclone copy" "rm -rf $root/rcback" \
	rclone --gcs-anonymous --gcs-bucket-policy-only --gcs-endpoint "$url/storage/v1/" --transfers 32 \
	copy ":gcs:mtc/src/job/2025-01-01_00-00/$hash.data" "$root/rcback"
measure "download: mtc-restore (verified)" "rm -rf $root/out" \
	mtc-restore --from gs://mtc/src --job job --name 2025-01-01_00-00 --layout hash --out "$root/out"
