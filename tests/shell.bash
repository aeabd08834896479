# Plain shell helpers shared by the bats files (through helpers.bash) and the
# cluster harness, which the benches source without bats.
# free_ports N: N loopback ports free now, for a daemon the test starts next.
# Under tests/run (MTC_LANE set) they come from the lane's own range below the
# kernel's ephemeral ports, so no other lane picks them and no connection's
# source port takes them before the daemon binds; else the kernel picks them.
free_ports() {
	python3 - "$1" <<'EOF'
import os, random, socket, sys
n, lane = int(sys.argv[1]), os.environ.get("MTC_LANE")
socks = []
if lane is None:
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
else:
    span = 22000 // max(1, int(os.environ.get("MTC_LANES", "1")))
    base = 10000 + int(lane) * span
    for port in random.sample(range(base, base + span), span):
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            s.close()
            continue
        socks.append(s)
        if len(socks) == n:
            break
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}
free_port() { free_ports 1; }

# wait_for WHAT SECS CMD...: until CMD succeeds, at most SECS s; says WHAT it
# waited for (on fd 3, bats' own output) when it gives up.
wait_for() {
	local what=$1 secs=$2 i
	shift 2
	for ((i = 0; i < secs * 20; i++)); do
		"$@" && return 0
		sleep 0.05
	done
	echo "# timed out waiting for: $what" >&3
	return 1
}

