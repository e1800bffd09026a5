# the InfiniBand fabric scenarios' bodies (ib-sa, ipoib, ib-opensm), installed as /usr/local/lib/vrnic-ib-lib.sh:
# each is a function, so that ib-opensm runs them both against OpenSM in one boot as ib-sa and ipoib run them
# against vrnic's built-in SM. They need vrnic-lib.sh (and ipoib_run vrnic-roce-lib.sh's roce_show) sourced, mlx5_0
# ACTIVE and the out-of-band link up (vr_two_guests_up).
#
# ib_sa_run: three guests, each with its own vrnic (LID 1, 2, 3) on the UDP fabric, and infiniband-diags. Each
# prints ibstat and ibstatus (its own node/port/system image GUIDs, base LID, SM LID) and its node description, asks
# the SM (on LID 1) with sminfo and its SA with saquery (all NodeRecords) and saquery -p (all PathRecords, RMPP).
# Guest 0 asks guest 1's port over the fabric: smpquery -L nodeinfo/nodedesc/portinfo 2 (LID-routed SMPs on QP0,
# answered by guest 1's ib_mad through MAD_IFC's SMA), perfquery 2 1 (PerfMgt on QP1, guest 1's mlx5_ib PMA) before
# and after 500 ibv_ud_pingpong round trips between guests 0 and 1. Guests 0 and 2 walk the fabric with
# ibnetdiscover (directed-route SMPs through the modeled switch: three CAs and one switch); guest 0 dumps the
# switch's forwarding table with ibroute.
ib_sa_run() {
  G=$(vr_guest)
  modprobe ib_umad
  i=0; while [ ! -e /dev/infiniband/umad0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  ibstat mlx5_0 | sed "s/^[[:space:]]*/IBSTAT g$G /"
  ibstatus mlx5_0 2>&1 | sed "s/^[[:space:]]*/IBSTATUS g$G /"
  echo "IBDIAG g$G node_desc=$(cat /sys/class/infiniband/mlx5_0/node_desc)"
  # tool NAME CMD...: the command's output between markers, with its exit status
  tool() {
    _n=$1; shift
    echo "=== IBDIAG-TOOL $_n: $* ==="
    timeout 30 "$@" 2>&1; _rc=$?
    echo "=== IBDIAG-TOOL-END $_n rc=$_rc ==="
    return $_rc
  }
  # the other guests' ports answer once their mlx5_ib is up: retry an SMP to each for up to 60 s
  for l in 1 2 3; do
    [ $l = $((G + 1)) ] && continue
    i=0
    until smpquery -L nodeinfo $l > /tmp/ni 2>&1; do
      i=$((i + 1)); [ $i -lt 60 ] || break; sleep 1
    done
    echo "IBDIAG g$G first nodeinfo of lid $l after $i retries"
  done
  if [ "$G" = 0 ]; then
    tool nodeinfo smpquery -L nodeinfo 2
    tool nodedesc smpquery -L nodedesc 2
    tool portinfo smpquery -L portinfo 2
    tool perf-before perfquery 2 1
  fi
  tool sminfo-g$G sminfo
  tool sa-nodes-g$G saquery
  tool sa-paths-g$G saquery -p
  if [ "$G" != 1 ]; then
    tool netdiscover-g$G ibnetdiscover
  fi
  [ "$G" = 0 ] && tool ibroute ibroute 4
  [ "$G" != 2 ] && vr_pair ud-500 40 ibv_ud_pingpong -d mlx5_0 -i 1 -s 256 -n 500
  if [ "$G" = 0 ]; then
    tool perf-after perfquery 2 1
    tool perf-local perfquery
    # guests 1 and 2 may power off now
    for ip in 10.0.0.2 10.0.0.3; do
      i=0
      until echo done | timeout 5 nc $ip 18799 2>/dev/null | grep -q ok; do
        i=$((i + 1)); [ $i -lt 50 ] || break; sleep 0.2
      done
    done
  else
    echo ok | timeout 120 nc -l -p 18799 > /dev/null 2>&1
  fi
  echo "IBDIAG-DONE g$G"
}

# ipoib_run (+ the ib-cm checks): three guests, each with its own vrnic (LIDs 1..3) on the UDP fabric; IPoIB over it
# (issue 23). Each loads ib_ipoib: ib0 joins the broadcast group through the SA (on LID 1) and its carrier comes up;
# addresses 192.168.23.(G+1)/24. Datagram mode (UD, MTU 2044): ARP over the broadcast group (UD multicast to the
# group's MLID, carried to every port of the fabric), then each guest pings the other two (ping -i 0.01 -c PINGS,
# unicast UD with PathRecords from the SA), then iperf3 TCP -t 3 between g0 (server) and g1 (client), both
# directions (-R). Connected mode (IPoIB-CM: ib_cm REQ/REP/RTU over QP1, RC QPs with an SRQ), MTU 65520: the pings
# and iperf3 again. Between the modes (datagram), the ib-cm checks: rdma_cm between g0 and g1 over their IPoIB
# addresses (ARP on ib0, PathRecord from the SA, CM over QP1): rping -v -C RPING_C (10000, the issue's count;
# --guest-arg vrnic.rping_c=N for fewer), ucmatose, udaddy, mckey (IB multicast: SA join + ATTACH), ib_write_lat -R,
# ib_send_bw -R. Guests meet at barriers on the out-of-band link (10.0.0.x); each prints IPOIB lines the check reads.
ipoib_run() {
  G=$(vr_guest)
  NG=$(vr_karg vrnic.guests); NG=${NG:-3}
  # the caller's IPOIB_PINGS / IPOIB_RPING_C give the defaults; the kernel arguments override them
  PINGS=$(vr_karg vrnic.ipoib_pings); PINGS=${PINGS:-${IPOIB_PINGS:-1000}}
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
  # iputils' ping (busybox's applet is first in PATH: its raw socket overflows when a TCG guest stalls)
  PING=/usr/bin/ping; [ -x $PING ] || PING=ping
  ipof() { echo 192.168.23.$(($1 + 1)); }
  # pings MODE: every peer, first until one answers (ARP/path/CM set-up), then PINGS at 10 ms. Without a
  # deadline, iputils' ping waits after its last probe only twice the largest RTT seen (schedule_exit),
  # and a TCG guest stalled that long at the end turns a late reply into a loss; with one (-w) it waits
  # for PINGS replies, sending a probe more while one is outstanding. The verdict is therefore which of
  # the sequence numbers 1..PINGS were never answered (missing=COUNT[:SEQ,...]; replies come in order).
  pings() {
    for p in $(peers); do
      _i=0; until ping -c 1 -W 1 "$(ipof $p)" > /dev/null 2>&1; do _i=$((_i + 1)); [ $_i -lt 60 ] || break; done
      _t0=$(vr_now)
      _o=$($PING -i 0.01 -W 2 -w $((PINGS / 20 + 30)) -c "$PINGS" "$(ipof $p)" 2>&1 | awk -v n="$PINGS" '
        /icmp_seq=/ { for (i = 1; i <= NF; i++) if ($i ~ /^icmp_seq=/) got[substr($i, 10) + 0] = 1; next }
        /transmitted|rtt|round-trip/ { print }
        END { c = 0; m = ""; for (q = 1; q <= n; q++) if (!(q in got)) { if (c < 10) m = m q ","; c++ }
              print "missing=" c (c ? ":" m : "") }')
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
  # ---- ib-cm (issue 23's ib-cm checks, run in this boot): rdma_cm over the IPoIB addresses between g0 and g1
  # cm_pair LABEL LIMIT SERVER-CMD... -- CLIENT-CMD...: g0 serves, g1 connects (@SIP@: g0's IPoIB address, @PORT@ a
  # port of its own); both print "=== TOOL LABEL gN ROLE: CMD ===" ... "=== TOOL-END ... rc=N seconds=S tries=T ==="
  cm_pair() {
    _lab=$1; _lim=$2; shift 2
    CM_N=$(( ${CM_N:-0} + 1 )); _port=$((18900 + CM_N))
    _s=; _c=; _side=s
    for _w in "$@"; do
      [ "$_w" = -- ] && { _side=c; continue; }
      _w=$(printf '%s\n' "$_w" | sed "s/@SIP@/$(ipof 0)/g; s/@MYIP@/$(ipof $G)/g; s/@PORT@/$_port/g")
      if [ $_side = s ]; then _s="$_s $_w"; else _c="$_c $_w"; fi
    done
    if [ "$G" = 0 ]; then
      _t=$(vr_now)
      ( timeout $_lim $_s > /tmp/cm.server 2> /tmp/cm.server.err; echo $? > /tmp/cm.server.rc
        cat /tmp/cm.server.err >> /tmp/cm.server ) &
      _sp=$!
      sleep ${CM_SERVER_WAIT:-1}
      barrier "$_lab"
      wait $_sp
      echo "=== TOOL $_lab g$G server:$_s ==="; roce_show /tmp/cm.server
      echo "=== TOOL-END $_lab g$G server rc=$(cat /tmp/cm.server.rc) seconds=$(vr_since $_t) tries=1 ==="
      barrier "$_lab-end"
    elif [ "$G" = 1 ]; then
      barrier "$_lab"
      _t=$(vr_now); _tries=0
      while :; do
        _tries=$((_tries + 1))
        _left=$(awk -v t0="$_t" -v l="$_lim" '{printf "%d", l - ($1 - t0)}' /proc/uptime)
        [ "$_left" -ge 1 ] || { _crc=124; break; }
        timeout $_left $_c > /tmp/cm.client 2> /tmp/cm.client.err
        _crc=$?
        cat /tmp/cm.client.err >> /tmp/cm.client
        [ $_crc -ne 0 ] && grep -qiE "REJECTED|refused|unreachable|Couldn't connect" /tmp/cm.client && [ $_tries -lt 10 ] || break
        sleep 0.5
      done
      echo "=== TOOL $_lab g$G client:$_c ==="; roce_show /tmp/cm.client
      echo "=== TOOL-END $_lab g$G client rc=$_crc seconds=$(vr_since $_t) tries=$_tries ==="
      barrier "$_lab-end"
    else
      barrier "$_lab"; barrier "$_lab-end"
    fi
  }
  RPING_C=$(vr_karg vrnic.rping_c); RPING_C=${RPING_C:-${IPOIB_RPING_C:-10000}}
  ib_cm() {
    modprobe rdma_ucm
    cm_pair cm-rping-v 400 rping -s -v -a @SIP@ -p @PORT@ -C $RPING_C -- rping -c -v -a @SIP@ -p @PORT@ -C $RPING_C
    cm_pair cm-ucmatose 120 ucmatose -b @SIP@ -p @PORT@ -c 10 -- ucmatose -s @SIP@ -p @PORT@ -c 10
    cm_pair cm-udaddy 120 udaddy -b @SIP@ -- udaddy -s @SIP@
    CM_SERVER_WAIT=4 cm_pair cm-mckey 120 mckey -m 239.1.1.20 -b @SIP@ -C 10 -- mckey -m 239.1.1.20 -b @MYIP@ -C 30 -s
    cm_pair R-ib_write_lat 120 ib_write_lat -R -d mlx5_0 -n 1000 -p @PORT@ -- ib_write_lat -R -d mlx5_0 -n 1000 -p @PORT@ @SIP@
    cm_pair R-ib_send_bw 120 ib_send_bw -R -d mlx5_0 -n 500 -p @PORT@ -- ib_send_bw -R -d mlx5_0 -n 500 -p @PORT@ @SIP@
  }
  RECVQ=$(vr_karg vrnic.ipoib_recvq)
  modprobe ib_ipoib ${RECVQ:+recv_queue_size=$RECVQ} || vr_fail "modprobe ib_ipoib"
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
  echo "IPOIB-NETSTAT datagram g$G $(for f in rx_packets tx_packets rx_dropped tx_dropped rx_errors tx_errors; do printf '%s=%s ' $f "$(cat /sys/class/net/ib0/statistics/$f)"; done)"
  barrier 2
  iperfs datagram
  barrier 3
  ib_cm
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
}
