#!/bin/sh
# ulp: the upper-layer clients on top of mlx5_ib: ib_umad (/dev/infiniband/umad0), ib_cm (sets CM_SUP in
# PortInfo.CapabilityMask through ACCESS_REG PCAP), ib_ipoib (ib0 comes up and joins the broadcast group through
# vrnic's SA on this port, the SM LID: carrier). The port counters sysfs shows come from PerfMgt MADs answered by
# the device (MAD_IFC).
. /usr/local/lib/vrnic-lib.sh
vr_mlx5_up 90 || { vr_dmesg "probe failed"; vr_fail "mlx5_0 not ACTIVE"; }
P=/sys/class/infiniband/mlx5_0/ports/1
echo "ULP cap_mask before=$(cat $P/cap_mask)"
modprobe ib_umad; modprobe ib_cm; modprobe rdma_cm; modprobe ib_ipoib
i=0; while [ ! -e /sys/class/net/ib0 ] && [ $i -lt 30 ]; do sleep 1; i=$((i+1)); done
ip link set ib0 up && ip addr add 10.99.0.1/24 dev ib0
sleep 6
echo "ULP cap_mask after=$(cat $P/cap_mask)"
ls -l /dev/infiniband/
ip link show ib0
echo "ULP ib0 flags=$(cat /sys/class/net/ib0/flags 2>/dev/null) carrier=$(cat /sys/class/net/ib0/carrier 2>/dev/null)"
for c in port_xmit_packets port_rcv_packets port_xmit_data port_rcv_data; do
  echo "ULP counter $c=$(cat $P/counters/$c 2>/dev/null)"
done
echo "ULP state=$(cat $P/state)"
vr_dmesg "after ulp"
