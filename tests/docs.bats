#!/usr/bin/env bats
# The documents against the programs.
#
# Options: every long option a program's --help prints (for mtc-replicate,
# each verb's --help) is in its man page's OPTIONS section (mtc-replicate's
# page has one OPTIONS subsection per verb, and a verb's own options must be
# in its subsection), is offered by its bash completion (the completion
# function is run for "PROG [VERB] --"), and is named by its zsh completion
# (in the verb's case branch when the file has one). The lists come from
# --help at run time, so an option added to a program without its documents
# fails here. Options --help does not print (refused ones) are not checked.
#
# Examples: every command line of every man page's EXAMPLES section runs, in
# a temporary dir that the fixture below prepares so that the paths and names
# the examples use exist. The convention the examples follow:
#   /local          a node's local dir (rank 0 of job "job", one node), holding
#                   committed step 100 (<hash>.data and .meta) and a saved step
#                   directory 200 that is not committed yet
#   /local1         an empty second local dir
#   /backups        a backup location (a directory) holding job/2025-06-30_14-30,
#                   a valid backup of step 100 of job "job"
#   /run/mtc        a state dir: config.json (the accepted config), token (a
#                   peer token), peers (a peers file)
#   /tmp            a scratch dir
#   gs://bucket     the fake GCS server, holding the same backup
#   host:7070       a peer daemon serving /local, no token, the coordinator of
#                   a one-node job (job-0-0.job:7070,
#                   http://job-0-{rank}.job:7070 and 127.0.0.1:7070 alike)
#   0.0.0.0:7070, 127.0.0.1:7071
#                   a free loopback port for a daemon an example starts
#   step-dir        a saved step directory in the current dir
#   restore-round.json  a restore round's inventories (mtc-lkg --inventory)
# The paths are rewritten into the temporary dir and the ports made free
# before an example runs. An example must exit 0, unless a roff comment
# '.\" docs.bats: exit N' just before its .nf says otherwise; one marked
# '.\" docs.bats: runs until stopped' (a daemon, a service loop) must still run
# a second after it started, runs beside the page's later examples, and is
# stopped when the page is done.
load helpers

MAN=$BATS_TEST_DIRNAME/../man
COMP=$BATS_TEST_DIRNAME/../completions
NODE=$BATS_TEST_DIRNAME/../contrib/mtc-node

# help_options PROG [VERB]: one line per long option --help prints, "own NAME"
# for the program's (or verb's) options and "common NAME" for those under
# "Common options:" and "Help options:".
help_options() {
	"$@" --help | awk '
		/^(Common|Help) options:/ { common = 1 }
		match($0, /^ +(-[A-Za-z?], )?--[a-z][a-z0-9-]*/) {
			s = substr($0, RSTART, RLENGTH)
			sub(/.*--/, "", s)
			print (common ? "common " : "own ") s
		}'
}

# man_section PAGE [SUBSECTION]: the OPTIONS section of PAGE with roff's \-
# read as -, or only its subsection .SS SUBSECTION.
man_section() {
	awk -v sub_="${2:-}" '
		/^\.SH / { on = ($0 == ".SH OPTIONS"); next }
		on && /^\.SS / { in_sub = (substr($0, 5) == sub_); next }
		on && (sub_ == "" || in_sub) { print }' "$1" | sed 's/\\-/-/g'
}

