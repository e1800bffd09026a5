#!/bin/sh
# eth-ping (guests on one bridge, e.g. vrnic, vrnic, virtio-net): every guest pings every other, IPv4 and IPv6,
# 1000 pings each (flood, as root) with 0% loss; ARP/ND entries carry the peers' MACs; broadcast (10.1.0.255),
# IPv4 multicast (224.0.0.1) and IPv6 multicast (ff02::1) pings are answered by every peer.
. /usr/local/lib/vrnic-eth-lib.sh
COUNT=${COUNT:-1000}
eth_up
eth_wait_all_peers 90
eth_barrier all-up
j=0
while [ $j -lt $ETH_N ]; do
  if [ $j != $G ]; then
    eth_ping "v4-g$G-g$j-$(eth_nic $G)-$(eth_nic $j)" -f -c $COUNT -w 120 $(eth_ip $j)
    eth_ping "v6-g$G-g$j-$(eth_nic $G)-$(eth_nic $j)" -6 -f -c $COUNT -w 120 $(eth_ip6 $j)
  fi
  j=$((j + 1))
done
ip neigh show dev $ETH_DEV | sed 's/^/ETH-NEIGH /'
ip -6 neigh show dev $ETH_DEV | sed 's/^/ETH-NEIGH /'
eth_barrier pinged
# every peer answers the broadcast and the multicast pings (their replies come from their own addresses)
ping -b -c 5 -i 0.3 -W 2 10.1.0.255 2>&1 | sed -n 's/^[0-9]* bytes from \([0-9.]*\):.*/ETH-BCAST g'$G' reply-from \1/p' | sort -u
ping -c 5 -i 0.3 -W 2 -I $ETH_DEV 224.0.0.1 2>&1 | sed -n 's/^[0-9]* bytes from \([0-9.]*\):.*/ETH-MCAST4 g'$G' reply-from \1/p' | sort -u
ping -6 -c 5 -i 0.3 -W 2 ff02::1%$ETH_DEV 2>&1 | sed -n 's/^[0-9]* bytes from \([0-9a-f:]*\)%*[^:]*:.*/ETH-MCAST6 g'$G' reply-from \1/p' | sort -u
ip -s link show $ETH_DEV
eth_barrier done
vr_dmesg "eth-ping"
