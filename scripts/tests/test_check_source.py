#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TAP: scripts/check-source.py's finder of programs embedded in shell:
the forms it must find, with their length, and what it must leave."""

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "formats"))
from tap import Tap  # noqa: E402

CHECK = os.path.join(HERE, "..", "check-source.py")
spec = importlib.util.spec_from_file_location("check_source", CHECK)
cs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cs)


def body(n):
    return "".join("\tx%d = %d\n" % (i, i) for i in range(n))


# text -> the (interpreter, lines) the finder must report
CASES = [
    ("python3 - a b <<'EOF'\n" + body(12) + "EOF\n", [("python3", 12)]),
    ("out=$(python3 - \"$1\" <<EOF\n" + body(3) + "EOF\n)\n", [("python3", 3)]),
    ("x=1; awk <<-END\n" + body(4) + "\tEND\n", [("awk", 4)]),
    ("awk -v a=1 '\n" + body(10) + "' file > out\n", [("awk", 10)]),
    ("v=$(awk -v a=1 \\\n\t-v b=2 '\n" + body(5) + "\t}' f)\n",
     [("awk", 6)]),
    ("python3 -c 'import sys\n" + body(2) + "'\n", [("python3", 2)]),
    ("perl -e 'print 1;\n" + body(1) + "'\n", [("perl", 1)]),
    # closed on its line, or not an interpreter: nothing
    ("awk -F, '/x/ { print $1 }' f\nawk '{ n++ }' g\n", []),
    ("echo 'awk is a tool'\ncat <<'EOF'\n" + body(20) + "EOF\n", []),
    ("tap_diag \"awk done\"\n", []),
    # a here-document of data for awk is not its program
    ("cat <<-END | awk '{ print }'\n" + body(12) + "\tEND\n", []),
]

tap = Tap()
for text, want in CASES:
    got = [(k, n) for _, k, n in cs.embedded_programs(text)]
    tap.ok(got == want, "%r: %r" % (text.split("\n")[0], want),
           ["got %r" % (got,)])
# the finder moves past a program: two in a row are both found
two = "awk '\n" + body(2) + "'\npython3 - <<'PY'\n" + body(11) + "PY\n"
got = [(ln, k, n) for ln, k, n in cs.embedded_programs(two)]
tap.ok(got == [(1, "awk", 2), (5, "python3", 11)],
       "two programs in a row, at their lines", ["got %r" % (got,)])
sys.exit(tap.done())
