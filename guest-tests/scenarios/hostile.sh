#!/bin/sh
# hostile: with mlx5 unbound, guest-tests/src/hostile.c hammers BAR0 (random stores/loads, stray doorbells)
# and feeds the command queue absurd lengths, looping or out-of-memory mailbox chains, unknown opcodes and
# random entries; each must complete with the right status, nothing may hang. Then a function-level reset,
# and the stock driver must come back ACTIVE.
. /usr/local/lib/vrnic-lib.sh
BDF=$(vr_bdf)
[ -n "$BDF" ] || vr_fail "no 15b3:1017 function"
vr_mlx5_up 90 || { vr_dmesg "probe failed"; vr_fail "mlx5_0 not ACTIVE"; }
rmmod mlx5_ib; rmmod mlx5_core
setpci -s "$BDF" COMMAND=0x06
echo "=== hostile ==="
hostile /sys/bus/pci/devices/$BDF/resource0; echo "HOSTILE-RC $?"
echo "=== reset and reload ==="
echo 1 > /sys/bus/pci/devices/$BDF/reset; echo "RESET-RC $?"
vr_mlx5_up 90 || { vr_dmesg "reload failed"; vr_fail "mlx5_0 not ACTIVE after the hostile run"; }
ibv_devinfo -d mlx5_0 | grep -E "hca_id|state"
echo "HOSTILE-AFTER state=$(cat /sys/class/infiniband/mlx5_0/ports/1/state)"
