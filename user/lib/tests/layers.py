# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""layers.py LIBDIR: the includes of libhmbtrace respect its layers
(user/lib/README.md): util, format, model, fleet, each using only itself
and the layers before it.  Every source sits in a layer's folder, every
public header belongs to a layer, and no file or public header includes
one of a later layer."""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "tests", "formats"))
from tap import Tap  # noqa: E402

LAYERS = ["util", "format", "model", "fleet"]
# include/: the layer each public header belongs to
PUBLIC = {
    "hmbtrace_util.h": "util",
    "hmbtrace.h": "format",
    "hmbtrace_dict.h": "format",
    "hmbtrace_conform.h": "format",
    "hmbtrace_window.h": "format",
    "hmbtrace_clock.h": "model",
    "hmbtrace_hist.h": "model",
    "hmbtrace_quant.h": "model",
    "hmbtrace_cmd.h": "model",
    "hmbtrace_fwmodel.h": "model",
    "hmbtrace_join.h": "model",
    "hmbtrace_live.h": "model",
    "hmbtrace_ch.h": "fleet",
}
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


def includes(path):
    with open(path, encoding="utf-8") as f:
        return INCLUDE.findall(f.read())


def layer_of(name, own):
    """The layer of an included name seen from layer own's folder, None
    for a system header, "?" for a project header no layer claims."""
    m = re.match(r"\.\./(\w+)/[\w.]+$", name)
    if m:
        return m.group(1) if m.group(1) in LAYERS else "?"
    if name in PUBLIC:
        return PUBLIC[name]
    if "/" not in name and os.path.exists(os.path.join(LIB, own, name)):
        return own
    if name.startswith("hmbtrace") or name.endswith("priv.h") or \
            name == "internal.h":
        return "?"
    return None


def check(t, what, own, names):
    bad = []
    for name in names:
        lay = layer_of(name, own)
        if lay == "?":
            bad.append("%s: no layer" % name)
        elif lay is not None and LAYERS.index(lay) > LAYERS.index(own):
            bad.append("%s: layer %s" % (name, lay))
    t.ok(not bad, "%s includes no layer after %s" % (what, own), bad)


LIB = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                      os.path.join(os.path.dirname(__file__), ".."))
t = Tap()
loose = sorted(f for f in os.listdir(LIB) if f.endswith((".c", ".h")))
t.ok(not loose, "every source is in a layer's folder", loose)
dirs = sorted(d for d in os.listdir(LIB)
              if os.path.isdir(os.path.join(LIB, d)) and
              d not in ("include", "tests"))
t.eq(dirs, sorted(LAYERS), "the folders are the layers")
hdrs = sorted(os.listdir(os.path.join(LIB, "include")))
t.eq(hdrs, sorted(PUBLIC), "every public header has its layer")
for h in hdrs:
    if h in PUBLIC:
        check(t, "include/" + h, PUBLIC[h],
              includes(os.path.join(LIB, "include", h)))
for lay in LAYERS:
    for f in sorted(os.listdir(os.path.join(LIB, lay))):
        if f.endswith((".c", ".h")):
            check(t, "%s/%s" % (lay, f), lay,
                  includes(os.path.join(LIB, lay, f)))
sys.exit(t.done())
