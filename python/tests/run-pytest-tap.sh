#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# run-pytest-tap.sh [PYTEST ARGS]: Debian's pytest on python/tests with TAP
# lines on stdout (tests/tap_plugin.py) and pytest's own report on stderr.
set -u
here=$(cd "$(dirname "$0")" && pwd)
exec 3>&1
HMB_TAP_FD=3 PYTHONPATH=$here:$here/..${PYTHONPATH:+:$PYTHONPATH} \
	PYTHONDONTWRITEBYTECODE=1 \
	/usr/bin/python3 -m pytest -p tap_plugin -p no:cacheprovider -q -rA \
	"$here" "$@" 1>&2
