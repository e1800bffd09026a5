#!/bin/sh
# eth-mtu (two guests point to point): at MTU 1500 `ping -M do -s 8972` is refused by the sender; with MTU 9000
# on both ends it passes (20 pings, 0% loss), and 1472-byte pings still pass.
. /usr/local/lib/vrnic-eth-lib.sh
P=$((1 - G))
eth_up 1500
eth_wait_peer $P 90 || vr_fail "peer $(eth_ip $P) never answered"
eth_barrier up-1500
ping -M do -s 8972 -c 1 -W 2 $(eth_ip $P) > /tmp/big 2>&1
rc=$?
echo "ETH-MTU g$G mtu=$(cat /sys/class/net/$ETH_DEV/mtu) big-ping rc=$rc: $(grep -iE 'too long|mtu|error|received' /tmp/big | head -2 | tr '\n' ' ')"
eth_ping "mtu1500-s1472-g$G" -M do -s 1472 -c 20 -i 0.05 $(eth_ip $P)
eth_barrier tested-1500
ip link set $ETH_DEV mtu 9000 || vr_fail "ip link set mtu 9000 rc=$?"
eth_wait_carrier $ETH_DEV 30 || vr_fail "no carrier after the MTU change"
echo "ETH-MTU g$G now mtu=$(cat /sys/class/net/$ETH_DEV/mtu)"
eth_barrier up-9000
eth_wait_peer $P 30 || vr_fail "peer silent after the MTU change"
eth_ping "mtu9000-s8972-g$G" -M do -s 8972 -c 20 -i 0.05 $(eth_ip $P)
eth_ping "mtu9000-v6-s8952-g$G" -6 -M do -s 8952 -c 20 -i 0.05 $(eth_ip6 $P)
eth_barrier done
ip -s link show $ETH_DEV
vr_dmesg "eth-mtu"
