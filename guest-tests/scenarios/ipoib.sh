#!/bin/sh
# ipoib: three guests, each with its own vrnic (LIDs 1..3) on the UDP fabric; IPoIB over it (issue 23). Each loads
# ib_ipoib: ib0 joins the broadcast group through vrnic's SA (LID 1) and its carrier comes up; addresses
# 192.168.23.(G+1)/24. Datagram mode (UD, MTU 2044): ARP over the broadcast group (UD multicast to MLID 0xC000,
# carried to every port of the fabric), then each guest pings the other two (ping -i 0.01 -c PINGS, unicast UD
# with PathRecords from the SA), then iperf3 TCP -t 3 between g0 (server) and g1 (client), both directions (-R).
# Connected mode (IPoIB-CM: ib_cm REQ/REP/RTU over QP1, RC QPs with an SRQ), MTU 65520: the pings and iperf3
# again. Guests meet at barriers on the out-of-band link (10.0.0.x); each prints IPOIB lines the check reads.
. /usr/local/lib/vrnic-lib.sh
G=$(vr_guest)
NG=$(vr_karg vrnic.guests); NG=${NG:-3}
PINGS=$(vr_karg vrnic.ipoib_pings); PINGS=${PINGS:-1000}
vr_two_guests_up
# barrier N: every guest reaches it before any leaves (g0 collects the others, then releases them)
barrier() {
  _p=$((18800 + $1)); _t0=$(vr_now)
  if [ "$G" = 0 ]; then
    _n=1
    while [ $_n -lt "$NG" ]; do echo ok | timeout 180 nc -l -p $_p > /dev/null 2>&1; _n=$((_n + 1)); done
    _g=1
    while [ $_g -lt "$NG" ]; do
      _i=0; until echo go | timeout 3 nc 10.0.0.$((_g + 1)) $_p 2>/dev/null | grep -q ok; do
        _i=$((_i + 1)); [ $_i -lt 300 ] || break; sleep 0.2; done
      _g=$((_g + 1))
    done
  else
    _i=0; until echo hi | timeout 3 nc 10.0.0.1 $_p 2>/dev/null | grep -q ok; do
      _i=$((_i + 1)); [ $_i -lt 600 ] || break; sleep 0.2; done
    echo ok | timeout 180 nc -l -p $_p > /dev/null 2>&1
  fi
  echo "IPOIB g$G barrier $1 after $(vr_since $_t0) s"
}
peers() { _g=0; while [ $_g -lt "$NG" ]; do [ $_g = "$G" ] || echo $_g; _g=$((_g + 1)); done; }
ipof() { echo 192.168.23.$(($1 + 1)); }
# pings MODE: every peer, first until one answers (ARP/path/CM set-up), then PINGS at 10 ms
pings() {
  for p in $(peers); do
    _i=0; until ping -c 1 -W 1 "$(ipof $p)" > /dev/null 2>&1; do _i=$((_i + 1)); [ $_i -lt 60 ] || break; done
    _t0=$(vr_now)
    _o=$(ping -q -i 0.01 -W 2 -c "$PINGS" "$(ipof $p)" 2>&1 | grep -E "transmitted|rtt")
    echo "IPOIB-PING $1 g$G->g$p first-after=$_i seconds=$(vr_since $_t0) $(echo $_o | tr '\n' ' ')"
  done
}
# iperfs MODE: g1 -> g0 and g0 -> g1 (-R), TCP, 3 s each
iperfs() {
  if [ "$G" = 1 ]; then
    for dir in fwd rev; do
      _r=; [ $dir = rev ] && _r=-R
      _i=0; until timeout 30 iperf3 -c "$(ipof 0)" -t 3 $_r -f m > /tmp/iperf.$dir 2>&1; do
        _i=$((_i + 1)); [ $_i -lt 10 ] || break; sleep 1; done
      echo "=== IPOIB-IPERF $1 $dir ==="; cat /tmp/iperf.$dir; echo "=== IPOIB-IPERF-END $1 $dir tries=$_i ==="
    done
  fi
}
modprobe ib_ipoib || vr_fail "modprobe ib_ipoib"
i=0; while [ ! -e /sys/class/net/ib0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -e /sys/class/net/ib0 ] || vr_fail "no ib0"
ip addr add "$(ipof $G)/24" dev ib0
ip link set ib0 up
t0=$(vr_now)
i=0; while [ "$(cat /sys/class/net/ib0/carrier 2>/dev/null)" != 1 ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
echo "IPOIB g$G ib0 carrier=$(cat /sys/class/net/ib0/carrier 2>/dev/null) after $(vr_since $t0) s mode=$(cat /sys/class/net/ib0/mode) mtu=$(cat /sys/class/net/ib0/mtu) addr=$(ipof $G)"
[ "$G" = 0 ] && iperf3 -s -D
barrier 1
pings datagram
barrier 2
iperfs datagram
barrier 3
echo connected > /sys/class/net/ib0/mode
ip link set ib0 mtu 65520
echo "IPOIB g$G mode=$(cat /sys/class/net/ib0/mode) mtu=$(cat /sys/class/net/ib0/mtu)"
barrier 4
pings connected
barrier 5
iperfs connected
barrier 6
ip -s link show ib0 | sed "s/^/IPOIB-LINK g$G /"
echo "IPOIB-DONE g$G"
vr_dmesg "after ipoib"
