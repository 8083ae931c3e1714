#!/usr/bin/env python3
"""The shape gauges of issue 30, measured the same way before and after.

    python3 tools/gauges.py [ROOT]

Prints, for production code (tests, benches and fuzz left out, as
../shared/tools/fnlen.py counts them):
  - functions over 80 and over 60 lines (all crates; ike and daemon apart),
  - files over 800 lines,
  - `Result<_, String>` in signatures,
  - README.md lines,
  - the largest import cycle among crates/ike's and crates/daemon's modules
    (a file uses another when its code, comments and test module left out,
    names `crate::a::b`, `use crate::{a, ..}`, `super::a` or `self::a`; a
    cycle is a strongly connected component of that graph; a method called
    on a shared context is not seen),
  - files holding `impl Host` or `impl Ike` (the engine's methods).
"""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
FNLEN = os.path.join(ROOT, "..", "shared", "tools", "fnlen.py")


def prod_files(top):
    out = []
    for d, _, files in os.walk(os.path.join(ROOT, top)):
        rel = os.path.relpath(d, ROOT)
        if re.search(r"(^|/)(tests?|benches|fuzz|target)(/|$)", rel):
            continue
        out += [os.path.join(d, f) for f in files if f.endswith(".rs") and not f.startswith("tests")]
    return sorted(out)


def long_functions(limit):
    text = subprocess.run([sys.executable, FNLEN, ".", "prod", str(limit)], cwd=ROOT,
                          capture_output=True, text=True).stdout
    return [l.split()[1] for l in text.splitlines() if l.strip()]


def lines(path):
    return sum(1 for _ in open(path, encoding="utf-8"))


def module_of(path, src):
    rel = os.path.relpath(path, src)[:-3]
    parts = rel.split(os.sep)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return "::".join(parts)


def uses(text, modules, me):
    """The modules of this crate a file names (its first path segment under
    `crate::`, and the second where the first is a folder module)."""
    named = set()
    for m in re.finditer(r"crate::\{([^}]*)\}", text):
        for item in m.group(1).split(","):
            seg = [s for s in item.strip().split("::") if s]
            if seg:
                named.add("::".join(seg[:2]))
                named.add(seg[0])
    for m in re.finditer(r"crate::((?:[a-z_][a-z0-9_]*::)*[a-z_][a-z0-9_]*)", text):
        seg = m.group(1).split("::")
        named.add("::".join(seg[:2]))
        named.add(seg[0])
    # `super::x` from a::b::c is a::b::x; from a folder's mod.rs a::b it is a::x
    here = me.split("::") if me else []
    for m in re.finditer(r"\b(self|super)::([a-z_][a-z0-9_]*)", text):
        base = here[:-1] if m.group(1) == "super" else here
        named.add("::".join(base + [m.group(2)]))
        if base:
            named.add(base[0])
    return {n for n in named if n in modules}


def largest_cycle(crate):
    src = os.path.join(ROOT, "crates", crate, "src")
    files = prod_files(os.path.join("crates", crate, "src"))
    mods = {module_of(f, src): f for f in files}
    graph = {}
    for name, f in mods.items():
        text = open(f, encoding="utf-8").read()
        # Production code only, comments left out (a doc link is no use).
        text = text.split("#[cfg(test)]\nmod tests")[0]
        text = re.sub(r"//[^\n]*", "", text)
        # a parent module's own `mod x;` lines are structure, not use
        graph[name] = {u for u in uses(text, mods, name) if u != name and u != ""}
    # Tarjan
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
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
            comps.append(comp)

    for v in graph:
        if v not in index:
            visit(v)
    big = max(comps, key=len)
    return len(big), sorted(big)


def main():
    fns80 = long_functions(81)
    fns60 = long_functions(61)
    files = prod_files("crates")
    big = [(os.path.relpath(f, ROOT), lines(f)) for f in files if lines(f) > 800]
    strings = []
    for f in files:
        for i, l in enumerate(open(f, encoding="utf-8"), 1):
            if re.search(r"Result<[^;{]*,\s*String\s*>", l) and not l.strip().startswith("//"):
                strings.append(f"{os.path.relpath(f, ROOT)}:{i}")
    readme = sum(1 for _ in open(os.path.join(ROOT, "README.md"), encoding="utf-8"))
    hosts = sorted({os.path.relpath(f, ROOT) for f in prod_files("crates/ike/src")
                    if re.search(r"^impl(<[^>]*>)?\s+(Host|Ike|Cx)\b", open(f, encoding="utf-8").read(), re.M)})
    print(f"functions over 80 lines: {len(fns80)}"
          f" (ike {sum('crates/ike' in f for f in fns80)}, daemon {sum('crates/daemon' in f for f in fns80)})")
    for f in fns80:
        print(f"    {f}")
    print(f"functions over 60 lines: {len(fns60)}"
          f" (ike {sum('crates/ike' in f for f in fns60)}, daemon {sum('crates/daemon' in f for f in fns60)})")
    print(f"files over 800 lines: {len(big)}")
    for f, n in big:
        print(f"    {f} ({n})")
    print(f"Result<_, String>: {len(strings)}")
    for s in strings:
        print(f"    {s}")
    print(f"README lines: {readme}")
    for crate in ("ike", "daemon"):
        n, members = largest_cycle(crate)
        if n == 1:
            print(f"largest import cycle in crates/{crate}: none")
        else:
            print(f"largest import cycle in crates/{crate}: {n} modules")
            print("    " + " ".join(members))
    print(f"files holding impl Host / Ike / Cx: {len(hosts)}")
    for h in hosts:
        print(f"    {h}")


main()
