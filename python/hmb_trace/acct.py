# SPDX-License-Identifier: Apache-2.0
"""Sequence accounting (docs/format.md sections 10 and 12.1).

Seqs are compared modulo 2^32 against the highest seq seen.  A forward
step of more than one is a gap (records lost, located by the timestamps
around it).  A backward step of at most dup_window is a replayed batch
(the daemon crashed between writing and publishing its tail): those
records are duplicates and are dropped.  A larger backward step is a
producer restart and starts a new epoch.  Wrap markers consume no seq;
records with unknown flag bits are skipped but their seq counts as seen.
"""

from .format import KIND_MARKER, KIND_IGNORED, REC_FLAG_TRUNCATED

NEW = "new"
MARKER = "marker"
IGNORED = "ignored"
DUPLICATE = "duplicate"

# The most records one batch of a 4 MiB ring can hold (32-byte records).
DEFAULT_DUP_WINDOW = 4 * 1024 * 1024 // 32
U32 = 1 << 32


class Accounting:
    def __init__(self, dup_window=0, max_gaps=None):
        self.dup_window = dup_window or DEFAULT_DUP_WINDOW
        self.max_gaps = max_gaps
        self.records = 0
        self.wrap_markers = 0
        self.ignored = 0
        self.truncated = 0
        self.lost = 0
        self.duplicates = 0
        self.resets = 0
        self.gaps_total = 0
        self.gaps = []
        self.gaps_omitted = 0
        self.last_gap = None
        self.bytes = 0
        self.payload_bytes = 0
        self.first_ts_ns = None
        self.last_ts_ns = None
        self.opcodes = {}
        self._have = False
        self._max = 0
        self._max_ts = 0

    def new_epoch(self):
        """The next record's seq is taken as it is (ring re-initialised)."""
        self._have = False

    def add(self, rec):
        """Account one record; returns NEW, MARKER, IGNORED or DUPLICATE."""
        self.bytes += rec.raw_len
        if rec.kind == KIND_MARKER:
            self.wrap_markers += 1
            return MARKER
        if self._have:
            expected = (self._max + 1) % U32
            d = (rec.seq - expected) % U32
            if d and d < U32 // 2:
                self.lost += d
                self.gaps_total += 1
                gap = {"first_seq": expected,
                       "last_seq": (rec.seq - 1) % U32, "count": d,
                       "ts_before": self._max_ts, "ts_after": rec.ts_ns,
                       "offset": rec.offset}
                self.last_gap = gap
                if self.max_gaps is None or len(self.gaps) < self.max_gaps:
                    self.gaps.append(gap)
                else:
                    self.gaps_omitted += 1
            elif d:
                if (self._max - rec.seq) % U32 <= self.dup_window:
                    self.duplicates += 1
                    return DUPLICATE
                self.resets += 1
        self._have = True
        self._max = rec.seq
        self._max_ts = rec.ts_ns
        if rec.kind == KIND_IGNORED:
            self.ignored += 1
            return IGNORED
        if self.first_ts_ns is None:
            self.first_ts_ns = rec.ts_ns
        self.last_ts_ns = rec.ts_ns
        self.records += 1
        self.payload_bytes += rec.payload_len
        self.opcodes[rec.opcode] = self.opcodes.get(rec.opcode, 0) + 1
        if rec.flags & REC_FLAG_TRUNCATED:
            self.truncated += 1
        return NEW
