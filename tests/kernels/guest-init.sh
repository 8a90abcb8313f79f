#!/bin/sh
# guest-init.sh: pid 1 of a kernel-matrix guest (boot.sh), after
# switch_root onto the host's root (read-only over 9p, with the guest's
# own proc, sys, dev, /tmp and /run). Mounts cgroup2 with the memory and
# pids controllers on, runs smoke.py (its lines go to ttyS1, the results
# port), and powers off. Anything that stops it ends pid 1, and the
# kernel's panic=-1 reboot ends QEMU (-no-reboot).
# Usage (from the initramfs): guest-init.sh LABEL KILN [ONLY]
label=$1
kiln=$2
only=${3:-}
here=$(dirname "$0")
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp/root LANG=C.UTF-8
mkdir -p "$HOME"
exec >/dev/ttyS1 2>&1
echo "kiln-guest: $label booted: $(uname -r), uptime $(cut -d' ' -f1 /proc/uptime) s"
mount -t cgroup2 cgroup2 /sys/fs/cgroup || echo "kiln-guest: cannot mount cgroup2"
echo "+memory +pids +cpu" >/sys/fs/cgroup/cgroup.subtree_control ||
	echo "kiln-guest: cannot enable the memory, pids and cpu controllers"
mount -t tmpfs -o mode=755 home /home 2>/dev/null
KILN_TEST_ONLY=$only python3 "$here/smoke.py" "$label" "$kiln"
echo "kiln-guest: smoke.py exited $?, uptime $(cut -d' ' -f1 /proc/uptime) s"
sync
echo o >/proc/sysrq-trigger
sleep 10
