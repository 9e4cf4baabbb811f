#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# linux-source.sh DESTDIR: extract from Debian's linux-source-6.1 tarball
# only what the checks need (checkpatch and its data files, the kselftest
# harness, drivers/nvme/host) into DESTDIR.  Nothing extracted is committed.
set -eu
dest=$1
tarball=${LINUX_SOURCE_TARBALL:-$(ls /usr/src/linux-source-6.1.tar.xz 2>/dev/null || true)}
if [ -z "$tarball" ] || [ ! -f "$tarball" ]; then
	echo "linux-source.sh: /usr/src/linux-source-6.1.tar.xz not found; install linux-source-6.1 (scripts/deps.sh kernel)" >&2
	exit 1
fi
stamp=$dest/.extracted
if [ -f "$stamp" ] && [ "$stamp" -nt "$tarball" ]; then
	exit 0
fi
rm -rf "$dest"
mkdir -p "$dest"
top=$(tar -tJf "$tarball" | head -1 | cut -d/ -f1)
tar -xJf "$tarball" -C "$dest" --strip-components=1 \
	"$top/scripts/checkpatch.pl" \
	"$top/scripts/spelling.txt" \
	"$top/scripts/const_structs.checkpatch" \
	"$top/tools/testing/selftests/kselftest_harness.h" \
	"$top/tools/testing/selftests/kselftest.h" \
	"$top/drivers/nvme/host"
touch "$stamp"
