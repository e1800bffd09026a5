#!/bin/sh
# Runs inside the demo guest.
echo "=== lspci -nn -d 15b3: -vv"
lspci -nn -d 15b3: -vv
echo "=== modprobe mlx5_core mlx5_ib"
modprobe mlx5_core &
i=0
while [ $i -lt 90 ]; do
    if [ -e /sys/class/infiniband/mlx5_0 ] || dmesg | grep -q "mlx5_core.*\(failed\|timeout\)"; then break; fi
    sleep 1; i=$((i+1))
done
modprobe mlx5_ib 2>/dev/null
sleep 2
echo "=== dmesg | grep mlx5"
dmesg | grep -i mlx5
echo "=== ibv_devinfo"
ibv_devinfo -v 2>&1 || true
echo "=== rdma link"
rdma link 2>&1 || true
