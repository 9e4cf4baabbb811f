# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures: the package on sys.path, the test vectors and the C
analyzer to cross-check against."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.dirname(HERE)
TOP = os.path.dirname(PYDIR)
sys.path.insert(0, PYDIR)

VECTORS = os.environ.get("HMB_VECTORS_DIR",
                         os.path.join(TOP, "docs", "test-vectors", "v1"))
ANALYZE = os.environ.get("HMB_ANALYZE",
                         os.path.join(TOP, "build", "bin",
                                      "hmb-trace-analyze"))


@pytest.fixture
def analyze():
    if not os.access(ANALYZE, os.X_OK):
        pytest.fail("%s is not built (make -C user/analyze)" % ANALYZE)
    return ANALYZE