# bash_offers PROG [VERB]: what the bash completion offers after "PROG [VERB] --".
bash_offers() {
	bash -c '
		source "$1"
		shift
		COMP_WORDS=("$@" --)
		COMP_CWORD=$(($# ))
		fn=$(complete -p "$1" | sed "s/.*-F \([^ ]*\) .*/\1/")
		"$fn"
		printf "%s\n" "${COMPREPLY[@]}"' _ "$COMP/$1.bash" "$@"
}

# zsh_block FILE [VERB]: the zsh completion, or only its common list and the
# case branch of VERB (a branch may name several verbs, as accept|watch).
zsh_block() {
	awk -v verb="${2:-}" '
		verb == "" { print; next }
		/^common=\(/ { c = 1 } c { print } c && /^\)/ { c = 0 }
		match($0, /^\t?[a-z|]+\)/) {
			b = substr($0, RSTART, RLENGTH - 1)
			sub(/^\t/, "", b)
			n = split(b, vs, "|")
			on = 0
			for (i = 1; i <= n; i++) if (vs[i] == verb) on = 1
		}
		on { print }
		on && /;;/ { on = 0 }' "$1"
}

check_verbs() {
	local prog=$1 verb
	shift
	for verb; do check_options "$prog" "$verb"; done
}

has_word() { grep -qE -- "(^|[^a-z0-9-])--$1([^a-z0-9-]|\$)"; }

# check_options PROG [VERB]: prints every option of PROG [VERB]'s --help that
# a document leaves out, as "DOCUMENT: --OPTION".
check_options() {
	local prog=$1 verb=${2:-} kind opt sub=
	[ "$prog" = mtc-replicate ] && sub=$verb
	local page=$MAN/$prog.1
	[ "$prog" = mtc-node ] && page=$MAN/$prog.8
	local cmd=("$prog")
	[ "$prog" = mtc-node ] && cmd=("$NODE")
	[ -n "$verb" ] && cmd+=("$verb")
	local opts
	opts=$(help_options "${cmd[@]}")
	[ -n "$opts" ] || { echo "$prog $verb: --help printed no options"; return; }
	local section own_section offers zsh
	section=$(man_section "$page")
	own_section=$(man_section "$page" "$sub")
	offers=$(bash_offers "$prog" ${verb:+"$verb"})
	zsh=$(zsh_block "$COMP/_$prog" "$verb")
	while read -r kind opt; do
		if [ "$kind" = own ]; then
			has_word "$opt" <<<"$own_section" || echo "$(basename "$page") OPTIONS${sub:+ $sub}: --$opt"
		else
			has_word "$opt" <<<"$section" || echo "$(basename "$page") OPTIONS: --$opt"
		fi
		grep -qxF -- "--$opt" <<<"$offers" || echo "$prog.bash${verb:+ $verb}: --$opt"
		has_word "$opt" <<<"$zsh" || echo "_$prog${verb:+ $verb}: --$opt"
	done <<<"$opts"
}

@test "the options --help prints are in the man page and both completions: mtc-backup" {
	run check_options mtc-backup
	assert_output ''
}

@test "the options --help prints are in the man page and both completions: mtc-handshake" {
	# the bash completion offers a verb's options: ask for each verb's and take the union
	# (every verb's --help lists every option; a gap counts when no verb offers it)
	run comm -12 <(check_options mtc-handshake offer | sed 's/ offer:/:/' | sort) \
		<(check_options mtc-handshake rank | sed 's/ rank:/:/' | sort)
	assert_output ''
}

@test "the options --help prints are in the man page and both completions: mtc-lkg" {
	run check_options mtc-lkg
	assert_output ''
}

@test "the options --help prints are in the man page and both completions: mtc-prune" {
	run check_options mtc-prune
	assert_output ''
}

@test "the options --help prints are in the man page and both completions: mtc-restore" {
	run check_options mtc-restore
	assert_output ''
}

@test "the options --help prints are in the man page and both completions: every verb of mtc-replicate" {
	run check_verbs mtc-replicate digest commit gc serve push fetch run
	assert_output ''
}

@test "the options --help prints are in the man page and both completions: mtc-node" {
	run check_options mtc-node
	assert_output ''
}

# cited_sections: every "mtc(7) §N[.M]" the code, the tests and contrib cite, as "FILE:LINE §N".
cited_sections() {
	cd "$BATS_TEST_DIRNAME/.." &&
		grep -rnoE 'mtc\(7\)( §[0-9]+(\.[0-9]+)?[;,]?)+' lib cmd tests contrib |
		sed -E 's/^([^:]*:[0-9]+):mtc\(7\)/\1/' |
		while read -r where refs; do
			for ref in $refs; do echo "$where ${ref%[;,]}"; done
		done
}

@test "code cites the design by sections of mtc(7) that exist, and no document outside the tree" {
	local sections where ref out=
	sections=$(sed -nE 's/^\.S[HS] ([0-9]+(\.[0-9]+)?)\.? .*/§\1/p' "$MAN/mtc.7")
	[ "$(wc -l <<<"$sections")" -ge 30 ]
	while read -r where ref; do
		grep -qxF -- "$ref" <<<"$sections" || out+="$where cites $ref, which mtc(7) does not have"$'\n'
	done < <(cited_sections)
	[ "$(cited_sections | wc -l)" -ge 20 ]
	out+=$(cd "$BATS_TEST_DIRNAME/.." && grep -rn 'DESIGN\.md' lib cmd tests contrib | grep -v '^tests/docs.bats:' || true)
	run echo -n "$out"
	assert_output ''
}

@test "mtc(7) renders without warnings" {
	run groff -man -ww -z "$MAN/mtc.7"
	assert_success
	assert_output ''
}

# The examples' world (see the top of this file), built afresh for each page.
setup() {
	[ -n "${BATS_TEST_DESCRIPTION##*EXAMPLES*}" ] && return 0
	load backup
	load fakegcs/fakegcs
	W=$(mktemp -d /dev/shm/mtc-docs.XXXXXX)
	cd "$W"
	mkdir -p local local1 backups/job/snap-1751290000 run/mtc tmp step-dir/sub
	config run/mtc/config.json job 0 1
	saved_step local job 100 0 docs 30000 >/dev/null
	mkdir -p local/200/default
	echo weights >local/200/default/data
	touch local/200/commit_success.txt
	echo a >step-dir/a
	echo b >step-dir/sub/b
	fakegcs_start
	mtc-backup -q --dir local --config run/mtc/config.json --step 100 --to backups --name 2025-06-30_14-30 >/dev/null
	mtc-backup -q --dir local --config run/mtc/config.json --step 100 --to gs://bucket --name 2025-06-30_14-30 >/dev/null
	head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >run/mtc/token
	PIDS=()
	serve_on "$W/local" --coordinator --nodes 1 3>&-
	PORT=${URL##*:}
	PORT2=$(free_port)
	echo "$URL" >run/mtc/peers
	mtc-lkg --dir local --config run/mtc/config.json --json |
		jq -c '{nodes: 1, ranks: [{"node-rank": 0, "meta-files": [.ranks[0].metas[] | [100, 0, .worker, .hash]],
			"data-files": [.ranks[0].metas[].hash]}]}' >restore-round.json
	export PATH="$BATS_TEST_DIRNAME/../contrib:$PATH"
}

