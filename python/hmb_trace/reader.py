# SPDX-License-Identifier: Apache-2.0
"""Readers of dump streams ("RECT") and ring images ("HMBT").

The dialect is decided by the first four bytes (D5): "HMBT" is a ring
image, "RECT" a dump, an empty file an empty dump, anything else an error.
Dumps are read in chunks, so memory stays bounded whatever the file size.
"""

import io

from .format import (RECORD_HDR, RING_HDR, RECORD_MAGIC, RING_MAGIC,
                     ABI_VERSION, RECORD_HDR_SIZE, RING_HDR_SIZE,
                     RECORD_AREA_OFF, MAX_PAYLOAD, REC_FLAG_WRAP_MARKER,
                     RING_MIN_SIZE, RING_MAX_SIZE, KIND_MARKER,
                     FormatError, Record, classify, record_size)

CHUNK = 1 << 20


def _check_header(name, offset, fields):
    magic, _seq, _ts, _op, _cpu, flags, plen, _r0, _r1 = fields
    if magic != RECORD_MAGIC:
        raise FormatError(name, offset, "bad record magic 0x%08x" % magic)
    if plen > MAX_PAYLOAD:
        raise FormatError(name, offset,
                          "payload_len %d over %d" % (plen, MAX_PAYLOAD))
    if flags & REC_FLAG_WRAP_MARKER and plen:
        raise FormatError(name, offset,
                          "wrap marker with payload_len %d" % plen)


def _record(fields, payload, offset):
    _magic, seq, ts, op, cpu, flags, plen, _r0, _r1 = fields
    return Record(seq=seq, ts_ns=ts, opcode=op, cpu=cpu, flags=flags,
                  payload_len=plen, payload=bytes(payload), offset=offset,
                  raw_len=record_size(plen), kind=classify(flags))


class Reader:
    """Iterate the records of one trace file (any kind, stream order)."""

    def __init__(self, f, name, head=b""):
        self.f = f
        self.name = name
        self._head = head
        self.dialect = "dump"
        self.ring = None          # dict of ring header fields (ring images)

    def __iter__(self):
        first = self._head + self._read(4 - len(self._head))
        if len(first) >= 4 and first[:4] == RING_MAGIC.to_bytes(4, "little"):
            self.dialect = "ring"
            data = first + self.f.read()
            yield from self._ring(data)
            return
        if first and (len(first) < 4 or
                      first[:4] != RECORD_MAGIC.to_bytes(4, "little")):
            if len(first) < 4:
                raise FormatError(self.name, 0,
                                  "file of %d bytes is too short for a "
                                  "magic" % len(first))
            raise FormatError(self.name, 0,
                              "unknown magic %r: neither a dump (RECT) nor "
                              "a ring image (HMBT)" % bytes(first[:4]))
        yield from self._dump(first)

    def _read(self, n):
        out = b""
        while len(out) < n:
            b = self.f.read(n - len(out))
            if not b:
                break
            out += b
        return out

    def _dump(self, buf):
        buf = bytearray(buf)
        pos = 0             # position of buf[0] in the file
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
                raise FormatError(self.name, off,
                                  "truncated record header (%d of %d bytes)"
                                  % (avail, RECORD_HDR_SIZE))
            fields = RECORD_HDR.unpack_from(buf, i)
            _check_header(self.name, off, fields)
            size = record_size(fields[6])
            if avail < size:
                raise FormatError(self.name, off,
                                  "truncated record payload (%d of %d bytes)"
                                  % (avail, size))
            p = i + RECORD_HDR_SIZE
            yield _record(fields, buf[p:p + fields[6]], off)
            i += size

    def _ring(self, data):
        name = self.name
        if len(data) < RING_HDR_SIZE:
            raise FormatError(name, len(data), "ring image shorter than "
                              "its 64-byte header")
        (magic, version, size, area_off, head, tail, flags,
         _r0, _r1, _r2, _r3) = RING_HDR.unpack_from(data, 0)
        self.ring = {"ring_size": size, "head": head, "tail": tail,
                     "flags": flags, "version": version}
        if version != ABI_VERSION:
            raise FormatError(name, 4, "ring version %d is not supported"
                              % version)
        if (size & (size - 1) or size < RING_MIN_SIZE or
                size > RING_MAX_SIZE):
            raise FormatError(name, 8, "bad ring_size %d" % size)
        if area_off != RECORD_AREA_OFF:
            raise FormatError(name, 12, "bad record_area_off 0x%x" % area_off)
        if len(data) < RECORD_AREA_OFF + size:
            raise FormatError(name, len(data), "ring image shorter than "
                              "header + ring_size")
        if head % 8 or tail % 8:
            raise FormatError(name, 16, "head or tail not 8-byte aligned")
        if head < tail or head - tail > size:
            raise FormatError(name, 16, "head %d and tail %d out of range"
                              % (head, tail))
        area = memoryview(data)[RECORD_AREA_OFF:RECORD_AREA_OFF + size]
        cur = tail
        mask = size - 1
        while cur < head:
            off = cur & mask
            left = size - off
            foff = RECORD_AREA_OFF + off     # file offset of this record
            if left < RECORD_HDR_SIZE:
                # Implicit wrap: the rest of the lap holds no record (D2).
                if head < cur + left:
                    raise FormatError(name, foff, "head %d inside the %d-byte "
                                      "implicit wrap gap" % (head, left))
                cur += left
                continue
            if head - cur < RECORD_HDR_SIZE:
                raise FormatError(name, foff, "record header extends past "
                                  "head %d" % head)
            fields = RECORD_HDR.unpack_from(area, off)
            _check_header(name, foff, fields)
            rsize = record_size(fields[6])
            if rsize > left:
                raise FormatError(name, foff, "record crosses the end of "
                                  "the lap")
            if cur + rsize > head:
                raise FormatError(name, foff, "record extends past head %d"
                                  % head)
            rec = _record(fields, area[off + RECORD_HDR_SIZE:
                                       off + RECORD_HDR_SIZE + fields[6]],
                          foff)
            if rec.kind == KIND_MARKER and head < cur + left:
                raise FormatError(name, foff, "head %d inside the skip after "
                                  "the wrap marker" % head)
            yield rec
            if rec.kind == KIND_MARKER:
                cur += left
            else:
                cur += rsize


def open_trace(path):
    """A Reader on path ("-" for stdin); the caller iterates it."""
    import sys
    if path == "-":
        return Reader(sys.stdin.buffer, "<stdin>")
    return Reader(io.open(path, "rb", buffering=CHUNK), path)
