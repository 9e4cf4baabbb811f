#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# deps.sh GROUP...: install the Debian 12 packages that GROUP needs when any
# of them is missing (apt-get, as root).  Groups:
#   build   compilers and libraries for user space (libcurl: export)
#   test    test runners (pytest, babeltrace2)
#   kernel  headers and sources to build and check the module, the debug
#           guest kernel, and the 32-bit (compat) selftests
#   bpf     clang/llvm, libbpf, bpftool
#   vm      QEMU and what the guest image is made of
#   qemu    building the project's HMB-capable qemu-system-x86_64
#           (scripts/vm/qemu/build-qemu)
#   report  headless Chromium for the HTML report test
#   fuzz    clang 14 and its libFuzzer/sanitizer runtimes (fuzz/)
#   fleet   ClickHouse server (and curl) for the fleet store's tests
#   all     everything above
set -eu
declare -A pkgs=(
	[build]="gcc make pkg-config libelf-dev zlib1g-dev libcurl4-openssl-dev python3 time"
	[test]="python3-pytest babeltrace2 bsdextrautils"
	[kernel]="linux-headers-amd64 linux-source-6.1 xz-utils bc flex bison libelf-dev libssl-dev gcc-multilib sparse"
	[bpf]="clang llvm libbpf-dev bpftool libbpf-tools"
	[vm]="qemu-system-x86 busybox-static cpio kmod fio linux-perf trace-cmd bpftool nvme-cli linux-headers-amd64 gcc python3 util-linux e2fsprogs"
	[qemu]="dpkg-dev meson ninja-build pkg-config python3 gcc libglib2.0-dev libpixman-1-dev libfdt-dev libcap-ng-dev libattr1-dev qemu-system-data seabios"
	[report]="chromium"
	[fuzz]="clang-14 libclang-rt-14-dev"
	[fleet]="clickhouse-server curl"
)
want=()
for g in "$@"; do
	if [ "$g" = all ]; then
		for k in "${!pkgs[@]}"; do want+=(${pkgs[$k]}); done
	elif [ -n "${pkgs[$g]+x}" ]; then
		want+=(${pkgs[$g]})
	else
		echo "deps.sh: unknown group '$g'" >&2; exit 2
	fi
done
missing=()
for p in "${want[@]}"; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$st" = "install ok installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
echo "deps.sh: installing ${missing[*]}" >&2
if [ "$(id -u)" != 0 ]; then
	echo "deps.sh: missing packages and not root; run as root:" >&2
	echo "  apt-get install -y ${missing[*]}" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# Several builds may install at once (parallel make, helper worktrees): one
# at a time, and re-check what is still missing once the lock is ours.
if [ -z "${HMB_DEPS_LOCKED:-}" ]; then
	HMB_DEPS_LOCKED=1 exec flock /var/lock/hmb-trace-deps.lock "$0" "$@"
fi
stamp=/var/lib/apt/periodic/hmb-trace-update-stamp
if [ ! -e "$stamp" ] || [ -n "$(find "$stamp" -mmin +360 2>/dev/null)" ]; then
	apt-get -o DPkg::Lock::Timeout=900 update -q >&2 && mkdir -p "$(dirname "$stamp")" && touch "$stamp"
fi
apt-get install -o DPkg::Lock::Timeout=900 -y -q --no-install-recommends "${missing[@]}" >&2
