#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# check-checkpatch.sh CHECKPATCH FILE...: one TAP line per file,
# checkpatch.pl --strict (from linux-source-6.1 or -6.12), which must report
# nothing.
set -u
. "$(dirname "$0")/../../scripts/lib/tap.sh"
cp=$1; shift
# checkpatch seeds its CamelCase list from $root/include; give it an empty
# one so that it neither warns about a missing tree nor scans one.
root=$(cd "$(dirname "$cp")/.." && pwd)
mkdir -p "$root/include"
for f in "$@"; do
	ignore=FILE_PATH_CHANGES
	# A UAPI header cannot use the kernel's static_assert(); checkpatch
	# reads the C11 keyword _Static_assert as CamelCase.
	case $f in */include/uapi/*) ignore=$ignore,CAMELCASE ;; esac
	# kernel/compat.h is the one place where the module tests the kernel
	# version (an out-of-tree module built for 6.1 and 6.12); anywhere
	# else LINUX_VERSION_CODE is reported as usual.
	case $f in */kernel/compat.h) ignore=$ignore,LINUX_VERSION_CODE ;; esac
	out=$(perl "$cp" --strict --no-tree --root="$root" --no-summary --terse --show-types \
		--ignore "$ignore" -f "$f" 2>&1)
	rc=$?
	rel=${f#"$(cd "$(dirname "$0")/../.." && pwd)"/}
	if [ $rc -eq 0 ] && [ -z "$out" ]; then
		tap_ok "checkpatch --strict $rel"
	else
		tap_fail "checkpatch --strict $rel" "$out"
	fi
done
tap_done
