"""Hostile reports to a coordinator from every one of its N ranks, CONC at a
time, while its peak memory is watched (mtc(7) §5.6): unknown keys holding
empty arrays, long lists of names, deep nesting, long strings, the longest
lists of distinct hashes a rank of the job may send, rank 0's backups at their
bound, bodies at the largest size taken, each kind of round.
    coord_hostile.py URL PID N LIMIT_KIB [CONC]
The job's config has as many workers as make a rank's limit its cap (coord.h),
so the reports are the worst the coordinator takes at any N. Prints the
daemon's VmHWM and exits 1 as soon as it passes LIMIT_KIB (so code that keeps
whatever it is sent stops early), 0 when every report was sent and the limit
held. A 503 (too many bodies at once) or a closed connection is retried after a
rest that doubles up to 0.4 s, at most 200 times a report; every request is
bounded by a timeout."""
import http.client, json, random, sys, threading, time, urllib.parse
from concurrent.futures import ThreadPoolExecutor

url, pid, N, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
CONC = int(sys.argv[5]) if len(sys.argv) > 5 else 64
u = urllib.parse.urlsplit(url)
local = threading.local()
lock = threading.Lock()
codes, retried = {}, [0]

# coord.h: the caps, and the largest restore body (coord_report.c)
CAP = min(max(196608 // N, 192), 4096)
BCAP = 8 * N if N >= 1024 else 8192
BODY_MAX = min(2 * (16384 + CAP * 171 + 2 * BCAP * 171 + 8 * 256) + (64 << 10), 64 << 20)
P = 2
W = -(-CAP // (8 * (1 + P)))  # 8 steps x W workers x (1 + P) copies reach the cap
L = CAP
B = min(BCAP, N * W)  # a backup's metas (and data): N x W, capped


def cpu():
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / 100


def vmhwm():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1])


def post(kind, body):
    """The status of one report; a 503 is sent again after a rest, as mtc's client does."""
    rest = 0.05
    for _ in range(200):
        if not hasattr(local, "conn"):
            local.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
        try:
            local.conn.request("POST", f"/v1/coord/{kind}", body, {"Content-Type": "application/json"})
            r = local.conn.getresponse()
            r.read()
            again = r.status == 503
        except (ConnectionError, http.client.HTTPException):
            again = True
        if again:
            with lock:
                retried[0] += 1
            local.conn.close()
            del local.conn
            time.sleep(rest * (0.5 + random.random()))
            rest = min(2 * rest, 0.4)
            continue
        if r.getheader("Connection", "").lower() == "close":
            local.conn.close()
            del local.conn
        return r.status
    return 503


def count(c):
    with lock:
        codes[c] = codes.get(c, 0) + 1


def check(where):
    kib = vmhwm()
    if kib >= limit:
        print(f"VmHWM {kib} KiB >= {limit} KiB after {where}")
        sys.exit(1)


def h(*a):
    return "%064x" % (hash(a) & (1 << 256) - 1 | 1 << 255)


deep = "[" * 2000 + "]" * 2000
cfg = {"job-name": "job", "framework": "pytorch", "nodes": N, "peers-per-node": P,
       "workers-per-node": W}
sjunk = ",".join(f'"u{i}":[]' for i in range(5000))  # 54 KiB


def config(r):
    return json.dumps(dict(cfg, **{"node-rank": r}))[:-1] + ', "junk": {%s}, "deep": %s}' % (sjunk, deep)


def restore(r, metas, data, extra="", junk_bytes=0):
    head = ('{"rank": %d, "session": "s", "wait": 0, "address": "http://10.0.0.1:7070", '
            '"config": %s, "meta-files": %s, "data-files": %s, "deep": %s%s'
            % (r, config(r), json.dumps(metas), json.dumps(data), deep, extra))
    n = max(0, min(junk_bytes, BODY_MAX - len(head) - 64) // 13)
    return head + (", " + JUNK[:13 * n - 1] if n else "") + "}"


JUNK = ",".join(f'"u{i:06d}":[]' for i in range(BODY_MAX // 13 + 1))  # unknown keys, 13 bytes each


# rank 0's backups, as many and as long as it may send: twice the cap in all
backups = ', "backups": ' + json.dumps([
    {"name": "2020-01-01_00-%02d" % b,
     "meta-files": [[b, i % N, (i // N) % W, h(b, i)] for i in range(min(B, 2 * BCAP // 8))],
     "data-files": [h(b, i, "d") for i in range(min(B, 2 * BCAP // 8))], "x": [[]] * 1000}
    for b in range(8)])


def rank_report(r, junk_bytes):
    metas = [[1000 + i, r, i % W, h(r, i)] for i in range(L)]
    data = [h(r, i, "d") for i in range(L)]
    return restore(r, metas, data, backups if r == 0 else "", junk_bytes)


t0 = time.time()
print(f"N {N}: a rank lists {L} metas and data (W {W}, P {P}), a backup {B}; "
      f"bodies up to {BODY_MAX} bytes, {CONC} at a time")
pool = ThreadPoolExecutor(CONC)
# 1. restore reports just within what the coordinator takes, from every rank,
#    CONC at a time: unknown keys, nesting and names around every field, the
#    longest lists of distinct hashes; rank 0 first with its backups, so that
#    its config sets the limits; the last report ends the round and its plan.
count(post("restore", rank_report(0, 1 << 20)))
print(f"VmHWM {vmhwm()} KiB after rank 0's report")
last = N - 1
done = [0]


def one(r):
    c = post("restore", rank_report(r, 128 << 10))
    count(c)


list(pool.map(one, range(1, last)))
check(f"{last} restore reports")
print(f"{time.time() - t0:.1f} s: {retried[0]} retries, daemon cpu {cpu():.1f} s, ours {time.process_time():.1f} s")
print(f"VmHWM {vmhwm()} KiB before the last restore report")
count(post("restore", rank_report(last, 0)))
check("the restore round")
print(f"VmHWM {vmhwm()} KiB after the restore round and its plan")
restore_codes, codes = codes, {}
# 2. CONC bodies of the largest size taken, all at once
#    (each replaces the rank's report of a new round), then lists far beyond
#    what a rank may hold, and nesting beyond any limit
big = [rank_report((1 + i) % N, BODY_MAX) for i in range(min(N, 8))]
list(pool.map(lambda i: count(post("restore", big[i % len(big)])), range(CONC)))
check(f"{CONC} restore reports of {len(big[0])} bytes")
print(f"{time.time() - t0:.1f} s: {retried[0]} retries, daemon cpu {cpu():.1f} s, ours {time.process_time():.1f} s")
print(f"VmHWM {vmhwm()} KiB after {CONC} bodies of {len(big[0])} bytes at once")
big_codes, codes = codes, {}
for r in range(min(N, 8)):
    metas = [[1, r, 0, h(r, i)] for i in range(L + 1)]
    count(post("restore", restore(r, metas, [])))
    count(post("restore", restore(r, [], [h(r, i) for i in range(20000)])))
    count(post("restore", '{"rank": %d, "x": %s}' % (r, "[" * 100000 + "]" * 100000)))
    check(f"{r + 1} oversized restore reports")
over_codes, codes = codes, {}
# 3. sync and restore-done reports, every rank, under their 64 KiB limit


def small(r):
    count(post("sync", '{"rank": %d, "session": "s", "wait": 0, "replicated-step": 5, '
               '"config": %s, %s}' % (r, json.dumps(dict(cfg, **{"node-rank": r})), sjunk)))
    count(post("restore-done", json.dumps({"rank": r, "session": "s", "wait": 0, "ok": True,
                                           "error": "e" * 60000})))


list(pool.map(small, range(N)))
check("every report")
print(f"VmHWM {vmhwm()} KiB < {limit} KiB; restore answers {restore_codes}, "
      f"largest bodies {big_codes}, oversized ones {over_codes}, others {codes}; "
      f"{retried[0]} sent again after a 503 or a closed connection; {time.time() - t0:.1f} s")
