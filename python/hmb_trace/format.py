# SPDX-License-Identifier: Apache-2.0
"""Constants and layouts of the v1 format (docs/format.md), little-endian."""

import struct
from dataclasses import dataclass

ABI_VERSION = 1
RING_MAGIC = 0x54424D48      # "HMBT"
RECORD_MAGIC = 0x54434552    # "RECT"
RING_HDR_SIZE = 64
RECORD_HDR_SIZE = 32
RECORD_AREA_OFF = 0x40
RECORD_ALIGN = 8
MAX_RECORD_SIZE = 4096
MAX_PAYLOAD = MAX_RECORD_SIZE - RECORD_HDR_SIZE      # 4064
RING_MIN_SIZE = 64
RING_MAX_SIZE = 0x80000000

RING_FLAG_OVERFLOWED = 1 << 0
RING_FLAG_FROZEN = 1 << 1

REC_FLAG_WRAP_MARKER = 1 << 0
REC_FLAG_TRUNCATED = 1 << 1
REC_FLAGS_KNOWN = REC_FLAG_WRAP_MARKER | REC_FLAG_TRUNCATED

# magic, version, ring_size, record_area_off, head, tail, flags, reserved0,
# reserved1..3
RING_HDR = struct.Struct("<IIIIQQIIQQQ")
# magic, seq, ts_ns, opcode, cpu, flags, payload_len, reserved0, reserved1
RECORD_HDR = struct.Struct("<IIQHBBHHQ")
assert RING_HDR.size == RING_HDR_SIZE and RECORD_HDR.size == RECORD_HDR_SIZE

KIND_DATA = "data"
KIND_MARKER = "marker"
KIND_IGNORED = "ignored"


def record_size(payload_len):
    """Bytes a record with payload_len payload bytes occupies (padded)."""
    return RECORD_HDR_SIZE + ((payload_len + RECORD_ALIGN - 1)
                              & ~(RECORD_ALIGN - 1))


class FormatError(Exception):
    """Bad input: where (byte offset in the file) and why.  code is the
    error's name in docs/format.md and libhmbtrace ("HMB_E_REC_MAGIC")."""

    def __init__(self, name, offset, reason, code="HMB_E_INVAL"):
        super().__init__("%s: offset %d: %s" % (name, offset, reason))
        self.name = name
        self.offset = offset
        self.reason = reason
        self.code = code


@dataclass
class Record:
    seq: int
    ts_ns: int
    opcode: int
    cpu: int
    flags: int
    payload_len: int
    payload: bytes
    offset: int          # file offset (dump) or ring cursor (ring image)
    raw_len: int         # header + payload + padding
    kind: str

    def as_dict(self):
        """The keys and values of one decode --format jsonl line."""
        return {"seq": self.seq, "ts_ns": self.ts_ns, "opcode": self.opcode,
                "cpu": self.cpu, "flags": self.flags,
                "payload_len": self.payload_len,
                "payload": self.payload.hex()}


def classify(flags):
    """The marker bit wins over unknown bits (docs/format.md)."""
    if flags & REC_FLAG_WRAP_MARKER:
        return KIND_MARKER
    if flags & ~REC_FLAGS_KNOWN:
        return KIND_IGNORED
    return KIND_DATA
