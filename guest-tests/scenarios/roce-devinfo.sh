#!/bin/sh
# roce-devinfo (one guest on an Ethernet port): the RDMA device over the port's netdev: ibv_devinfo -v (link_layer
# Ethernet, PORT_ACTIVE), rdma link, the GID table from sysfs (RoCE v2 entries for the IPv4 and IPv6 addresses),
# and the table following `ip addr add/del` of a second IPv4 and a second IPv6 address; congestion control: debugfs
# cc_params (QUERY/MODIFY_CONG_PARAMS: rp_ai_rate written and read back, then restored) and the four congestion
# counters in hw_counters and `rdma statistic` (QUERY_CONG_STATISTICS).
. /usr/local/lib/vrnic-roce-lib.sh
roce_up
echo "=== ROCE-DEVINFO g$G ==="
ibv_devinfo -v -d $ROCE_DEV 2>&1
echo "=== ROCE-DEVINFO-END g$G ==="
rdma link show 2>&1 | sed 's/^/ROCE-LINK /'
rdma dev show 2>&1 | sed 's/^/ROCE-RDMADEV /'
roce_gids initial
# a second IPv4 address: its GID appears; deleted: it goes
A4=10.1.0.$((G + 101)); A6=fd00:2::$((G + 1))
ip addr add $A4/24 dev $ETH_DEV || vr_fail "ip addr add $A4 rc=$?"
ip -6 addr add $A6/64 dev $ETH_DEV nodad || vr_fail "ip -6 addr add $A6 rc=$?"
t=$(vr_now)
i4=$(roce_wait_gid present $ROCE_DEV ipv4 $(roce_gid4 $A4) 10) && echo "ROCE-GID-FOLLOW add $A4 idx=$i4 after=$(vr_since $t)" ||
  echo "ROCE-GID-FOLLOW add $A4 missing"
G6=$(printf 'fd00:0002:0000:0000:0000:0000:0000:%04x' $((G + 1)))
i6=$(roce_wait_gid present $ROCE_DEV ipv6 $G6 10) && echo "ROCE-GID-FOLLOW add $A6 idx=$i6 after=$(vr_since $t)" ||
  echo "ROCE-GID-FOLLOW add $A6 missing"
roce_gids added
ip addr del $A4/24 dev $ETH_DEV || vr_fail "ip addr del $A4 rc=$?"
ip -6 addr del $A6/64 dev $ETH_DEV || vr_fail "ip -6 addr del $A6 rc=$?"
t=$(vr_now)
roce_wait_gid absent $ROCE_DEV ipv4 $(roce_gid4 $A4) 10 > /dev/null && echo "ROCE-GID-FOLLOW del $A4 gone after=$(vr_since $t)" ||
  echo "ROCE-GID-FOLLOW del $A4 still-present"
roce_wait_gid absent $ROCE_DEV ipv6 $G6 10 > /dev/null && echo "ROCE-GID-FOLLOW del $A6 gone after=$(vr_since $t)" ||
  echo "ROCE-GID-FOLLOW del $A6 still-present"
roce_gids deleted
# the port's counters exist (hw_counters on mlx5, rxe's own)
roce_counters devinfo
# congestion control (docs/congestion.md): mlx5_ib's debugfs cc_params exist because cc_query/modify_allowed are set
grep -q ' /sys/kernel/debug ' /proc/mounts || mount -t debugfs debugfs /sys/kernel/debug
CC=/sys/kernel/debug/mlx5/$(basename "$(readlink -f /sys/class/infiniband/$ROCE_DEV/device)")/cc_params
if [ -d "$CC" ]; then
  echo "ROCE-CC files $(ls $CC | tr '\n' ' ')"
  v0=$(cat $CC/rp_ai_rate)
  echo 42 > $CC/rp_ai_rate; rc=$?
  v1=$(cat $CC/rp_ai_rate)
  echo "$v0" > $CC/rp_ai_rate
  echo "ROCE-CC rp_ai_rate before=$v0 write_rc=$rc after=$v1 restored=$(cat $CC/rp_ai_rate)"
  echo "ROCE-CC np_cnp_dscp=$(cat $CC/np_cnp_dscp) np_cnp_prio=$(cat $CC/np_cnp_prio) rp_gd=$(cat $CC/rp_gd)"
else
  echo "ROCE-CC no-dir $CC"
fi
for c in rp_cnp_ignored rp_cnp_handled np_ecn_marked_roce_packets np_cnp_sent; do
  echo "ROCE-CC-COUNTER $c $(cat /sys/class/infiniband/$ROCE_DEV/ports/1/hw_counters/$c 2>&1)"
done
rdma statistic show link $ROCE_DEV/1 2>&1 | sed 's/^/ROCE-CC-STAT /'
vr_dmesg "roce-devinfo"
