#!/usr/bin/env bats
# The shipped deployment files, run as they are: the JobSet's sidecar command
# line (contrib/kubernetes/jobset.yaml, read with a YAML parser) runs as one
# process per pod, with only what a cluster would provide mapped to this
# machine: the pods' DNS names to loopback ports, the node's RAM disk to a
# dir per node, the Secret's file, the bucket to a dir. Pods come up, the
# training stand-in saves steps, then the whole JobSet restarts (what its
# failurePolicy does) with the pods on other nodes: the rank server gives
# each pod the rank its node's RAM holds, and the newest step comes back
# from RAM, nothing fetched, not from the backup.
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
# the token, the bucket and the state dir to the test's. A JobSet's pod has
# its completion index in JOB_COMPLETION_INDEX, as the Job controller sets it.
node_start() {
	local source=$1 r=$2 node=$3 a args=() envs=(env)
	[ "$source" != "jobset command" ] || envs+=(JOB_COMPLETION_INDEX="$r")
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
	"${envs[@]}" "${args[@]}" --heartbeat=0.5 --heartbeat-timeout=3 --round-timeout=60 --sync-interval=0.5 \
		--quiet-time=0.5 --verbose >>"$CL_ROOT/node$r.log" 2>&1 &
	echo $! >"$CL_ROOT/node$r.pid"
	CL_NODE_OF[$r]=$node
}

pod_start() { node_start "jobset command" "$@"; }

# Three steps saved, replicated and backed up; every node restarted with pod
# r on node (r + shift) mod N; the newest step comes back from RAM, nothing
# fetched. With the rank server (CL_RANKSERVER) pod r takes the rank its
# node holds, (r + shift) mod N; without it, shift is 0.
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
		assert_equal "$(sed -n 's/.*"fetched":\([0-9]*\).*/\1/p' "$CL_ROOT/state$r/restore.json")" 0
		[ -z "${CL_RANKSERVER:-}" ] || grep -q "process id $(((r + shift_by) % N))," "$CL_ROOT/trainer$r.err"
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
	CL_RANKSERVER=1 # the trainers, as MaxText: their ranks from jax-init-info.txt
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

