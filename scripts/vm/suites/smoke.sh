#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Smoke suite of the VM bench: proves that the guest has what the other
# suites rely on.  NVMe controller and its tracepoints under fio, the
# ivshmem BAR shared both ways with the VM host's /dev/shm file, the host
# command channel and its whitelist, the 9p shares, QEMU's NVMe trace log,
# and perf, trace-cmd and bpftool working.
# vm-timeout: 300
# vm-qemu-trace: yes
set -u
. "$HMB_REPO/scripts/vm/lib/tap.sh"
T=/sys/kernel/tracing
SECS=${HMB_SMOKE_FIO_SECS:-2}
# Scratch files on tmpfs: 9p under TCG is slow for bulk data.
S=/tmp/smoke
mkdir -p $S

fio_load() {	# fio_load SECONDS: mixed 4k random I/O on the NVMe disk
	fio --name=smoke --filename="$HMB_NVME_DEV" --direct=1 --ioengine=psync \
		--rw=randrw --bs=4k --size=64M --time_based --runtime="$1" \
		--output-format=terse >/dev/null 2>"$HMB_RESULTS/fio.err"
}

# --- NVMe -----------------------------------------------------------------
tap_check "NVMe namespace $HMB_NVME_DEV is a block device" test -b "$HMB_NVME_DEV"
model=$(cat /sys/class/nvme/nvme0/model 2>/dev/null | sed 's/ *$//')
case $model in
*QEMU*) tap_ok "nvme0 is QEMU's NVMe controller ($model)" ;;
*) tap_fail "nvme0 is QEMU's NVMe controller" "model: '$model'" ;;
esac

# --- nvme tracepoints through tracefs under fio ---------------------------
echo 0 > $T/tracing_on
echo > $T/trace
echo 8192 > $T/buffer_size_kb
ev_ok=1
for e in nvme_setup_cmd nvme_complete_rq; do
	echo 1 > "$T/events/nvme/$e/enable" || ev_ok=0
done
[ $ev_ok = 1 ] && tap_ok "nvme:nvme_setup_cmd and nvme:nvme_complete_rq can be enabled" ||
	tap_fail "nvme:nvme_setup_cmd and nvme:nvme_complete_rq can be enabled" "$(ls $T/events/nvme 2>&1)"
# QEMU's trace lines also stream into a host tool's stdin while fio runs.
hostcmd start qcount --qemu-trace-stdin qemu-trace-count >/dev/null ||
	tap_fail "hostcmd start --qemu-trace-stdin"
echo 1 > $T/tracing_on
fio_load "$SECS"
fio_rc=$?
echo 0 > $T/tracing_on
[ $fio_rc = 0 ] && tap_ok "fio ran ${SECS}s of 4k randrw on $HMB_NVME_DEV" ||
	tap_fail "fio ran on $HMB_NVME_DEV" "$(cat "$HMB_RESULTS/fio.err")"
cp $T/trace $S/ftrace.txt
setups=$(grep -c 'nvme_setup_cmd:' $S/ftrace.txt)
comps=$(grep -c 'nvme_complete_rq:' $S/ftrace.txt)
tap_diag "ftrace: $setups nvme_setup_cmd, $comps nvme_complete_rq"
[ "$setups" -gt 0 ] && tap_ok "nvme_setup_cmd fired under fio ($setups)" ||
	tap_fail "nvme_setup_cmd fired under fio" "count 0"
[ "$comps" -gt 0 ] && tap_ok "nvme_complete_rq fired under fio ($comps)" ||
	tap_fail "nvme_complete_rq fired under fio" "count 0"
for e in nvme_setup_cmd nvme_complete_rq; do echo 0 > "$T/events/nvme/$e/enable"; done
echo > $T/trace

# --- QEMU's own NVMe trace on the host, visible here through 9p -------------
if [ -n "${HMB_QEMU_TRACE_LOG:-}" ]; then
	sleep 1	# the host appends what QEMU logged within ~0.2 s
	cp "$HMB_QEMU_TRACE_LOG" $S/qtrace.log
	qio=$(grep -c 'pci_nvme_io_cmd' $S/qtrace.log)
	qrw=$(grep -cE 'pci_nvme_(read|write) ' $S/qtrace.log)
	tap_diag "QEMU trace: $qio pci_nvme_io_cmd, $qrw read/write"
	# Every traced I/O command went through QEMU, plus the ones before tracing.
	[ "${qio:-0}" -ge "$setups" ] && [ "${qrw:-0}" -gt 0 ] &&
		tap_ok "QEMU's NVMe trace log saw the guest's commands ($qio >= $setups)" ||
		tap_fail "QEMU's NVMe trace log saw the guest's commands" "io_cmd $qio, read/write $qrw, setups $setups"
else
	tap_fail "QEMU's NVMe trace log is on" "HMB_QEMU_TRACE_LOG unset"
fi
qjson=$(hostcmd stop qcount 2>&1)
qsub=$(printf '%s' "$qjson" | sed -n 's/.*"pci_nvme_io_cmd": \([0-9]*\).*/\1/p')
[ "${qsub:-0}" -ge "$setups" ] && [ "$setups" -gt 0 ] &&
	tap_ok "a host tool fed QEMU's trace on stdin counted the commands ($qsub >= $setups)" ||
	tap_fail "a host tool fed QEMU's trace on stdin counted the commands" "$qjson"

# --- ivshmem ----------------------------------------------------------------
if [ -n "$HMB_IVSHMEM_PCI" ]; then
	tap_ok "ivshmem-plain device 1af4:1110 at $HMB_IVSHMEM_PCI"
else
	tap_fail "ivshmem-plain device 1af4:1110 present" "$(lspci 2>&1 || ls /sys/bus/pci/devices)"
