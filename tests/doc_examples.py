#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every C and Python code block of the README and docs/ is a whole program: compile it (C),
run it at 2 ranks under mpiexec, and require exit status 0 and a line "rank N ... ok" from
each rank (the programs check their own values and print that only when right). Shell
blocks (```sh) are commands, not run here.

  doc_examples.py LANG SOURCE_DIR LIBGMPI GMPI_INCLUDE_DIR CC_OR_PYTHON MPIEXEC [flags...]

LANG is c or python. Exit 77 (ctest: skipped, reason printed) when PYTHON lacks numpy."""
import glob
import os
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```([A-Za-z0-9_+-]*)[^\n]*\n(.*?)^```", re.M | re.S)
# A rank's verdict: "rank N ... ok" at the end of its line -- or right before another rank's
# "rank " when mpiexec forwarded two ranks' output without the newline between (seen in CI).
OK_LINE = re.compile(r"rank (\d+)\b[^\n]*?\bok(?=$|rank )", re.M)
RANKS = 2


def blocks(src, lang):
    files = [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "docs", "*.md")))
    files.append(os.path.join(src, "python", "README.md"))
    for path in files:
        if not os.path.exists(path):
            continue
        text = open(path, encoding="utf-8").read()
        for m in FENCE.finditer(text):
            if m.group(1) == lang:
                line = text.count("\n", 0, m.start()) + 1
                yield "%s:%d" % (os.path.relpath(path, src), line), m.group(2)


def run(cmd, env, what):
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=120)
    except subprocess.TimeoutExpired as e:
        return 124, "%s: killed after 120 s\n%s" % (what, e.output or "")
    return p.returncode, p.stdout


def main():
    lang, src, libgmpi, include, tool, mpiexec = sys.argv[1:7]
    flags = sys.argv[7:]
    env = dict(os.environ, GMPI_TIMEOUT="30")
    if lang == "python":
        rc, out = run([tool, "-c", "import numpy"], env, "numpy")
        if rc != 0:
            print("doc_examples: SKIP: %s has no numpy (scripts/install-deps makes .venv)" % tool)
            return 77
        env.update(GMPI_LIBRARY=libgmpi, PYTHONPATH=os.path.join(src, "python"))
    found = list(blocks(src, lang))
    if not found:
        print("doc_examples: no %s blocks found in README.md or docs/: nothing checked" % lang)
        return 1
    failures = skipped = 0
    work = tempfile.mkdtemp(prefix="gmpi-doc-")
    has_jax = lang == "python" and run([tool, "-c", "import jax"], env, "jax")[0] == 0
    for n, (where, code) in enumerate(found):
        if lang == "python" and "import jax" in code and not has_jax:
            print("doc_examples: SKIP: %s needs jax, which %s lacks (scripts/install-deps "
                  "installs it on Python 3.11+)" % (where, tool))
            skipped += 1
            continue
        if lang == "c":
            prog = os.path.join(work, "ex%d.c" % n)
            exe = os.path.join(work, "ex%d" % n)
            open(prog, "w").write(code)
            libdir = os.path.dirname(libgmpi)
            cc_env = dict(env, OMPI_CC=tool, MPICH_CC=tool)
            rc, out = run(["mpicc", "-std=c11", "-Wall", "-Wextra", "-Werror",
                           "-I" + os.path.join(src, "include"), "-I" + include, prog,
                           "-o", exe, "-L" + libdir, "-lgmpi", "-Wl,-rpath," + libdir],
                          cc_env, "compile")
            if rc != 0:
                print("doc_examples: FAIL: %s does not compile:\n%s" % (where, out))
                failures += 1
                continue
            cmd = [exe]
        else:
            prog = os.path.join(work, "ex%d.py" % n)
            open(prog, "w").write(code)
            cmd = [tool, prog]
        rc, out = run([mpiexec, "-n", str(RANKS)] + flags + cmd, env, where)
        ranks = sorted(set(int(r) for r in OK_LINE.findall(out)))
        if rc != 0 or ranks != list(range(RANKS)):
            print("doc_examples: FAIL: %s: exit %d, 'rank N ... ok' from ranks %s of %d:\n%s"
                  % (where, rc, ranks, RANKS, out))
            failures += 1
        else:
            print("doc_examples: ok: %s (%s) at %d ranks" % (where, lang, RANKS))
    print("doc_examples: %d of %d %s blocks ok, %d skipped" % (len(found) - failures - skipped,
                                                               len(found), lang, skipped))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
