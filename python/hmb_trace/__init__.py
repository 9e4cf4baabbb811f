# SPDX-License-Identifier: Apache-2.0
"""hmb_trace - a standard-library decoder of v1 HMB trace files.

An independent implementation (it shares no code with libhmbtrace) of the
v1 ring and dump format in docs/format.md: ring images ("HMBT") and dump
streams ("RECT"), sequence accounting (losses, duplicates, wrap markers,
ignored records) and the dump's sidecar metadata.  ``python3 -m hmb_trace
decode FILE --format jsonl`` prints the same lines as
``hmb-trace-analyze decode FILE --format jsonl``.
"""

from .format import (FormatError, Record, KIND_DATA, KIND_MARKER,
                     KIND_IGNORED, RING_MAGIC, RECORD_MAGIC, ABI_VERSION,
                     RECORD_HDR_SIZE, RING_HDR_SIZE, MAX_PAYLOAD,
                     REC_FLAG_WRAP_MARKER, REC_FLAG_TRUNCATED,
                     record_size)
from .reader import Reader, open_trace
from .acct import Accounting
from .sidecar import Sidecar, read_sidecar

__version__ = "0.1.0"

__all__ = [
    "FormatError", "Record", "KIND_DATA", "KIND_MARKER", "KIND_IGNORED",
    "RING_MAGIC", "RECORD_MAGIC", "ABI_VERSION", "RECORD_HDR_SIZE",
    "RING_HDR_SIZE", "MAX_PAYLOAD", "REC_FLAG_WRAP_MARKER",
    "REC_FLAG_TRUNCATED", "record_size", "Reader", "open_trace",
    "Accounting", "Sidecar", "read_sidecar",
]