# Each container of the JobSet's pod as kubelet starts it, one JSON object a
# line in start order (init containers, then native sidecars, then the
# others): its role, who it runs as (the container's securityContext, else
# the pod's, else the image's USER: contrib/Containerfile's for the mtc
# image, root for the trainer's), its groups (runAsGroup, then fsGroup), its
# capabilities (a root container's defaults, less drop, plus add), its env,
# mounts and command line; and, first, the volumes with their modes.
pod_spec() {
	python3 - "$1" "$MTC_TESTS/../contrib/Containerfile" <<'PY'
import json, re, sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
pod = d["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
user = re.search(r"^USER (\S+)", open(sys.argv[2]).read(), re.M).group(1)
if not re.fullmatch(r"\d+(:\d+)?", user):  # a name: the uid useradd gave it
    uid = re.search(r"useradd .*--uid (\d+)", open(sys.argv[2]).read()).group(1)
    user = f"{uid}:{uid}"
image_uid, _, image_gid = user.partition(":")
psc = pod.get("securityContext", {})
DEFAULT_CAPS = "CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID SETPCAP NET_BIND_SERVICE NET_RAW SYS_CHROOT MKNOD AUDIT_WRITE SETFCAP".split()
print(json.dumps({"volumes": pod["volumes"], "fsGroup": psc.get("fsGroup")}))
inits = pod.get("initContainers", [])
order = [(c, "init") for c in inits if c.get("restartPolicy") != "Always"] + \
    [(c, "sidecar") for c in inits if c.get("restartPolicy") == "Always"] + \
    [(c, "main") for c in pod["containers"]]
def mounted(c, word):  # a path under a mount, in any word: @vol:NAME@ and the rest of the path
    for m in c.get("volumeMounts", []):
        word = re.sub(r"(?<![\w/.-])" + re.escape(m["mountPath"]) + r"(?=/|\s|$|\W)", "@vol:" + m["name"] + "@", word)
    return word
for c, role in order:
    sc = c.get("securityContext", {})
    mtc_image = c["image"].startswith("example.com/mtc")
    uid = sc.get("runAsUser", psc.get("runAsUser", int(image_uid) if mtc_image else 0))
    gid = sc.get("runAsGroup", psc.get("runAsGroup", int(image_gid or image_uid) if mtc_image else 0))
    groups = [g for g in [psc.get("fsGroup")] + psc.get("supplementalGroups", []) if g is not None]
    caps = []
    if uid == 0:
        drop = sc.get("capabilities", {}).get("drop", [])
        caps = [] if "ALL" in drop else [x for x in DEFAULT_CAPS if x not in drop]
        caps += sc.get("capabilities", {}).get("add", [])
    env = {e["name"]: e.get("value", "$" + e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath", "completion-index")) for e in c.get("env", [])}
    print(json.dumps({"name": c["name"], "role": role, "uid": uid, "gid": gid, "groups": groups,
                      "caps": caps, "nnp": sc.get("allowPrivilegeEscalation") is False, "env": env,
                      "argv": [mounted(c, w) for w in c.get("command", []) + c.get("args", [])]}))
PY
}

# kubelet_volumes POD R NODE: pod R's volumes on the test's machine as
# kubelet makes them: the hostPath dir (DirectoryOrCreate: root's, 0755) is
# node NODE's dir, shared by the pods on that node; a Secret's files are
# root's with the volume's defaultMode, and with fsGroup their group is it
# and they are group-readable; an emptyDir is 0777, with fsGroup the
# group's and setgid. Prints "MOUNTPATH HOSTPATH" for each mount.
kubelet_volumes() {
	local pod=$1 r=$2 node=$3 fsg vols name kind mode
	fsg=$(echo "$pod" | head -1 | jq -r '.fsGroup // empty')
	while IFS=$'\t' read -r name kind mode; do
		case $kind in
		hostPath)
			[ -d "$CL_ROOT/node$node" ] || install -d -o 0 -g 0 -m 0755 "$CL_ROOT/node$node"
			echo "$name $CL_ROOT/node$node" ;;
		secret)
			install -d -o 0 -g 0 -m 0755 "$CL_ROOT/secret$r"
			install -o 0 -g 0 -m "$(printf %o "$mode")" "$CL_ROOT/token" "$CL_ROOT/secret$r/token"
			[ -z "$fsg" ] || { chgrp "$fsg" "$CL_ROOT/secret$r/token"; chmod g+r "$CL_ROOT/secret$r/token"; }
			echo "$name $CL_ROOT/secret$r" ;;
		emptyDir)
			rm -rf "$CL_ROOT/state$r"
			install -d -o 0 -g 0 -m 0777 "$CL_ROOT/state$r"
			[ -z "$fsg" ] || { chgrp "$fsg" "$CL_ROOT/state$r"; chmod g+s "$CL_ROOT/state$r"; }
			echo "$name $CL_ROOT/state$r" ;;
		*) fail "volume '$name': a kind ($kind) this test does not make" ;;
		esac
	done < <(echo "$pod" | head -1 | jq -r '.volumes[] | [.name, (keys - ["name"])[0], (.secret.defaultMode // 420)] | @tsv')
}

# as_container JSON CMD...: sets CTR to CMD as the container would run it:
# its uid, gid and groups, its capabilities (none unless root), no new
# privileges when it allows no escalation, its env and the image's PATH only.
as_container() {
	local c=$1 caps kv
	shift
	caps=$(echo "$c" | jq -r '[.caps[] | "+" + ascii_downcase] | join(",")')
	local groups=(--clear-groups)
	[ "$(echo "$c" | jq '.groups | length')" = 0 ] || groups=(--groups "$(echo "$c" | jq -r '.groups | join(",")')")
	local nnp=()
	[ "$(echo "$c" | jq .nnp)" = true ] && nnp=(--no-new-privs)
	local env=()
	while IFS= read -r kv; do env+=("$kv"); done < <(echo "$c" | jq -r '.env | to_entries[] | "\(.key)=\(.value)"')
	CTR=(env -i PATH="$CL_ROOT/image/bin:/usr/bin:/bin" HOME=/ "${env[@]}"
		setpriv --reuid "$(echo "$c" | jq .uid)" --regid "$(echo "$c" | jq .gid)" "${groups[@]}"
		--inh-caps=-all --bounding-set="-all${caps:+,$caps}" "${nnp[@]}" "$@")
}

