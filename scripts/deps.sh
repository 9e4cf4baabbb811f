#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# deps.sh GROUP...: install the Debian 12 packages that GROUP needs when any
# of them is missing (apt-get, as root).  Groups:
#   build   compilers and libraries for user space (libcurl: export)
#   test    test runners (pytest, babeltrace2; protoc and python3-protobuf
#           decode convert --to perfetto's protobuf trace; nvme-cli reads
#           the Persistent Event Log analyze pel is checked against)
#   kernel  headers and sources to build and check the module, the debug
#           guest kernel, and the 32-bit (compat) selftests
#   bpf     clang/llvm, libbpf, bpftool
#   vm      QEMU and what the guest image is made of
#   qemu    building the project's HMB-capable qemu-system-x86_64
#           (scripts/vm/qemu/build-qemu)
#   report  headless Chromium for the HTML report test
#   kernel-bpo  the 6.12 kernel of the matrix from bookworm-backports (image,
#           headers, linux-source-6.12), by name and version through the
#           project's private apt configuration (scripts/apt-private); the
#           linux-headers-amd64 metapackage stays on 6.1 (scripts/kernels)
#   pkg     Debian packaging, DKMS, man pages, lintian, completion tests
#   fuzz    clang 14 and its libFuzzer/sanitizer runtimes (fuzz/)
#   fleet   ClickHouse server (and curl) for the fleet store's tests
#   chdb    a current ClickHouse engine in-process for the fleet store's
#           tests: chDB's libchdb.so (Apache-2.0) from the npm package
#           @chdb/lib-linux-x64-gnu at CHDB_VERSION, its tarball checked
#           against CHDB_SHA256, unpacked into build/chdb-CHDB_VERSION/
#           (nothing else of the package is kept; npm, from Debian when
#           missing, only downloads).  `deps.sh --chdb-lib` prints the
#           library's path.
#   all     everything above
set -eu
# The chdb group's pinned engine (ClickHouse 26.7.2 inside).
CHDB_VERSION=26.7.3-stable.1
CHDB_SHA256=c0d32b129e988f2b9a9a31c9141aecf5e1e2453f9a079efc4d36ab8e3f92b2ad
here=$(cd "$(dirname "$0")" && pwd)
chdb_dir=$(dirname "$here")/build/chdb-$CHDB_VERSION
if [ "${1:-}" = --chdb-lib ]; then
	echo "$chdb_dir/libchdb.so"
	exit 0
fi
declare -A pkgs=(
	[build]="gcc make pkg-config libelf-dev zlib1g-dev libjson-c-dev libcurl4-openssl-dev python3 time"
	[test]="python3-pytest babeltrace2 bsdextrautils protobuf-compiler python3-protobuf nvme-cli"
	[kernel]="linux-headers-amd64 linux-source-6.1 xz-utils bc flex bison libelf-dev libssl-dev gcc-multilib sparse"
	[bpf]="clang llvm libbpf-dev bpftool libbpf-tools"
	[vm]="qemu-system-x86 busybox-static cpio kmod fio linux-perf trace-cmd bpftool nvme-cli linux-headers-amd64 gcc python3 util-linux e2fsprogs xz-utils zstd"
	[qemu]="dpkg-dev meson ninja-build pkg-config python3 gcc libglib2.0-dev libpixman-1-dev libfdt-dev libcap-ng-dev libattr1-dev qemu-system-data seabios"
	[report]="chromium"
	[kernel-bpo]=""
	[pkg]="debhelper dh-dkms dkms dh-python dpkg-dev fakeroot lintian pandoc groff man-db bash bash-completion systemd python3-all logrotate"
	[fuzz]="clang-14 libclang-rt-14-dev"
	[fleet]="clickhouse-server curl"
	[chdb]=""
)
want=()
bpo=0
chdb=0
for g in "$@"; do
	[ "$g" = kernel-bpo ] || [ "$g" = all ] && bpo=1
	[ "$g" = chdb ] || [ "$g" = all ] && chdb=1
	if [ "$g" = all ]; then
		for k in "${!pkgs[@]}"; do want+=(${pkgs[$k]}); done
	elif [ -n "${pkgs[$g]+x}" ]; then
		want+=(${pkgs[$g]})
	else
		echo "deps.sh: unknown group '$g'" >&2; exit 2
	fi
