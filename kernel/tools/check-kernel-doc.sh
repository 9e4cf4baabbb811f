#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# check-kernel-doc.sh KERNEL_DOC FILE...: scripts/kernel-doc -none
# from linux-source-6.1 must find nothing wrong with the kernel-doc comments
# (every exported function and documented structure complete), one TAP line
# per file.
. "$(dirname "$0")/../../scripts/lib/preamble.sh"
. "$top/scripts/lib/tap.sh"
set +e
kd=$1; shift
for f in "$@"; do
	out=$(perl "$kd" -none "$f" 2>&1)
	if [ -z "$out" ]; then
		tap_ok "kernel-doc ${f#"$top"/}"
	else
		tap_fail "kernel-doc ${f#"$top"/}" "$out"
	fi
done
tap_done
