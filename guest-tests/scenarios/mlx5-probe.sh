#!/bin/sh
# mlx5-probe: stock mlx5_core + mlx5_ib bind, mlx5_0 registers and its port goes ACTIVE; then the
# driver's health poller (every 2 s, "health compromised" after 3 misses) runs >= 12 s of guest time.
# The harness asserts on the bindings, the markers and every mlx5/ib line of the full dmesg.
. /usr/local/lib/vrnic-lib.sh
BDF=$(vr_bdf)
[ -n "$BDF" ] || vr_fail "no 15b3:1017 function"
echo "MLX5-PROBE-BDF $BDF"
vr_mlx5_up 90 || { vr_dmesg "probe failed"; vr_fail "mlx5_0 not ACTIVE"; }
vr_bindings $BDF
ls -l /sys/class/infiniband/
echo "MLX5-PROBE-HEALTH-WAIT from=$(vr_uptime)"
sleep 12
echo "MLX5-PROBE-HEALTH-DONE at=$(vr_uptime) state=$(cat /sys/class/infiniband/mlx5_0/ports/1/state)"
vr_bindings $BDF
vr_dmesg "after health wait"
