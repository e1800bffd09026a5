#!/bin/sh
# eth-host (one guest, its port on the tap backend: a TAP on a bridge in a network namespace whose br0 has
# 10.1.0.254 and fd00:1::fe): the guest pings the host (IPv4, IPv6); the harness pings the guest from the
# namespace (interact_eth_host) and then connects to the guest's TCP port 7000 with a line that says so.
. /usr/local/lib/vrnic-eth-lib.sh
eth_up
n=0
until ping -c 1 -W 1 10.1.0.254 > /dev/null 2>&1; do n=$((n + 1)); [ $n -lt 60 ] || vr_fail "host 10.1.0.254 never answered"; done
eth_ping "guest-to-host-v4" -c 100 -i 0.02 10.1.0.254
eth_ping "guest-to-host-v6" -6 -c 100 -i 0.02 fd00:1::fe
echo "ETH-HOST-READY"
eth_listen 7000 90 > /tmp/host-said
echo "ETH-HOST-SAID $(cat /tmp/host-said)"
ip neigh show dev $ETH_DEV | sed 's/^/ETH-NEIGH /'
ip -s link show $ETH_DEV
vr_dmesg "eth-host"
