#!/bin/sh
# reload: (each boot) mlx5_core + mlx5_ib up and ACTIVE -> RELOAD-BOOT-ACTIVE; then 5 cycles of
# rmmod mlx5_ib mlx5_core / modprobe mlx5_core mlx5_ib, each ending ACTIVE; then a guest reboot on the
# same server. The harness stops the guest once the second boot printed RELOAD-BOOT-ACTIVE.
. /usr/local/lib/vrnic-lib.sh
CYCLES=${CYCLES:-5}
BDF=$(vr_bdf)
[ -n "$BDF" ] || vr_fail "no 15b3:1017 function"
vr_mlx5_up 90 || { vr_dmesg "boot probe failed"; vr_fail "boot: mlx5_0 not ACTIVE"; }
ibv_devinfo | grep -E "hca_id|state|port_lid"
vr_dmesg "boot"
echo "RELOAD-BOOT-ACTIVE uptime=$(vr_uptime)"
i=1
while [ $i -le $CYCLES ]; do
  t0=$(vr_uptime)
  rmmod mlx5_ib mlx5_core || { vr_dmesg "rmmod failed"; vr_fail "cycle $i: rmmod mlx5_ib mlx5_core rc=$?"; }
  [ -e /sys/class/infiniband/mlx5_0 ] && vr_fail "cycle $i: mlx5_0 still registered after rmmod"
  lsmod | grep -q "^mlx5_core " && vr_fail "cycle $i: mlx5_core still loaded after rmmod"
  t1=$(vr_uptime)
  vr_mlx5_up 90 || { vr_dmesg "cycle $i failed"; vr_fail "cycle $i: mlx5_0 not ACTIVE after modprobe"; }
  st=$(ibv_devinfo -d mlx5_0 | grep -E "^\s+state:" | tr -s ' \t' ' ')
  echo "RELOAD-CYCLE $i unload_s=$(awk "BEGIN{print $t1-$t0}") ibv_devinfo:$st"
  i=$((i + 1))
done
vr_dmesg "after $CYCLES cycles"
echo "RELOAD-CYCLES-DONE $CYCLES; rebooting"
sync
echo b > /proc/sysrq-trigger
sleep 10