# kube_pod R NODE: pod R on node NODE: its volumes, its init containers run
# to completion, its sidecar (mtc-node, with the cluster's addresses mapped
# to this machine as node_start does) and its trainer started.
kube_pod() {
	local r=$1 node=$2 pod c role words a mounts args
	pod=$(pod_spec "$JOBSET")
	mounts=$(kubelet_volumes "$pod" "$r" "$node")
	while IFS= read -r c; do
		# a JobSet of one Job: its index 0, the pod's completion index r
		c=$(echo "$c" | jq -c --arg r "$r" '.env |= map_values(if . == "$completion-index" then $r
			elif . == "$metadata.annotations['"'"'jobset.sigs.k8s.io/job-index'"'"']" then "0"
			elif . == "$metadata.annotations['"'"'jobset.sigs.k8s.io/replicatedjob-replicas'"'"']" then "1" else . end) |
			.env.JOB_COMPLETION_INDEX = $r')
		role=$(echo "$c" | jq -r .role)
		mapfile -t words < <(echo "$c" | jq -r '.argv[]')
		args=()
		for a in "${words[@]}"; do
			while read -r vol host; do a=${a//@vol:$vol@/$host}; done <<<"$mounts"
			case $role:$a in
			main:python3) continue ;;
			main:train.py) a=mtc-trainer ;;
			main:--local-dir=*) args+=(--dir "${a#*=}"); continue ;;
			main:--nodes=*) args+=(--nodes "${a#*=}"); continue ;;
			sidecar:--listen=*) a=--listen=127.0.0.1:${CL_PORTS[$r]} ;;
			sidecar:--coordinator-url=*) a=--coordinator-url=$CL_COORD ;;
			sidecar:--peer-url-template=*) a=--peers-file=$CL_ROOT/peers ;;
			sidecar:--backup=gs://*) a=--backup=$CL_BACKUP ;;
			esac
			args+=("$a")
		done
		case $role in
		init)
			as_container "$c" "${args[@]}"
			"${CTR[@]}" >>"$CL_ROOT/node$r.log" 2>&1 || return 1 ;;
		sidecar)
			as_container "$c" "${args[@]}" --heartbeat=0.5 --heartbeat-timeout=3 --round-timeout=60 \
				--sync-interval=0.5 --quiet-time=0.5 --verbose
			"${CTR[@]}" >>"$CL_ROOT/node$r.log" 2>&1 &
			echo $! >"$CL_ROOT/node$r.pid" ;;
		main)
			# as Orbax's default: its rank, and its peers, from jax-init-info.txt
			as_container "$c" "${args[@]}" --style orbax --job "$CL_JOB" --mtc-process-ids \
				--tick 0.1 --restore-timeout 900 --shard-bytes 65536 --save-every 0.3 --steps 3
			"${CTR[@]}" >"$CL_ROOT/trainer$r.out" 2>"$CL_ROOT/trainer$r.err" &
			echo $! >"$CL_ROOT/trainer$r.pid" ;;
		esac
	done < <(echo "$pod" | tail -n +2)
	CL_NODE_OF[$r]=$node
}

@test "the JobSet's pods as kubelet runs them: the image's user, a root-owned hostPath dir, root's Secret files; mtc and the trainer reach the steady state; promtool passes both /metrics" {
	# what runs as the shipped image's user: the programs, where that user may read them
	chmod 0755 "$CL_ROOT"
	mkdir -p "$CL_ROOT/image/bin"
	cp "$MTC_BIN"/mtc-* "$MTC_TESTS/../contrib/mtc-node" "$MTC_TESTS/standin/mtc-trainer" "$CL_ROOT/image/bin/"
	uid=$(pod_spec "$JOBSET" | jq -r 'select(.role == "sidecar") | .uid')
	chown "$uid" "$CL_BACKUP" # the bucket: the pods' service account may write it
	rm -rf "$CL_ROOT"/node* # the node's RAM disk has no such dir yet
	for ((r = 0; r < N; r++)); do kube_pod "$r" "$r"; done
	for ((r = 0; r < N; r++)); do
		wait "$(cat "$CL_ROOT/trainer$r.pid")" || fail "trainer $r: $(cat "$CL_ROOT/trainer$r.err")"
		grep -q "process id $r," "$CL_ROOT/trainer$r.err" # a fresh job keeps its pod indexes
	done
	[ "$(restored_steps)" = 0 ]
	wait_for "step 3 replicated" 60 replicated 3
	wait_for "a backup" 60 has_backup
	wait_for "the metrics of a node in steady state" 20 node_metrics_ok 1
	[ "$(probe 1 /readyz)" = 200 ]
	for ((r = 0; r < N; r++)); do
		[ "$(stat -c %u "$CL_ROOT/node$r")" = "$uid" ]
		[ -z "$(find "$CL_ROOT/node$r" ! -uid "$uid")" ] || fail "node $r: files not the pod user's: $(find "$CL_ROOT/node$r" ! -uid "$uid")"
		! grep -i 'permission denied' "$CL_ROOT/node$r.log"
	done
	# what Prometheus scrapes, checked by its own linter: rank 0's daemon is also the coordinator
	command -v promtool >/dev/null || skip "no promtool (Debian's prometheus) to check /metrics with"
	for r in 0 1; do
		curl -sf --max-time 5 "http://127.0.0.1:${CL_PORTS[$r]}/metrics" >"$CL_ROOT/metrics$r"
		[ "$r" = 1 ] || grep -q '^mtc_coord_' "$CL_ROOT/metrics$r"
		run promtool check metrics <"$CL_ROOT/metrics$r"
		assert_success
	done
}

