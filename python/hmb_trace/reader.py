# SPDX-License-Identifier: Apache-2.0
"""Readers of dump streams ("RECT") and ring images ("HMBT").

The dialect is decided by the first four bytes (format.md 12.3): "HMBT" is
a ring
image, "RECT" a dump, an empty file an empty dump, anything else an error
(a file shorter than four bytes takes the dialect whose magic it begins).
Dumps are read in chunks, so memory stays bounded whatever the file size.
A ring image yields the records from tail to head; offsets are file
offsets (0x40 + ring offset), as in dumps.
"""

import io
import sys

from .format import (RECORD_HDR, RING_HDR, ABI_VERSION, RECORD_HDR_SIZE,
                     RING_HDR_SIZE, RECORD_AREA_OFF, MAX_PAYLOAD,
                     REC_FLAG_WRAP_MARKER, RING_MIN_SIZE, RING_MAX_SIZE,
                     KIND_MARKER, RECORD_MAGIC, FormatError, Record,
                     classify, record_size)

_TOP = 1 << 64        # cursors count modulo 2^64
CHUNK = 1 << 20
RECT = b"RECT"
HMBT = b"HMBT"


def _check_header(name, offset, fields):
    magic, _seq, _ts, _op, _cpu, flags, plen, _r0, _r1 = fields
    if magic != RECORD_MAGIC:
        raise FormatError(name, offset, "bad record magic 0x%08x" % magic,
                          "HMB_E_REC_MAGIC")
    if plen > MAX_PAYLOAD:
        raise FormatError(name, offset, "payload_len %d over %d"
                          % (plen, MAX_PAYLOAD), "HMB_E_REC_LEN")
    if flags & REC_FLAG_WRAP_MARKER and plen:
        raise FormatError(name, offset, "wrap marker with payload_len %d"
                          % plen, "HMB_E_MARKER_PAYLOAD")


def _record(fields, payload, offset):
    _magic, seq, ts, op, cpu, flags, plen, _r0, _r1 = fields
    return Record(seq=seq, ts_ns=ts, opcode=op, cpu=cpu, flags=flags,
                  payload_len=plen, payload=bytes(payload), offset=offset,
                  raw_len=record_size(plen), kind=classify(flags))


