"""The coordinator over HTTP against a running daemon, N light clients in one
process (asyncio), printing the daemon's CPU and memory:
    coord_http.py PORT PID N
        a restore round: one connection each, a report re-sent while the answer
        is "waiting"
    coord_http.py PORT PID N heartbeats SECONDS INTERVAL [reconnect]
        every rank sends a heartbeat every INTERVAL seconds (starts spread over
        the first interval) for SECONDS, on a connection of its own that it keeps
        (as mtc's client does), or with `reconnect` on a new connection each time"""
import asyncio, json, os, random, sys, time, hashlib
port, pid, N = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
STEPS = 4
def h(*a): return hashlib.sha256("/".join(map(str, a)).encode()).hexdigest()
def cpu():
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
def rss():
    for l in open(f"/proc/{pid}/status"):
        if l.startswith(("VmHWM", "VmRSS", "Threads")): print("  ", l.strip())
cfg = {"job-name": "b", "framework": "orbax", "nodes": N, "peers-per-node": 1,
       "backup-interval-minutes": 30, "workers-per-node": 1}
def body(r):
    peer = r ^ 1 if (r ^ 1) < N else r
    metas = [[s, n, 0, h(s, n)] for s in range(1, STEPS + 1) for n in (r, peer)]
    return json.dumps({"rank": r, "session": "s", "address": f"http://10.0.{r // 256}.{r % 256}:7070",
                       "config": dict(cfg, **{"node-rank": r, "peer-ranks": [peer]}),
                       "meta-files": metas, "data-files": [m[3] for m in metas]}).encode()
async def post(reader, writer, kind, b):
    writer.write(b"POST /v1/coord/%s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % (kind, len(b)) + b)
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
    return json.loads(await reader.readexactly(n))
done = 0
async def rank(r, sem):
    global done
    b = body(r)
    async with sem:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    while True:
        a = await post(reader, writer, b"restore", b)
        if a["status"] != "waiting":
            done += a["status"] == "done"
            writer.close()
            return
async def restore_round():
    sem = asyncio.Semaphore(256)
    c0, t0 = cpu(), time.time()
    await asyncio.gather(*(rank(r, sem) for r in range(N)))
    print(f"{N} ranks over HTTP: {done} done; coordinator {cpu() - c0:.2f} s CPU, {time.time() - t0:.2f} s wall")
    rss()
answered = late = 0
async def beats(r, seconds, interval, reconnect, t0):
    global answered, late
    b = b'{"rank":%d,"session":"s"}' % r
    conn = None
    t = t0 + random.random() * interval
    while t < t0 + seconds:
        await asyncio.sleep(max(0, t - time.time()))
        if time.time() - t > interval / 2:
            late += 1
        if conn is None:
            conn = await asyncio.open_connection("127.0.0.1", port)
        a = await post(*conn, b"heartbeat", b)
        answered += a.get("status") == "done"
        if reconnect:
            conn[1].close()
            conn = None
        t += interval
    if conn:
        conn[1].close()
async def heartbeats(seconds, interval, reconnect):
    t0 = time.time()
    async def steady():  # from the second interval on: every kept connection is open
        await asyncio.sleep(interval)
        return cpu(), time.time()
    s = asyncio.ensure_future(steady())
    await asyncio.gather(*(beats(r, seconds, interval, reconnect, t0) for r in range(N)))
    c1, t1 = await s
    used, wall = cpu() - c1, time.time() - t1
    how = "a new connection each" if reconnect else "one kept connection a rank"
    print(f"{N} ranks, a heartbeat every {interval:g} s for {seconds:g} s ({how}): {answered} answered, "
          f"{late} sent late; coordinator after the first interval {used:.2f} s CPU in {wall:.1f} s "
          f"= {100 * used / wall:.1f}% of a core")
    rss()
if len(sys.argv) > 4 and sys.argv[4] == "heartbeats":
    asyncio.run(heartbeats(float(sys.argv[5]), float(sys.argv[6]), "reconnect" in sys.argv[7:]))
else:
    asyncio.run(restore_round())