# need_schemas: the wheels `make schemas` downloads, or a skip saying why.
need_schemas() {
	SCHEMAS=${MTC_SCHEMAS:-$MTC_TESTS/../build/schemas}
	[ -e "$SCHEMAS/.complete" ] || skip "the API schemas are not downloaded: make schemas (needs PyPI)"
}

@test "the JobSets are valid against JobSet v1alpha2's schema and their Kubernetes minimum's (1.29, and 1.27 for the pre-1.29 form), which refuses the native sidecar" {
	need_schemas
	pre=$MTC_TESTS/../contrib/kubernetes/jobset-pre-1.29.yaml
	k129=$(echo "$SCHEMAS"/kubernetes-29.*.whl) k127=$(echo "$SCHEMAS"/kubernetes-27.*.whl)
	jobset=$(echo "$SCHEMAS"/kubeflow_trainer_api-*.whl)
	for f in "$JOBSET" "$pre"; do
		run python3 "$MTC_TESTS/k8s_schema.py" "$jobset" JobsetV1alpha2JobSet "$f"
		assert_success
	done
	run python3 "$MTC_TESTS/k8s_schema.py" "$k129" V1JobTemplateSpec "$JOBSET" spec.replicatedJobs.0.template
	assert_success
	run python3 "$MTC_TESTS/k8s_schema.py" "$k127" V1JobTemplateSpec "$pre" spec.replicatedJobs.0.template
	assert_success
	# the checker refuses what those versions refuse: 1.27 has no native sidecar
	run python3 "$MTC_TESTS/k8s_schema.py" "$k127" V1JobTemplateSpec "$JOBSET" spec.replicatedJobs.0.template
	assert_failure 1
	assert_output --partial "initContainers[1].restartPolicy: unknown field (V1Container)"
	sed 's/parallelism: 4/parallelism: "4"/; s/  failurePolicy:/  failurePolicey:/' "$JOBSET" >"$CL_ROOT/bad.yaml"
	run python3 "$MTC_TESTS/k8s_schema.py" "$jobset" JobsetV1alpha2JobSet "$CL_ROOT/bad.yaml"
	assert_failure 1
	assert_output --partial "spec.failurePolicey: unknown field (JobsetV1alpha2JobSetSpec)"
	assert_output --partial "parallelism: '4' is not a int"
}

