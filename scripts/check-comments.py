#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check-comments.py [TOP]: TAP.  Comments say why, not what was measured
when: no comment in the tree's code, scripts, build and packaging files
carries a date, a tally of runs or boots, how loaded the machine was, a
value it replaced ("was N", "A -> B" of two decimals) or an issue
number.  The numbers live in docs/benchmarks.md, their history in git.

Comments are read per language: /* */ and // in C (.c, .h), # in shell,
Python, awk, make and the configuration files, -- in Lua and SQL, the
docstrings of Python, and the added and kept lines of the patches
(kernel/patches, scripts/vm/qemu/patches) by the language of the file
they patch.  Documents (*.md, docs/) are not code and are not read.
"""

import io
import os
import re
import subprocess
import sys
import tokenize

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "formats"))
from tap import Tap  # noqa: E402

# What a comment must not carry, each with the rule it breaks.
RULES = [
    ("a date", re.compile(
        r"\b20\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])\b")),
    ("a tally of runs", re.compile(
        r"\b\d[\d ,]*\s+(?:\w+\s+)?(?:runs|boots)\b"
        r"|\b\d+\s+of\s+\d+\s+(?:runs|boots)\b"
        r"|\b(?:once|twice|\d+\s+times?)\s+in\s+(?:~|about\s+)?\d+\s+"
        r"(?:\w+\s+)?(?:runs|boots)\b", re.I)),
    ("a load average", re.compile(
        r"\bloaded\s+~?\d+(?:\.\d+)?\s*x\b|\bload\s+average\b"
        r"|\bloadavg\b|\bload\s+(?:of\s+)?~?\d+(?:\.\d+)?\s*x\b", re.I)),
    ("a value it replaced", re.compile(
        r"[(;,]\s*was\s+~?\d|\b\d+\.\d+\s*->\s*\d+\.\d+", re.I)),
    ("an issue number", re.compile(r"\bissues?\s+#?\d+\b", re.I)),
]

HASH_EXT = (".sh", ".bash", ".py", ".mk", ".awk", ".service", ".rules",
            ".conf", ".dkms", ".config", ".in", ".install", ".txt")
HASH_NAMES = ("Makefile", "Kbuild", "Kconfig", "rules", "series")
DASH_EXT = (".lua", ".sql")
C_EXT = (".c", ".h")


def tracked(top):
    out = subprocess.run(["git", "-C", top, "ls-files", "-z"],
                         stdout=subprocess.PIPE, check=True).stdout
    return sorted(x for x in out.decode().split("\0")
                  if x and os.path.isfile(os.path.join(top, x)))


def language(path, first_line):
    base = os.path.basename(path)
    if path.endswith(C_EXT):
        return "c"
    if path.endswith(".py") or (first_line.startswith("#!") and
                                "python" in first_line):
        return "py"
    if path.endswith(HASH_EXT) or base in HASH_NAMES or \
            first_line.startswith("#!") or \
            path.startswith("packaging/bash-completion/") or \
            path.startswith("packaging/logrotate/"):
        return "hash"
    if path.endswith(DASH_EXT):
        return "dash"
    if path.endswith(".patch"):
        return "patch"
    return None


def c_comments(text, first=1):
    """(line, text) of every comment line of a C source."""
    res, i, n, line = [], 0, len(text), first
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k, part in enumerate(text[i:j].split("\n")):
                res.append((line + k, part))
            line += text.count("\n", i, j)
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            res.append((line, text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            if c == "\n":
                line += 1
            i += 1
    return res


def quotes_closed(s):
    """Whether S leaves no ' or " string open (a # after it starts a
    comment)."""
    q = None
    i = 0
    while i < len(s):
        c = s[i]
        if q is None and c == "\\":
            i += 2
            continue
        if q is None and c in "\"'":
            q = c
        elif q == c:
            q = None
        elif q == '"' and c == "\\":
            i += 1
        i += 1
    return q is None


def hash_comments(text, first=1, mark="#"):
    """(line, text) of the comments of a shell-like file: whole comment
    lines, and a MARK after a blank outside quotes."""
    res = []
    for k, line in enumerate(text.split("\n")):
        s = line.lstrip()
        if k == 0 and first == 1 and s.startswith("#!"):
            continue
        if s.startswith(mark):
            res.append((first + k, s))
            continue
        for m in re.finditer(r"\s%s" % re.escape(mark), line):
            if quotes_closed(line[:m.start()]):
                res.append((first + k, line[m.start():]))
                break
    return res


def py_comments(text):
    """(line, text) of the comments and docstrings of a Python source."""
    res = []
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return hash_comments(text)
    prev = tokenize.NEWLINE
    for t in toks:
        if t.type == tokenize.COMMENT:
            res.append((t.start[0], t.string))
        elif t.type == tokenize.STRING and prev in (
                tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                tokenize.NL, tokenize.ENCODING):
            for k, part in enumerate(t.string.split("\n")):
                res.append((t.start[0] + k, part))
        if t.type not in (tokenize.COMMENT, tokenize.NL):
            prev = t.type
    return res


def patch_comments(text):
    """The comments of the added and kept lines of a patch, read in the
    language of the file each hunk patches; the message above the first
    diff is a commit message, not code."""
    res, chunk, lang, start = [], [], None, 0

    def flush():
        body = "\n".join(x for _, x in chunk)
        if lang and chunk:
            got = comments_of(lang, body)
            res.extend((chunk[0][0] + ln - 1, t) for ln, t in got)

    for k, line in enumerate(text.split("\n"), 1):
        if line.startswith("diff --git "):
            flush()
            chunk = []
            target = line.split(" b/", 1)[-1]
            lang = language(target, "")
            lang = "hash" if lang == "py" else lang
            continue
        if lang is None or line.startswith(("+++", "---", "@@", "index ")):
            continue
        if line.startswith(("+", " ")):
            if not chunk:
                start = k
            chunk.append((start + len(chunk), line[1:]))
    flush()
    return res


def comments_of(lang, text):
    if lang == "c":
        return c_comments(text)
    if lang == "py":
        return py_comments(text)
    if lang == "hash":
        return hash_comments(text)
    if lang == "dash":
        return hash_comments(text, mark="--")
    return []


def comments(top, path):
    with open(os.path.join(top, path), errors="replace") as fh:
        text = fh.read()
    if "\0" in text:
        return []
    lang = language(path, text.split("\n", 1)[0])
    if lang == "patch":
        return patch_comments(text)
    return comments_of(lang, text)


def skipped(path):
    return path.startswith("docs/") or path.endswith(".md") or \
        path == "debian/changelog"


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else \
        os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tap = Tap()
    hits = {name: [] for name, _ in RULES}
    files = [p for p in tracked(top) if not skipped(p)]
    read = 0
    for path in files:
        got = comments(top, path)
        read += 1 if got else 0
        for line, text in got:
            for name, rx in RULES:
                m = rx.search(text)
                if not m:
                    continue
                hits[name].append("%s:%d: %s" %
                                  (path, line, text.strip()[:160]))
    for name, _ in RULES:
        tap.ok(not hits[name], "no comment carries %s (%d files with "
               "comments)" % (name, read), "\n".join(hits[name]))
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
