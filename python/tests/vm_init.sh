#!/bin/busybox sh
# /init of the test machine of cgroup_vm.py: mounts what a Debian system has
# (proc, sysfs, devtmpfs, tmpfs, the unified cgroup hierarchy), loads the
# virtio and 9p modules, mounts the shares the host lists in /out/mounts at
# their paths, runs /out/script.sh as root and powers off.
bb=/bin/busybox
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
$bb mount -t proc proc /proc
$bb mount -t sysfs sysfs /sys
$bb mount -t devtmpfs devtmpfs /dev
$bb mkdir -p /dev/shm /dev/pts
$bb mount -t tmpfs -o mode=1777 tmpfs /dev/shm
$bb mount -t tmpfs -o mode=1777 tmpfs /tmp
$bb mount -t cgroup2 cgroup2 /sys/fs/cgroup
while read -r module; do
    $bb insmod "/modules/$module.ko" || echo "hugeheap-vm: cannot load $module"
done < /modules/order
nine="trans=virtio,version=9p2000.L,msize=512000"
$bb mount -t 9p -o "$nine" out /out || echo "hugeheap-vm: cannot mount /out"
while read -r tag path; do
    $bb mkdir -p "$path"
    $bb mount -t 9p -o "$nine,ro,cache=loose" "$tag" "$path" ||
        echo "hugeheap-vm: cannot mount $path"
done < /out/mounts
$bb hostname hugeheap-vm
echo "hugeheap-vm: booted"
$bb sh /out/script.sh > /out/script.log 2>&1
echo $? > /out/script.rc
$bb sync
$bb poweroff -f