@test "the pre-1.29 JobSet runs the same mtc as a plain container, and its trainer stops it when it ends" {
	python3 - "$JOBSET" "$MTC_TESTS/../contrib/kubernetes/jobset-pre-1.29.yaml" <<'PY'
import sys, yaml
def pod(f):
    return yaml.safe_load(open(f))["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
new, old = pod(sys.argv[1]), pod(sys.argv[2])
side = [c for c in new["initContainers"] if c.get("restartPolicy") == "Always"][0]
plain = [c for c in old["containers"] if c["name"] == side["name"]][0]
assert {k: v for k, v in side.items() if k != "restartPolicy"} == plain, "the mtc containers differ"
assert [c for c in new["initContainers"] if c is not side] == old["initContainers"]
assert new["volumes"] == old["volumes"] and new["securityContext"] == old["securityContext"]
assert old["shareProcessNamespace"] is True
PY
	# the trainer's wrapper, run as written: the training command's status, and mtc-node stopped
	wrapper=$(python3 -c 'import sys, yaml
p = yaml.safe_load(open(sys.argv[1]))["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
c = [c for c in p["containers"] if c["name"] == "trainer"][0]
print(c["command"][2])' "$MTC_TESTS/../contrib/kubernetes/jobset-pre-1.29.yaml")
	mkdir -p "$CL_ROOT/bin"
	printf '#!/bin/sh\nfor i in $(seq 300); do sleep 0.1; done\n' >"$CL_ROOT/bin/mtc-node"
	printf '#!/bin/sh\n[ "$1" = train.py ] && exit 3\n' >"$CL_ROOT/bin/python3"
	chmod +x "$CL_ROOT/bin/mtc-node" "$CL_ROOT/bin/python3"
	# the pod's one process namespace, where pkill finds the pod's mtc-node only
	PATH=$CL_ROOT/bin:$PATH run timeout 20 unshare --pid --fork --mount-proc bash -c '
		mtc-node & side=$!
		sh -c "$1" train --local-dir=/local; echo "trainer $?"
		wait $side; echo "mtc-node $?"' - "$wrapper"
	assert_success
	assert_line "trainer 3"
	assert_line "mtc-node 143"
}

@test "both units pass systemd-analyze verify, and security rates each 4.0 or less" {
	command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
	# the units as installed: their programs where ExecStart looks for them
	mkdir -p "$CL_ROOT/units" "$CL_ROOT/bin"
	ln -s "$MTC_TESTS/../contrib/mtc-node" "$CL_ROOT/bin/mtc-node"
	ln -s "$MTC_BIN/mtc-prune" "$CL_ROOT/bin/mtc-prune"
	for u in systemd/mtc-node.service mtc-prune.service mtc-prune.timer; do
		sed "s|/usr/local/bin/|$CL_ROOT/bin/|g" "$MTC_TESTS/../contrib/$u" >"$CL_ROOT/units/${u#*/}"
	done
	for m in "$MTC_TESTS"/../man/*.[0-9]; do # Documentation=: the pages, where man finds them
		mkdir -p "$CL_ROOT/man/man${m##*.}"
		ln -s "$m" "$CL_ROOT/man/man${m##*.}/"
	done
	MANPATH=$CL_ROOT/man run systemd-analyze verify "$CL_ROOT"/units/*
	assert_success
	assert_output ""
	for u in mtc-node.service mtc-prune.service; do
		run systemd-analyze security --offline=true --threshold=40 "$CL_ROOT/units/$u"
		assert_success
		score=$(echo "$output" | sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p')
		echo "# $u: $score" >&3
		awk -v s="$score" 'BEGIN { exit !(s != "" && s <= 4.0) }' || fail "$u: exposure $score"
	done
}

@test "sysusers and tmpfiles make the user and the RAM dir that the service and a trainer in its group share, whatever the trainer's umask" {
	command -v systemd-sysusers >/dev/null && command -v systemd-tmpfiles >/dev/null || skip "no systemd-sysusers or systemd-tmpfiles"
	root=$CL_ROOT/root
	mkdir -p "$root/etc" "$root/dev/shm"
	chmod 0755 "$CL_ROOT" "$root" "$root/dev" "$root/dev/shm"
	systemd-sysusers --root="$root" "$MTC_TESTS/../contrib/systemd/mtc.sysusers"
	uid=$(awk -F: '$1 == "mtc" { print $3 }' "$root/etc/passwd")
	gid=$(awk -F: '$1 == "mtc" { print $3 }' "$root/etc/group")
	[ -n "$uid" ] && [ -n "$gid" ]
	# tmpfiles resolves the ACL's names with the machine's users: the image's in a mount namespace
	unshare --mount sh -c 'mount --bind "$1/etc/passwd" /etc/passwd && mount --bind "$1/etc/group" /etc/group &&
		systemd-tmpfiles --root="$1" --create "$2"' - "$root" "$MTC_TESTS/../contrib/systemd/mtc.tmpfiles"
	shm=$root/dev/shm/mtc
	[ "$(stat -c '%u %g %a' "$shm")" = "$uid $gid 2770" ]
	trainer() { setpriv --reuid 20001 --regid 20001 --groups "$gid" sh -c "umask 022; $1"; }
	service() { setpriv --reuid "$uid" --regid "$gid" --clear-groups sh -c "umask 0007; $1"; }
	trainer "mkdir '$shm/step-1' && echo x >'$shm/step-1/shard' && echo y >'$shm/replicator.yaml'"
	service "echo z >>'$shm/step-1/shard' && mkdir '$shm/step-1.restore' && echo r >'$shm/step-1.restore/f'"
	trainer "rm -r '$shm/step-1.restore'"
	service "rm -r '$shm/step-1' '$shm/replicator.yaml'"
	[ -z "$(ls -A "$shm")" ]
	setpriv --reuid 20002 --regid 20002 --clear-groups ls "$shm" 2>/dev/null && fail "a user outside the group reads the RAM dir"
	true
}

@test "the container build context leaves out the build output and git's store" {
	for f in .containerignore .dockerignore; do
		grep -qx '\.git' "$MTC_TESTS/../$f"
		grep -qx 'build' "$MTC_TESTS/../$f"
	done
	cmp "$MTC_TESTS/../.containerignore" "$MTC_TESTS/../.dockerignore"
}

@test "a JobSet of 2 Jobs: each pod's index is its Job's index x pods per Job + its completion index, and its peers are its pods' URLs" {
	local port=${CL_PORTS[0]} j c r a args
	for ((j = 0; j < 2; j++)); do
		for ((c = 0; c < 2; c++)); do
			r=$((j * 2 + c))
			args=()
			while IFS= read -r a; do
				case $a in
				*/mtc-node | mtc-node) a=$MTC_TESTS/../contrib/mtc-node ;;
				--dir=*) a=--dir=$CL_ROOT/node$r ;;
				--listen=*) a=--listen=127.0.$j.1$c:$port ;; # each pod a host of its own
				--coordinator-url=*) a=--coordinator-url=http://127.0.0.10:$port ;;
				--peer-url-template=*) a=--peer-url-template=http://127.0.{job}.1{pod}:$port ;;
				--backup=gs://*) a=--backup=$CL_BACKUP ;;
				--peer-token-file=*) a=--peer-token-file=$CL_ROOT/token ;;
				--state-dir=*) a=--state-dir=$CL_ROOT/state$r ;;
				esac
				args+=("$a")
			done < <(jobset command)
			# what the Job controller and JobSet's annotations give a pod of Job j, through the manifest's env
			env JOB_COMPLETION_INDEX=$c MTC_JOB_INDEX=$j MTC_JOB_REPLICAS=2 "${args[@]}" \
				--heartbeat=0.5 --round-timeout=60 --verbose >>"$CL_ROOT/node$r.log" 2>&1 &
			echo $! >"$CL_ROOT/node$r.pid"
		done
	done
	[ "$(pod_spec "$JOBSET" | jq -r 'select(.role == "sidecar") | .env.MTC_JOB_INDEX')" = "\$metadata.annotations['jobset.sigs.k8s.io/job-index']" ]
	[ "$(pod_spec "$JOBSET" | jq -r 'select(.role == "sidecar") | .env.MTC_JOB_REPLICAS')" = "\$metadata.annotations['jobset.sigs.k8s.io/replicatedjob-replicas']" ]
	CL_RANKSERVER=1 run trainers orbax --steps 1
	assert_success
	for ((r = 0; r < 4; r++)); do
		grep -q "process id $r," "$CL_ROOT/trainer$r.err" # a fresh job: the global pod index
		assert_equal "$(cat "$CL_ROOT/state$r/peers")" "$(printf 'http://127.0.%d.1%d:%s\n' 0 0 "$port" 0 1 "$port" 1 0 "$port" 1 1 "$port")"
	done
}

@test "mtc-node refuses a JobSet env it cannot make an index of, and '{job}' without --nodes" {
	m=$MTC_TESTS/../contrib/mtc-node
	base=(--dir "$CL_ROOT/node0" --listen 127.0.0.1:1 --coordinator-url http://127.0.0.1:1)
	run env JOB_COMPLETION_INDEX=0 MTC_JOB_INDEX=1 MTC_JOB_REPLICAS=3 "$m" "${base[@]}" --peers-file "$CL_ROOT/peers" --nodes 4
	assert_failure 2
	assert_output --partial "3 Jobs do not divide --nodes 4"
	run env JOB_COMPLETION_INDEX=2 MTC_JOB_INDEX=1 MTC_JOB_REPLICAS=2 "$m" "${base[@]}" --peers-file "$CL_ROOT/peers" --nodes 4
	assert_failure 2
	assert_output --partial "is not below the 2 pods of a Job"
	run "$m" "${base[@]}" --peer-url-template 'http://h-{job}-{pod}:1'
	assert_failure 2
	assert_output --partial "need --nodes"
}
