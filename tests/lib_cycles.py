#!/usr/bin/env python3
"""Cycles between the objects of an archive: A -> B when A uses a symbol B defines.

Prints each cycle (a strongly connected set of objects) on one line, sorted;
exit 1 when there is one not listed with --allow "a.o b.o".
"""
import argparse
import collections
import subprocess
import sys


def graph(archive):
    out = subprocess.run(["nm", "-A", archive], capture_output=True, text=True, check=True).stdout
    defs, uses = {}, collections.defaultdict(set)
    for line in out.splitlines():
        parts = line.split()
        if len(parts) != 3:
            continue
        obj = parts[0].split(":")[1]
        if parts[1] in "TDBRV":
            defs[parts[2]] = obj
        elif parts[1] == "U":
            uses[obj].add(parts[2])
    g = collections.defaultdict(set)
    for obj, syms in uses.items():
        g[obj] |= {defs[s] for s in syms if s in defs and defs[s] != obj}
    return g


def cycles(g):
    index, low, stack, on, found = {}, {}, [], set(), []
    for root in list(g):
        if root in index:
            continue
        work = [(root, iter(sorted(g[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(" ".join(sorted(comp)))
    return sorted(found)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("archive")
    ap.add_argument("--allow", action="append", default=[])
    a = ap.parse_args()
    allowed = {" ".join(sorted(x.split())) for x in a.allow}
    bad = 0
    for c in cycles(graph(a.archive)):
        print(("allowed: " if c in allowed else "cycle: ") + c)
        bad |= c not in allowed
    return bad


if __name__ == "__main__":
    sys.exit(main())
