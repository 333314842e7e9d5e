#!/usr/bin/env python3
"""The modules' include order: a module includes only modules below it (docs/INTERNALS.md,
"Module order"). Fails on an upward include that is not in known_upward_includes.txt, and on
a listed one that is gone (so the list only shrinks: delete its line when you fix one).

Usage: check_module_layers.py <repo root> [--print]   (--print: list today's upward includes)"""
import os
import re
import sys

# Bottom to top. Modules on one level may include each other: ops and trace (the one dispatch
# point records into the trace; a graph holds ops), function and autodiff (a call op's
# gradient is a function, a function's tape is autodiff). saving declares what io implements.
LEVELS = [["core"], ["kernels"], ["ops", "trace"], ["passes"], ["exec"], ["function", "autodiff"], ["nn"], ["optim"],
          ["summary"], ["data"], ["train"], ["saving"], ["io"], ["distributed"]]
LEVEL = {m: i for i, ms in enumerate(LEVELS) for m in ms}
LEVEL["dist"] = LEVEL["distributed"]  # its public headers: include/eagerflow/dist (users' include path)
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]')


def module_of_include(path, own):
    parts = path.split("/")
    if parts[0] == "eagerflow" and len(parts) > 2:
        return parts[1]
    if len(parts) > 1 and parts[0] in LEVEL:  # "ops/primitives.h" from src/
        return parts[0]
    return None if len(parts) > 1 else own  # "foo.h": the same folder


def upward_includes(root):
    found = set()
    for base, depth in (("src", 1), (os.path.join("include", "eagerflow"), 2)):
        top = os.path.join(root, base)
        for folder, _, files in os.walk(top):
            rel = os.path.relpath(folder, top).split(os.sep)
            own = rel[0]
            if own not in LEVEL:
                continue
            for name in sorted(files):
                source = os.path.join(folder, name)
                with open(source, encoding="utf-8", errors="replace") as f:
                    for line in f:
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = module_of_include(m.group(1), own)
                        if target in LEVEL and LEVEL[target] > LEVEL[own]:
                            found.add(f"{os.path.relpath(source, root)} -> {target}")
    return found


def main():
    root = sys.argv[1]
    found = upward_includes(root)
    if "--print" in sys.argv:
        print("\n".join(sorted(found)))
        return 0
    listed_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "known_upward_includes.txt")
    with open(listed_path, encoding="utf-8") as f:
        listed = {l.strip() for l in f if l.strip() and not l.startswith("#")}
    new, gone = sorted(found - listed), sorted(listed - found)
    for n in new:
        print(f"upward include (a lower module must not include a higher one): {n}")
    for g in gone:
        print(f"fixed, remove its line from {listed_path}: {g}")
    print(f"{len(found)} upward includes, {len(listed)} known, {len(new)} new, {len(gone)} gone")
    return 1 if new or gone else 0


if __name__ == "__main__":
    sys.exit(main())
