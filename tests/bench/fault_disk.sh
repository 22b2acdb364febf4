#!/usr/bin/env bash
# A small disk that can be filled and freed on demand (issue 27's faults): an ext4 file
# system on a sparse file, loop-mounted. Needs root (mount, losetup).
#
#   fault_disk.sh make DIR SIZE_MB   make DIR.img (sparse, SIZE_MB MiB), mkfs.ext4 it and
#                                    mount it on DIR (made if missing); world-writable
#   fault_disk.sh fill DIR           write DIR/.filler until the disk is full (ENOSPC);
#                                    prints the free bytes left (0, or what ext4 keeps back)
#   fault_disk.sh free DIR           delete DIR/.filler; prints the free bytes
#   fault_disk.sh remove DIR         unmount DIR (lazily if busy), delete DIR.img
#
# Each prints one line saying what it did; exit 1 naming what failed, 2 for a usage error.
# The image lies beside DIR (DIR.img), not on it.
set -euo pipefail

usage() {
  echo "usage: ${0##*/} make DIR SIZE_MB | fill DIR | free DIR | remove DIR" >&2
  exit 2
}
die() {
  echo "fault_disk: $*" >&2
  exit 1
}
free_bytes() { df --output=avail -B1 "$1" | tail -1 | tr -d ' '; }
mounted() { mountpoint -q "$1"; }

[ $# -ge 2 ] || usage
cmd=$1
dir=${2%/}
img=$dir.img

case $cmd in
  make)
    [ $# -eq 3 ] || usage
    size=$3
    [[ $size =~ ^[0-9]+$ ]] && [ "$size" -ge 2 ] || die "SIZE_MB must be a number of MiB (2 or more), got '$size'"
    [ "$(id -u)" -eq 0 ] || die "make needs root (losetup, mount)"
    mounted "$dir" 2>/dev/null && die "$dir is already a mount point"
    mkdir -p "$dir"
    rm -f "$img"
    truncate -s "${size}M" "$img"
    # No reserved blocks (-m 0): full means full for benchd too, root or not.
    mkfs.ext4 -q -F -m 0 -E lazy_itable_init=0,lazy_journal_init=0 "$img" ||
      die "mkfs.ext4 $img failed"
    mount -o loop "$img" "$dir" || die "mount -o loop $img $dir failed"
    chmod 1777 "$dir"
    echo "fault_disk: $dir is a ${size} MiB ext4 on $img ($(free_bytes "$dir") bytes free)"
    ;;
  fill)
    [ $# -eq 2 ] || usage
    mounted "$dir" || die "$dir is not mounted (fault_disk.sh make first)"
    # dd stops at ENOSPC (its exit status says so: expected); then top up what a partial
    # block left with small writes until even those fail.
    dd if=/dev/zero of="$dir/.filler" bs=1M oflag=append conv=notrunc status=none 2>/dev/null || true
    dd if=/dev/zero of="$dir/.filler" bs=4k oflag=append conv=notrunc status=none 2>/dev/null || true
    sync -f "$dir" 2>/dev/null || true
    echo "fault_disk: $dir is full ($(free_bytes "$dir") bytes free, filler $(stat -c %s "$dir/.filler") bytes)"
    ;;
  free)
    [ $# -eq 2 ] || usage
    mounted "$dir" || die "$dir is not mounted"
    rm -f "$dir/.filler"
    sync -f "$dir" 2>/dev/null || true
    echo "fault_disk: $dir freed ($(free_bytes "$dir") bytes free)"
    ;;
  remove)
    [ $# -eq 2 ] || usage
    if mounted "$dir"; then
      umount "$dir" 2>/dev/null || umount -l "$dir" || die "cannot unmount $dir"
    fi
    rm -f "$img"
    rmdir "$dir" 2>/dev/null || true
    echo "fault_disk: $dir removed"
    ;;
  *) usage ;;
esac
