#!/bin/sh
# Runs inside the demo guest: the device as lspci sees it, the stock mlx5 drivers binding it,
# and the RDMA device they register.
echo "=== lspci -nn -d 15b3: -vv"
lspci -nn -d 15b3: -vv
echo "=== modprobe mlx5_core mlx5_ib ib_umad ib_cm ib_ipoib"
modprobe mlx5_core
modprobe mlx5_ib
i=0
while [ ! -e /sys/class/infiniband/mlx5_0 ] && [ $i -lt 30 ]; do sleep 1; i=$((i+1)); done
modprobe ib_umad; modprobe ib_cm; modprobe ib_ipoib
sleep 2
echo "=== dmesg | grep -i mlx5"
dmesg | grep -i mlx5
echo "=== ibv_devinfo -v"
ibv_devinfo -v 2>&1
echo "=== rdma link"
rdma link 2>&1
echo "=== ip link show ib0"
ip link set ib0 up 2>&1
ip link show ib0 2>&1
