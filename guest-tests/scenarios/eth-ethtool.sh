#!/bin/sh
# eth-ethtool (two guests point to point, g0 under test, g1 sends the traffic): ethtool -G ring resize, -L channel
# resize (traffic before and after), -N flow rules (UDP drop; steer to queue 1) that take effect, -t self-test,
# -S counters moving with traffic, -k/-K (gro), -a/-A pause; carrier events while the harness flaps the link
# through the server's control socket (vrnic); frames to a foreign MAC filtered unless promiscuous.
. /usr/local/lib/vrnic-eth-lib.sh
P=$((1 - G))
eth_up
eth_wait_peer $P 90 || vr_fail "peer never answered"
D=$ETH_DEV
# udp_burst N PORT: g1 sends N datagrams "FLOW<i>" to g0:PORT
udp_burst() { udpx send $(eth_ip 0) $2 $1; }
eth_barrier up
if [ "$G" = 0 ]; then
  eth_stats before
  ethtool -g $D 2>&1 | sed 's/^/ETH-RING-BEFORE /'
  ethtool -G $D rx 512 tx 512 2>&1 | sed 's/^/ETH-RING-SET /'
  echo "ETH-RING-SET-RC $?"
  ethtool -g $D 2>&1 | sed 's/^/ETH-RING-AFTER /'
  eth_ping "after-ring" -c 50 -i 0.02 $(eth_ip $P)
  MAXCH=$(ethtool -l $D | awk '/Combined/{print $2; exit}')
  ethtool -L $D combined 2 2>&1 | sed 's/^/ETH-CHANNELS-SET /'
  echo "ETH-CHANNELS-2 $(ethtool -l $D | awk '/Combined/{print $2}' | tr '\n' ' ')"
  eth_ping "channels-2" -c 50 -i 0.02 $(eth_ip $P)
  ethtool -L $D combined ${MAXCH:-1} 2>&1 | sed 's/^/ETH-CHANNELS-SET /'
  echo "ETH-CHANNELS-MAX $(ethtool -l $D | awk '/Combined/{print $2}' | tr '\n' ' ')"
  eth_ping "channels-max" -c 50 -i 0.02 $(eth_ip $P)
  ethtool -K $D gro off; echo "ETH-GRO-OFF $(ethtool -k $D | grep '^generic-receive-offload')"
  ethtool -K $D gro on; echo "ETH-GRO-ON $(ethtool -k $D | grep '^generic-receive-offload')"
  ethtool -a $D 2>&1 | sed 's/^/ETH-PAUSE-BEFORE /'
  ethtool -A $D rx off tx off 2>&1 | sed 's/^/ETH-PAUSE-SET /'
  ethtool -a $D 2>&1 | sed 's/^/ETH-PAUSE-AFTER /'
  ethtool -A $D rx on tx on > /dev/null 2>&1
  ethtool -t $D online 2>&1 | sed 's/^/ETH-SELFTEST /'
  eth_stats after-ping
  # -N: drop UDP to 9999
  ethtool -K $D ntuple on 2>&1 | sed 's/^/ETH-NTUPLE /'
  ethtool -N $D flow-type udp4 dst-port 9999 action -1 2>&1 | sed 's/^/ETH-RULE-DROP /'
  ethtool -n $D 2>&1 | sed 's/^/ETH-RULES /'
fi
eth_barrier rule-drop
if [ "$G" = 0 ]; then udpx recv 9999 6 > /tmp/drop; echo "ETH-DROP-RX $(grep -c FLOW /tmp/drop)"; else sleep 1; udp_burst 20 9999; fi
eth_barrier drop-sent
if [ "$G" = 0 ]; then
  for id in $(ethtool -n $D 2>/dev/null | sed -n 's/^Filter: *\([0-9]*\)/\1/p'); do ethtool -N $D delete $id; done
  ethtool -N $D flow-type udp4 dst-port 9998 action 1 2>&1 | sed 's/^/ETH-RULE-STEER /'
  eth_stats before-steer
fi
eth_barrier rule-steer
if [ "$G" = 0 ]; then udpx recv 9998 6 > /tmp/steer; echo "ETH-STEER-RX $(grep -c FLOW /tmp/steer)"; else sleep 1; udp_burst 20 9998; fi
eth_barrier steer-sent
if [ "$G" = 0 ]; then
  eth_stats after-steer
  for id in $(ethtool -n $D 2>/dev/null | sed -n 's/^Filter: *\([0-9]*\)/\1/p'); do ethtool -N $D delete $id; done
  udpx recv 9999 6 > /tmp/nodrop; echo "ETH-NODROP-RX $(grep -c FLOW /tmp/nodrop)"
else
  sleep 1; udp_burst 20 9999
fi
eth_barrier rules-done
# foreign MAC: g1 sends to 10.1.0.99 with a static neighbour 02:00:00:00:00:99 (frames reach g0's port)
if [ "$G" = 1 ]; then
  ip neigh replace 10.1.0.99 lladdr 02:00:00:00:00:99 dev $D nud permanent
  sleep 1; ping -c 8 -i 0.3 -W 1 10.1.0.99 > /dev/null 2>&1
else
  timeout 5 tcpdump -Z root -l -p -n -i $D -c 100 ether dst 02:00:00:00:00:99 > /tmp/td 2> /tmp/td.err
  echo "ETH-FOREIGN-NOPROMISC $(grep -c 'ICMP echo request' /tmp/td) $(grep -o 'listening on [^,]*' /tmp/td.err)"
fi
eth_barrier foreign-1
if [ "$G" = 1 ]; then
  sleep 1; ping -c 8 -i 0.3 -W 1 10.1.0.99 > /dev/null 2>&1
else
  ip link set $D promisc on
  timeout 5 tcpdump -Z root -l -p -n -i $D -c 100 ether dst 02:00:00:00:00:99 > /tmp/td 2> /tmp/td.err
  echo "ETH-FOREIGN-PROMISC $(grep -c "ICMP echo request" /tmp/td) $(grep -o "listening on [^,]*" /tmp/td.err)"
  ip link set $D promisc off
fi
eth_barrier foreign-2
# carrier events while the harness flaps the link (control socket: link down, 3 s, link up)
if [ "$G" = 0 ]; then
  eth_wait_carrier $D 30
  # the carrier is read before READY: the harness flaps as soon as it sees READY
  last=$(cat /sys/class/net/$D/carrier); n=0
  echo "ETH-FLAP-READY"
  while [ $n -lt 200 ]; do
    c=$(cat /sys/class/net/$D/carrier 2>/dev/null)
    [ "$c" != "$last" ] && { echo "ETH-CARRIER $c at=$(vr_uptime)"; last=$c; }
    [ -e /tmp/flap-done ] && break
    sleep 0.1; n=$((n + 1))
  done
  echo "ETH-FLAP-END carrier=$(cat /sys/class/net/$D/carrier) changes=$(cat /sys/class/net/$D/carrier_changes)"
  eth_wait_carrier $D 30 && eth_wait_peer $P 30 && eth_ping "after-flap" -c 20 -i 0.05 $(eth_ip $P)
fi
eth_barrier done
vr_dmesg "eth-ethtool"