fi
barsz=$(vm-mmap "$HMB_IVSHMEM_RES" size 2>&1)
[ "$barsz" = "$HMB_SHM_SIZE" ] && tap_ok "resource2 is $barsz bytes, the size of the /dev/shm file" ||
	tap_fail "resource2 size matches the /dev/shm file" "resource2: $barsz, file: $HMB_SHM_SIZE"

pat=$(head -c 64 /dev/urandom | od -An -v -tx1 | tr -d ' \n')
off=$((HMB_SHM_SIZE - 4096))
if hostcmd shm-write "$off" "$pat" && [ "$(vm-mmap "$HMB_IVSHMEM_RES" read "$off" 64)" = "$pat" ]; then
	tap_ok "64 bytes written into the /dev/shm file by the host are read through the BAR"
else
	tap_fail "host writes to the /dev/shm file are read through the BAR" \
		"wrote $pat, read $(vm-mmap "$HMB_IVSHMEM_RES" read "$off" 64 2>&1)"
fi
pat2=$(head -c 32 /dev/urandom | od -An -v -tx1 | tr -d ' \n')
vm-mmap "$HMB_IVSHMEM_RES" write 128 "$pat2"
got=$(hostcmd shm-read 128 32)
[ "$got" = "$pat2" ] && tap_ok "32 bytes the guest writes through the BAR appear in the host's file" ||
	tap_fail "guest writes through the BAR appear in the host's file" "wrote $pat2, host read $got"

# --- host command channel ---------------------------------------------------
tap_check "hostcmd ping answers pong" sh -c '[ "$(hostcmd ping)" = pong ]'
hostcmd start filler vm-mmap @SHM@ fill 256 512 0xa5 >/dev/null &&
	hostcmd wait filler 60 >/dev/null &&
	exp=$(printf 'a5%.0s' $(seq 512)) &&
	[ "$(vm-mmap "$HMB_IVSHMEM_RES" read 256 512)" = "$exp" ] &&
	tap_ok "hostcmd start/wait runs a whitelisted tool on the ivshmem file" ||
	tap_fail "hostcmd start/wait runs a whitelisted tool on the ivshmem file"
out=$(hostcmd run sh -c true 2>&1); rc=$?
[ $rc -ne 0 ] && tap_ok "hostcmd refuses a tool outside build/bin (status $rc)" ||
	tap_fail "hostcmd refuses a tool outside build/bin" "$out"
out=$(hostcmd run vm-mmap /etc/passwd size 2>&1); rc=$?
[ $rc -ne 0 ] && tap_ok "hostcmd refuses a path outside the repo/run/ivshmem file" ||
	tap_fail "hostcmd refuses a path outside the repo/run/ivshmem file" "$out"
out=$(hostcmd run vm-mmap @SHM@ read 0 1x 2>&1); rc=$?
[ $rc = 2 ] && tap_ok "hostcmd passes the tool's exit status through (2)" ||
	tap_fail "hostcmd passes the tool's exit status through" "status $rc: $out"

# --- 9p shares --------------------------------------------------------------
tap_check "the repository is shared read-only at /repo" \
	sh -c "test -f /repo/scripts/vm/vm-run && ! touch /repo/.vm-write-test 2>/dev/null"
tap_check "the results share is writable" sh -c "echo x > \"$HMB_RESULTS/w\" && rm \"$HMB_RESULTS/w\""

# --- tools --------------------------------------------------------------------
perf stat -x, -o "$HMB_RESULTS/perf-stat.csv" -e nvme:nvme_setup_cmd -e nvme:nvme_complete_rq \
	-a -- sh -c "$(command -v fio) --name=p --filename=$HMB_NVME_DEV --direct=1 --rw=randread \
	--bs=4k --size=64M --time_based --runtime=1 >/dev/null" 2>"$HMB_RESULTS/perf.err"
ps=$(awk -F, '$3 == "nvme:nvme_setup_cmd" {print $1}' "$HMB_RESULTS/perf-stat.csv")
pc=$(awk -F, '$3 == "nvme:nvme_complete_rq" {print $1}' "$HMB_RESULTS/perf-stat.csv")
[ "${ps:-0}" -gt 0 ] 2>/dev/null && [ "${pc:-0}" -gt 0 ] 2>/dev/null &&
	tap_ok "perf stat counts nvme tracepoints ($ps setups, $pc completions)" ||
	tap_fail "perf stat counts nvme tracepoints" "$(cat "$HMB_RESULTS/perf-stat.csv" "$HMB_RESULTS/perf.err")"

( cd $S && trace-cmd record -q -e nvme:nvme_setup_cmd -o tc.dat \
	fio --name=t --filename="$HMB_NVME_DEV" --direct=1 --rw=randread --bs=4k --size=64M \
	--time_based --runtime=1 >/dev/null 2>tc.err )
tn=$(trace-cmd report -i $S/tc.dat 2>/dev/null | grep -c 'nvme_setup_cmd:')
[ "$tn" -gt 0 ] && tap_ok "trace-cmd record/report sees nvme_setup_cmd ($tn)" ||
	tap_fail "trace-cmd record/report sees nvme_setup_cmd" "$(cat $S/tc.err)"

tap_check "bpftool reads the nvme_core module BTF (struct nvme_command)" \
	sh -c 'bpftool btf dump file /sys/kernel/btf/nvme_core format c | grep -q "^struct nvme_command {"'
tap_check "bpftool lists programs" bpftool prog list

# --- the kernel stayed healthy ------------------------------------------------
bad=$(dmesg | grep -E 'WARNING:|BUG:|Oops|Call Trace' | head -5)
[ -z "$bad" ] && tap_ok "no WARNING/BUG/Oops in dmesg" || tap_fail "no WARNING/BUG/Oops in dmesg" "$bad"

tap_done
