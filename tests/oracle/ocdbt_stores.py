#!/usr/bin/env python3
"""Writes step dirs with OCDBT stores of varied layouts for the ocdbt tests:
with the real tensorstore, OUT/<name>/store (a step holding one store); with
the real Orbax, OUT/orbax_* (saves of a dict of arrays on the CPU).
  ocdbt_stores.py OUT [NAME...]   (default: all)"""
import os
import shutil
import sys

import numpy as np
import tensorstore as ts

ODD_KEYS = [b"plain", b"it's", b'say "hi"', b"both ' and \"", b"back\\slash", b"tab\tnl\nret\r",
            b"\x00nul", b"\x7fdel", b"\x80\xfe\xff", b"\x1f", b"", b"z" * 300]


def values(n, size, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, size + i % 7, dtype=np.uint8).tobytes() for i in range(n)]


def kv_open(path, **config):
    spec = {"driver": "ocdbt", "base": f"file://{os.path.abspath(path)}"}
    for k in ("value_data_prefix", "target_data_file_size"):
        if k in config:
            spec[k] = config.pop(k)
    if config:
        spec["config"] = config
    return ts.KvStore.open(spec).result()


def write(path, items, txns=1, delete=(), **config):
    kv = kv_open(path, **config)
    items = list(items)
    per = max(1, (len(items) + txns - 1) // txns)
    for i in range(0, len(items), per):
        txn = ts.Transaction()
        for k, v in items[i:i + per]:
            kv.with_transaction(txn)[k] = v
        txn.commit_async().result()
    for k in delete:
        del kv[k]


KEYS = [b"k%05d" % i for i in range(400)]
SAME = list(zip(KEYS, values(400, 40)))
CHANGED = list(SAME)
CHANGED[123] = (CHANGED[123][0], CHANGED[123][1][:5] + bytes([CHANGED[123][1][5] ^ 1]) + CHANGED[123][1][6:])


def orbax_save(step, manager=False):
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import orbax.checkpoint as ocp
    rng = np.random.default_rng(7)
    state = {"w": rng.standard_normal((64, 32)).astype(np.float32),
             "b": np.arange(100, dtype=np.int64), "opt": {"mu": np.ones((3, 5, 7)), "n": np.int32(4)}}
    if manager:
        with ocp.CheckpointManager(os.path.abspath(step)) as m:
            m.save(1, args=ocp.args.StandardSave(state))
    else:
        with ocp.StandardCheckpointer() as c:
            c.save(os.path.abspath(step), state)


def two_stores(step):
    for name in ("inline_raw", "odd_keys"):
        shutil.copytree(os.path.join(out, name, "store"), os.path.join(step, name))


LAYOUTS = {
    "inline_raw": lambda p: write(p, SAME, compression=None, max_inline_value_bytes=1000),
    "indirect_zstd": lambda p: write(p, SAME, compression={"id": "zstd", "level": 3},
                                     max_inline_value_bytes=0),
    "deep_versions": lambda p: write(p, SAME, txns=37, max_decoded_node_bytes=256,
                                     version_tree_arity_log2=1, max_inline_value_bytes=16),
    "numbered": lambda p: write(p, SAME, txns=5, manifest_kind="numbered"),
    "odd_keys": lambda p: write(p, zip(ODD_KEYS, values(len(ODD_KEYS), 30, 1)), txns=3,
                                max_inline_value_bytes=31),
    "large": lambda p: write(p, zip([b"big0", b"big1", b"small"], values(2, 3 << 20, 2) + [b"x"]),
                             txns=2),
    "emptied": lambda p: write(p, [(b"gone", b"v")], delete=[b"gone"]),
    "files": lambda p: write(p, SAME, txns=9, target_data_file_size=2000, max_inline_value_bytes=0,
                             value_data_prefix="vals/"),
    "changed": lambda p: write(p, CHANGED, max_inline_value_bytes=0),
}
STEPS = {
    "orbax_a": orbax_save,
    "orbax_b": orbax_save,
    "orbax_manager": lambda p: orbax_save(p, manager=True),
    "two_stores": two_stores,
}

out = sys.argv[1]
for name in sys.argv[2:] or list(LAYOUTS) + list(STEPS):
    if name in LAYOUTS:
        LAYOUTS[name](os.path.join(out, name, "store"))
    else:
        STEPS[name](os.path.join(out, name))
