#!/bin/sh
# eth-vlan (two guests point to point): 802.1Q subinterfaces VLAN 100 on both ends ping (IPv4 + IPv6, 200 pings,
# 0% loss). Guest 0 also has VLAN 200 (10.2.200.1), guest 1 VLAN 201 (10.2.200.2, the same subnet): guest 0's
# pings to 10.2.200.2 must all be lost and guest 1's VLAN 201 must receive nothing (frames of another VLAN are
# not delivered).
. /usr/local/lib/vrnic-eth-lib.sh
P=$((1 - G))
modprobe 8021q || vr_fail "modprobe 8021q rc=$?"
eth_up
eth_wait_peer $P 90 || vr_fail "peer $(eth_ip $P) never answered"
ip link add link $ETH_DEV name vl100 type vlan id 100 || vr_fail "ip link add vlan 100 rc=$?"
ip addr add 10.2.100.$((G + 1))/24 dev vl100
ip -6 addr add fd00:100::$((G + 1))/64 dev vl100 nodad
OTHER=$((200 + G))
ip link add link $ETH_DEV name vl$OTHER type vlan id $OTHER || vr_fail "ip link add vlan $OTHER rc=$?"
sysctl -qw net.ipv6.conf.vl$OTHER.disable_ipv6=1 2>/dev/null
ip addr add 10.2.200.$((G + 1))/24 dev vl$OTHER
ip link set vl100 up && ip link set vl$OTHER up || vr_fail "vlan links up"
ethtool -k $ETH_DEV | grep -E "vlan" | sed "s/^/ETH-VLAN-FEATURE g$G /"
eth_barrier vlans-up
n=0
until ping -c 1 -W 1 10.2.100.$((P + 1)) > /dev/null 2>&1; do n=$((n + 1)); [ $n -lt 30 ] || break; done
eth_ping "vlan100-v4-g$G" -c 200 -i 0.01 -w 60 10.2.100.$((P + 1))
eth_ping "vlan100-v6-g$G" -6 -c 200 -i 0.01 -w 60 fd00:100::$((P + 1))
eth_barrier vlan100-done
if [ "$G" = 0 ]; then
  ping -c 10 -i 0.1 -W 1 10.2.200.2 > /tmp/cross 2>&1
  echo "ETH-VLAN-CROSS g0 vlan200->vlan201 rc=$? $(grep 'packets transmitted' /tmp/cross)"
fi
eth_barrier cross-done
RX=$(cat /sys/class/net/vl$OTHER/statistics/rx_packets)
echo "ETH-VLAN-OTHER g$G vl$OTHER rx_packets=$RX"
ip -s link show vl100
eth_barrier done
vr_dmesg "eth-vlan"
