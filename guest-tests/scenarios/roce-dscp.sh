#!/bin/sh
# roce-dscp (two vrnic guests over udp, the harness captures guest 0's port to OUT/eth0.pcap): traffic classes.
# Both guests: dcb (iproute2) through mlx5e's dcbnl ops: app dscp-prio 26:3 (trust DSCP: QPTS, QPDPM), ets show /
# set prio-tc 3:5 / show (QTCT, QETCR), pfc set prio-pfc 3:on / show (PFCC; the driver toggles the link). Then
# phases, each opened by a marker ping from guest 1 (ICMP echo of 1100+n data bytes: the host splits the capture on
# them): 1 ib_write_bw --tclass=104, 2 ib_write_bw -R -T 104 (rdma_cm ToS; rdma-core 56's rping takes no ToS: its
# getopt string has "t:" but no case for it, so -t prints the usage), 3 rping (ToS 0), 4 over a VLAN netdev (id 10,
# egress-qos-map 0:3 2:5): a ping and ib_write_bw -R -T 104 (rdma_cm: ToS 104 -> skb priority 2 -> PCP 5), 5 rping
# over the VLAN (priority 0 -> PCP 3). The host checks DSCP (and PCP on the VLAN) of every RoCE frame of each phase
# (QP1's CM MADs aside).
. /usr/local/lib/vrnic-roce-lib.sh
roce_all_up 1500
echo "ROCE-DSCP-START g$G"
eth_tool dcb-app-add 20 dcb app add dev $ETH_DEV dscp-prio 26:3
eth_tool dcb-app-show 20 dcb app show dev $ETH_DEV
eth_tool dcb-ets-show 20 dcb ets show dev $ETH_DEV
eth_tool dcb-ets-set 20 dcb ets set dev $ETH_DEV prio-tc 3:5
eth_tool dcb-ets-show2 20 dcb ets show dev $ETH_DEV prio-tc
eth_tool dcb-pfc-set 20 dcb pfc set dev $ETH_DEV prio-pfc 3:on
# the PFC change toggles the port (PAOS down/up): carrier and the RDMA port come back
eth_wait_carrier $ETH_DEV 30 || vr_fail "$ETH_DEV: no carrier after dcb pfc set"
_n=0
until grep -q ACTIVE /sys/class/infiniband/$ROCE_DEV/ports/1/state 2>/dev/null; do
  _n=$((_n + 1)); [ $_n -lt 300 ] || vr_fail "$ROCE_DEV port 1 not ACTIVE after dcb pfc set"; sleep 0.1
done
eth_tool dcb-pfc-show 20 dcb pfc show dev $ETH_DEV
eth_wait_all_peers 60
# the VLAN netdev and its GID
VL_IP=10.2.0.$((G + 1))
modprobe 8021q || vr_fail "modprobe 8021q rc=$?"
ip link add link $ETH_DEV name vl10 type vlan id 10 egress-qos-map 0:3 2:5 || vr_fail "ip link add vl10 rc=$?"
ip addr add $VL_IP/24 dev vl10
ip link set vl10 up
roce_wait_gid present $ROCE_DEV ipv4 $(roce_gid4 $VL_IP) 30 > /dev/null || { roce_gids vlan; vr_fail "no GID for $VL_IP"; }
eth_barrier dscp-ready
# marker N: guest 1 pings guest 0 once with 1100+N data bytes (untagged)
mark() { [ "$G" = 1 ] && ping -c 1 -W 2 -s $((1100 + $1)) $(eth_ip 0) > /dev/null 2>&1; echo "ROCE-DSCP-MARK $1 g$G"; }
mark 1
roce_perf 0 dscp-write-bw 60 ib_write_bw -d @DEV@ -i 1 -F -x @GID4@ --tclass=104 -s 4096 -n 50
mark 2
roce_perf_cm 0 dscp-cm-write-bw 60 ib_write_bw -d @DEV@ -i 1 -F -T 104 -s 4096 -n 50
mark 3
roce_pair 0 dscp-rping-t0 60 rping -s -a @SIP@ -p @PORT@ -C 10 -- rping -c -a @SIP@ -p @PORT@ -C 10
mark 4
eth_wait_peer_vl() { _n=0; until ping -c 1 -W 1 10.2.0.1 > /dev/null 2>&1; do _n=$((_n + 1)); [ $_n -lt 30 ] || return 1; done; }
[ "$G" = 1 ] && { eth_wait_peer_vl || vr_fail "no answer from 10.2.0.1 over vl10"; eth_ping vl-ping -c 3 -W 2 10.2.0.1; }
roce_pair 0 dscp-vl-cm-write-bw 60 ib_write_bw -d @DEV@ -i 1 -F -T 104 -s 4096 -n 50 -R -p @PORT@ -- \
  ib_write_bw -d @DEV@ -i 1 -F -T 104 -s 4096 -n 50 -R -p @PORT@ 10.2.0.1
mark 5
roce_pair 0 dscp-vl-rping-t0 60 rping -s -a 10.2.0.1 -p @PORT@ -C 10 -- rping -c -a 10.2.0.1 -p @PORT@ -C 10
mark 6
eth_barrier done
echo "ROCE-DSCP-DONE g$G"
vr_dmesg "roce-dscp"
