#!/bin/sh
# qemu/demo part 2 (each of two guests): the vrnic port in eth mode comes up as a stock mlx5e netdev; the guests
# ping each other over it (IPv4, IPv6) and guest 1 runs iperf3 TCP (1 and 4 streams) to guest 0.
. /usr/local/lib/vrnic-eth-lib.sh
P=$((1 - G))
echo "--- lspci (guest $G) ---"
lspci -nn -d 15b3: || true
eth_up || exit 1
echo "--- ethtool -i $ETH_DEV ---"
ethtool -i $ETH_DEV | head -3
ip -br addr show $ETH_DEV
eth_wait_peer $P 90 || vr_fail "DEMO-ETH peer $(eth_ip $P) never answered"
[ "$G" = 0 ] && { iperf3 -s -D -p 5201 || vr_fail "iperf3 -s"; }
eth_barrier up
eth_ping "demo-v4-g$G" -c 20 -i 0.05 $(eth_ip $P) || vr_fail "DEMO-ETH IPv4 ping lost packets"
eth_ping "demo-v6-g$G" -6 -c 20 -i 0.05 $(eth_ip6 $P) || vr_fail "DEMO-ETH IPv6 ping lost packets"
if [ "$G" = 1 ]; then
  eth_iperf demo-iperf3-1 60 -c $(eth_ip 0) -t 5 --connect-timeout 5000 || vr_fail "DEMO-ETH iperf3 1 stream"
  eth_iperf demo-iperf3-4 60 -c $(eth_ip 0) -P 4 -t 5 --connect-timeout 5000 || vr_fail "DEMO-ETH iperf3 4 streams"
fi
eth_barrier done
echo "DEMO-ETH g$G done"
