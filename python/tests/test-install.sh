#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# test-install.sh TOP: TAP: the Python package as a normal distribution.
# pip installs a copy of python/ (pyproject.toml) into a virtual
# environment under build/ (offline: Debian's setuptools, no build
# isolation, no index); python3 -m hmb_trace then runs from the installed
# copy, not from the tree, and reads a test vector as the analyzer does;
# the version is the project's VERSION.
set -u
top=$1
py=/usr/bin/python3
. "$(dirname "$0")/../../scripts/lib/tap.sh"
w=$top/build/py-install
rm -rf "$w"
mkdir -p "$w"
cp -r "$top/python" "$w/src"
rm -rf "$w/src/tests" "$w/src"/hmb_trace/__pycache__
v=$w/venv
if $py -m venv --system-site-packages "$v" > "$w/venv.log" 2>&1 &&
	"$v/bin/pip" install --no-build-isolation --no-index "$w/src" > "$w/pip.log" 2>&1; then
	tap_ok "pip install --no-build-isolation --no-index python/ into a venv"
else
	tap_fail "pip install python/ into a venv"; cat "$w/venv.log" "$w/pip.log" | tail -n 15 | sed 's/^/# /'
	tap_done
fi
where=$(cd / && "$v/bin/python" -c 'import hmb_trace; print(hmb_trace.__file__)' 2>&1)
case $where in
"$v"/lib/python3*/site-packages/hmb_trace/__init__.py) tap_ok "hmb_trace imports from the venv ($where)" ;;
*) tap_fail "hmb_trace imports from the venv: '$where'" ;;
esac
pv=$(cd / && "$v/bin/pip" show hmb-trace 2>/dev/null | sed -n 's/^Version: //p')
[ "$pv" = "$(cat "$top/VERSION")" ] && tap_ok "installed distribution hmb-trace $pv = VERSION" ||
	tap_fail "installed distribution's version '$pv' = VERSION $(cat "$top/VERSION")"
vec=$top/docs/test-vectors/v1/dump-basic.bin
got=$(cd / && "$v/bin/python" -m hmb_trace decode "$vec" --format jsonl 2>&1)
want=$("$top/build/bin/hmb-trace-analyze" decode "$vec" --format jsonl 2>&1)
[ -n "$got" ] && [ "$got" = "$want" ] &&
	tap_ok "python3 -m hmb_trace decode from the installed copy = hmb-trace-analyze decode ($(wc -l <<<"$got") records)" ||
	tap_fail "python3 -m hmb_trace decode from the installed copy = hmb-trace-analyze decode: $(head -c 300 <<<"$got")"
got=$(cd / && "$v/bin/hmb-trace-py" stats "$vec" 2>&1)
case $got in *'"records": 6'*|*'"records":6'*) tap_ok "the hmb-trace-py entry point runs (stats: 6 records)" ;;
*) tap_fail "the hmb-trace-py entry point runs: $(head -c 300 <<<"$got")" ;; esac
tap_done
