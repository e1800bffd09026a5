#!/bin/sh
# eth-iperf (three guests on a bridge: g0 and g1 vrnic, g2 virtio-net): g0 runs two iperf3 servers; g1, then g2,
# runs against it: TCP 4 streams (then 16 for 1 s), TCP 1 stream, both reversed (-R), UDP 20 Mbit/s; 3 s each. g0's ethtool -S
# around each 4+16-stream window shows which RX queues moved. Output blocks: ETH-TOOL <label> (iperf3's own report).
. /usr/local/lib/vrnic-eth-lib.sh
T=${T:-3}
eth_up
[ "$G" = 0 ] || eth_wait_peer 0 90 || vr_fail "g0 never answered"
if [ "$G" = 0 ]; then
  iperf3 -s -D -p 5201 || vr_fail "iperf3 -s rc=$?"
  iperf3 -s -D -p 5202 || vr_fail "iperf3 -s rc=$?"
fi
eth_barrier servers-up
c=1
while [ $c -lt $ETH_N ]; do
  PAIR="g$c-$(eth_nic $c)-to-g0-$(eth_nic 0)"
  [ "$G" = 0 ] && eth_stats "before-p4-$PAIR"
  eth_barrier "go-p4-$c"
  if [ "$G" = $c ]; then
    eth_iperf "tcp-p4-$PAIR" 60 -c $(eth_ip 0) -p $((5200 + c)) -P 4 -t $T --connect-timeout 5000
    # 16 more flows in the same window: RSS spreads them over g0's RX queues; with 4 flows on 2 queues, one in 8
    # runs would put them all on one queue by chance (the RSS key is random per boot)
    eth_iperf "tcp-p16-$PAIR" 60 -c $(eth_ip 0) -p $((5200 + c)) -P 16 -t 1 --connect-timeout 5000
  fi
  eth_barrier "p4-done-$c"
  [ "$G" = 0 ] && eth_stats "after-p4-$PAIR"
  if [ "$G" = $c ]; then
    eth_iperf "tcp-p1-$PAIR" 60 -c $(eth_ip 0) -p $((5200 + c)) -t $T --connect-timeout 5000
    eth_iperf "tcp-p1-R-$PAIR" 60 -c $(eth_ip 0) -p $((5200 + c)) -R -t $T --connect-timeout 5000
    eth_iperf "tcp-p4-R-$PAIR" 60 -c $(eth_ip 0) -p $((5200 + c)) -R -P 4 -t $T --connect-timeout 5000
    eth_iperf "udp-$PAIR" 60 -c $(eth_ip 0) -p $((5200 + c)) -u -b 20M -t $T --connect-timeout 5000
  fi
  eth_barrier "rest-done-$c"
  c=$((c + 1))
done
ip -s link show $ETH_DEV
vr_dmesg "eth-iperf"
