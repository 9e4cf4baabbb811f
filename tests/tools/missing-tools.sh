#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# missing-tools.sh: plain `make` on a machine that lacks tools (TAP).  A
# copy of the tree is built with PATH holding only the basic tools (no
# clang, llvm-strip, bpftool), then also with pkg-config looking into an
# empty directory (no libbpf, libelf, zlib, json-c): make must build every
# part it can, name each part it skipped with the Debian packages it lacks
# and the command that installs them, exit non-zero, and never print a
# shell's bare "not found".
. "$(dirname "$0")/../../scripts/lib/preamble.sh"
set +e
. "$top/scripts/lib/tap.sh"
check() { if eval "$1"; then tap_ok "$2"; else tap_fail "$2" "$3"; fi; }

work=$(mktemp -d /tmp/hmb-missing-tools.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/empty" "$work/tree"
# every command of the system but the BPF tool chain
for d in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
	[ -d "$d" ] || continue
	for p in "$d"/*; do
		t=${p##*/}
		case $t in clang*|llvm-strip*|bpftool*) continue ;; esac
		[ -e "$work/bin/$t" ] || ln -s "$p" "$work/bin/$t"
	done
done
# the tree as it is, without its build products
(cd "$top" && git ls-files -z | xargs -0 cp --parents -t "$work/tree")

PATH=$work/bin make -C "$work/tree" > "$work/out1" 2>&1
rc=$?
err=$(cat "$work/out1")
check '[ $rc -ne 0 ]' "make fails when a part cannot be built (exit $rc)" "$err"
check 'grep -q "user/agent: cannot build: missing Debian package(s) bpftool clang llvm" "$work/out1"' \
	"names the agent's missing packages" "$(tail -5 "$work/out1")"
check 'grep -q "install: apt-get install -y bpftool clang llvm" "$work/out1"' \
	"says the command that installs them" "$(tail -5 "$work/out1")"
check 'grep -q "skipped: user/agent (missing" "$work/out1"' \
	"the last line says what was skipped" "$(tail -2 "$work/out1")"
check '[ -x "$work/tree/build/bin/hmb-trace-daemon" ] && [ -x "$work/tree/build/bin/hmb-fwsim" ] && [ -x "$work/tree/build/bin/hmb-trace-analyze" ] && [ -f "$work/tree/build/lib/libhmbtrace.a" ]' \
	"the library, daemon, simulator and analyzer were built" "$(ls "$work/tree/build/bin" 2>&1)"
check '! grep -qiE "not found|no such file|command not found" "$work/out1"' \
	"no bare 'not found' from the shell" "$(grep -iE "not found|no such file" "$work/out1" | head -3)"

PATH=$work/bin PKG_CONFIG_LIBDIR=$work/empty make -C "$work/tree" > "$work/out2" 2>&1
rc=$?
check '[ $rc -ne 0 ] && grep -q "user/analyze: cannot build: missing Debian package(s) .*libjson-c-dev" "$work/out2"' \
	"without json-c: the analyzer names libjson-c-dev" "$(tail -6 "$work/out2")"
# every package the agent needs from pkg-config or the BPF tool chain, on
# the agent's own line, whatever the order
agent_line=$(grep "user/agent: cannot build: missing Debian package(s) " "$work/out2")
named_all=1
for pkg in bpftool clang llvm libbpf-dev libelf-dev zlib1g-dev libcurl4-openssl-dev; do
	case " $agent_line " in *" $pkg "*) ;; *) named_all=0; echo "# not named: $pkg" ;; esac
done
check '[ $named_all -eq 1 ]' \
	"without pkg-config's libraries: the agent names every package" "$(tail -6 "$work/out2")"

PATH=$work/bin make -C "$work/tree/user/agent" > "$work/out3" 2>&1
rc=$?
check '[ $rc -ne 0 ] && grep -q "apt-get install -y bpftool clang llvm" "$work/out3" && ! grep -qiE "not found|no such file" "$work/out3"' \
	"make -C user/agent alone: the same message, exit $rc" "$(cat "$work/out3")"
tap_done
