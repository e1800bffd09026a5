#!/bin/sh
# roce-devinfo (one guest on an Ethernet port): the RDMA device over the port's netdev: ibv_devinfo -v (link_layer
# Ethernet, PORT_ACTIVE), rdma link, the GID table from sysfs (RoCE v2 entries for the IPv4 and IPv6 addresses),
# and the table following `ip addr add/del` of a second IPv4 and a second IPv6 address.
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
vr_dmesg "roce-devinfo"
