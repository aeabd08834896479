"""Hostile reports to a coordinator from every one of its N ranks, while its
peak memory is watched (mtc(7) §5.6): unknown keys holding empty arrays, huge
lists of names, deep nesting, long strings, each kind of round.
    coord_hostile.py URL PID N LIMIT_KIB
Prints the daemon's VmHWM and exits 1 as soon as it passes LIMIT_KIB (so old
code that keeps whatever it is sent stops early), 0 when every report was sent
and the limit held. Every request is bounded by a timeout."""
import http.client, json, sys, urllib.parse

url, pid, N, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
u = urllib.parse.urlsplit(url)
conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)


def vmhwm():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1])


def post(kind, body):
    conn.request("POST", f"/v1/coord/{kind}", body, {"Content-Type": "application/json"})
    r = conn.getresponse()
    r.read()
    return r.status


def check(where):
    kib = vmhwm()
    if kib >= limit:
        print(f"VmHWM {kib} KiB >= {limit} KiB after {where}")
        sys.exit(1)


def h(*a):
    return "%064x" % (hash(a) & (1 << 256) - 1 | 1 << 255)


junk = ",".join(f'"u{i}":[]' for i in range(100000))  # 1.1 MiB of unknown keys
deep = "[" * 2000 + "]" * 2000
names = json.dumps(["n%07d" % i for i in range(40000)])
cfg = {"job-name": "job", "framework": "orbax", "nodes": N, "peers-per-node": 1,
       "workers-per-node": 1}


sjunk = ",".join(f'"u{i}":[]' for i in range(5000))  # 54 KiB


def config(r):
    return json.dumps(dict(cfg, **{"node-rank": r}))[:-1] + ', "junk": {%s}, "deep": %s}' % (sjunk, deep)


def restore(r, metas, data, extra=""):
    return ('{"rank": %d, "session": "s", "wait": 0, "address": "http://10.0.0.1:7070", '
            '"config": %s, "meta-files": %s, "data-files": %s, "names": %s, "deep": %s, %s%s}'
            % (r, config(r), json.dumps(metas), json.dumps(data), names, deep, junk, extra))


# rank 0's backups, as many and as long as it may send
B = max(2048, 2 * N)
backups = ', "backups": ' + json.dumps([
    {"name": "2020-01-01_00-%02d" % b, "meta-files": [[b, i % N, i // N, h(b, i)] for i in range(B)],
     "data-files": [h(b, i, "d") for i in range(B)], "x": [[]] * 1000} for b in range(8)])


L = 32 if N >= 1024 else 32768 // N  # MTC_COORD_LIST_MAX (coord.h)
codes = {}
# 1. restore reports just within what the coordinator takes: unknown keys,
#    nesting and names around every field, and long lists of distinct steps and
#    hashes; the last rank's report ends the round.
for r in range(N):
    metas = [[1000 + i, r, 0, h(r, i)] for i in range(L)]
    data = [h(r, i, "d") for i in range(L)]
    c = post("restore", restore(r, metas, data, backups if r == 0 else ""))
    codes[c] = codes.get(c, 0) + 1
    if r % 32 == 31:
        check(f"{r + 1} restore reports")
    if r == N - 2:
        print(f"VmHWM {vmhwm()} KiB before the last restore report")
print(f"VmHWM {vmhwm()} KiB after the restore round")
# 2. lists far beyond what a rank can hold, and nesting beyond any limit
refused = {}
for r in range(min(N, 8)):
    metas = [[1, r, 0, h(r, i)] for i in range(20000)]
    for body in (restore(r, metas, [h(i) for i in range(20000)]),
                 '{"rank": %d, "x": %s}' % (r, "[" * 100000 + "]" * 100000)):
        c = post("restore", body)
        refused[c] = refused.get(c, 0) + 1
    check(f"{r + 1} oversized restore reports")
# 3. sync and restore-done reports, every rank, under their 64 KiB limit
for r in range(N):
    post("sync", '{"rank": %d, "session": "s", "wait": 0, "replicated-step": 5, '
         '"config": %s, %s}' % (r, json.dumps(dict(cfg, **{"node-rank": r})), sjunk))
    post("restore-done", json.dumps({"rank": r, "session": "s", "wait": 0, "ok": True,
                                     "error": "e" * 60000}))
    if r % 32 == 31:
        check(f"{r + 1} sync and restore-done reports")
check("every report")
print(f"VmHWM {vmhwm()} KiB < {limit} KiB; restore answers {codes}, oversized ones {refused}")
