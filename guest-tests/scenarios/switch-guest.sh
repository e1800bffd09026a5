#!/bin/sh
# switch-guest: the switch guest of an Ethernet "switch" topology (harness/vrnic_harness/ethswitch.py), not a
# scenario of its own. One virtio-net NIC per scenario guest (found by MAC, SW_MACS of /etc/vrnic-switch.conf),
# all on bridge br0; on the NIC towards guest SW_EGRESS: htb rate SW_RATE with a red ... ecn (or fq_codel ecn)
# child, the congestion point. Then it answers one-line commands on the out-of-band link, TCP SW_CTL_PORT:
# "stats LABEL" prints the counters between "=== SWITCH-STATS LABEL ===" and "=== SWITCH-STATS-END LABEL ===",
# "end" prints them as "final" and ends the script. Prints "SWITCH-READY ..." once the bridge forwards.
. /usr/local/lib/vrnic-eth-lib.sh
. /etc/vrnic-switch.conf
tc() { /usr/sbin/tc "$@"; }
# kernel arguments override the harness's settings (guest-tests/run --guest-arg vrnic.sw_rate=10gbit: measure the
# path without the bottleneck; vrnic.sw_aqm=none|red|fq_codel; vrnic.sw_burst below)
[ -z "$(vr_karg vrnic.sw_rate)" ] || SW_RATE=$(vr_karg vrnic.sw_rate)
[ -z "$(vr_karg vrnic.sw_aqm)" ] || SW_AQM=$(vr_karg vrnic.sw_aqm)
modprobe virtio_net || vr_fail "modprobe virtio_net rc=$?"
for m in bridge sch_htb sch_red sch_tbf sch_netem; do modprobe $m || vr_fail "modprobe $m rc=$?"; done
# the switch is L2 only: no addresses, no IPv6 autoconfiguration or router solicitations on its ports
sysctl -qw net.ipv6.conf.default.disable_ipv6=1 2>/dev/null
ip link add br0 type bridge || vr_fail "ip link add br0 type bridge"
ip link set br0 type bridge stp_state 0 forward_delay 0 || vr_fail "bridge stp_state 0 forward_delay 0"
sysctl -qw net.ipv6.conf.br0.disable_ipv6=1 2>/dev/null
PORTS=
i=0
for mac in $SW_MACS; do
  n=0
  until d=$(eth_find $mac); do
    n=$((n + 1)); [ $n -lt 300 ] || vr_fail "switch: no NIC with MAC $mac"; sleep 0.1
  done
  sysctl -qw net.ipv6.conf.$d.disable_ipv6=1 2>/dev/null
  ip link set $d mtu 9000 || vr_fail "ip link set $d mtu 9000"
  ip link set $d master br0 || vr_fail "ip link set $d master br0"
  ip link set $d up || vr_fail "ip link set $d up"
  eval SW_DEV_$i=$d
  PORTS="$PORTS g$i=$d"
  i=$((i + 1))
done
ip link set br0 up || vr_fail "ip link set br0 up"
EG=$(eval echo \$SW_DEV_$SW_EGRESS)
# the congestion point: htb shapes to SW_RATE, the AQM below it holds the queue and marks
tc qdisc add dev $EG root handle 1: htb default 1 || vr_fail "tc htb on $EG"
# SW_BURST (registry switch=dict(burst="64k"), kernel argument vrnic.sw_burst=): the htb class's burst and cburst
# (empty: htb's own, 1600 bytes here): a larger one lets a late watchdog wake-up (a starved TCG vCPU) catch up
# instead of losing the time, so the class forwards its rate
[ -z "$(vr_karg vrnic.sw_burst)" ] || SW_BURST=$(vr_karg vrnic.sw_burst)
tc class add dev $EG parent 1: classid 1:1 htb rate $SW_RATE ceil $SW_RATE ${SW_BURST:+burst $SW_BURST cburst $SW_BURST} \
  || vr_fail "tc htb class rate $SW_RATE"
PARENT=1:1
if [ "$SW_DELAY_MS" -gt 0 ]; then
  tc qdisc add dev $EG parent 1:1 handle 20: netem delay ${SW_DELAY_MS}ms limit 100000 || vr_fail "tc netem"
  PARENT=20:1
fi
case "$SW_AQM" in
  red)
    BURST=$(( (2 * SW_RED_MIN + SW_RED_MAX) / (3 * SW_AVPKT) + 1 ))
    tc qdisc add dev $EG parent $PARENT handle 10: red limit $SW_RED_LIMIT min $SW_RED_MIN max $SW_RED_MAX \
      avpkt $SW_AVPKT burst $BURST bandwidth $SW_RATE probability $SW_RED_PROB ecn || vr_fail "tc red ecn";;
  fq_codel)
    tc qdisc add dev $EG parent $PARENT handle 10: fq_codel ecn || vr_fail "tc fq_codel ecn";;
esac
echo "SWITCH-READY ports=${PORTS# } egress=g$SW_EGRESS:$EG rate=$SW_RATE aqm=$SW_AQM"
tc -d qdisc show dev $EG
sw_stats() {
  echo "=== SWITCH-STATS $1 uptime=$(vr_now) ==="
  tc -s qdisc show dev $EG
  tc -s class show dev $EG
  _i=0
  while [ $_i -lt $SW_N ]; do
    _d=$(eval echo \$SW_DEV_$_i)
    echo "PORT g$_i $_d"
    ip -color=never -s link show dev $_d
    _i=$((_i + 1))
  done
  echo "=== SWITCH-STATS-END $1 ==="
}
while :; do
  cmd=$(eth_listen $SW_CTL_PORT 3600) || continue
  case "$cmd" in
    stats\ *) sw_stats "${cmd#stats }";;
    end*) sw_stats final; break;;
  esac
done
