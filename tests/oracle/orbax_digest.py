#!/usr/bin/env python3
"""The reference replicator's logical digest of an Orbax step, on the real
tensorstore and blake3: for each STEP prints "<digest>  <STEP>", or
"none  <STEP>" when no subdirectory holds manifest.ocdbt."""
import sys
from pathlib import Path

import blake3
import tensorstore as ts


def logical_digest(step):
    stores = [p for p in Path(step).absolute().iterdir() if p.is_dir() and (p / "manifest.ocdbt").is_file()]
    if not stores:
        return None
    kv = ts.KvStore.open({"driver": "ocdbt", "base": f"file://{stores[0]}"}).result()
    rows = []
    for key in kv.list().result():
        value = kv.read(key).result().value
        rows.append((key, len(value), blake3.blake3(value).hexdigest()))
    h = blake3.blake3()
    for key, _, v_hash in sorted(rows):
        h.update(f"{key}\t{v_hash}\n".encode("utf-8"))
    return "D" + h.hexdigest()


for step in sys.argv[1:]:
    print(f"{logical_digest(step) or 'none'}  {step}")
