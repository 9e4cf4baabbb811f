#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# soname.sh SO ABI: the shared library carries the soname libhmbtrace.so.ABI,
# libhmbtrace.so links to that file, and its dynamic symbols are the
# library's own (hmb_*, hmbtrace_*) and nothing of the tests'; the built-in
# dictionary is reached through hmb_dict_builtin(), its text is not exported
# (an executable would keep a copy of it at its link-time size).
so=${1:?usage: soname.sh SO ABI}
abi=${2:?usage: soname.sh SO ABI}
. "$(dirname "$0")/../../../scripts/lib/tap.sh"
real=$(readlink "$so")
tap_run "$so links to libhmbtrace.so.$abi (got '$real')" [ "$real" = "libhmbtrace.so.$abi" ]
sn=$(readelf -d "$so" 2>/dev/null | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
tap_run "soname libhmbtrace.so.$abi (got '$sn')" [ "$sn" = "libhmbtrace.so.$abi" ]
# defined global functions and objects other than the library's prefixes
other=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDRB]$/ && $3 !~ /^(hmb_|hmbtrace_|_init$|_fini$)/ { print $3 }' | head -5)
tap_run "exports only hmb_/hmbtrace_ functions and objects (others: '$other')" [ -z "$other" ]
dict=$(nm -D --defined-only "$so" | awk '$3 ~ /^hmb_dict_(builtin|text)/ { printf "%s%s %s", sep, $2, $3; sep = ", " }')
tap_run "the built-in dictionary: the function only (got '$dict')" [ "$dict" = "T hmb_dict_builtin" ]
ntext=$(nm -D --defined-only "$so" | awk '$2 == "T"' | wc -l)
tap_run "exports the library's functions ($ntext)" [ "$ntext" -gt 50 ]
tap_done
