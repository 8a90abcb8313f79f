#!/bin/sh
# boot.sh: boot one Debian kernel under QEMU (TCG; no KVM needed) with the
# host's root filesystem shared read-only over 9p, and run the kernel
# smoke suite (smoke.py) in it. The initramfs is built here, each time: a
# static busybox, the kernel's modules for 9p, virtio-pci and overlayfs
# (decompressed, in dependency order), and an /init that mounts the
# host's / at /newroot (read-only), mounts proc, sys, dev and tmpfs /tmp
# and /run over it and switch_roots into guest-init.sh from this tree.
# The results come on the guest's second serial port (ttyS1), kept apart
# from the kernel's console (ttyS0): OUTDIR/results.log, OUTDIR/console.log.
# Usage: boot.sh LABEL KERNELDIR KILN OUTDIR [SECONDS]
#   KERNELDIR: the .deb unpacked (fetch-kernels.sh), KILN: the kiln binary
#   the guest runs (an absolute path on the host), SECONDS: the hard limit
#   on the whole QEMU run (default 600). KILN_TEST_ONLY is passed on.
# Exit: QEMU's (timeout's 124 when it was killed).
set -eu

label=$1
kdir=$2
kiln=$3
out=$4
limit=${5:-600}
repo=$(cd "$(dirname "$0")/../.." && pwd)

vmlinuz=$(ls "$kdir"/boot/vmlinuz-* | head -n 1)
# /lib/modules, or /usr/lib/modules in packages for a merged /usr (trixie).
moddir=$(ls -d "$kdir"/lib/modules/* "$kdir"/usr/lib/modules/* 2>/dev/null | head -n 1)
rm -rf "$out"
mkdir -p "$out/initramfs/bin" "$out/initramfs/mods"
out=$(cd "$out" && pwd)
ir=$out/initramfs
# The guest sees the host's root, but its own /tmp and /run: this tree
# is shared again at its own path (a tree under /tmp, as make mutate's
# scratch copies are, would be hidden), and the binary is copied into it.
cp "$kiln" "$out/kiln"

# The modules and everything they depend on (modinfo's depends= line,
# read with strings: no kmod needed), in load order. A dependency built
# into this kernel (modules.builtin) needs no file.
find "$moddir/kernel" -name '*.ko*' >"$out/modfiles"
order=0
load() {
	local name f tmpko deps d
	name=$1
	grep -qx "$name" "$out/loaded" 2>/dev/null && return 0
	f=$(awk -v n="$name" '{ b = $0; sub(/.*\//, "", b); sub(/\.ko(\.xz|\.zst|\.gz)?$/, "", b);
		gsub(/-/, "_", b); if (b == n) { print; exit } }' "$out/modfiles")
	if [ -z "$f" ]; then
		if grep -q "/$(echo "$name" | sed 's/_/[-_]/g')\.ko\$" "$moddir/modules.builtin"; then
			return 0
		fi
		echo "boot.sh: $label has no module $name" >&2
		return 1
	fi
	tmpko=$out/$name.ko.tmp
	case $f in
	*.xz) xz -dc "$f" >"$tmpko" ;;
	*) cp "$f" "$tmpko" ;;
	esac
	deps=$(strings "$tmpko" | sed -n 's/^depends=//p' | head -n 1 | tr ',' ' ')
	for d in $deps; do
		load "$d" || return 1
	done
	order=$((order + 1))
	mv "$tmpko" "$ir/mods/$(printf %02d "$order")-$name.ko"
	echo "$name" >>"$out/loaded"
}
for m in virtio_pci 9pnet_virtio 9p overlay; do
	load "$m"
done

cp /bin/busybox "$ir/bin/busybox"
cat >"$ir/init" <<INIT
#!/bin/busybox sh
B=/bin/busybox
\$B mkdir -p /proc /dev /newroot
\$B mount -t proc proc /proc
\$B mount -t devtmpfs dev /dev
exec </dev/console >/dev/console 2>&1
for m in /mods/*.ko; do
	\$B insmod \$m || echo "kiln-guest: insmod \$m failed"
done
if ! \$B mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose host /newroot; then
	echo "kiln-guest: cannot mount the host's root over 9p" >/dev/ttyS1
	\$B poweroff -f
fi
\$B mount -t proc proc /newroot/proc
\$B mount -t sysfs sys /newroot/sys
\$B mount --move /dev /newroot/dev
\$B mount -t tmpfs -o mode=1777 tmp /newroot/tmp
\$B mount -t tmpfs -o mode=755 run /newroot/run
\$B mkdir -p /newroot$repo 2>/dev/null
if ! \$B mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose repo /newroot$repo; then
	echo "kiln-guest: cannot mount the tree $repo over 9p" >/dev/ttyS1
	\$B poweroff -f
fi
\$B umount /proc
exec \$B switch_root /newroot /bin/sh $repo/tests/kernels/guest-init.sh "$label" "$out/kiln" "${KILN_TEST_ONLY:-}"
INIT
chmod 755 "$ir/init"
(cd "$ir" && find . | cpio -o -H newc --quiet) | gzip -1 >"$out/initramfs.gz"
rm -rf "$ir"

set +e
timeout -k 10 "$limit" qemu-system-x86_64 -accel tcg -cpu max -m 1536 -smp 2 \
	-nodefaults -display none -monitor none -no-reboot \
	-kernel "$vmlinuz" -initrd "$out/initramfs.gz" \
	-append "console=ttyS0 panic=-1 loglevel=4" \
	-serial "file:$out/console.log" -serial "file:$out/results.log" \
	-virtfs local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap \
	-virtfs "local,path=$repo,mount_tag=repo,security_model=none,readonly=on,multidevs=remap" \
	</dev/null >"$out/qemu.log" 2>&1
rc=$?
tr -d '\r' <"$out/results.log" >"$out/results.txt"
exit $rc
