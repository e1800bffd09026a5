#!/bin/sh
# roce-pfc (bridge, two vrnic guests; the host writes PFC frames into guest 0's TAP, which guest 0's vrnic reads as
# received): PFC on priority 3. Guest 0: dcb pfc set prio-pfc 3:on (PFCC; the driver toggles the link). Both: VLAN 3
# with egress-qos-map 0:3 (every frame PCP 3) and VLAN 4 (PCP 0). Guest 0 pings guest 1 over both VLANs (50/s
# each, 10 s) and samples ethtool -S every ~0.25 s (ROCE-PFC-SAMPLE lines: tx_prio0/3_packets, rx_prio3_pause,
# rx_prio3_pause_duration); ROCE-PFC-TRAFFIC tells the host to start its ~3 s burst of pause frames. The host
# judges the samples: while the pause frames arrive tx_prio3_packets stands (nearly) still and tx_prio0_packets
# advances; after, priority 3 goes on.
# Then PFC transmit: guest 0 slows its receive processing to one NAPI pass per 2 s (napi_defer_hard_irqs +
# gro_flush_timeout: the CQ stays unarmed, the RQ is refilled only on those passes) and ROCE-PFC-TX tells the host
# to send PFC_TX_FRAMES priority-3 frames (VLAN 3, PCP 3) into its TAP, honouring the PFC frames the port sends
# back; guest 0 counts them on vl3 (ROCE-PFC-TXSAMPLE: vl3_rx, tx_prio3_pause*, rx_out_of_buffer) until all came.
. /usr/local/lib/vrnic-eth-lib.sh
P=$((1 - G))
modprobe 8021q || vr_fail "modprobe 8021q rc=$?"
eth_up
eth_wait_peer $P 90 || vr_fail "peer $(eth_ip $P) never answered"
if [ "$G" = 0 ]; then
  eth_tool pfc-set 20 dcb pfc set dev $ETH_DEV prio-pfc 3:on
  eth_wait_carrier $ETH_DEV 30 || vr_fail "$ETH_DEV: no carrier after dcb pfc set"
  eth_tool pfc-show 20 dcb pfc show dev $ETH_DEV
fi
ip link add link $ETH_DEV name vl3 type vlan id 3 egress-qos-map 0:3 || vr_fail "ip link add vl3 rc=$?"
ip link add link $ETH_DEV name vl4 type vlan id 4 || vr_fail "ip link add vl4 rc=$?"
ip addr add 10.2.3.$((G + 1))/24 dev vl3
ip addr add 10.2.4.$((G + 1))/24 dev vl4
ip link set vl3 up && ip link set vl4 up || vr_fail "vlan links up"
eth_barrier vlans-up
for v in 3 4; do
  n=0
  until ping -c 1 -W 1 10.2.$v.$((P + 1)) > /dev/null 2>&1; do
    n=$((n + 1)); [ $n -lt 30 ] || vr_fail "no answer from 10.2.$v.$((P + 1)) over vl$v"
  done
done
eth_barrier pfc-ready
if [ "$G" = 0 ]; then
  sample() {
    echo "ROCE-PFC-SAMPLE t=$(vr_since $T0) $(ethtool -S $ETH_DEV | awk '$1 ~ /^(tx_prio[03]_packets|rx_prio3_pause|rx_prio3_pause_duration|rx_prio3_pause_transition):$/ {printf "%s%s ", $1, $2}')"
  }
  T0=$(vr_now)
  sample
  echo "ROCE-PFC-TRAFFIC g0"
  ping -i 0.02 -c 500 -W 2 10.2.3.2 > /tmp/p3 2>&1 &
  ping -i 0.02 -c 500 -W 2 10.2.4.2 > /tmp/p0 2>&1 &
  i=0
  while [ $i -lt 40 ]; do
    sample
    sleep 0.25
    i=$((i + 1))
  done
  wait
  echo "ROCE-PFC-PING prio3 $(grep 'packets transmitted' /tmp/p3)"
  echo "ROCE-PFC-PING prio0 $(grep 'packets transmitted' /tmp/p0)"
  sample
  eth_stats after
  D=/sys/class/net/$ETH_DEV
  old_defer=$(cat $D/napi_defer_hard_irqs) && old_gft=$(cat $D/gro_flush_timeout) || vr_fail "no napi defer knobs"
  echo 1000000 > $D/napi_defer_hard_irqs && echo 2000000000 > $D/gro_flush_timeout || vr_fail "napi defer knobs"
  txs() {
    ethtool -S $ETH_DEV | awk '$1 ~ /^(tx_prio3_pause|tx_prio3_pause_duration|rx_prio3_packets|rx_out_of_buffer|rx_prio3_discards):$/ {printf "%s%s ", $1, $2}'
  }
  want=2500
  r0=$(cat /sys/class/net/vl3/statistics/rx_packets)
  T1=$(vr_now)
  echo "ROCE-PFC-TXSAMPLE t=0.00 vl3_rx:0 $(txs)"
  echo "ROCE-PFC-TX g0 mac=$(cat $D/address) frames=$want"
  while :; do
    r=$(($(cat /sys/class/net/vl3/statistics/rx_packets) - r0))
    echo "ROCE-PFC-TXSAMPLE t=$(vr_since $T1) vl3_rx:$r $(txs)"
    [ $r -lt $want ] || break
    [ "$(vr_since $T1 | cut -d. -f1)" -lt 60 ] || break
    sleep 0.5
  done
  echo $old_defer > $D/napi_defer_hard_irqs
  echo $old_gft > $D/gro_flush_timeout
  sleep 1
  echo "ROCE-PFC-TXSAMPLE t=$(vr_since $T1) vl3_rx:$(($(cat /sys/class/net/vl3/statistics/rx_packets) - r0)) $(txs)"
fi
eth_barrier done
echo "ROCE-PFC-DONE g$G"
vr_dmesg "roce-pfc"
