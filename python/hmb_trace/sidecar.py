# SPDX-License-Identifier: Apache-2.0
"""The dump's sidecar metadata file "<dump>.meta" (docs/format.md 12.4).

Text, one "key=value" per line; the first line is "hmb_trace_sidecar=1".
Keys: abi_version (refused when > 1), source, ring_size, realtime_ns,
monotonic_ns, boottime_ns, and any number of "epoch=<dump offset>" lines,
each marking where a re-initialised ring's records begin.  Unknown keys are
ignored.
"""

from dataclasses import dataclass, field

from .format import ABI_VERSION, FormatError

MAX_EPOCHS = 4096
_U32 = (1 << 32) - 1
_U64 = (1 << 64) - 1


@dataclass
class Sidecar:
    path: str
    abi_version: int = 0
    source: str = ""
    ring_size: int = 0
    realtime_ns: int = 0
    monotonic_ns: int = 0
    boottime_ns: int = 0
    epochs: list = field(default_factory=list)
    # the sidecar line of each epochs[i], for warnings that name it
    epoch_lines: list = field(default_factory=list)


def _num(path, lineno, key, val, limit):
    if not val or not val.isdigit() or int(val) > limit:
        raise FormatError(path, lineno, "%s=%s is not a valid number"
                          % (key, val), "HMB_E_SIDECAR")
    return int(val)


def read_sidecar(path):
    """Parse path; raises FormatError (offset = line number) on bad input."""
    sc = Sidecar(path)
    have_abi = False
    with open(path, "rb") as f:
        lines = f.read().decode("utf-8", "replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise FormatError(path, 0, "empty sidecar", "HMB_E_SIDECAR")
    first = lines[0]
    if first.startswith("hmb_trace_sidecar="):
        v = first[len("hmb_trace_sidecar="):]
        if v.isdigit() and int(v) > 1:
            raise FormatError(path, 1, "sidecar format %s is newer than "
                              "this decoder (1)" % v,
                              "HMB_E_SIDECAR_VERSION")
    if first != "hmb_trace_sidecar=1":
        raise FormatError(path, 1, "not a sidecar (first line must be "
                          "\"hmb_trace_sidecar=1\")", "HMB_E_SIDECAR")
    for lineno, line in enumerate(lines[1:], start=2):
        if not line:
            continue
        key, eq, val = line.partition("=")
        if not eq:
            raise FormatError(path, lineno, "no '=' in line",
                              "HMB_E_SIDECAR")
        if key == "source":
            sc.source = val
        elif key in ("abi_version", "ring_size"):
            v = _num(path, lineno, key, val, _U32)
            if key == "abi_version":
                if v == 0 or v > ABI_VERSION:
                    raise FormatError(path, lineno, "abi_version %d is not "
                                      "supported (this decoder reads "
                                      "version %d)" % (v, ABI_VERSION),
                                      "HMB_E_SIDECAR_VERSION" if v else
                                      "HMB_E_SIDECAR")
                have_abi = True
            setattr(sc, key, v)
        elif key in ("realtime_ns", "monotonic_ns", "boottime_ns"):
            setattr(sc, key, _num(path, lineno, key, val, _U64))
        elif key == "epoch":
            if len(sc.epochs) >= MAX_EPOCHS:
                raise FormatError(path, lineno, "more than %d epoch lines"
                                  % MAX_EPOCHS, "HMB_E_SIDECAR")
            sc.epochs.append((_num(path, lineno, key, val, _U64), lineno))
    if not have_abi:
        raise FormatError(path, 0, "no abi_version line", "HMB_E_SIDECAR")
    pairs = sorted(sc.epochs)
    sc.epochs = [off for off, _ in pairs]
    sc.epoch_lines = [line for _, line in pairs]
    return sc
