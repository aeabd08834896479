#!/usr/bin/env bats
# The shipped deployment files, run as they are: the JobSet's sidecar command
# line (contrib/kubernetes/jobset.yaml, read with a YAML parser) runs as one
# process per pod, with only what a cluster would provide mapped to this
# machine: the pods' DNS names to loopback ports, the node's RAM disk to a
# dir per node, the Secret's file, the bucket to a dir. Pods come up, the
# training stand-in saves steps, then the whole JobSet restarts (what its
# failurePolicy does) with the ranks on other nodes: the newest step comes
# back from RAM, not from the backup.
load helpers
load cluster/cluster

JOBSET=$BATS_TEST_DIRNAME/../contrib/kubernetes/jobset.yaml

# What the JobSet says: the pod count, and the sidecar's command and args, one a line.
jobset() {
	python3 - "$JOBSET" "$1" <<'PY'
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
job = d["spec"]["replicatedJobs"][0]["template"]["spec"]
pod = job["template"]["spec"]
side = [c for c in pod["initContainers"] if c.get("restartPolicy") == "Always"][0]
if sys.argv[2] == "pods":
    print(job["parallelism"])
elif sys.argv[2] == "probes":
    print(side["livenessProbe"]["httpGet"]["path"], side["readinessProbe"]["httpGet"]["path"])
else:
    print("\n".join(side["command"] + side["args"]))
PY
}

setup() {
	N=$(jobset pods)
	cluster_init "$N"
	echo "a-job-secret-of-the-test-$$" >"$CL_ROOT/token"
	chmod 600 "$CL_ROOT/token"
}

teardown() { cluster_stop; }

# The VM unit's ExecStart, one word a line, expanded from its env file as systemd does.
unit() {
	python3 - "$BATS_TEST_DIRNAME/../contrib/systemd" <<'PY'
import os, re, shlex, sys
d = sys.argv[1]
env = {"RUNTIME_DIRECTORY": "/run/mtc", "CREDENTIALS_DIRECTORY": "/run/credentials/mtc-node.service"}
for line in open(os.path.join(d, "mtc-node.env")):
    line = line.strip()
    if line and not line.startswith("#"):
        k, v = line.split("=", 1)
        env[k] = v
cmd = [l.split("=", 1)[1] for l in open(os.path.join(d, "mtc-node.service")) if l.startswith("ExecStart=")][0]
print("\n".join(re.sub(r"\$\{(\w+)\}", lambda m: env[m.group(1)], w) for w in shlex.split(cmd)))
PY
}

# node_start SOURCE RANK NODE: the service of RANK on NODE, its command line
# from SOURCE (jobset command, or unit), with what a cluster provides mapped
# to this machine: addresses to loopback ports, the RAM disk to NODE's dir,
# the token, the bucket and the state dir to the test's.
node_start() {
	local source=$1 r=$2 node=$3 a args=()
	while IFS= read -r a; do
		case $a in
		*/mtc-node | mtc-node) a=$MTC_TESTS/../contrib/mtc-node ;;
		--dir=*) a=--dir=$CL_ROOT/node$node ;;
		--listen=*) a=--listen=127.0.0.1:${CL_PORTS[$r]} ;;
		--coordinator-url=*) a=--coordinator-url=$CL_COORD ;;
		--peer-url-template=* | --peers-file=*) a=--peers-file=$CL_ROOT/peers ;;
		--backup=gs://*) a=--backup=$CL_BACKUP ;;
		--peer-token-file=*) a=--peer-token-file=$CL_ROOT/token ;;
		--state-dir=*) a=--state-dir=$CL_ROOT/state$r ;;
		--*) ;;
		*) fail "'$a': a word of the command line this test does not map" ;;
		esac
		args+=("$a")
	done < <($source)
	[ "${args[0]}" = "$MTC_TESTS/../contrib/mtc-node" ]
	# the test's clock: faster heartbeats, syncs and quiet time than a cluster's defaults
	"${args[@]}" --heartbeat=0.5 --heartbeat-timeout=3 --round-timeout=60 --sync-interval=0.5 \
		--quiet-time=0.5 --verbose >>"$CL_ROOT/node$r.log" 2>&1 &
	echo $! >"$CL_ROOT/node$r.pid"
	CL_NODE_OF[$r]=$node
}

pod_start() { node_start "jobset command" "$@"; }

