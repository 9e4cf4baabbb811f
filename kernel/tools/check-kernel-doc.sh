#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# check-kernel-doc.sh KERNEL_DOC FILE...: scripts/kernel-doc -none
# from linux-source-6.1 must find nothing wrong with the kernel-doc comments
# (every exported function and documented structure complete), one TAP line
# per file.
. "$(dirname "$0")/../../scripts/lib/preamble.sh"
set +e
kd=$1; shift
echo "1..$#"
n=0; fail=0
for f in "$@"; do
	n=$((n + 1))
	out=$(perl "$kd" -none "$f" 2>&1)
	if [ -z "$out" ]; then
		echo "ok $n - kernel-doc ${f#"$top"/}"
	else
		echo "not ok $n - kernel-doc ${f#"$top"/}"
		printf '%s\n' "$out" | sed 's/^/# /'
		fail=1
	fi
done
exit $fail
