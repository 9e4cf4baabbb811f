#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Generate the v1 test vectors of docs/format.md, byte for byte.

Standard library only, and independent of the C code: this script has its
own model of the producer rules (docs/format.md "Producer rules") and of
the accounting rules, writes each vector's bytes from that model, and
writes the expected decoding (NAME.json) from the model's own list of
events -- never by decoding the bytes it wrote.

usage: gen.py [OUTDIR]      (default: v1 beside this script)
"""
import os
import struct
import sys

RING_MAGIC = 0x54424D48          # "HMBT"
RECORD_MAGIC = 0x54434552        # "RECT"
HDR = 32
AREA_OFF = 0x40
F_OVERFLOWED = 1
F_FROZEN = 2
R_WRAP = 1
R_TRUNC = 2
R_KNOWN = R_WRAP | R_TRUNC
TOP = 2**64                      # cursors are byte counters modulo 2^64


def align8(n):
    return (n + 7) & ~7


def rec_size(plen):
    return HDR + align8(plen)


def pattern(seq, n):
    return bytes((seq * 7 + i) & 0xFF for i in range(n))


def record_bytes(r):
    """Header + payload + zero padding of record dict r."""
    hdr = struct.pack('<IIQHBBHHQ', r.get('magic', RECORD_MAGIC), r['seq'],
                      r['ts_ns'], r['opcode'], r['cpu'], r['flags'],
                      r['payload_len'], 0, 0)
    pl = r['payload']
    return hdr + pl + bytes(rec_size(len(pl)) - HDR - len(pl))


def mkrec(seq, ts, payload=b'', opcode=1, cpu=0, flags=0):
    return {'seq': seq, 'ts_ns': ts, 'opcode': opcode, 'cpu': cpu,
            'flags': flags, 'payload_len': len(payload), 'payload': payload}


class Ring:
    """The producer rules, modelled directly on a bytearray."""

    def __init__(self, size, first_seq=0, fill=0, start=0):
        self.size = size
        self.area = bytearray([fill]) * size
        self.head = self.tail = start % TOP
        self.seq = first_seq
        self.flags = 0
        self.version = 1
        self.events = []        # (cursor, record) in the order written

    def _put(self, cursor, data):
        off = cursor % self.size
        assert off + len(data) <= self.size
        self.area[off:off + len(data)] = data

    def emit(self, payload=b'', ts=0, opcode=1, cpu=0, flags=0):
        s = rec_size(len(payload))
        off = self.head % self.size
        rem = self.size - off
        skip = rem if s > rem else 0
        used = (self.head - self.tail) % TOP
        if s > self.size or used + skip + s > self.size:
            self.seq += 1                   # dropped: seq consumed
            self.flags |= F_OVERFLOWED
            return False
        if skip:
            if rem >= HDR:
                m = mkrec(self.seq, ts, b'', 0, 0, R_WRAP)
                self._put(self.head, record_bytes(m))
                self.events.append((self.head, m))
            self.head = (self.head + rem) % TOP
        r = mkrec(self.seq, ts, payload, opcode, cpu, flags)
        self._put(self.head, record_bytes(r))
        self.events.append((self.head, r))
        self.head = (self.head + s) % TOP
        self.seq += 1
        self.flags &= ~F_OVERFLOWED
        return True

    def consume_all(self):
        self.tail = self.head

    def image(self):
        hdr = struct.pack('<IIIIQQIIQQQ', RING_MAGIC, self.version,
                          self.size, AREA_OFF, self.head, self.tail,
                          self.flags, 0, 0, 0, 0)
        return hdr + bytes(self.area)

    def ring_json(self):
        return {'magic': RING_MAGIC, 'version': self.version,
                'ring_size': self.size, 'record_area_off': AREA_OFF,
                'head': self.head, 'tail': self.tail, 'flags': self.flags}

    def visible(self):
        """(file offset, record) of every record between tail and head."""
        n = (self.head - self.tail) % TOP
        return [(AREA_OFF + c % self.size, r) for c, r in self.events
                if (c - self.tail) % TOP < n]


def account(items):
    """Decode-side accounting of docs/format.md over (offset, record)."""
    st = dict(records=0, wrap_markers=0, ignored=0, truncated=0, lost=0,
              gaps=0, duplicates=0, resets=0, bytes=0, payload_bytes=0)
    out = []
    max_seq = None
    for off, r in items:
        st['bytes'] += rec_size(r['payload_len'])
        if r['flags'] & R_WRAP:
            st['wrap_markers'] += 1
            continue
        if max_seq is not None:
            d = (r['seq'] - (max_seq + 1)) % 2**32
            if 0 < d < 2**31:
                st['lost'] += d
                st['gaps'] += 1
            elif d != 0:
                if (max_seq - r['seq']) % 2**32 <= 131072:
                    st['duplicates'] += 1
                    continue
                st['resets'] += 1
        max_seq = r['seq']
        if r['flags'] & ~R_KNOWN:
            st['ignored'] += 1
            continue
        st['records'] += 1
        st['payload_bytes'] += r['payload_len']
        if r['flags'] & R_TRUNC:
            st['truncated'] += 1
        out.append((off, r))
    return out, st


STAT_KEYS = ('records', 'wrap_markers', 'ignored', 'truncated', 'lost',
             'gaps', 'duplicates', 'resets', 'bytes', 'payload_bytes')
RING_KEYS = ('magic', 'version', 'ring_size', 'record_area_off', 'head',
             'tail', 'flags')
REC_KEYS = ('offset', 'seq', 'ts_ns', 'opcode', 'cpu', 'flags',
            'payload_len')


def canon(dialect, ring, items, error):
    """The canonical expected-output text (docs/test-vectors/README)."""
    recs, st = account(items)
    lines = ['{']
    lines.append('  "dialect": %s,' % ('null' if dialect is None
                                       else '"%s"' % dialect))
    if ring is None:
        lines.append('  "ring": null,')
    else:
        lines.append('  "ring": {%s},' % ', '.join(
            '"%s": %d' % (k, ring[k]) for k in RING_KEYS))
    if not recs:
        lines.append('  "records": [],')
    else:
        lines.append('  "records": [')
        for i, (off, r) in enumerate(recs):
            vals = dict(r, offset=off)
            lines.append('    {%s, "payload": "%s"}%s' % (
                ', '.join('"%s": %d' % (k, vals[k]) for k in REC_KEYS),
                r['payload'].hex(), ',' if i + 1 < len(recs) else ''))
        lines.append('  ],')
    lines.append('  "stats": {%s},' % ', '.join(
        '"%s": %d' % (k, st[k]) for k in STAT_KEYS))
    if error is None:
        lines.append('  "error": null')
    else:
        lines.append('  "error": {"code": "%s", "offset": %d}' % error)
    lines.append('}')
    return '\n'.join(lines) + '\n'


def dump(records):
    """Dump bytes and the (offset, record) list of a record stream."""
    data = bytearray()
    items = []
    for r in records:
        items.append((len(data), r))
        data += record_bytes(r)
    return bytes(data), items


VECTORS = []


def vector(fn):
    VECTORS.append(fn)
    return fn


@vector
def empty():
    """Ring image, ring_size 256, head == tail == 0: no records."""
    r = Ring(256)
    return r.image(), canon('ring', r.ring_json(), r.visible(), None)


@vector
def single():
    """Ring image: one record with a 16-byte payload at ring offset 0."""
    r = Ring(256)
    r.emit(bytes(range(16)), ts=1000, opcode=0x0101, cpu=2)
    return r.image(), canon('ring', r.ring_json(), r.visible(), None)


@vector
def wrap():
    """Ring image, ring_size 1024: six records consumed (tail 616), then
    records until the ring is exactly full (head - tail == 1024); the
    third of them does not fit in the 200 bytes left at 824, so a wrap
    marker is written there and it goes to offset 0 of the next lap."""
    r = Ring(1024)
    lens = [100, 40, 200, 0, 64, 16]
    for i in range(6):
        r.emit(pattern(r.seq, lens[i]), ts=10 * r.seq, opcode=i)
    r.consume_all()
    i = 0
    while r.head - r.tail < r.size:
        n = lens[i % 6]
        if not r.emit(pattern(r.seq, n), ts=10 * r.seq, opcode=i % 6):
            break
        i += 1
    assert r.head - r.tail == 1024 and r.flags == 0
    return r.image(), canon('ring', r.ring_json(), r.visible(), None)


@vector
def implicit_wrap():
    """Ring image, ring_size 512: records end at 504, leaving 8 bytes
    (stale 0xee bytes): no marker fits, the next record is at offset 0 of
    the next lap and head skips the 8 bytes."""
    r = Ring(512, fill=0xEE)
    for n in (200, 200, 8):
        r.emit(pattern(r.seq, n), ts=100 + r.seq, opcode=2, cpu=1)
    r.tail = rec_size(200)              # the first record was consumed
    r.emit(pattern(r.seq, 64), ts=100 + r.seq, opcode=2, cpu=1)
    assert r.head == 512 + 96
    return r.image(), canon('ring', r.ring_json(), r.visible(), None)


@vector
def overflowed():
    """Ring image, ring_size 512, consumer stalled: the ring fills, two
    records are dropped (seq 7, 8), the consumer frees space, seq 9 gets
    through (a gap of 2 in the image), the ring fills again and one more
    is dropped: OVERFLOWED is set (the producer is dropping right now)."""
    r = Ring(512)
    while r.emit(pattern(r.seq, 40), ts=1000 + r.seq):
        pass                                # 7 x 72 = 504; seq 7 dropped
    r.emit(pattern(r.seq, 40), ts=1000 + r.seq)      # seq 8 dropped
    r.tail = 3 * 72                         # three records consumed
    while r.emit(pattern(r.seq, 40), ts=1000 + r.seq):
        pass
    assert r.flags & F_OVERFLOWED
    return r.image(), canon('ring', r.ring_json(), r.visible(), None)


@vector
def unknown_flag():
    """Ring image: three records, the middle one with record flag bit 7
    (unknown in v1): skipped and counted as ignored, its seq counts."""
    r = Ring(256)
    r.emit(pattern(0, 8), ts=1, opcode=3)
    r.emit(pattern(1, 8), ts=2, opcode=3, flags=0x80)
    r.emit(pattern(2, 12), ts=3, opcode=3, flags=R_TRUNC)
    return r.image(), canon('ring', r.ring_json(), r.visible(), None)


@vector
def version2():
    """Ring image with version 2: must be refused (error at offset 4)."""
    r = Ring(256)
    r.emit(bytes(range(16)), ts=1000)
    r.version = 2
    return r.image(), canon('ring', None, [], ('HMB_E_RING_VERSION', 4))


@vector
def bad_record_magic():
    """Ring image: two good records, the third's magic is 0x12345678:
    the good prefix decodes, then an error at the bad record's file
    offset (0x40 + ring offset)."""
    r = Ring(256)
    for i in range(3):
        r.emit(pattern(i, 8), ts=i)
    cur = r.events[2][0]
    r.area[cur:cur + 4] = struct.pack('<I', 0x12345678)
    return r.image(), canon('ring', r.ring_json(), r.visible()[:2],
                            ('HMB_E_REC_MAGIC', AREA_OFF + cur))


@vector
def cross_lap():
    """Ring image, ring_size 256: the record at ring offset 224 claims a
    32-byte payload, which would cross the end of the lap."""
    r = Ring(256)
    r.head = r.tail = 224
    r.emit(b'', ts=5)
    r.area[224 + 20:224 + 22] = struct.pack('<H', 32)
    r.head = 224 + 64
    return r.image(), canon('ring', r.ring_json(), [],
                            ('HMB_E_REC_CROSS_LAP', AREA_OFF + 224))


@vector
def top_wrap():
    """Ring image, ring_size 256, cursors near 2^64: the producer started
    at 2^64 - 160; the first record was consumed (tail 2^64 - 96), a wrap
    marker sits at 2^64 - 32 and head has wrapped past 0 (head 128) while
    tail has not: cursors are byte counters modulo 2^64."""
    r = Ring(256, start=TOP - 160)
    for i in range(4):
        if i == 3:
            r.tail = TOP - 96               # the first record was consumed
        assert r.emit(pattern(r.seq, 32), ts=500 + r.seq, opcode=1 + i)
    assert r.head == 128 and (r.head - r.tail) % TOP == 224
    return r.image(), canon('ring', r.ring_json(), r.visible(), None)


@vector
def top_implicit():
    """Ring image, ring_size 256, cursors near 2^64: a 128-byte record
    ends at 2^64 - 8, the 8 bytes left in the last lap before 2^64 are
    skipped implicitly and the next record is at offset 0 of the lap that
    starts at 2^64, i.e. at cursor 0 (head 64)."""
    r = Ring(256, start=TOP - 136, fill=0xEE)
    r.emit(pattern(r.seq, 96), ts=7, opcode=2)
    r.emit(pattern(r.seq, 32), ts=8, opcode=2)
    assert r.head == 64
    return r.image(), canon('ring', r.ring_json(), r.visible(), None)


@vector
def top_marker_gap():
    """Ring image (issue 11, defect 1), ring_size 64: tail 2^64 - 64,
    head 2^64 - 8 and a wrap marker at offset 0.  head lies inside the
    skip after the marker (a marker and its skip are published together):
    HMB_E_HEAD_IN_GAP at the marker.  A consumer that compares absolute
    cursors against a lap end that wrapped to 0 re-reads the marker
    forever instead."""
    r = Ring(64, start=TOP - 64)
    m = mkrec(0, 1, b'', 0, 0, R_WRAP)
    r.area[0:HDR] = record_bytes(m)
    r.head = TOP - 8
    return r.image(), canon('ring', r.ring_json(), [],
                            ('HMB_E_HEAD_IN_GAP', AREA_OFF))


@vector
def top_implicit_gap():
    """Ring image (issue 11, defect 1), ring_size 64: tail 2^64 - 16
    (16 bytes before the end of the last lap before 2^64, no marker fits),
    head 2^64 - 8: head lies inside the implicit wrap gap,
    HMB_E_HEAD_IN_GAP at ring offset 48."""
    r = Ring(64, start=TOP - 16)
    r.head = TOP - 8
    return r.image(), canon('ring', r.ring_json(), [],
                            ('HMB_E_HEAD_IN_GAP', AREA_OFF + 48))


@vector
def dump_basic():
    """Dump: seq 0, 1, a wrap marker (seq 2), 2, then 5 (3 and 4 lost),
    a TRUNCATED record, a record with an unknown flag bit, and 8."""
    recs = [mkrec(0, 100, pattern(0, 5), 1, 0),
            mkrec(1, 110, pattern(1, 16), 2, 1),
            mkrec(2, 115, b'', 0, 0, R_WRAP),
            mkrec(2, 120, pattern(2, 0), 3, 0),
            mkrec(5, 150, pattern(5, 33), 1, 3),
            mkrec(6, 160, pattern(6, 64), 1, 0, R_TRUNC),
            mkrec(7, 170, pattern(7, 8), 9, 0, 0x10),
            mkrec(8, 180, pattern(8, 1), 1, 0)]
    data, items = dump(recs)
    return data, canon('dump', None, items, None)


@vector
def dump_trunc_hdr():
    """Dump: two records, then the first 20 bytes of a third header."""
    data, items = dump([mkrec(0, 1, pattern(0, 8)),
                        mkrec(1, 2, pattern(1, 8))])
    extra = record_bytes(mkrec(2, 3, pattern(2, 8)))[:20]
    return data + extra, canon('dump', None, items,
                               ('HMB_E_TRUNC_HDR', len(data)))


@vector
def dump_trunc_payload():
    """Dump: two records, then a record whose 100-byte payload is cut
    after 40 bytes."""
    data, items = dump([mkrec(0, 1, pattern(0, 8)),
                        mkrec(1, 2, pattern(1, 8))])
    extra = record_bytes(mkrec(2, 3, pattern(2, 100)))[:HDR + 40]
    return data + extra, canon('dump', None, items,
                               ('HMB_E_TRUNC_PAYLOAD', len(data)))


@vector
def unknown_magic():
    """Neither a dump nor a ring image: refused at offset 0."""
    return b'\x7fELF' + bytes(60), canon(None, None, [],
                                         ('HMB_E_UNKNOWN_MAGIC', 0))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, 'v1')
    os.makedirs(out, exist_ok=True)
    index = ['<!-- SPDX-License-Identifier: Apache-2.0 -->',
             '# v1 test vectors (generated by ../gen.py; do not edit)', '']
    for fn in VECTORS:
        name = fn.__name__.replace('_', '-')
        data, text = fn()
        with open(os.path.join(out, name + '.bin'), 'wb') as f:
            f.write(data)
        with open(os.path.join(out, name + '.json'), 'w') as f:
            f.write(text)
        doc = ' '.join(fn.__doc__.split())
        index.append('- `%s.bin` (%d bytes): %s' % (name, len(data), doc))
    with open(os.path.join(out, 'README.md'), 'w') as f:
        f.write('\n'.join(index) + '\n')


if __name__ == '__main__':
    main()
