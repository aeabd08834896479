"""The coordinator's restore round over HTTP: N light clients in one process
(asyncio, one connection each, a report re-sent while the answer is "waiting"),
against a running daemon; prints its CPU for the round and its memory.
    coord_http.py PORT PID N"""
import asyncio, json, os, sys, time, hashlib
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
done = 0
async def rank(r, sem):
    global done
    b = body(r)
    async with sem:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    while True:
        writer.write(b"POST /v1/coord/restore HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(b) + b)
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
        a = json.loads(await reader.readexactly(n))
        if a["status"] != "waiting":
            done += a["status"] == "done"
            writer.close()
            return
async def main():
    sem = asyncio.Semaphore(256)
    c0, t0 = cpu(), time.time()
    await asyncio.gather(*(rank(r, sem) for r in range(N)))
    print(f"{N} ranks over HTTP: {done} done; coordinator {cpu() - c0:.2f} s CPU, {time.time() - t0:.2f} s wall")
    rss()
asyncio.run(main())