teardown() {
	[ -n "${W:-}" ] || return 0
	local pid
	for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
	fakegcs_stop
	cd /
	rm -rf "$W"
}

# examples PAGE: the command blocks (.nf to .fi) of PAGE's EXAMPLES section, one
# per record, NUL-terminated, each preceded by its mark: "run", "daemon" for a
# block after the comment '.\" docs.bats: runs until stopped', or "exit N".
examples() {
	awk '
		/^\.SH / { on = ($0 == ".SH EXAMPLES"); next }
		!on { next }
		/^\.\\" docs\.bats: runs until stopped/ { mark = "daemon"; next }
		/^\.\\" docs\.bats: exit [0-9]+/ { mark = "exit " $NF; next }
		/^\.nf/ { block = 1; text = ""; next }
		/^\.fi/ { if (block) printf "%s\n%s%c", (mark ? mark : "run"), text, 0; block = 0; mark = ""; next }
		block { text = text $0 "\n" }' "$1" |
		sed -e 's/\\-/-/g' -e 's/\\e/\\/g' \
			-e "s#0\.0\.0\.0:7070#127.0.0.1:$PORT2#g" -e "s#127\.0\.0\.1:7071#127.0.0.1:$PORT2#g" \
			-e "s#[a-z0-9.{}-]*:7070#127.0.0.1:$PORT#g" \
			-E -e "s#(^|[ =:'\"]|//)/(local1?|backups|run/mtc|tmp)\b#\1$W/\2#g"
}

# run_examples PAGE: runs every example of PAGE in order, the daemons in the
# background until the page is done; prints each failure.
run_examples() {
	local mark text n=0 status pid DAEMONS=()
	while IFS= read -r -d '' record; do
		n=$((n + 1))
		mark=${record%%$'\n'*}
		text=${record#*$'\n'}
		case $mark in
		daemon)
			setsid bash -c "$text" >"$W/example$n.log" 2>&1 3>&- &
			pid=$!
			DAEMONS+=("$pid")
			sleep 1
			kill -0 "$pid" 2>/dev/null || { echo "example $n stopped:"; echo "$text"; cat "$W/example$n.log"; }
			;;
		*)
			status=0
			timeout 30 bash -o pipefail -c "$text" >"$W/example$n.log" 2>&1 3>&- || status=$?
			[ "$status" = "${mark#exit }" ] || [ "$mark $status" = "run 0" ] ||
				{ echo "example $n exited $status:"; echo "$text"; cat "$W/example$n.log"; }
			;;
		esac
	done < <(examples "$1")
	for pid in "${DAEMONS[@]}"; do kill -TERM -- "-$pid" 2>/dev/null; done
	for pid in "${DAEMONS[@]}"; do wait "$pid" 2>/dev/null; done
	[ "$n" -gt 0 ] || echo "$1: no EXAMPLES"
}

@test "every EXAMPLES command of mtc-backup(1) runs" {
	run run_examples "$MAN/mtc-backup.1"
	assert_output ''
}

@test "every EXAMPLES command of mtc-handshake(1) runs" {
	run run_examples "$MAN/mtc-handshake.1"
	assert_output ''
}

@test "every EXAMPLES command of mtc-lkg(1) runs" {
	run run_examples "$MAN/mtc-lkg.1"
	assert_output ''
}

@test "every EXAMPLES command of mtc-prune(1) runs" {
	run run_examples "$MAN/mtc-prune.1"
	assert_output ''
}

@test "every EXAMPLES command of mtc-restore(1) runs" {
	run run_examples "$MAN/mtc-restore.1"
	assert_output ''
}

@test "every EXAMPLES command of mtc-replicate(1) runs" {
	run run_examples "$MAN/mtc-replicate.1"
	assert_output ''
}

@test "every EXAMPLES command of mtc-node(8) runs" {
	run run_examples "$MAN/mtc-node.8"
	assert_output ''
}
