# SPDX-License-Identifier: Apache-2.0
"""NVMe Persistent Event Logs (log page 0Dh) written from the NVMe base
specification's layout, with the values each field was given, for the
tests of `hmb-trace-analyze pel` (pel-tests.py) and its cross-check
against nvme-cli (pel-nvmecli.py).  Written apart from the C tests'
builder (user/nvme/tests/pelbuild.h): two constructions of one layout.
"""

import os
import shutil
import struct
import subprocess

TS0 = 1700000000000          # ms since the epoch
ORIGIN_HOST = 1 << 49        # timestamp origin 1: set by Set Features
SYNCH = 1 << 48


def ts(ms, origin=1, synch=False):
    return ms | (origin << 49) | (SYNCH if synch else 0)


def header(tnev, tll, gen=5, sn=b"SN-PY-0042", mn=b"Python PEL Model",
           nqn=b"nqn.2014-08.org.example:pel", lhl=492, lid=0x0D,
           seb=(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 0xDE),
           when=ts(TS0 + 123), poh=(7777, 0), pcc=99, rci=(1 << 18) | 7):
    h = bytearray(512)
    struct.pack_into("<B3xIQBxH", h, 0, lid, tnev, tll, 3, lhl)
    struct.pack_into("<QQQQHH", h, 20, when, poh[0], poh[1], pcc, 0x144D,
                     0x144E)
    h[56:76] = sn.ljust(20, b" ")
    h[76:116] = mn.ljust(40, b" ")
    h[116:116 + len(nqn)] = nqn
    struct.pack_into("<HI", h, 372, gen, rci)
    for t in seb:
        h[480 + t // 8] |= 1 << (t % 8)
    return h


def event(etype, when, data, vsi=b"", cntlid=1, ehl=21, pelpid=0):
    e = bytearray(3 + ehl)
    struct.pack_into("<BBBBHQH", e, 0, etype, 2, ehl, 0, cntlid, when,
                     pelpid)
    struct.pack_into("<HH", e, 20, len(vsi), len(vsi) + len(data))
    return bytes(e) + bytes(vsi) + bytes(data)


def log(events, pad=0, **kw):
    """The log of @events (bytes each), TLL counting @pad bytes more."""
    body = b"".join(events)
    tll = 512 + len(body) + pad
    return bytes(header(len(events), tll, **kw)) + body + bytes(pad)


def fw(s):
    return s.ljust(8, b" ")


def all_types():
    """(events, expected): one event of each type 01h-0Dh and DEh; the
    expected `fields` of each as `pel -j` should give them."""
    ev, want = [], []

    def add(t, data, fields, vsi=b""):
        ev.append(event(t, ts(TS0 + 1000 * (len(ev) + 1)), data, vsi))
        want.append((t, fields))

    smart = bytearray(512)
    struct.pack_into("<BHBBBB", smart, 0, 0x04, 330, 90, 5, 17, 1)
    counters = [(3, 0), (1 << 63, 2), (10, 0), (20, 0), (30, 0), (40, 0),
                (50, 0), (60, 0), (70, 0), (80, 0)]
    for i, (lo, hi) in enumerate(counters):
        struct.pack_into("<QQ", smart, 32 + 16 * i, lo, hi)
    struct.pack_into("<II8H4I", smart, 192, 11, 22, 300, 0, 0, 0, 0, 0, 0,
                     333, 1, 2, 3, 4)
    names = ["data_units_read", "data_units_written", "host_read_commands",
             "host_write_commands", "controller_busy_time", "power_cycles",
             "power_on_hours", "unsafe_shutdowns", "media_errors",
             "num_err_log_entries"]
    f = {"critical_warning": 4, "temperature_k": 330, "avail_spare": 90,
         "spare_thresh": 5, "percent_used": 17,
         "endurance_grp_critical_warning_summary": 1}
    for n, (lo, hi) in zip(names, counters):
        f[n] = str(lo | hi << 64)
    f.update({"warning_temp_time": 11, "critical_comp_time": 22})
    for i, v in enumerate([300, 0, 0, 0, 0, 0, 0, 333]):
        f["temp_sensor_%d" % (i + 1)] = v
    f.update({"thm_temp1_trans_count": 1, "thm_temp2_trans_count": 2,
              "thm_temp1_total_time": 3, "thm_temp2_total_time": 4})
    add(0x01, smart, f)
    add(0x02, fw(b"FW10") + fw(b"FW11") + struct.pack("<BBBBH", 1, 3, 0,
                                                      0, 0x55),
        {"old_fw_rev": "FW10", "new_fw_rev": "FW11", "fw_commit_action": 1,
         "fw_slot": 3, "sct_fw": 0, "sc_fw": 0, "vu_fw_commit_rc": 0x55})
    add(0x03, struct.pack("<QQ", ts(TS0 - 60000, origin=0, synch=True),
                          4242),
        {"prev_timestamp_ms": TS0 - 60000, "prev_timestamp_synch": 1,
         "prev_timestamp_origin": 0, "ms_since_reset": 4242})
    resets = [(3, 1, 0, 100, 5000, ts(TS0 + 3400)),
              (4, 0, 1, 101, 6000, ts(TS0 + 3500, origin=0))]
    data = fw(b"FW11")
    entries = []
    for cid, fa, op, cyc, on_ms, cts in resets:
        data += struct.pack("<HBB12xIQQ", cid, fa, op, cyc, on_ms, cts)
        entries.append({"ctrl_id": cid, "fw_act": fa, "op_in_prog": op,
                        "ctrl_power_cycle": cyc, "power_on_ms": on_ms,
                        "ctrl_timestamp_ms": cts & ((1 << 48) - 1),
                        "ctrl_timestamp_synch": 0,
                        "ctrl_timestamp_origin": cts >> 49 & 7})
    add(0x04, data, {"fw_rev": "FW11", "entries": entries})
    add(0x05, struct.pack("<H2x", 0x0303) + b"\x01\x02",
        {"hw_err_code": 0x0303, "additional_info": "0102"})
    ns = bytearray(48)
    struct.pack_into("<I4xQ8xQBBBxIH2xI", ns, 0, 0x1, 1 << 21, 1 << 20, 2,
                     0, 0, 7, 1, 9)
    add(0x06, ns, {"nsmgt_cdw10": 1, "nsze": 1 << 21, "nscap": 1 << 20,
                   "flbas": 2, "dps": 0, "nmic": 0, "ana_grp_id": 7,
                   "nvmset_id": 1, "nsid": 9})
    add(0x07, struct.pack("<IB3xI", 9, 2, 0x200),
        {"nsid": 9, "fna": 2, "format_nvm_cdw10": 0x200})
    add(0x08, struct.pack("<IBBHI", 9, 100, 0, 1, 0),
        {"nsid": 9, "smallest_fpi": 100, "format_nvm_status": 0,
         "compln_info": 1, "status_field": 0})
    add(0x09, struct.pack("<III", 0x3, 0x1, 0x0),
        {"sanicap": 3, "sani_cdw10": 1, "sani_cdw11": 0})
    add(0x0A, struct.pack("<HHH2x", 0xFFFF, 0x0001, 0),
        {"sani_prog": 0xFFFF, "sani_status": 1, "compln_info": 0})
    add(0x0B, struct.pack("<IIIIII", 3 | 0 << 3 | 0 << 16, 0x80000007, 0x10,
                          0x20, 0, 0)[:16],
        {"layout": 3, "logged_dwords": 3, "logged_mem_bytes": 0,
         "fid": 7, "cdw10": 0x80000007, "cdw11": 0x10, "cdw12": 0x20})
    tel = bytearray(512)
    struct.pack_into("<B4x3sHHH", tel, 0, 0x08, b"\x00\x25\x38", 10, 20, 30)
    tel[382], tel[383] = 1, 9
    add(0x0C, tel, {"telemetry_lid": 8, "ieee_oui": "002538",
                    "data_area_1_last_block": 10,
                    "data_area_2_last_block": 20,
                    "data_area_3_last_block": 30,
                    "ctrl_data_available": 1, "ctrl_data_gen": 9})
    add(0x0D, bytes([3, 75]), {"over_temp": 3, "threshold": 75})
    add(0xDE, struct.pack("<HBBH", 0x10, 1, 0, 4) + b"boot" +
        struct.pack("<HBBH", 0x11, 4, 1, 0),
        {"entries": [{"vs_event_code": 0x10, "vs_data_type": 1,
                      "uuid_index": 0, "vs_data": b"boot".hex()},
                     {"vs_event_code": 0x11, "vs_data_type": 4,
                      "uuid_index": 1, "vs_data": ""}]})
    return ev, want


def build_shim(workdir):
    """nvme-getlog-shim.so built into @workdir with gcc: (path, None), or
    (None, why)."""
    cc = shutil.which("gcc")
    if not cc:
        return None, "no gcc"
    here = os.path.dirname(os.path.abspath(__file__))
    so = os.path.join(workdir, "nvme-getlog-shim.so")
    b = subprocess.run([cc, "-std=gnu11", "-Wall", "-Wextra", "-Werror",
                        "-D_GNU_SOURCE", "-shared", "-fPIC", "-o", so,
                        os.path.join(here, "nvme-getlog-shim.c"), "-ldl"],
                       stderr=subprocess.PIPE)
    return (so, None) if b.returncode == 0 else (None, b.stderr.decode())


def shim_env(shim, log_file, **extra):
    """The environment that makes @shim answer from @log_file (ASan's
    check that its runtime comes first is off: the shim is preloaded)."""
    env = dict(os.environ, LD_PRELOAD=shim, PEL_SHIM_FILE=log_file,
               PEL_SHIM_LID="0x0d", ASAN_OPTIONS="verify_asan_link_order=0")
    env.update(extra)
    return env


def shim_cmds(stderr):
    """(lsp, offset, len) of each Get Log Page the shim logged."""
    out = []
    for x in stderr.decode().splitlines():
        if x.startswith("shim: opc 0x02 "):
            w = x.split()
            out.append((int(w[6]), int(w[8]), int(w[10])))
    return out
