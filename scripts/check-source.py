#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check-source.py spdx|size|embedded [TOP]: tree-wide rules, as TAP.

spdx  Every C file tracked by git (.c, .h) carries on its first line the
      SPDX identifier of its directory's licence, from LICENCES below (the
      longest matching directory wins; a C file in a directory missing from
      the table fails too).  README.md's licence table says the same.
size  In user/, mock/, kernel/ and bpf/ (tests excepted: any path with a tests/
      component): no C file over MAX_FILE_LINES lines and no function over
      MAX_FUNC_LINES lines (from the first line of its declaration to its
      closing brace).
embedded  No shell script embeds a program of MAX_EMBED_LINES lines or more
      (awk, python or perl, as a here-document or a single-quoted
      argument): it belongs in a file of its own, with its name and its
      usage, called with `awk -f` or `python3 FILE`.
"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "formats"))
from tap import Tap  # noqa: E402

# The one table of licences by directory (README.md shows it to people).
LICENCES = {
    "include/uapi/": "GPL-2.0 WITH Linux-syscall-note",
    "kernel/": "GPL-2.0",
    "bpf/": "(GPL-2.0 OR BSD-2-Clause)",
    "user/lib/": "(LGPL-2.1 OR BSD-2-Clause)",
    "user/daemon/": "GPL-2.0",
    "user/agent/": "GPL-2.0",
    "user/conform/": "GPL-2.0",
    "user/nvme/": "(LGPL-2.1 OR BSD-2-Clause)",
    "user/analyze/": "Apache-2.0",
    "mock/": "Apache-2.0",
    "selftests/": "GPL-2.0",
    "tests/": "Apache-2.0",
    "fuzz/": "Apache-2.0",
    "scripts/": "Apache-2.0",
    "python/": "Apache-2.0",
    "docs/": "Apache-2.0",
}

SIZE_DIRS = ("user/", "mock/", "kernel/", "bpf/")
MAX_FILE_LINES = 1000
MAX_FUNC_LINES = 150

MAX_EMBED_LINES = 10
# an interpreter fed a here-document: python3 - <<'EOF', awk <<EOF, ...
# (in command position: at the start, after a pipe, ;, & or $( )
CMD = r"(?:^|[|;&(])\s*"
HEREDOC = re.compile(CMD + r"(python3?|awk|perl)\b.*<<-?\s*[\'\"]?(\w+)")
# an interpreter whose program starts in single quotes: awk -v x=1 '...
QUOTED = re.compile(CMD + r"(awk|python3?\s+-c|perl\s+-e)\b")

SPDX = re.compile(r"SPDX-License-Identifier:\s*(.*?)\s*(\*/)?\s*$")


def c_files(top):
    out = subprocess.run(["git", "-C", top, "ls-files", "*.c", "*.h"],
                         stdout=subprocess.PIPE, check=True).stdout
    return sorted(x for x in out.decode().splitlines()
                  if os.path.exists(os.path.join(top, x)))


def licence_of(path):
    best = None
    for d, lic in LICENCES.items():
        if path.startswith(d) and (best is None or len(d) > len(best[0])):
            best = (d, lic)
    return best


def check_spdx(top, tap):
    bad, unknown = [], []
    files = c_files(top)
    for f in files:
        want = licence_of(f)
        if want is None:
            unknown.append(f)
            continue
        with open(os.path.join(top, f), errors="replace") as fh:
            first = fh.readline()
        m = SPDX.search(first)
        got = m.group(1) if m else None
        if got != want[1]:
            bad.append("%s: line 1 says %s, %s wants %s" %
                       (f, repr(got) if got else "no SPDX identifier",
                        want[0], want[1]))
    tap.ok(not unknown, "every C file lies in a directory of the licence "
           "table (%d files)" % len(files),
           ["%s: no licence for its directory (add it to LICENCES in %s)"
            % (f, os.path.basename(__file__)) for f in unknown])
    tap.ok(not bad, "every C file's SPDX line is its directory's licence",
           bad)


