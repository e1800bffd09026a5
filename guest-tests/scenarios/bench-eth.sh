#!/bin/sh
# bench-eth (two guests point to point over udp; the harness runs it with vrnic ports, then with virtio-net):
# 3 repetitions of iperf3 TCP 1 stream and 4 streams (5 s each, g1 -> g0), ping -c 200 -i 0.01 and tcp_rr
# (2000 round trips of 64 bytes). Output: ETH-TOOL bench-<test>-r<k> blocks; the harness prints BENCH lines.
. /usr/local/lib/vrnic-eth-lib.sh
REPS=${REPS:-3}
T=${T:-5}
eth_up
[ "$G" = 0 ] || eth_wait_peer 0 90 || vr_fail "g0 never answered"
if [ "$G" = 0 ]; then
  iperf3 -s -D -p 5201 || vr_fail "iperf3 -s rc=$?"
  tcp_rr -s 5300 &
fi
eth_barrier servers-up
if [ "$G" = 1 ]; then
  r=1
  while [ $r -le $REPS ]; do
    eth_iperf "bench-tcp1-r$r" 60 -c $(eth_ip 0) -t $T --connect-timeout 5000
    eth_iperf "bench-tcp4-r$r" 60 -c $(eth_ip 0) -P 4 -t $T --connect-timeout 5000
    eth_tool "bench-ping-r$r" 60 ping -c 200 -i 0.01 $(eth_ip 0)
    eth_tool "bench-rr-r$r" 60 tcp_rr -c $(eth_ip 0) 5300 2000 64
    r=$((r + 1))
  done
fi
eth_barrier done
