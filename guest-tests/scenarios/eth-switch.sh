#!/bin/sh
# eth-switch: the switch guest's self-test (ethswitch.py): g1 sends TCP with ECN (tcp_ecn=1) to g0 through the
# switch, whose egress towards g0 is rate-limited with RED marking. g0 asks the switch for its counters before and
# after (sw_cmd); both guests print /proc/net/netstat (TCPDeliveredCE on the sender: CE echoed back).
# vrnic.sw_t=<s> sets the iperf3 time (default 8).
. /usr/local/lib/vrnic-eth-lib.sh
T=$(vr_karg vrnic.sw_t); T=${T:-8}
eth_up
sysctl -qw net.ipv4.tcp_ecn=1 || vr_fail "sysctl net.ipv4.tcp_ecn=1"
eth_wait_all_peers 120
[ "$G" = 0 ] && { iperf3 -s -D -p 5201 || vr_fail "iperf3 -s rc=$?"; }
eth_barrier up
[ "$G" = 0 ] && sw_cmd "stats before"
eth_barrier go
if [ "$G" = 1 ]; then
  eth_tool tcp-ecn $((T + 30)) iperf3 -c $(eth_ip 0) -p 5201 -t $T -P 2 --connect-timeout 5000 \
    || vr_fail "iperf3 through the switch rc=$?"
fi
eth_barrier done
echo "=== NETSTAT g$G ==="; cat /proc/net/netstat; echo "=== NETSTAT-END g$G ==="
if [ "$G" = 0 ]; then
  sw_cmd "stats after"
  sw_cmd end
fi
ip -s link show $ETH_DEV