def strip_c(src):
    """Comments, string and character literals and preprocessor lines
    blanked out (newlines kept), so that braces can be counted."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            out.append(c + re.sub(r"[^\n]", " ", src[i + 1:j]) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    lines = "".join(out).split("\n")
    cont = False
    for k, line in enumerate(lines):
        if cont or line.lstrip().startswith("#"):
            cont = line.rstrip().endswith("\\")
            lines[k] = " " * len(line)
    return "\n".join(lines)


def functions(path):
    """(name, first line, last line) of every function definition."""
    with open(path, errors="replace") as fh:
        s = strip_c(fh.read())
    depth, last, start, res = 0, 0, None, []
    for i, c in enumerate(s):
        if c == "{":
            if depth == 0:
                head = s[last:i].strip()
                # a definition: its head ends with the parameter list
                # (and maybe attributes), and it is no initializer
                if re.search(r"\)\s*(\w+\s*(\([^()]*\))?\s*)*$", head) and \
                        "=" not in head.split("(")[0]:
                    m = re.search(r"(\w+)\s*\(", head)
                    off = s.index(head, last)
                    start = (m.group(1) if m else "?",
                             s.count("\n", 0, off) + 1)
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                if start:
                    res.append((start[0], start[1], s.count("\n", 0, i) + 1))
                start, last = None, i + 1
        elif c == ";" and depth == 0:
            last = i + 1
    return res


def check_size(top, tap):
    files = [f for f in c_files(top) if f.startswith(SIZE_DIRS) and
             "tests" not in f.split("/")[:-1]]
    long_files, long_funcs = [], []
    for f in files:
        p = os.path.join(top, f)
        with open(p, errors="replace") as fh:
            n = sum(1 for _ in fh)
        if n > MAX_FILE_LINES:
            long_files.append("%s: %d lines" % (f, n))
        for name, a, b in functions(p):
            if b - a + 1 > MAX_FUNC_LINES:
                long_funcs.append("%s:%d: %s() is %d lines" %
                                  (f, a, name, b - a + 1))
    tap.ok(not long_files, "no C file over %d lines in %s (%d files, tests "
           "excepted)" % (MAX_FILE_LINES, " ".join(SIZE_DIRS), len(files)),
           long_files)
    tap.ok(not long_funcs, "no function over %d lines in %s" %
           (MAX_FUNC_LINES, " ".join(SIZE_DIRS)), long_funcs)


def embedded_programs(text):
    """(line, interpreter, lines) of every program a shell text embeds."""
    lines = text.split("\n")
    res, i = [], 0
    while i < len(lines):
        ln = lines[i]
        h = HEREDOC.search(ln)
        q = QUOTED.search(ln)
        end = None
        if h:
            strip = "<<-" in ln[h.start():]
            for j in range(i + 1, len(lines)):
                if (lines[j].strip() if strip else lines[j]) == h.group(2):
                    end = j
                    break
            kind = h.group(1)
        elif q:
            # the program's quote may open on a continuation line
            k, rest = i, ln[q.end():]
            while rest.rstrip().endswith("\\") and rest.count("'") % 2 == 0 \
                    and k + 1 < len(lines):
                k += 1
                rest = lines[k]
            if rest.count("'") % 2 == 0:
                i += 1
                continue
            for j in range(k + 1, len(lines)):
                if "'" in lines[j]:
                    end = j
                    break
            kind = q.group(1).split()[0]
        if end is not None:
            res.append((i + 1, kind, end - i - 1))
            i = end
        i += 1
    return res


def shell_files(top):
    out = subprocess.run(["git", "-C", top, "ls-files"],
                         stdout=subprocess.PIPE, check=True).stdout
    res = []
    for f in sorted(out.decode().splitlines()):
        p = os.path.join(top, f)
        if not os.path.isfile(p) or f.endswith((".patch", ".md")):
            continue
        if f.endswith(".sh"):
            res.append(f)
            continue
        with open(p, "rb") as fh:
            first = fh.readline(80)
        if first.startswith(b"#!") and re.search(rb"\b(ba|da)?sh\b", first):
            res.append(f)
    return res


def check_embedded(top, tap):
    files = shell_files(top)
    bad = []
    for f in files:
        with open(os.path.join(top, f), errors="replace") as fh:
            for line, kind, n in embedded_programs(fh.read()):
                if n >= MAX_EMBED_LINES:
                    bad.append("%s:%d: %d lines of %s" % (f, line, n, kind))
    tap.ok(not bad, "no shell script embeds a program of %d lines or more "
           "(%d scripts)" % (MAX_EMBED_LINES, len(files)), bad)


CHECKS = {"spdx": check_spdx, "size": check_size, "embedded": check_embedded}


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in CHECKS:
        sys.stderr.write("usage: check-source.py spdx|size|embedded [TOP]\n")
        return 2
    top = sys.argv[2] if len(sys.argv) > 2 else \
        os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tap = Tap()
    CHECKS[sys.argv[1]](top, tap)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
