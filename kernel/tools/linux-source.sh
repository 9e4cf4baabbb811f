#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# linux-source.sh DESTDIR [SERIES]: extract from Debian's linux-source-SERIES
# tarball (default 6.1; 6.12 comes from bookworm-backports, scripts/kernels)
# only what the checks need (checkpatch and its data files, the kselftest
# harness, drivers/nvme/host) into DESTDIR.  Nothing extracted is committed.
set -eu
dest=$1
series=${2:-6.1}
case $series in 6.1) group=kernel ;; *) group=kernel-bpo ;; esac
tarball=${LINUX_SOURCE_TARBALL:-/usr/src/linux-source-$series.tar.xz}
if [ ! -f "$tarball" ]; then
	echo "linux-source.sh: $tarball not found; install linux-source-$series (scripts/deps.sh $group)" >&2
	exit 1
fi
stamp=$dest/.extracted
files="scripts/checkpatch.pl scripts/spelling.txt scripts/const_structs.checkpatch
scripts/kernel-doc tools/testing/selftests/kselftest_harness.h
tools/testing/selftests/kselftest.h drivers/nvme/host"
if [ -f "$stamp" ] && [ "$stamp" -nt "$tarball" ] && [ "$(cat "$stamp")" = "$files" ]; then
	exit 0
fi
rm -rf "$dest"
mkdir -p "$dest"
top=$(tar -tJf "$tarball" | head -1 | cut -d/ -f1)
# shellcheck disable=SC2086
tar -xJf "$tarball" -C "$dest" --strip-components=1 $(for f in $files; do echo "$top/$f"; done)
printf '%s' "$files" > "$stamp"