done
# chdb: npm only when the library is not there yet.
[ $chdb = 1 ] && [ -f "$chdb_dir/libchdb.so" ] && chdb=0
[ $chdb = 1 ] && ! command -v npm >/dev/null && want+=(npm)
missing=()
for p in "${want[@]}"; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$st" = "install ok installed" ] || missing+=("$p")
done
# The chdb group: the npm tarball into a private directory (no npm cache
# of 178 MB left behind), checked, libchdb.so alone renamed into place so
# that a parallel or interrupted fetch never leaves half a library.
chdb_fetch() {
	local tmp tgz
	case $(uname -m) in
	x86_64) ;;
	*) echo "deps.sh: chdb: no libchdb.so for $(uname -m) (the npm package is linux-x64-gnu)" >&2; return 1 ;;
	esac
	mkdir -p "$(dirname "$chdb_dir")"
	tmp=$(mktemp -d "$chdb_dir.tmp.XXXXXX")
	echo "deps.sh: chdb: fetching @chdb/lib-linux-x64-gnu@$CHDB_VERSION (178 MB) into $chdb_dir" >&2
	if ! (cd "$tmp" && npm pack -q --cache "$tmp/npm-cache" "@chdb/lib-linux-x64-gnu@$CHDB_VERSION" >/dev/null); then
		rm -rf "$tmp"
		echo "deps.sh: chdb: npm pack failed" >&2
		return 1
	fi
	tgz=$tmp/chdb-lib-linux-x64-gnu-$CHDB_VERSION.tgz
	if [ "$(sha256sum "$tgz" | cut -d' ' -f1)" != "$CHDB_SHA256" ]; then
		rm -rf "$tmp"
		echo "deps.sh: chdb: the tarball's sha256 is not CHDB_SHA256" >&2
		return 1
	fi
	tar -xzf "$tgz" -C "$tmp" package/libchdb.so &&
		mkdir -p "$chdb_dir" && mv "$tmp/package/libchdb.so" "$chdb_dir/libchdb.so"
	local rc=$?
	rm -rf "$tmp"
	return $rc
}
# The backports kernel: headers, image and source of one version, all three.
bpo_ok() {
	local kv pv
	kv=$("$here/kernels" 6.12 kver 2>/dev/null) && pv=$("$here/kernels" 6.12 pkgver) || return 1
	for p in "linux-image-$kv" linux-source-6.12; do
		[ "$(dpkg-query -W -f='${Status} ${Version}' "$p" 2>/dev/null)" = "install ok installed $pv" ] || return 1
	done
}
[ $bpo = 1 ] && bpo_ok && bpo=0
chdb_done() {
	[ $chdb = 0 ] || chdb_fetch
}
[ ${#missing[@]} -eq 0 ] && [ $bpo = 0 ] && { chdb_done; exit; }
[ ${#missing[@]} -eq 0 ] || mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
echo "deps.sh: installing ${missing[*]}${missing[*]:+ }$([ $bpo = 1 ] && echo "(the bookworm-backports kernel)")" >&2
if [ "$(id -u)" != 0 ]; then
	echo "deps.sh: missing packages and not root; run as root:" >&2
	echo "  scripts/deps.sh $*" >&2
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
[ ${#missing[@]} -eq 0 ] ||
	apt-get install -o DPkg::Lock::Timeout=900 -y -q --no-install-recommends "${missing[@]}" >&2
[ $bpo = 1 ] || { chdb_done; exit; }
bpo_ok && { chdb_done; exit; }
# The newest linux-headers-amd64 of backports names the kernel (its
# Depends: linux-headers-ABI (= VERSION)); the metapackage itself is not
# installed from there (design.md §4), the versioned packages are.
"$here/apt-private" update
ver=$("$here/apt-private" apt-cache madison linux-headers-amd64 |
	awk -F' *[|] *' '$3 ~ /-backports\// {print $2}' | sort -V | tail -1)
[ -n "$ver" ] || { echo "deps.sh: no linux-headers-amd64 in bookworm-backports" >&2; exit 1; }
abi=$("$here/apt-private" apt-cache show "linux-headers-amd64=$ver" |
	sed -n 's/^Depends: .*linux-headers-\([^ ,]*\) (= .*/\1/p' | head -1)
case $abi in 6.12.*-amd64) ;; *) echo "deps.sh: backports' linux-headers-amd64 $ver depends on '$abi', not a 6.12 kernel" >&2; exit 1 ;; esac
echo "deps.sh: installing Linux $abi ($ver) from bookworm-backports" >&2
"$here/apt-private" apt-get install -o DPkg::Lock::Timeout=900 -y -q --no-install-recommends \
	"linux-image-$abi=$ver" "linux-headers-$abi=$ver" "linux-source-6.12=$ver" >&2
bpo_ok || { echo "deps.sh: the backports kernel $abi is still incomplete after the install" >&2; exit 1; }
chdb_done
