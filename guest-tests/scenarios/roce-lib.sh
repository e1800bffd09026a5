# helpers of the RoCE scenarios (roce-*, bench-roce), installed as /usr/local/lib/vrnic-roce-lib.sh next to
# vrnic-eth-lib.sh (whose topology arguments they use: vrnic.ethnics says each guest's NIC). A guest whose NIC is
# "vrnic" uses the mlx5 RoCE device of its port (mlx5_ib over the mlx5e netdev); a "virtio" guest turns its
# virtio-net NIC on the segment into a Soft-RoCE node (rdma link add rxe0 type rxe netdev <it>). The same script
# runs on both: the RDMA device and its GID indexes are found, never assumed.
. /usr/local/lib/vrnic-eth-lib.sh
rdma() { /usr/bin/rdma "$@"; }
ROCE_DEV=
ROCE_GID4=
ROCE_GID6=
roce_oob() { echo "10.0.0.$(($1 + 1))"; }
# the RDMA device whose netdev is $1 (rdma link: "link <dev>/<port> ... netdev <netdev>")
roce_dev_of() {
  rdma link show 2>/dev/null | awk -v nd="$1" '{for (i = 1; i < NF; i++) if ($i == "netdev" && $(i + 1) == nd) {
    split($2, a, "/"); print a[1]; exit}}'
}
# vr_roce_gid_index DEV ipv4|ipv6|ll [NETDEV] [GID]: the index of DEV port 1's RoCE v2 GID of that kind (ipv4: a
# v4-mapped ::ffff:a.b.c.d, ipv6: a global IPv6 address, ll: fe80::/64), bound to NETDEV when given, equal to GID
# (sysfs form) when given; the lowest such index; fails when there is none.
vr_roce_gid_index() {
  _p=/sys/class/infiniband/$1/ports/1
  _best=
  for _e in $(roce_gid_entries $1); do
    _i=${_e%%=*}; _g=${_e#*=}
    [ "$(cat $_p/gid_attrs/types/$_i 2>/dev/null)" = "RoCE v2" ] || continue
    [ -z "$3" ] || [ "$(cat $_p/gid_attrs/ndevs/$_i 2>/dev/null)" = "$3" ] || continue
    [ -z "$4" ] || [ "$_g" = "$4" ] || continue
    case "$2:$_g" in
      ipv4:0000:0000:0000:0000:0000:ffff:*) ;;
      ipv6:fe80:*|ipv6:0000:0000:0000:0000:0000:ffff:*) continue;;
      ipv6:*) ;;
      ll:fe80:*) ;;
      *) continue;;
    esac
    [ -n "$_best" ] && [ "$_best" -le "$_i" ] || _best=$_i
  done
  [ -n "$_best" ] && echo $_best
}
# the non-zero entries of DEV port 1's GID table as "<idx>=<gid>" words (one grep over the table: it has
# hundreds of entries)
roce_gid_entries() {
  (cd /sys/class/infiniband/$1/ports/1/gids && grep -H . * 2>/dev/null) |
    grep -v ':0000:0000:0000:0000:0000:0000:0000:0000$' | sed 's/:/=/'
}
# sysfs form of the v4-mapped GID of IPv4 address $1
roce_gid4() { echo "$1" | awk -F. '{printf "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n", $1, $2, $3, $4}'; }
# the whole GID table of DEV port 1 as "ROCE-GID <label> g<i> idx=<n> gid=<gid> type=<type> ndev=<netdev>" lines
roce_gids() {
  _p=/sys/class/infiniband/$ROCE_DEV/ports/1
  for _e in $(roce_gid_entries $ROCE_DEV); do
    _i=${_e%%=*}
    _t=$(cat $_p/gid_attrs/types/$_i 2>/dev/null) || continue
    echo "ROCE-GID $1 g$G idx=$_i gid=${_e#*=} type=$(echo $_t | tr ' ' _) ndev=$(cat $_p/gid_attrs/ndevs/$_i 2>/dev/null)"
  done | sort -t= -k2 -n
}
# roce_wait_gid present|absent DEV KIND GID LIMIT: wait until the GID is (not) in the table; prints its index
roce_wait_gid() {
  _n=0
  while :; do
    _x=$(vr_roce_gid_index $2 $3 "" $4)
    case "$1:$_x" in present:?*|absent:) echo "$_x"; return 0;; esac
    _n=$((_n + 1)); [ $_n -lt $(($5 * 10)) ] || return 1; sleep 0.1
  done
}
# roce_up [MTU]: the netdev up (eth_up), then the RDMA device over it: mlx5_ib's device for a vrnic port, rxe0
# for virtio-net; port 1 ACTIVE and the RoCE v2 GIDs of this guest's IPv4 and IPv6 addresses present. Sets
# ROCE_DEV ROCE_GID4 ROCE_GID6; prints
# "ROCE-UP g<i> dev=<dev> nic=<nic> netdev=<netdev> state=<n> link_layer=<ll> gid4=<idx> gid6=<idx> after=<s>".
roce_up() {
  _t0r=$(vr_uptime)
  eth_up "$@"
  modprobe ib_uverbs || vr_fail "modprobe ib_uverbs rc=$?"
  modprobe rdma_ucm || vr_fail "modprobe rdma_ucm rc=$?"
  if [ "$ETH_NIC" = vrnic ]; then
    modprobe mlx5_ib || vr_fail "modprobe mlx5_ib rc=$?"
  else
    modprobe crc32_generic; modprobe rdma_rxe || vr_fail "modprobe rdma_rxe rc=$?"
    rdma link add rxe0 type rxe netdev $ETH_DEV || vr_fail "rdma link add rxe0 type rxe netdev $ETH_DEV rc=$?"
  fi
  _n=0
  until ROCE_DEV=$(roce_dev_of $ETH_DEV) && [ -n "$ROCE_DEV" ]; do
    _n=$((_n + 1))
    [ $_n -lt 600 ] || { rdma link show; vr_dmesg "no RDMA device"; vr_fail "no RDMA device over $ETH_DEV after 60 s"; }
    sleep 0.1
  done
  _n=0
  until grep -q ACTIVE /sys/class/infiniband/$ROCE_DEV/ports/1/state 2>/dev/null; do
    _n=$((_n + 1))
    [ $_n -lt 600 ] || { vr_dmesg "not active"; vr_fail "$ROCE_DEV port 1 not ACTIVE after 60 s"; }
    sleep 0.1
  done
  ROCE_GID4=$(roce_wait_gid present $ROCE_DEV ipv4 $(roce_gid4 $ETH_IP) 30) ||
    { roce_gids missing; vr_fail "$ROCE_DEV: no RoCE v2 GID for $ETH_IP after 30 s"; }
  ROCE_GID6=$(roce_wait_gid present $ROCE_DEV ipv6 "" 30) ||
    { roce_gids missing; vr_fail "$ROCE_DEV: no RoCE v2 GID for an IPv6 address after 30 s"; }
  echo "ROCE-UP g$G dev=$ROCE_DEV nic=$ETH_NIC netdev=$ETH_DEV" \
    "state=$(sed 's/[^0-9].*//' /sys/class/infiniband/$ROCE_DEV/ports/1/state)" \
    "link_layer=$(cat /sys/class/infiniband/$ROCE_DEV/ports/1/link_layer)" \
    "gid4=$ROCE_GID4 gid6=$ROCE_GID6 after=$(vr_since $_t0r)"
}
# all guests up and answering pings on the segment, then a barrier
roce_all_up() {
  roce_up "$@"
  eth_wait_all_peers 90
  eth_barrier roce-up
}
# the port's counters (hw_counters and counters) as "name value" lines between markers
roce_counters() {
  echo "=== ROCE-COUNTERS $1 g$G ==="
  for _f in /sys/class/infiniband/$ROCE_DEV/ports/1/hw_counters/* /sys/class/infiniband/$ROCE_DEV/ports/1/counters/*; do
    [ -f "$_f" ] && echo "${_f##*/} $(cat $_f 2>/dev/null)"
  done
  echo "=== ROCE-COUNTERS-END $1 g$G ==="
}
# ---- tool pairs between two guests --------------------------------------------------------------------------
# roce_pair SRV LABEL LIMIT SERVER-CMD... -- CLIENT-CMD...: guest SRV runs the server command, the other guest the
# client command (two guests). In both, these words are replaced: @PORT@ (the pair's own port, ROCE_PORT0+n),
# @SIP@ / @SIP6@ (the server guest's IPv4 / IPv6 address on the segment), @SOOB@ (its out-of-band address, for
# the tools' own TCP exchange), @MYIP@ (this guest's IPv4 address on the segment), @DEV@ @GID4@ @GID6@ (this
# guest's RDMA device and GID indexes). The server starts, a barrier, then the client runs (again while it could
# not connect, within LIMIT s); each side's output between
# "=== TOOL <label> g<i> <role>: <cmd> ===" and "=== TOOL-END <label> g<i> <role> rc=<rc> seconds=<s> tries=<n> ==="
# (scenarios/lib.sh's format); ROCE_RC is this side's exit status. When perftest's clock calibration failed
# (vr_calib_failed) the pair runs again.
roce_subst() {
  printf "%s\n" "$1" | sed -e "s|@PORT@|$_rport|g" -e "s|@SIP@|$(eth_ip $_rsrv)|g" \
    -e "s|@SIP6@|$(eth_ip6 $_rsrv)|g" -e "s|@SOOB@|$(roce_oob $_rsrv)|g" -e "s|@MYIP@|$ETH_IP|g" \
    -e "s|@DEV@|$ROCE_DEV|g" -e "s|@GID4@|$ROCE_GID4|g" -e "s|@GID6@|$ROCE_GID6|g"
}
# a tool's output; a long one (rping -v) as its first and last 20 lines, with its line count and the count of
# distinct ping numbers of rping's "ping data: rdma-ping-<n>:" lines ("ROCE-ELIDED lines=<n> ping_data=<n>")
roce_show() {
  _nl=$(wc -l < "$1")
  if [ "$_nl" -le 80 ]; then cat "$1"; return; fi
  head -20 "$1"
  echo "ROCE-ELIDED lines=$_nl ping_data=$(grep -a -o 'ping data: rdma-ping-[0-9]*:' "$1" | sort -u | wc -l)"
  tail -20 "$1"
}
_roce_refused() {
  grep -qiE "Couldn't connect to|Unable to open file descriptor for socket|Unable to init the socket connection|REJECTED|Connection refused|unreachable" "$1"
}
roce_pair() {
  _rsrv=$1; _rlab=$2; _rlim=$3; shift 3
  ROCE_PAIR_N=$(( ${ROCE_PAIR_N:-0} + 1 )); _rport=$(( ${ROCE_PORT0:-18700} + ROCE_PAIR_N ))
  _scmd=; _ccmd=; _side=s
  for _w in "$@"; do
    [ "$_w" = -- ] && { _side=c; continue; }
    _w=$(roce_subst "$_w")
    if [ $_side = s ]; then _scmd="$_scmd $_w"; else _ccmd="$_ccmd $_w"; fi
  done
  _scmd=${_scmd# }; _ccmd=${_ccmd# }
  _ratt=0
  while :; do
    _ratt=$((_ratt + 1)); _again=done
    if [ "$G" = "$_rsrv" ]; then
      _t=$(vr_now)
      # stderr apart, then appended: rping writes its progress to stderr, its ping data lines to stdout
      ( timeout $_rlim $_scmd > /tmp/roce.server 2> /tmp/roce.server.err; echo $? > /tmp/roce.server.rc
        cat /tmp/roce.server.err >> /tmp/roce.server ) &
      _sp=$!
      sleep ${ROCE_SERVER_WAIT:-1}
      eth_barrier "$_rlab-$_ratt"
      wait $_sp
      echo "=== TOOL $_rlab g$G server: $_scmd ==="
      roce_show /tmp/roce.server
      ROCE_RC=$(cat /tmp/roce.server.rc)
      echo "=== TOOL-END $_rlab g$G server rc=$ROCE_RC seconds=$(vr_since $_t) tries=1 ==="
      _again=$(echo ok | timeout $_rlim nc -l -p $((_rport + 1000)) 2>/dev/null)
    else
      eth_barrier "$_rlab-$_ratt"
      _t=$(vr_now); _tries=0
      while :; do
        _tries=$((_tries + 1))
        _left=$(awk -v t0="$_t" -v l="$_rlim" '{printf "%d", l - ($1 - t0)}' /proc/uptime)
        [ "$_left" -ge 1 ] || { _crc=124; break; }
        timeout $_left $_ccmd > /tmp/roce.client 2> /tmp/roce.client.err
        _crc=$?
        cat /tmp/roce.client.err >> /tmp/roce.client
        [ $_crc -ne 0 ] && _roce_refused /tmp/roce.client && [ $_tries -lt 20 ] || break
        sleep 0.5
      done
      echo "=== TOOL $_rlab g$G client: $_ccmd ==="
      roce_show /tmp/roce.client
      ROCE_RC=$_crc
      echo "=== TOOL-END $_rlab g$G client rc=$_crc seconds=$(vr_since $_t) tries=$_tries ==="
      vr_calib_failed /tmp/roce.client && [ $_ratt -lt ${VR_CALIB_TRIES:-3} ] && _again=again
      _n=0
      until echo $_again | nc $(roce_oob $_rsrv) $((_rport + 1000)) 2>/dev/null | grep -q ok; do
        _n=$((_n + 1)); [ $_n -lt $((_rlim * 5 + 50)) ] || break; sleep 0.2
      done
    fi
    [ "$_again" = again ] || break
    echo "=== TOOL-AGAIN $_rlab g$G: perftest's clock calibration failed (attempt $_ratt) ==="
  done
}
# roce_perf SRV LABEL LIMIT TOOL ARGS...: a perftest pair, the client given the server's out-of-band address
# (perftest's own TCP exchange); ARGS may use the roce_pair words (-x @GID4@, -R with @SIP@ ...)
roce_perf() {
  _a=$1; _b=$2; _c=$3; shift 3
  roce_pair $_a $_b $_c "$@" -p @PORT@ -- "$@" -p @PORT@ @SOOB@
}
# roce_perf_cm SRV LABEL LIMIT TOOL ARGS...: the same with -R (rdma_cm): the client connects to the server's IPv4
# address on the segment, so rdma_cm resolves the address and route over the RoCE port
roce_perf_cm() {
  _a=$1; _b=$2; _c=$3; shift 3
  roce_pair $_a $_b $_c "$@" -R -p @PORT@ -- "$@" -R -p @PORT@ @SIP@
}
# ---- incast through the switch guest (roce-ecn, bench-cc; ethswitch.py) ----------------------------------------
# roce_incast LABEL D PORT0 [PROBE_N]: every guest but g0 runs `ib_write_bw -s 65536 -t 2 -u 17 -D D` into g0 (g0 serves
# one per sender on PORT0+<sender>) at once; with PROBE_N, g<last> also runs `ib_write_lat -s 2 -n PROBE_N` into g0
# (port PORT0+9) from 3 s after the flows start: the latency probe through the same bottleneck. Blocks in
# scenarios/lib.sh's TOOL format, labels LABEL-flow<sender> and LABEL-probe. Every guest calls it.
# Without a rate limiter on the sender (no CC, or CC off), RED drops Not-ECT frames, all of them while its average
# queue is above max, and go-back-N resends the window at line rate. With perftest's defaults (128 x 64 KiB = 8 MiB
# in flight, ACK timeout 2^14 x 4.096 us = 67 ms) a resend took 2 s to drain at 30 Mbit/s and the 7 retries ran
# out within 5 s (IBV_WC_RETRY_EXC_ERR); with -t 4 one flow of roce-ecn still did, in 1 of 4 runs. -t 2 (128 KiB in
# flight) and -u 17 (ACK timeout 537 ms: the queue drains and RED's average decays between retries) keep both
# flows alive; two flows still exceed the 30 Mbit/s bottleneck (64 KiB take 17 ms there).
roce_incast() {
  _il=$1; _id=$2; _ip0=$3; _ipn=$4
  _ibw="ib_write_bw -d $ROCE_DEV -F -x $ROCE_GID4 -s 65536 -t 2 -u 17 -D $_id"
  _ilat="ib_write_lat -d $ROCE_DEV -F -x $ROCE_GID4 -s 2 -n $_ipn"
  if [ "$G" = 0 ]; then
    _s=1
    while [ $_s -lt $ETH_N ]; do
      ( timeout $((_id + 90)) $_ibw -p $((_ip0 + _s)) > /tmp/inc.s$_s 2>&1; echo $? > /tmp/inc.s$_s.rc ) &
      _s=$((_s + 1))
    done
    [ -z "$_ipn" ] || ( timeout $((_id + 120)) $_ilat -p $((_ip0 + 9)) > /tmp/inc.s9 2>&1; echo $? > /tmp/inc.s9.rc ) &
    sleep 1
  fi
  eth_barrier "$_il-servers"
  if [ "$G" != 0 ]; then
    if [ -n "$_ipn" ] && [ "$G" = $((ETH_N - 1)) ]; then
      ( sleep 3; _incast_client "$_il-probe" $((_id + 90)) $_ilat -p $((_ip0 + 9)) $(roce_oob 0) > /tmp/inc.probe ) &
    fi
    _incast_client "$_il-flow$G" $((_id + 60)) $_ibw -p $((_ip0 + G)) $(roce_oob 0)
    wait
    [ ! -f /tmp/inc.probe ] || { cat /tmp/inc.probe; rm -f /tmp/inc.probe; }
  else
    wait
    for _s in $(seq 1 $((ETH_N - 1))) ${_ipn:+9}; do
      _lab="$_il-flow$_s"; [ $_s = 9 ] && _lab="$_il-probe"
      echo "=== TOOL $_lab g0 server: port $((_ip0 + _s)) ==="
      cat /tmp/inc.s$_s
      echo "=== TOOL-END $_lab g0 server rc=$(cat /tmp/inc.s$_s.rc) seconds=0 tries=1 ==="
    done
  fi
  eth_barrier "$_il-done"
}
# _incast_client LABEL LIMIT CMD...: the client, again while the server does not listen yet; one TOOL block
_incast_client() {
  _cl=$1; _cm=$2; shift 2
  _ct=$(vr_now); _ctr=0
  while :; do
    _ctr=$((_ctr + 1))
    timeout $_cm "$@" > /tmp/inc.c.$$.$_cl 2>&1
    _crc=$?
    [ $_crc -ne 0 ] && _roce_refused /tmp/inc.c.$$.$_cl && [ $_ctr -lt 20 ] || break
    sleep 0.5
  done
  echo "=== TOOL $_cl g$G client: $* ==="
  cat /tmp/inc.c.$$.$_cl
  echo "=== TOOL-END $_cl g$G client rc=$_crc seconds=$(vr_since $_ct) tries=$_ctr ==="
}
# roce_cc_request on|off: g0 asks the harness to send `cc on|off` to every vrnic server (run/checks_cc.py
# interact_cc watches g0's console), waits ECN_CC_WAIT s (default 6) for it; then every guest passes a barrier
roce_cc_request() {
  if [ "$G" = 0 ]; then
    echo "ROCE-ECN-CC-REQUEST $1"
    sleep ${ECN_CC_WAIT:-6}
  fi
  eth_barrier "cc-$1"
}
