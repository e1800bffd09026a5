#!/bin/sh
# verbs-objects: guest-tests/src/verbs_objects.c against mlx5_0 (PDs, MRs incl. a 2 MiB huge page, CQs,
# SRQs, RC/UC/UD QPs through every legal transition, illegal ones and bad parameters), then the port
# must still be ACTIVE.
. /usr/local/lib/vrnic-lib.sh
BDF=$(vr_bdf)
[ -n "$BDF" ] || vr_fail "no 15b3:1017 function"
vr_mlx5_up 90 || { vr_dmesg "probe failed"; vr_fail "mlx5_0 not ACTIVE"; }
HUGE=
mkdir -p /mnt/huge
if mount -t hugetlbfs -o pagesize=2M none /mnt/huge; then
  echo 4 > /proc/sys/vm/nr_hugepages
  grep -i huge /proc/meminfo
  if [ "$(cat /proc/sys/vm/nr_hugepages)" -ge 1 ]; then HUGE="-H /mnt/huge"
  else echo "NOTE no 2 MiB huge pages could be reserved"; fi
else
  echo "NOTE hugetlbfs mount failed"
fi
echo "=== verbs_objects ==="
t0=$(vr_uptime)
verbs_objects -d mlx5_0 -w 60 $HUGE
rc=$?
echo "VERBS-OBJECTS-RC $rc seconds=$(awk "BEGIN{print $(vr_uptime)-$t0}")"
echo "=== ibv_devinfo after ==="
ibv_devinfo -d mlx5_0
echo "=== end ibv_devinfo after ==="
vr_dmesg "after verbs_objects"
