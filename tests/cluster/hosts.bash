# Hosts of their own for the cluster harness: every node in a network
# namespace with its own address on a bridge (in a "switch" namespace), its
# daemon on that address with the peer token. Faults act on the switch side
# of a node's link, so both ends see silence, never a reset:
#   hosts_init                namespaces, veth pairs, addresses (after cluster_init)
#   link_dark RANK / link_heal RANK
#   link_shape RANK QDISC...  a tc qdisc on the node's link (netem, tbf)
#   hosts_stop                removes every namespace (teardown)
#   in_host RANK CMD...       runs CMD inside the node's namespace
# Needs root, ip netns and veth; hosts_init skips the test, saying why, without them.
# Addresses are the test's own (10.251.7.0/24), inside namespaces it made,
# named by its PID (concurrent tests share no name).

HOSTS_NET=10.251.7

hosts_init() {
	local r ns
	[ "$(id -u)" = 0 ] || skip "hosts of their own need root (ip netns)"
	command -v ip >/dev/null || skip "no ip (iproute2)"
	HOSTS_ID=mtc$$
	HOSTS_SW=${HOSTS_ID}sw
	hosts_stop # names left by a killed test whose PID this one has now
	HOSTS_ID=mtc$$
	ip netns add "$HOSTS_SW" 2>/dev/null || skip "cannot create network namespaces here"
	ip -n "$HOSTS_SW" link add br0 type bridge || skip "no bridge support"
	ip -n "$HOSTS_SW" link set br0 up
	: >"$CL_ROOT/peers"
	for ((r = 0; r < CL_N; r++)); do
		ns=${HOSTS_ID}h$r
		ip netns add "$ns"
		ip link add "v$r" netns "$ns" type veth peer name "s$r" netns "$HOSTS_SW" ||
			skip "no veth support"
		ip -n "$ns" addr add "$HOSTS_NET.$((r + 1))/24" dev "v$r"
		ip -n "$ns" link set "v$r" up
		ip -n "$ns" link set lo up
		ip -n "$HOSTS_SW" link set "s$r" master br0
		ip -n "$HOSTS_SW" link set "s$r" up
		CL_NETNS[$r]=$ns
		CL_LISTEN[$r]=$HOSTS_NET.$((r + 1)):7070
		echo "http://$HOSTS_NET.$((r + 1)):7070" >>"$CL_ROOT/peers"
	done
	CL_COORD=http://$HOSTS_NET.1:7070
	CL_TOKEN=$CL_ROOT/token
	echo "the-job-token-of-test-$$-xyz" >"$CL_TOKEN"
	chmod 600 "$CL_TOKEN"
	for ((r = 1; r < CL_N; r++)); do # every host reaches the coordinator's
		ip netns exec "${CL_NETNS[$r]}" ping -c 1 -W 2 "$HOSTS_NET.1" >/dev/null 2>&1 ||
			{ sleep 0.5; ip netns exec "${CL_NETNS[$r]}" ping -c 1 -W 2 "$HOSTS_NET.1" >/dev/null 2>&1; } ||
			true
	done
}

in_host() {
	local r=$1
	shift
	ip netns exec "${CL_NETNS[$r]}" "$@"
}

link_dark() { ip -n "$HOSTS_SW" link set "s$1" down; }
link_heal() { ip -n "$HOSTS_SW" link set "s$1" up; }

# link_shape RANK QDISC ARGS...: a tc qdisc on the node's link (netem for
# delay and loss, tbf for a rate cap); 1 when this kernel lacks that qdisc.
link_shape() {
	local r=$1
	shift
	command -v tc >/dev/null || skip "no tc to shape a link"
	ip netns exec "$HOSTS_SW" tc qdisc replace dev "s$r" root "$@" 2>/dev/null
}

hosts_stop() {
	[ -n "${HOSTS_ID:-}" ] || return 0
	local ns
	for ns in $(ip netns list | awk '{ print $1 }' | grep -E "^$HOSTS_ID(sw|h[0-9]+)\$"); do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	HOSTS_ID=
}
