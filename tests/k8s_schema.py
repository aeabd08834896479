#!/usr/bin/env python3
"""k8s_schema.py WHEEL MODEL FILE [PATH]: checks a manifest (or the object at
PATH in it, dot-separated keys and list indexes) against the API models a
PyPI client package ships, read from its wheel and never imported: the
Kubernetes client (openapi_types/attribute_map, one release per Kubernetes
version) or an OpenAPI Generator pydantic package (Kubeflow Trainer's, which
carries JobSet's v1alpha2 types). Both are generated from the API's OpenAPI
schema: an unknown field, a wrong type or a missing required field is an
error, printed one a line with its path; exit 1 then.
"""
import ast
import re
import sys
import zipfile

import yaml

PRIMS = {"str": str, "StrictStr": str, "int": int, "StrictInt": int, "bool": bool,
         "StrictBool": bool, "float": float, "StrictFloat": float, "datetime": str,
         "date": str, "bytes": str, "StrictBytes": str}
ANY = ("any",)


def client_type(s):
    """The Kubernetes client's type strings: list[X], dict(str, X), names."""
    m = re.fullmatch(r"list\[(.*)\]", s)
    if m:
        return ("list", client_type(m.group(1)))
    m = re.fullmatch(r"dict\(str, (.*)\)", s)
    if m:
        return ("dict", client_type(m.group(1)))
    if s == "object":
        return ANY
    return ("prim", PRIMS[s]) if s in PRIMS else ("model", s)


def ann_type(a):
    """A pydantic annotation as a type: Optional, List, Dict, Union, Annotated."""
    if isinstance(a, ast.Name):
        if a.id in ("Any", "object"):
            return ANY
        return ("prim", PRIMS[a.id]) if a.id in PRIMS else ("model", a.id)
    if isinstance(a, ast.Subscript):
        head = a.value.id if isinstance(a.value, ast.Name) else ""
        args = a.slice.elts if isinstance(a.slice, ast.Tuple) else [a.slice]
        if head == "Optional" or head == "Annotated":
            return ann_type(args[0])
        if head == "List":
            return ("list", ann_type(args[0]))
        if head == "Dict":
            return ("dict", ann_type(args[1]))
        if head == "Union":
            return ("union", [ann_type(x) for x in args])
    return ANY


def client_model(cls):
    types = amap = None
    required = set()
    for node in cls.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id == "openapi_types":
                types = ast.literal_eval(node.value)
            elif node.targets[0].id == "attribute_map":
                amap = ast.literal_eval(node.value)
        if isinstance(node, ast.FunctionDef):
            for sub in ast.walk(node):
                if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and \
                        "must not be `None`" in sub.value:
                    required.add(node.name)
    if types is None or amap is None:
        return None
    return {amap[k]: (client_type(t), k in required) for k, t in types.items()}


def pydantic_model(cls):
    fields = {}
    for node in cls.body:  # a oneOf: one of these types, not an object
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and \
                node.target.id == "one_of_schemas":
            return ("union", [("prim", PRIMS[s]) if s in PRIMS else ("model", s)
                              for s in sorted(ast.literal_eval(node.value))])
    for node in cls.body:
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            continue
        name = node.target.id
        if name.startswith("_") or ast.unparse(node.annotation).startswith("ClassVar"):
            continue
        alias, has_default = name, node.value is not None and not isinstance(node.value, ast.Call)
        if isinstance(node.value, ast.Call):
            for kw in node.value.keywords:
                if kw.arg == "alias":
                    alias = kw.value.value
                if kw.arg in ("default", "default_factory"):
                    has_default = True
        optional = ast.unparse(node.annotation).startswith("Optional")
        fields[alias] = (ann_type(node.annotation), not optional and not has_default)
    return fields or None


def load(whl):
    models = {}
    with zipfile.ZipFile(whl) as z:
        for n in z.namelist():
            if "/models/" not in n or not n.endswith(".py"):
                continue
            for cls in ast.parse(z.read(n)).body:
                if isinstance(cls, ast.ClassDef):
                    m = client_model(cls) or pydantic_model(cls)
                    if m is not None:
                        models[cls.name] = m
    return models


def check(models, v, t, path, errs):
    kind = t[0]
    if kind == "any":
        return
    if kind == "union":
        for alt in t[1]:
            sub = []
            check(models, v, alt, path, sub)
            if not sub:
                return
        errs.append(f"{path}: {v!r} is none of the types allowed here")
    elif kind == "prim":
        ok = isinstance(v, t[1]) and not (t[1] is not bool and isinstance(v, bool))
        if t[1] is float:
            ok = isinstance(v, (int, float)) and not isinstance(v, bool)
        if not ok:
            errs.append(f"{path}: {v!r} is not a {t[1].__name__}")
    elif kind == "list":
        if not isinstance(v, list):
            errs.append(f"{path}: not a list")
            return
        for i, x in enumerate(v):
            check(models, x, t[1], f"{path}[{i}]", errs)
    elif kind == "dict":
        if not isinstance(v, dict):
            errs.append(f"{path}: not a map")
            return
        for k, x in v.items():
            check(models, x, t[1], f"{path}.{k}", errs)
    else:
        m = models.get(t[1])
        if m is None:
            errs.append(f"{path}: the schema has no model {t[1]}")
        elif isinstance(m, tuple):
            check(models, v, m, path, errs)
        elif not isinstance(v, dict):
            errs.append(f"{path}: not an object ({t[1]})")
        else:
            for k, x in v.items():
                if k not in m:
                    errs.append(f"{path}.{k}: unknown field ({t[1]})")
                else:
                    check(models, x, m[k][0], f"{path}.{k}", errs)
            for k, (_, req) in m.items():
                if req and k not in v:
                    errs.append(f"{path}.{k}: required ({t[1]})")


def main():
    whl, model, file = sys.argv[1:4]
    doc = yaml.safe_load(open(file))
    path = "$"
    for key in (sys.argv[4].split(".") if len(sys.argv) > 4 else []):
        doc = doc[int(key)] if isinstance(doc, list) else doc[key]
        path += f"[{key}]" if key.isdigit() else f".{key}"
    models = load(whl)
    if model not in models:
        sys.exit(f"k8s_schema: '{whl}' has no model {model}")
    errs = []
    check(models, doc, ("model", model), path, errs)
    print("\n".join(errs) if errs else f"{file}: valid {model} ({len(models)} models)")
    sys.exit(1 if errs else 0)


if __name__ == "__main__":
    main()
