#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""extract-vmlinux.py VMLINUZ VMLINUX: the uncompressed ELF kernel inside a
bzImage, for build-guest.

The ELF vmlinux boots through its PVH entry (CONFIG_PVH) and skips the
bzImage's self-decompression, which costs seconds under TCG.  Debian's 6.1
is XZ-compressed, 6.12 zstd (zstd(1) unpacks it).  Exit 1, writing
nothing, when VMLINUZ holds neither or what it holds is not an ELF with a
PVH note ("Xen").
"""
import lzma
import subprocess
import sys


def main():
    data = open(sys.argv[1], "rb").read()
    at = data.find(b"\xfd7zXZ\x00")
    if at >= 0:
        elf = lzma.LZMADecompressor().decompress(data[at:])
    else:
        at = data.find(b"\x28\xb5\x2f\xfd")
        if at < 0:
            return 1
        # The frame is followed by the bzImage's trailer: zstd stops at
        # its end.
        r = subprocess.run(["zstd", "-qdc"], input=data[at:],
                           capture_output=True)
        elf = r.stdout
    if elf[:4] != b"\x7fELF" or b"Xen\x00" not in elf:
        return 1
    open(sys.argv[2], "wb").write(elf)
    return 0


if __name__ == "__main__":
    sys.exit(main())
