# SPDX-License-Identifier: Apache-2.0
"""Writers of v1 dumps and ring images, for tests and fixtures.

RingProducer follows the producer rules of docs/format.md: a record never
straddles the end of the record area; when the next record does not fit in
the rest of the lap a wrap marker is written there if at least 32 bytes are
left, otherwise the rest of the lap is skipped implicitly; a marker
carries the seq of the record that follows and consumes none; a record
that does not fit between tail and head + ring_size is dropped, its seq
consumed, and OVERFLOWED set.
"""

from .format import (RECORD_HDR, RING_HDR, RECORD_MAGIC, RING_MAGIC,
                     ABI_VERSION, RECORD_AREA_OFF, RECORD_HDR_SIZE,
                     REC_FLAG_WRAP_MARKER, RING_FLAG_OVERFLOWED,
                     record_size)


def encode_record(seq, ts_ns, opcode=0, cpu=0, flags=0, payload=b"",
                  payload_len=None, magic=RECORD_MAGIC, reserved0=0,
                  reserved1=0):
    """Header + payload + zero padding.  payload_len may lie (for tests)."""
    plen = len(payload) if payload_len is None else payload_len
    hdr = RECORD_HDR.pack(magic, seq & 0xFFFFFFFF, ts_ns, opcode, cpu,
                          flags, plen, reserved0, reserved1)
    body = hdr + bytes(payload)
    pad = (-len(body)) % 8
    return body + b"\0" * pad


def encode_marker(seq, ts_ns=0, cpu=0):
    return encode_record(seq, ts_ns, 0, cpu, REC_FLAG_WRAP_MARKER, b"")


def encode_ring_hdr(ring_size, head, tail, flags=0, version=ABI_VERSION,
                    magic=RING_MAGIC, record_area_off=RECORD_AREA_OFF):
    return RING_HDR.pack(magic, version, ring_size, record_area_off, head,
                         tail, flags, 0, 0, 0, 0)


class RingProducer:
    """A ring in memory, produced into by the firmware rules."""

    def __init__(self, ring_size, first_seq=0):
        assert ring_size & (ring_size - 1) == 0 and ring_size >= 64
        self.ring_size = ring_size
        self.area = bytearray(ring_size)
        self.head = 0
        self.tail = 0
        self.flags = 0
        self.seq = first_seq & 0xFFFFFFFF
        self.dropped = 0
        self.markers = 0
        self.implicit_wraps = 0

    def _room(self, n):
        return self.head - self.tail + n <= self.ring_size

    def emit(self, ts_ns, opcode=0, cpu=0, flags=0, payload=b""):
        """Emit one record; returns its seq, or None if it was dropped."""
        rec_len = record_size(len(payload))
        off = self.head & (self.ring_size - 1)
        left = self.ring_size - off
        skip = left if rec_len > left else 0
        if not self._room(skip + rec_len):
            self.dropped += 1
            self.flags |= RING_FLAG_OVERFLOWED
            self.seq = (self.seq + 1) & 0xFFFFFFFF
            return None
        if skip:
            if left >= RECORD_HDR_SIZE:
                self.area[off:off + RECORD_HDR_SIZE] = encode_marker(
                    self.seq, ts_ns, cpu)
                self.markers += 1
            else:
                self.implicit_wraps += 1
            self.head += skip
            off = 0
        self.area[off:off + rec_len] = encode_record(
            self.seq, ts_ns, opcode, cpu, flags, payload)
        self.head += rec_len
        seq = self.seq
        self.seq = (self.seq + 1) & 0xFFFFFFFF
        return seq

    def consume_to(self, tail):
        assert tail <= self.head
        self.tail = tail

    def image(self, version=ABI_VERSION):
        return encode_ring_hdr(self.ring_size, self.head, self.tail,
                               self.flags, version) + bytes(self.area)


def write_synthetic(f, nbytes, seed=1, first_seq=0, drop_every=0):
    """Write a dump of about nbytes (whole records) of synthetic load to
    the binary file f: mixed payload sizes (mostly small, some up to the
    4064-byte maximum), eight opcodes, eight cpus, increasing timestamps;
    with drop_every=N every Nth seq is left out (a loss to find).  Returns
    the number of records written.  About 1 M records/s."""
    import random
    rnd = random.Random(seed)
    pool = bytes(rnd.getrandbits(8) for _ in range(8192))
    hdr = RECORD_HDR
    sizes = [0, 8, 16, 24, 40, 64, 100, 128, 200, 256, 512, 1000, 4064]
    weights = [5, 10, 15, 15, 15, 10, 8, 8, 5, 4, 3, 1, 1]
    seq = first_seq
    ts = 1_000_000_000
    written = 0
    n = 0
    chunk = bytearray()
    while written < nbytes:
        plens = rnd.choices(sizes, weights, k=4096)
        for plen in plens:
            if drop_every and seq % drop_every == drop_every - 1:
                seq = (seq + 1) & 0xFFFFFFFF
            ts += 50 + (seq & 255)
            off = (seq * 13) & 4095
            chunk += hdr.pack(RECORD_MAGIC, seq, ts, seq & 7,
                              (seq >> 3) & 7, 0, plen, 0, 0)
            chunk += pool[off:off + plen]
            pad = (-plen) & 7
            if pad:
                chunk += b"\0" * pad
            seq = (seq + 1) & 0xFFFFFFFF
            n += 1
            if written + len(chunk) >= nbytes:
                break
        f.write(chunk)
        written += len(chunk)
        chunk = bytearray()
    return n