# Three steps saved, replicated and backed up; every node restarted with its
# rank on node (rank + shift) mod N; the newest step comes back from RAM.
save_restart_restore() {
	local start=$1 shift_by=$2
	run trainers orbax --steps 3
	assert_success
	[ "$(restored_steps)" = 0 ]
	wait_for "step 3 replicated" 60 replicated 3
	wait_for "a backup" 60 has_backup
	wait_for "the metrics of a node in steady state" 20 node_metrics_ok 1
	metric 0 'mtc_coord_rounds_total{round="sync",result="done"}' | awk '{ exit !($1 > 0) }'
	nodes_kill
	for ((r = 0; r < N; r++)); do $start "$r" $(((r + shift_by) % N)); done
	run trainers orbax --steps 0
	assert_success
	[ "$(restored_steps)" = 3 ]
	for ((r = 0; r < N; r++)); do
		grep -q '"source":"cluster"' "$CL_ROOT/state$r/restore.json"
	done
}

metric() { # metric RANK NAME: its value in the daemon's /metrics, read without the token
	curl -s --max-time 2 "http://127.0.0.1:${CL_PORTS[$1]}/metrics" | awk -v n="$2" '$1 == n { print $2 }'
}

node_metrics_ok() {
	[ "$(metric "$1" mtc_node_committed_step)" = 3 ] && [ "$(metric "$1" mtc_node_replicated_step)" = 3 ] &&
		[ "$(metric "$1" mtc_node_backup_step)" -ge 1 ] 2>/dev/null &&
		[ -n "$(metric "$1" mtc_node_backup_age_seconds)" ] &&
		[ "$(metric "$1" mtc_local_dir_free_bytes)" != "" ]
}

probe() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:${CL_PORTS[$1]}$2"; }

@test "the JobSet's sidecar command line runs: probes before the handshake, steady state, a JobSet restart with ranks on other nodes restores from RAM" {
	read -r live ready < <(jobset probes)
	for ((r = 0; r < N; r++)); do pod_start "$r" "$r"; done
	wait_for "every daemon answers $live" 20 bash -c "$(declare -f probe); $(declare -p CL_PORTS); for r in \$(seq 0 $((N - 1))); do [ \"\$(probe \$r $live)\" = 200 ] || exit 1; done"
	[ "$(probe 1 "$ready")" = 503 ] # no training job yet
	[ "$(probe 1 /metrics)" = 200 ] # scraped without the token
	save_restart_restore pod_start 1
	[ "$(probe 1 "$ready")" = 200 ]
}

@test "the VM unit's ExecStart, with its env file, runs the same service: a restart of every node restores from RAM" {
	unit_start() { node_start unit "$@"; }
	for ((r = 0; r < N; r++)); do unit_start "$r" "$r"; done
	save_restart_restore unit_start 0
}

@test "mtc-node takes --option=value and --option value alike, and says its version" {
	run "$MTC_TESTS/../contrib/mtc-node" --version
	assert_success
	assert_output --regexp '^mtc-node \(mtc\) [0-9]+\.[0-9]+\.[0-9]+$'
	run "$MTC_TESTS/../contrib/mtc-node" --dir="$CL_ROOT/node0" --listen 127.0.0.1:0
	assert_failure 2
	assert_output --partial "--coordinator-url are required"
	run "$MTC_TESTS/../contrib/mtc-node" --log-format=yaml --dir=x --listen=y --coordinator-url=z --peers-file=p
	assert_failure 2
	assert_output --partial "--log-format is text or json"
}

@test "the Containerfile's final stage installs every library the programs link" {
	command -v dpkg >/dev/null || skip "no dpkg to map libraries to packages"
	final=$(sed -n '/^FROM .*slim/,$p' "$MTC_TESTS/../contrib/Containerfile")
	for lib in $(for p in "$MTC_BIN"/mtc-*; do readelf -d "$p" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; done | sort -u); do
		case $lib in libasan* | libubsan*) continue ;; esac # an ASan build's runtimes
		path=$(ldconfig -p | awk -v l="$lib" '$1 == l { print $NF; exit }')
		[ -n "$path" ] || continue
		pkg=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | cut -d: -f1 | head -1)
		case $pkg in libc6 | libgcc-s1 | "") continue ;; esac
		echo "$final" | grep -qw -- "$pkg" || fail "'$lib' ($pkg) is not installed by the Containerfile"
	done
	echo "$final" | grep -q '^USER 10001:10001$' # numeric: Kubernetes checks runAsNonRoot against it
	grep -q 'make deps && make' "$MTC_TESTS/../contrib/Containerfile"
}

@test "every option mtc-node --help lists is in mtc-node(8)" {
	run "$MTC_TESTS/../contrib/mtc-node" --help
	assert_success
	page=$(sed 's/\\-/-/g' "$MTC_TESTS/../man/mtc-node.8")
	for opt in $(echo "$output" | grep -o -- '--[a-z-]*' | sort -u); do
		[[ "$page" == *"$opt"* ]] || fail "mtc-node(8) lacks $opt"
	done
}