class Reader:
    """Iterate the records of one trace file (any kind, stream order).

    dialect is None until the first bytes were read, then "dump" or
    "ring"; ring holds the ring header's fields once it was validated."""

    def __init__(self, f, name):
        self.f = f
        self.name = name
        self.dialect = None
        self.ring = None

    def __iter__(self):
        first = self._read(4)
        if not first or RECT.startswith(first[:4]):
            self.dialect = "dump"
            yield from self._dump(first)
        elif HMBT.startswith(first[:4]):
            self.dialect = "ring"
            yield from self._ring(first + self.f.read())
        else:
            m = (first + b"\0\0\0")[:4]
            raise FormatError(self.name, 0, "unknown file magic %02x %02x "
                              "%02x %02x: neither a dump (RECT) nor a ring "
                              "image (HMBT)" % tuple(m),
                              "HMB_E_UNKNOWN_MAGIC")

    def _read(self, n):
        out = b""
        while len(out) < n:
            b = self.f.read(n - len(out))
            if not b:
                break
            out += b
        return out

    def _dump(self, first):
        buf = bytearray(first)
        pos = 0             # file offset of buf[0]
        i = 0
        eof = False
        while True:
            if len(buf) - i < 2 * 4096 and not eof:
                del buf[:i]
                pos += i
                i = 0
                more = self.f.read(CHUNK)
                if more:
                    buf += more
                    continue
                eof = True
            avail = len(buf) - i
            if avail == 0:
                return
            off = pos + i
            if avail < RECORD_HDR_SIZE:
                raise FormatError(self.name, off, "truncated record header "
                                  "(%d of %d bytes)" % (avail,
                                                        RECORD_HDR_SIZE),
                                  "HMB_E_TRUNC_HDR")
            fields = RECORD_HDR.unpack_from(buf, i)
            _check_header(self.name, off, fields)
            size = record_size(fields[6])
            if avail < size:
                raise FormatError(self.name, off, "truncated record payload "
                                  "(%d of %d bytes)" % (avail, size),
                                  "HMB_E_TRUNC_PAYLOAD")
            p = i + RECORD_HDR_SIZE
            yield _record(fields, buf[p:p + fields[6]], off)
            i += size

    def _ring(self, data):
        name = self.name
        if len(data) < RING_HDR_SIZE:
            raise FormatError(name, len(data), "ring image of %d bytes is "
                              "shorter than its 64-byte header" % len(data),
                              "HMB_E_RING_SHORT")
        (magic, version, size, area_off, head, tail, flags,
         _r0, _r1, _r2, _r3) = RING_HDR.unpack_from(data, 0)
        if version != ABI_VERSION:
            raise FormatError(name, 4, "ring version %d is not supported"
                              % version, "HMB_E_RING_VERSION")
        if (size & (size - 1) or size < RING_MIN_SIZE or
                size > RING_MAX_SIZE):
            raise FormatError(name, 8, "bad ring_size %d" % size,
                              "HMB_E_RING_SIZE")
        if area_off != RECORD_AREA_OFF:
            raise FormatError(name, 12, "bad record_area_off 0x%x"
                              % area_off, "HMB_E_RING_AREA_OFF")
        if len(data) < RECORD_AREA_OFF + size:
            raise FormatError(name, len(data), "ring image shorter than "
                              "header + ring_size", "HMB_E_RING_SHORT")
        if tail % 8:
            raise FormatError(name, 0x18, "tail %d not 8-byte aligned"
                              % tail, "HMB_E_HEAD_MISALIGNED")
        if head % 8:
            raise FormatError(name, 0x10, "head %d not 8-byte aligned"
                              % head, "HMB_E_HEAD_MISALIGNED")
        # Cursors are byte counters modulo 2^64 (format.md section 4):
        # head may have wrapped past 0 while tail has not.  Compare
        # distances only.
        if (head - tail) % _TOP >= 1 << 63:
            raise FormatError(name, 0x10, "head %d behind tail %d"
                              % (head, tail), "HMB_E_HEAD_BACKWARDS")
        if (head - tail) % _TOP > size:
            raise FormatError(name, 0x10, "head %d more than ring_size "
                              "ahead of tail %d" % (head, tail),
                              "HMB_E_HEAD_AHEAD")
        self.ring = {"magic": magic, "version": version, "ring_size": size,
                     "record_area_off": area_off, "head": head,
                     "tail": tail, "flags": flags}
        area = memoryview(data)[RECORD_AREA_OFF:RECORD_AREA_OFF + size]
        cur = tail
        mask = size - 1
        while cur != head:
            off = cur & mask
            left = size - off
            avail = (head - cur) % _TOP
            foff = RECORD_AREA_OFF + off     # file offset of this record
            if left < RECORD_HDR_SIZE:
                # Implicit wrap: the rest of the lap holds no record.
                if avail < left:
                    raise FormatError(name, foff, "head %d inside the %d-byte"
                                      " implicit wrap gap" % (head, left),
                                      "HMB_E_HEAD_IN_GAP")
                cur = (cur + left) % _TOP
                continue
            if avail < RECORD_HDR_SIZE:
                raise FormatError(name, foff, "record header extends past "
                                  "head %d" % head, "HMB_E_REC_BEYOND_HEAD")
            fields = RECORD_HDR.unpack_from(area, off)
            _check_header(name, foff, fields)
            rsize = record_size(fields[6])
            if rsize > left:
                raise FormatError(name, foff, "record crosses the end of "
                                  "the lap", "HMB_E_REC_CROSS_LAP")
            if rsize > avail:
                raise FormatError(name, foff, "record extends past head %d"
                                  % head, "HMB_E_REC_BEYOND_HEAD")
            rec = _record(fields, area[off + RECORD_HDR_SIZE:
                                       off + RECORD_HDR_SIZE + fields[6]],
                          foff)
            if rec.kind == KIND_MARKER and avail < left:
                raise FormatError(name, foff, "head %d inside the skip "
                                  "after the wrap marker" % head,
                                  "HMB_E_HEAD_IN_GAP")
            yield rec
            cur = (cur + (left if rec.kind == KIND_MARKER else rsize)) % _TOP


def open_trace(path):
    """A Reader on path ("-" for stdin); the caller iterates it."""
    if path == "-":
        return Reader(sys.stdin.buffer, "<stdin>")
    return Reader(io.open(path, "rb", buffering=CHUNK), path)
