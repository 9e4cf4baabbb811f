#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""sync-tree.py SRC DST: make DST byte-identical to SRC (files, symbolic
links, directories, permission bits), for build-qemu.

Only the files that differ are touched, and those are stamped now, newer
than anything built from their old bytes, so that ninja recompiles only
what a patch changed.  What DST has and SRC has not is removed.
"""
import filecmp
import os
import shutil
import sys


def copy_in(src, dst):
    """Every entry of SRC into DST; returns the relative paths of SRC."""
    want = set()
    for root, dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        for d in dirs:
            want.add(os.path.normpath(os.path.join(rel, d)))
            p = os.path.join(src, rel, d)
            if os.path.islink(p):
                continue
            os.makedirs(os.path.join(dst, rel, d), exist_ok=True)
        for f in files:
            r = os.path.normpath(os.path.join(rel, f))
            want.add(r)
            sync_file(os.path.join(src, r), os.path.join(dst, r))
    return want


def sync_file(s, d):
    if os.path.islink(s):
        if not os.path.islink(d) or os.readlink(d) != os.readlink(s):
            if os.path.lexists(d):
                os.unlink(d)
            os.symlink(os.readlink(s), d)
        return
    if os.path.islink(d) or (os.path.exists(d) and not os.path.isfile(d)):
        if os.path.isdir(d) and not os.path.islink(d):
            shutil.rmtree(d)
        else:
            os.unlink(d)
    if not os.path.exists(d) or not filecmp.cmp(s, d, shallow=False):
        try:
            shutil.copy2(s, d)
        except OSError as e:
            sys.exit("build-qemu: syncing %s to %s: %s" % (s, d, e))
        os.utime(d)
    elif (os.stat(s).st_mode & 0o777) != (os.stat(d).st_mode & 0o777):
        os.chmod(d, os.stat(s).st_mode & 0o777)


def remove_extra(dst, want):
    for root, dirs, files in os.walk(dst, topdown=False):
        rel = os.path.relpath(root, dst)
        for n in files + dirs:
            r = os.path.normpath(os.path.join(rel, n))
            if r not in want:
                p = os.path.join(dst, r)
                if os.path.isdir(p) and not os.path.islink(p):
                    shutil.rmtree(p)
                else:
                    os.unlink(p)


def main():
    src, dst = sys.argv[1], sys.argv[2]
    os.makedirs(dst, exist_ok=True)
    remove_extra(dst, copy_in(src, dst))
    return 0


if __name__ == "__main__":
    sys.exit(main())
