#!/usr/bin/env python3
"""Layering check of the library: every folder is a layer.

The layers, bottom to top, are lib/base, lib/lua, lib/conn, lib/topology,
then watchdog/ and pubsub/ (side by side: neither may use the other), then
lib/core, lib/quorum, lib/lock, lib/family and lib/api. A file may include
headers of its own folder and of folders below, and call functions defined
in its own folder and in folders below; a lower layer reaches a higher one
only through function pointers that the higher one set (hooks), which
neither an include nor a call shows. And no two files of one folder call
each other in a loop: a folder's files can be read bottom-up too.

Includes are read from the sources; calls from the compiled objects
(nm): an undefined symbol of one object that another object of the
library defines is a call (or a use of its data) from the first file to
the second.

    check_layers.py SOURCE_ROOT BUILD_ROOT

Prints "PASS: rule" or "FAIL: rule" per rule, the offending edges on
stderr, and exits 1 on any failure. There are no exceptions: a back-edge
is removed by a hook, or by moving the code to the layer it belongs to.
"""
import os
import re
import subprocess
import sys

LAYERS = [
    ("lib/base", 0), ("lib/lua", 1), ("lib/conn", 2), ("lib/topology", 3),
    ("watchdog", 4), ("pubsub", 4), ("lib/core", 5), ("lib/quorum", 6),
    ("lib/lock", 7), ("lib/family", 8), ("lib/api", 9),
]
RANK = dict(LAYERS)

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def folder_of(root, path):
    rel = os.path.relpath(path, root)
    d = os.path.dirname(rel)
    return d if d in RANK else None


def sources(root):
    for d, _ in LAYERS:
        full = os.path.join(root, d)
        for name in sorted(os.listdir(full)):
            if name.endswith((".c", ".h")):
                yield os.path.join(full, name)


def resolve(root, includer, name):
    """The file a quoted include names, as the build's include path finds
    it: the includer's folder first, then every layer and include/."""
    cand = [os.path.join(os.path.dirname(includer), name)]
    cand += [os.path.join(root, d, name) for d, _ in LAYERS]
    cand.append(os.path.join(root, "include", name))
    for c in cand:
        if os.path.isfile(c):
            return c
    return None


def upward(a, b):
    """1 if folder a may not use folder b."""
    if a == b:
        return False
    return RANK[b] > RANK[a] or (RANK[b] == RANK[a])


def check_includes(root, bad):
    for f in sources(root):
        fa = folder_of(root, f)
        with open(f, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for inc in INCLUDE.findall(text):
            h = resolve(root, f, inc)
            if h is None:
                continue
            fb = folder_of(root, h)
            if fb is not None and upward(fa, fb):
                bad.append("%s -> %s" % (os.path.relpath(f, root),
                                         os.path.relpath(h, root)))


def objects(root, build):
    """The library's objects, as (source path relative to the root, object
    path): meson names lib/<layer>/x.c's object <layer>_x.c.o. An object
    whose source is no longer in the tree (a build directory made before
    files moved) is passed over."""
    out = []
    libdir = os.path.join(build, "lib")
    for sub in sorted(os.listdir(libdir)):
        if sub.startswith("librlock.so") and sub.endswith(".p"):
            p = os.path.join(libdir, sub)
            for o in sorted(os.listdir(p)):
                if o.endswith(".c.o"):
                    layer, _, name = o[:-2].partition("_")
                    src = "lib/%s/%s" % (layer, name)
                    if os.path.isfile(os.path.join(root, src)):
                        out.append((src, os.path.join(p, o)))
    for d in ("watchdog", "pubsub"):
        base = os.path.join(build, d)
        for sub in sorted(os.listdir(base)):
            if sub.endswith(".a.p"):
                p = os.path.join(base, sub)
                for o in sorted(os.listdir(p)):
                    src = "%s/%s" % (d, o[:-2])
                    if o.endswith(".c.o") and os.path.isfile(
                            os.path.join(root, src)):
                        out.append((src, os.path.join(p, o)))
    return out


def nm(path):
    text = subprocess.run(["nm", path], capture_output=True, text=True,
                          check=True).stdout
    defined, undefined = set(), set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBRCGSV":
            defined.add(parts[2])
    return defined, undefined


def check_calls(root, build, bad, loops):
    objs = objects(root, build)
    owner, uses = {}, {}
    for src, o in objs:
        d, u = nm(o)
        for s in d:
            owner[s] = src
        uses[src] = u
    edges = {}
    for src, us in uses.items():
        for s in sorted(us):
            dst = owner.get(s)
            if dst is None or dst == src:
                continue
            fa, fb = os.path.dirname(src), os.path.dirname(dst)
            if upward(fa, fb):
                bad.append("%s -> %s: %s" % (src, dst, s))
            if fa == fb:
                edges.setdefault(src, set()).add(dst)
    # Loops between files of one folder (Tarjan's strongly connected
    # components over the folder's call edges).
    index, low, stack, on, comps = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            strong(v)
    for comp in comps:
        loops.append("loop: " + " ".join(comp))


def report(rule, found):
    for e in found:
        print("  " + e, file=sys.stderr)
    if found:
        print("FAIL: %s (%d, on stderr)" % (rule, len(found)))
        return 1
    print("PASS: %s" % rule)
    return 0


def main():
    root, build = sys.argv[1], sys.argv[2]
    inc_bad, call_bad, loops = [], [], []
    check_includes(root, inc_bad)
    check_calls(root, build, call_bad, loops)
    failed = 0
    failed += report("includes_only_own_folder_and_below", inc_bad)
    failed += report("calls_only_own_folder_and_below", call_bad)
    failed += report("no_call_loop_inside_a_folder", loops)
    print("%d passed, %d failed" % (3 - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
