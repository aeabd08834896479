#!/usr/bin/env bats
# mtc-prune on gs:// against the fake GCS server: decisions, exact deletes, safety rules,
# parallel requests, retries, and kill -9 during deletion.

load helpers
load fakegcs/fakegcs
load backup

NONE=(--minutely 0 --hourly 0 --daily 0 --weekly 0 --monthly 0 --yearly 0)

setup() {
	WORK=$(mktemp -d /dev/shm/mtc-prune-gcs.XXXXXX)
	export TMPDIR="$WORK"
	export MTC_GCS_RETRY_BASE_MS=20
	unset MTC_GCS_ENDPOINT GOOGLE_APPLICATION_CREDENTIALS MTC_GCS_TOKEN
	STORE="$MTC_BIN/../unit/store"
	URL=gs://bkt/root/job
	LOC=(gs://bkt/root --job job)
	fakegcs_start
}

teardown() {
	fakegcs_stop
	rm -rf "$WORK"
}

# backups NODES WORKERS [--skip RANK] NAME...: in $WORK/up, each backup with every node x
# worker's .meta (sha256 of "NAME-RANK-WORKER") and its <hash>.data of files a, b and c.
backups() {
	python3 - "$WORK/up" "$@" <<'EOF'
import hashlib, os, sys
up, nodes, workers, args = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
skip = -1
if args[:1] == ["--skip"]:
    skip, args = int(args[1]), args[2:]
for name in args:
    b = os.path.join(up, name)
    os.makedirs(b, exist_ok=True)
    for r in range(nodes):
        if r == skip:
            continue
        for w in range(workers):
            h = hashlib.sha256(("%s-%d-%d" % (name, r, w)).encode()).hexdigest()
            os.makedirs(os.path.join(b, h + ".data"))
            for f in "abc":
                open(os.path.join(b, h + ".data", f), "w").write(f)
            open(os.path.join(b, "job-s1-n%d-w%d.meta" % (r, w)), "w").write(h)
EOF
}

# upload: everything in $WORK/up goes to gs://bkt/root/job/, in parallel.
upload() {
	"$STORE" gs://bkt/root puttree job "$WORK/up"
	rm -rf "$WORK/up"
}

objects() { "$STORE" gs://bkt/root list job/ | cut -d' ' -f1; }
dirs() { "$STORE" gs://bkt/root list job/ / | sed -n 's|^job/\(.*\)/$|\1|p' | tr '\n' ' '; }
metas_of() { objects | grep -c "^job/$1/.*\.meta$" || true; }
# decisions EXPR: EXPR over bs, the decision lines of mtc-prune --json on stdin (d: the summary).
decisions() {
	python3 -c 'import json, sys
lines = [json.loads(l) for l in sys.stdin]
bs, d = [o for o in lines if "backup" in o], lines[-1]
print(json.dumps(eval(sys.argv[1])))' "$1"
}

elapsed_ms() { echo $((($(date +%s%N) - $1) / 1000000)); }

# Reads the bucket as mtc(7) §6.5 does without a config (ranks 0..max, workers 0..max, each
# with a .meta whose data is there) and prints every backup that reads valid without being
# whole (NODES x WORKERS, 3 files each), and every .meta that outlived part of its data.
half_valid() {
	python3 - "$FAKEGCS_URL" "$1" "$2" <<'EOF'
import hashlib, json, re, sys, urllib.parse, urllib.request
base, nodes, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
names, token = [], None
for _ in range(1000):
    q = {"prefix": "root/job/"}
    if token:
        q["pageToken"] = token
    with urllib.request.urlopen(base + "/storage/v1/b/bkt/o?" + urllib.parse.urlencode(q)) as r:
        d = json.load(r)
    names += [i["name"][len("root/job/"):] for i in d.get("items", [])]
    token = d.get("nextPageToken")
    if not token:
        break
backups = {}
for n in names:
    b, _, rest = n.partition("/")
    backups.setdefault(b, set()).add(rest)
for b, objs in sorted(backups.items()):
    metas = set()
    for o in objs:
        m = re.match(r"job-s\d+-n(\d+)-w(\d+)\.meta$", o)
        if m:
            metas.add((int(m.group(1)), int(m.group(2))))
    if not metas:
        continue
    def files(r, w):
        h = hashlib.sha256(("%s-%d-%d" % (b, r, w)).encode()).hexdigest()
        return sum(1 for o in objs if o.startswith(h + ".data/"))
    n, nw = max(r for r, _ in metas) + 1, max(w for _, w in metas) + 1
    reads_valid = all((r, w) in metas and files(r, w) for r in range(n) for w in range(nw))
    whole = n == nodes and nw == workers and all(files(r, w) == 3 for r in range(n) for w in range(nw))
    if reads_valid and not whole:
        print("half-valid", b)
    for r, w in sorted(metas):
        if files(r, w) != 3:
            print("orphan .meta", b, r, w)
EOF
}

@test "gs://: a dry run deletes nothing" {
	backups 2 1 2025-06-30_09-00 2025-06-30_09-10 2025-06-30_09-20 2025-06-30_09-30 2025-06-30_09-40 2025-06-30_09-50
	upload
	before=$(objects)
	fakegcs_ctl DELETE stats >/dev/null
	run mtc-prune "${LOC[@]}" "${NONE[@]}" --hourly 1
	assert_success
	assert_output --partial '6 backups: 2 kept, 4 to delete'
	assert_line --regexp '^keep +2025-06-30_09-50 +newest valid$'
	assert_equal "$(objects)" "$before"
	assert_equal "$(fakegcs_stat 'requests.DELETE delete')" 0
}

@test "gs://: --delete deletes exactly the reported set and leaves other objects alone" {
	backups 3 2 2025-06-01_12-00 2025-06-02_12-00 2025-06-03_12-00 2025-06-04_12-00 2025-06-05_12-00 2025-06-06_12-00
	mkdir -p "$WORK/up/notes" "$WORK/up/lost+found/x"
	echo hi >"$WORK/up/README"
	echo x >"$WORK/up/2025-06-09_12-00.txt"
	echo n >"$WORK/up/notes/2025-06-01_12-00"
	upload
	before=$(objects)
	reported=$(mtc-prune "${LOC[@]}" "${NONE[@]}" --daily 2 --print-deleted 2>/dev/null | tr '\n' ' ')
	assert_equal "$reported" "$(for d in 1 2 3 4; do printf '%s ' "$URL/2025-06-0$d""_12-00"; done)"
	run --separate-stderr mtc-prune "${LOC[@]}" "${NONE[@]}" --daily 2 --delete --print-deleted
	assert_success
	assert_equal "$(echo "$output" | tr '\n' ' ')" "$reported"
	expected=$(echo "$before" | grep -Ev '^job/2025-06-0[1-4]_12-00/')
	assert_equal "$(objects)" "$expected"
	assert_equal "$(dirs)" '2025-06-05_12-00 2025-06-06_12-00 lost+found notes '
	run --separate-stderr mtc-prune "${LOC[@]}" "${NONE[@]}" --daily 2 --delete --json
	assert_success
	assert_equal "$(echo "$output" | decisions '[d["total"], d["kept"], d["deleted"]]')" '[2, 2, 0]'
}

@test "gs://: backups written by mtc-backup are judged against the config's nodes and pruned" {
	config "$WORK/cfg0" job 0 2
	config "$WORK/cfg1" job 1 2
	for name in 2025-01-01_00-00 2025-01-01_00-30 2025-01-01_01-00; do
		saved_step "$WORK/n0" job 7 0 "$name-0" 20000 >/dev/null
		mtc-backup --dir "$WORK/n0" --config "$WORK/cfg0" --step 7 --to gs://bkt/root --name "$name" >/dev/null
		rm -rf "$WORK/n0"
		[ "$name" = 2025-01-01_01-00 ] && continue
		saved_step "$WORK/n1" job 7 1 "$name-1" 20000 >/dev/null
		mtc-backup --dir "$WORK/n1" --config "$WORK/cfg1" --step 7 --to gs://bkt/root --name "$name" >/dev/null
		rm -rf "$WORK/n1"
	done
	keep=$(objects | grep -v '^job/2025-01-01_00-00/')
	run --separate-stderr mtc-prune -c "$WORK/cfg0" gs://bkt/root "${NONE[@]}" --hourly 1 --json
	assert_success
	echo "$output" | decisions '[(b["backup"], b["action"], b.get("state")) for b in bs]' |
		grep -qxF '[["2025-01-01_00-00", "would-delete", null], ["2025-01-01_00-30", "keep", "valid"], ["2025-01-01_01-00", "keep", "incomplete"]]'
	assert_output --partial '"reason":"node 1 worker 0 has no .meta"'
	run mtc-prune -c "$WORK/cfg0" gs://bkt/root "${NONE[@]}" --hourly 1 --delete
	assert_success
	assert_line --regexp '^deleted +2025-01-01_00-00$'
	assert_line --regexp '^keep +2025-01-01_00-30 +newest valid$'
	assert_equal "$(objects)" "$keep"
}

@test "gs://: the newest valid backup is never deleted" {
	backups 3 1 2020-01-01_00-00
	backups 3 1 --skip 1 2020-01-02_00-00
	backups 3 1 --skip 0 2020-01-03_00-00
	upload
	run mtc-prune "${LOC[@]}" "${NONE[@]}" --daily 1 --delete
	assert_success
	assert_line --regexp '^keep +2020-01-01_00-00 +newest valid$'
	assert_line --regexp '^deleted +2020-01-02_00-00$'
	assert_line --regexp '^keep +2020-01-03_00-00 +daily$'
	assert_equal "$(dirs)" '2020-01-01_00-00 2020-01-03_00-00 '
}

@test "gs://: the backup named in restore.version is never deleted" {
	backups 2 1 2020-01-01_00-00 2020-01-02_00-00 2020-01-03_00-00
	printf '2020-01-02_00-00\n' >"$WORK/up/restore.version"
	upload
	run mtc-prune "${LOC[@]}" "${NONE[@]}" --daily 1 --delete
	assert_success
	assert_line --regexp '^deleted +2020-01-01_00-00$'
	assert_line --regexp '^keep +2020-01-02_00-00 +restore.version$'
	assert_equal "$(dirs)" '2020-01-02_00-00 2020-01-03_00-00 '
	assert_equal "$(objects | grep -c '^job/restore.version$')" 1
}

@test "gs://: a backup still being written is kept until the grace period is over" {
	now=$(date +%s)
	backups 2 1 "u$((now - 120))"
	backups 2 1 --skip 0 "u$((now - 60))"
	mkdir -p "$WORK/up/u$now/0123.data" && echo 1 >"$WORK/up/u$now/0123.data/f"
	upload
	pat='^u(?P<unixtime>\d+)$'
	run mtc-prune -p "$URL" -t "$pat" "${NONE[@]}" --yearly 1 --grace 1h --delete
	assert_success
	assert_line --regexp "^keep +u$((now - 120)) +yearly, newest valid$"
	assert_line --regexp "^keep +u$((now - 60)) +in progress$"
	assert_line --regexp "^keep +u$now +in progress$"
	run mtc-prune -p "$URL" -t "$pat" "${NONE[@]}" --yearly 1 --grace 0 --delete
	assert_success
	assert_line --regexp "^deleted +u$((now - 60))$"
	assert_line --regexp "^deleted +u$now$"
	assert_equal "$(dirs)" "u$((now - 120)) "
}

@test "gs://: a backup's .meta are read in parallel" {
	backups 16 4 2025-01-01_00-00
	upload
	# Each .meta read waits 0.2 s: 64 of them one at a time would take 12.8 s.
	fakegcs_fault '{"kind": "download", "object": "*.meta", "action": "delay", "seconds": 0.2, "times": -1}'
	fakegcs_ctl DELETE stats >/dev/null
	t0=$(date +%s%N)
	run mtc-prune "${LOC[@]}" "${NONE[@]}" --hourly 1
	ms=$(elapsed_ms "$t0")
	assert_success
	assert_line --regexp '^keep +2025-01-01_00-00 +hourly, newest valid$'
	echo "# 64 .meta with 0.2 s each read in $ms ms over $(fakegcs_stat connections) connections" >&3
	[ "$ms" -lt 4000 ]
	[ "$(fakegcs_stat connections)" -ge 8 ]
	# 64 .meta, then the cheap check's 64 .manifest (these synthetic backups have none), and restore.version
	assert_equal "$(fakegcs_stat 'requests.GET download')" 129
}

@test "gs://: deletes run in parallel" {
	backups 1 16 2025-01-01_00-00 2025-01-01_01-00
	upload
	# Each delete waits 0.2 s: the 64 objects of a backup one at a time would take 12.8 s,
	# its 16 .meta one at a time 3.2 s.
	fakegcs_fault '{"kind": "delete", "action": "delay", "seconds": 0.2, "times": -1}'
	fakegcs_ctl DELETE stats >/dev/null
	t0=$(date +%s%N)
	run mtc-prune "${LOC[@]}" "${NONE[@]}" --hourly 1 --delete
	ms=$(elapsed_ms "$t0")
	assert_success
	assert_line --regexp '^deleted +2025-01-01_00-00$'
	echo "# 64 deletes with 0.2 s each took $ms ms over $(fakegcs_stat connections) connections" >&3
	[ "$ms" -lt 2500 ]
	assert_equal "$(fakegcs_stat 'requests.DELETE delete')" 64
	# every request succeeded but the reads of restore.version and of the kept backup's 16
	# .manifest for the size check, which these synthetic backups do not have
	fakegcs_ctl GET stats | fakegcs_json '[(k, n) for k, n in sorted(d["status"].items()) if k >= "300"]' |
		grep -qxF '[["404", 17]]'
	assert_equal "$(dirs)" '2025-01-01_01-00 '
}

@test "gs://: bursts of 503, 429 and lost answers are retried until every delete is done" {
	backups 4 1 2020-01-01_00-00 2020-01-01_01-00 2020-01-01_02-00 2020-01-01_03-00 2020-01-01_04-00
	upload
	expected=$(objects | grep -E '^job/2020-01-01_0[04]-00/')
	# The data deletes run in parallel, so a burst there costs each of them a retry or two;
	# a lost answer is a delete that took effect (its retry, by curl or by mtc, finds nothing).
	fakegcs_fault '[{"kind": "list", "action": "status", "status": 503, "times": 3},
		{"kind": "download", "action": "status", "status": 503, "times": 4},
		{"kind": "delete", "object": "*.meta", "action": "status", "status": 429, "times": 5},
		{"kind": "delete", "object": "*.data/*", "action": "status", "status": 503, "times": 20},
		{"kind": "delete", "object": "*.data/*", "action": "drop-request", "after_bytes": 1, "times": 6}]'
	fakegcs_ctl DELETE stats >/dev/null
	run mtc-prune "${LOC[@]}" "${NONE[@]}" --daily 1 --delete
	assert_success
	assert_output --partial '5 backups: 2 kept, 3 deleted'
	assert_equal "$(objects)" "$expected"
	assert_equal "$(fakegcs_stat faults_fired)" 38
	assert_equal "$(fakegcs_stat status.503)" 27
	assert_equal "$(fakegcs_stat status.429)" 5
}

@test "gs://: a delete whose answer is lost is done, even when curl repeats it on its own" {
	backups 8 2 2020-01-01_00-00 2020-01-01_01-00 2020-01-01_02-00
	upload
	# After the first 20 deletes (connections are reused from then on), 20 deletes take effect
	# and their connection is reset before the answer.
	fakegcs_fault '{"kind": "delete", "action": "drop-request", "after_bytes": 1, "skip": 20, "times": 20}'
	run mtc-prune "${LOC[@]}" "${NONE[@]}" --hourly 1 --delete
	assert_success
	assert_output --partial '3 backups: 1 kept, 2 deleted'
	assert_equal "$(fakegcs_stat faults_fired)" 20
	assert_equal "$(dirs)" '2020-01-01_02-00 '
}

@test "gs://: a delete the server refuses fails that backup, leaves it invalid, and the next run finishes" {
	backups 4 1 2020-01-01_00-00 2020-01-01_01-00 2020-01-01_02-00
	upload
	fakegcs_fault '{"kind": "delete", "object": "*/2020-01-01_01-00/*.data/*", "action": "status", "status": 403, "times": -1}'
	run mtc-prune "${LOC[@]}" "${NONE[@]}" --daily 1 --delete
	assert_failure 1
	assert_output --partial "mtc-prune: cannot delete backup '2020-01-01_01-00': "
	assert_output --partial 'HTTP 403'
	assert_line --regexp '^failed +2020-01-01_01-00$'
	assert_equal "$(metas_of 2020-01-01_01-00)" 0
	run half_valid 4 1
	assert_output ''
	fakegcs_ctl DELETE faults >/dev/null
	run --separate-stderr mtc-prune "${LOC[@]}" "${NONE[@]}" --daily 1 --delete --json
	assert_success
	echo "$output" | decisions '[(b["backup"], b["action"]) for b in bs]' |
		grep -qxF '[["2020-01-01_00-00", "keep"], ["2020-01-01_01-00", "deleted"], ["2020-01-01_02-00", "keep"]]'
	assert_equal "$(dirs)" '2020-01-01_00-00 2020-01-01_02-00 '
}

@test "gs://: a .meta that cannot be read is an error, never a reason to delete" {
	# The newer backup is the newest valid one; the policy alone keeps only the older.
	backups 2 1 2020-01-01_00-00 2020-01-01_12-00
	upload
	before=$(objects)
	fakegcs_fault '{"kind": "download", "object": "*/2020-01-01_12-00/job-s1-n1-w0.meta", "action": "status", "status": 403, "times": -1}'
	run mtc-prune "${LOC[@]}" "${NONE[@]}" --daily 1 --delete
	assert_failure 1
	assert_output --partial "mtc-prune: cannot read backup '2020-01-01_12-00': "
	assert_equal "$(objects)" "$before"
}

@test "gs://: kill -9 during --delete never leaves a backup that reads as valid with data gone" {
	names=()
	for h in 00 01 02 03 04 05 06 07 08 09; do names+=("2020-01-01_$h-00"); done
	backups 8 1 "${names[@]}"
	upload
	prune() { mtc-prune "${LOC[@]}" "${NONE[@]}" --daily 1 --delete >/dev/null 2>&1 3>&- & pid=$!; }
	stop() { kill -9 "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
	wait_until() { local i; for ((i = 0; i < 200; i++)); do "$@" && return 0; sleep 0.05; done; return 1; }
	no_meta() { [ "$(metas_of "$1")" = 0 ]; }
	no_first_meta() { ! objects | grep -q "^job/$1/job-s1-n0-w0\.meta$"; }

	# Stopped between the .meta and the data of 02-00: no .meta left, every data object there.
	fakegcs_fault '{"kind": "delete", "object": "*/2020-01-01_02-00/*.data/*", "action": "delay", "seconds": 30, "times": -1}'
	prune
	wait_until no_meta 2020-01-01_02-00
	stop
	assert_equal "$(objects | grep -c '^job/2020-01-01_02-00/.*\.data/')" 24
	assert_equal "$(dirs)" "${names[*]:0:1} ${names[*]:2} "
	run half_valid 8 1
	assert_output ''

	# Stopped after node 0's .meta of 04-00 and before the others: it reads as incomplete.
	fakegcs_ctl DELETE faults >/dev/null
	fakegcs_fault '{"kind": "delete", "object": "*/2020-01-01_04-00/job-s1-n[1-7]-w0.meta", "action": "delay", "seconds": 30, "times": -1}'
	prune
	wait_until no_first_meta 2020-01-01_04-00
	stop
	assert_equal "$(metas_of 2020-01-01_04-00)" 7
	run half_valid 8 1
	assert_output ''

	# Stopped at whatever point a timer hits, every delete slowed down.
	fakegcs_ctl DELETE faults >/dev/null
	fakegcs_fault '{"kind": "delete", "action": "delay", "seconds": 0.02, "times": -1}'
	for delay in 0.1 0.25 0.4; do
		prune
		sleep "$delay"
		stop
		run half_valid 8 1
		assert_output ''
	done

	fakegcs_ctl DELETE faults >/dev/null
	run mtc-prune "${LOC[@]}" "${NONE[@]}" --daily 1 --delete
	assert_success
	assert_equal "$(dirs)" '2020-01-01_00-00 2020-01-01_09-00 '
	run half_valid 8 1
	assert_output ''
}
