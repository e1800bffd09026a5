# helpers of the Ethernet scenarios (eth-*), installed as /usr/local/lib/vrnic-eth-lib.sh next to vrnic-lib.sh.
# The harness (vrnic_harness/ethtopo.py) gives each guest: vrnic.eth=<addr/24> vrnic.ethmac=<mac of its port>
# vrnic.ethnics=<nic of guest 0>,<nic of guest 1>,... (vrnic | virtio) and vrnic.ethhost=1 when the segment has a
# host address (10.1.0.254, fd00:1::fe). Guest i is 10.1.0.<i+1>/24 and fd00:1::<i+1>/64.
. /usr/local/lib/vrnic-lib.sh
# busybox sh runs its own applets before PATH: the real iproute2 and iputils (ping -M do/-f/-6, ip -6 neigh)
ip() { /usr/bin/ip "$@"; }
ping() { /usr/bin/ping "$@"; }
G=$(vr_guest)
ETH_ADDR=$(vr_karg vrnic.eth)
ETH_IP=${ETH_ADDR%/*}
ETH_MAC=$(vr_karg vrnic.ethmac)
ETH_NICS=$(vr_karg vrnic.ethnics)
ETH_NIC=$(echo "$ETH_NICS" | cut -d, -f$((G + 1)))
ETH_N=$(echo "$ETH_NICS" | tr ',' '\n' | grep -c .)
ETH_DEV=
eth_ip() { echo "10.1.0.$(($1 + 1))"; }
eth_ip6() { printf 'fd00:1::%x\n' $(($1 + 1)); }
eth_nic() { echo "$ETH_NICS" | cut -d, -f$(($1 + 1)); }
# the netdev whose address is MAC ($1, default this guest's port)
eth_find() {
  for _d in /sys/class/net/*; do
    [ "$(cat $_d/address 2>/dev/null)" = "${1:-$ETH_MAC}" ] && { basename $_d; return 0; }
  done
  return 1
}
eth_driver() { basename "$(readlink /sys/class/net/$1/device/driver 2>/dev/null)" 2>/dev/null; }
# wait at most $2 s (default 30) for carrier 1 on $1
eth_wait_carrier() {
  _n=0
  while [ "$(cat /sys/class/net/$1/carrier 2>/dev/null)" != 1 ]; do
    _n=$((_n + 1)); [ $_n -lt $((${2:-30} * 10)) ] || return 1; sleep 0.1
  done
}
# load the port's driver (mlx5_core for vrnic, virtio_net), find its netdev by MAC, set MTU ($1, default 1500),
# addresses, up, carrier. Sets ETH_DEV; prints
# "ETH-UP g<i> dev=<netdev> nic=<vrnic|virtio> driver=<driver> mac=<mac> ip=<addr> carrier=1 after=<s>" or fails.
eth_up() {
  _t0=$(vr_uptime)
  [ -n "$ETH_MAC" ] || vr_fail "no vrnic.ethmac (not an Ethernet topology)"
  case "$ETH_NIC" in
    vrnic) modprobe mlx5_core || vr_fail "modprobe mlx5_core rc=$?";;
    *) modprobe virtio_net || vr_fail "modprobe virtio_net rc=$?";;
  esac
  _n=0
  until ETH_DEV=$(eth_find); do
    _n=$((_n + 1))
    [ $_n -lt 600 ] || { vr_dmesg "no netdev"; vr_fail "no netdev with MAC $ETH_MAC after 60 s ($ETH_NIC)"; }
    sleep 0.1
  done
  sysctl -qw net.ipv4.icmp_echo_ignore_broadcasts=0 2>/dev/null
  sysctl -qw net.ipv6.conf.$ETH_DEV.accept_dad=0 2>/dev/null
  ip link set $ETH_DEV mtu ${1:-1500} || vr_fail "ip link set $ETH_DEV mtu ${1:-1500} rc=$?"
  ip addr add $ETH_ADDR dev $ETH_DEV 2>/dev/null
  ip -6 addr add $(eth_ip6 $G)/64 dev $ETH_DEV nodad 2>/dev/null
  ip link set $ETH_DEV up || vr_fail "ip link set $ETH_DEV up rc=$?"
  eth_wait_carrier $ETH_DEV 30 || { vr_dmesg "no carrier"; vr_fail "$ETH_DEV: no carrier 30 s after ip link set up"; }
  echo "ETH-UP g$G dev=$ETH_DEV nic=$ETH_NIC driver=$(eth_driver $ETH_DEV) mac=$(cat /sys/class/net/$ETH_DEV/address)" \
    "ip=$ETH_ADDR carrier=$(cat /sys/class/net/$ETH_DEV/carrier) after=$(vr_since $_t0)"
}
# wait (at most $2 s, default 60) until guest $1 answers a ping over the Ethernet segment
eth_wait_peer() {
  _n=0
  until ping -c 1 -W 1 $(eth_ip $1) > /dev/null 2>&1; do
    _n=$((_n + 1)); [ $_n -lt ${2:-60} ] || return 1
  done
}
# wait (at most $1 s each, default 90) until every other guest answers a ping over the segment
eth_wait_all_peers() {
  _j=0
  while [ $_j -lt $ETH_N ]; do
    [ $_j = $G ] || eth_wait_peer $_j ${1:-90} || vr_fail "guest $_j ($(eth_ip $_j)) never answered"
    _j=$((_j + 1))
  done
}
# ---- barriers between the guests over the out-of-band virtio-net link (independent of the port under test) ----
# eth_barrier NAME: every guest calls the same barriers in the same order. Guest k (k > 0) connects to guest 0
# on port 20000+16n+k (the n-th barrier; one port per guest: a connection never lands in another's backlog), then
# waits until guest 0 connects to its port 40000+16n. Fails after 120 s.
eth_barrier() {
  ETH_BAR_N=$(( ${ETH_BAR_N:-0} + 1 ))
  _a=$((20000 + 16 * ETH_BAR_N)); _b=$((40000 + 16 * ETH_BAR_N))
  [ "$ETH_N" -gt 1 ] || return 0
  if [ "$G" = 0 ]; then
    _k=1
    while [ $_k -lt $ETH_N ]; do
      timeout 120 nc -l -p $((_a + _k)) < /dev/null > /dev/null 2>&1 || vr_fail "barrier $1: guest $_k never came"
      _k=$((_k + 1))
    done
    _k=1
    while [ $_k -lt $ETH_N ]; do
      _n=0
      until echo go | nc 10.0.0.$((_k + 1)) $_b > /dev/null 2>&1; do
        _n=$((_n + 1)); [ $_n -lt 240 ] || vr_fail "barrier $1: cannot release guest $_k"; sleep 0.5
      done
      _k=$((_k + 1))
    done
  else
    _n=0
    until echo here | nc 10.0.0.1 $((_a + G)) > /dev/null 2>&1; do
      _n=$((_n + 1)); [ $_n -lt 240 ] || vr_fail "barrier $1: guest 0 never listened"; sleep 0.5
    done
    timeout 120 nc -l -p $_b < /dev/null > /dev/null 2>&1 || vr_fail "barrier $1: guest 0 never released us"
  fi
  echo "ETH-BARRIER $1 g$G"
}
# eth_tool LABEL LIMIT CMD...: run a tool, its output between "=== ETH-TOOL <label> g<i>: <cmd> ===" and
# "=== ETH-TOOL-END <label> g<i> rc=<rc> seconds=<s> ===" (the harness parses these)
eth_tool() {
  _l=$1; _lim=$2; shift 2
  _t=$(vr_now)
  echo "=== ETH-TOOL $_l g$G: $* ==="
  timeout $_lim "$@" > /tmp/eth-tool.out 2>&1
  _rc=$?
  cat /tmp/eth-tool.out
  echo "=== ETH-TOOL-END $_l g$G rc=$_rc seconds=$(vr_since $_t) ==="
  return $_rc
}
# eth_ping LABEL [ping args...] TARGET: a ping run summarised as
# "ETH-PING <label> g<i> sent=<n> recv=<n> loss=<p>% rtt_avg=<ms> rc=<rc>"
# With -c and no -w it adds -w 30: ping -c alone stops waiting max(2 x its largest RTT, the interval) after the
# last probe, so a reply a busy host delays past that counted as lost (eth-mtu, 19 of 20); with a deadline it
# waits for every reply (a lost one still fails the count).
eth_ping() {
  _l=$1; shift
  case " $* " in *" -w "*) ;; *" -c "*) set -- -w 30 "$@" ;; esac
  ping "$@" > /tmp/eth-ping.out 2>&1
  _rc=$?
  _s=$(sed -n 's/^\([0-9]*\) packets transmitted, \([0-9]*\) received.* \([0-9.]*\)% packet loss.*/sent=\1 recv=\2 loss=\3%/p' /tmp/eth-ping.out)
  _r=$(sed -n 's|^rtt min/avg/max/mdev = [0-9.]*/\([0-9.]*\)/.*|\1|p' /tmp/eth-ping.out)
  echo "ETH-PING $_l g$G ${_s:-sent=? recv=? loss=?} rtt_avg=${_r:-NA} rc=$_rc"
  [ $_rc = 0 ] || tail -3 /tmp/eth-ping.out
  return $_rc
}
# the per-queue and port counters (ethtool -S), between markers
eth_stats() { echo "=== ETH-STATS $1 g$G ==="; ethtool -S $ETH_DEV 2>&1; echo "=== ETH-STATS-END $1 g$G ==="; }
# eth_listen PORT LIMIT: accept one TCP connection on PORT and copy what arrives to stdout,
# at most LIMIT s. busybox nc ends at EOF on its stdin, so its stdin is a fifo a sleep holds open.
eth_listen() {
  _f=/tmp/eth-hold.$1; rm -f $_f; mkfifo $_f
  sleep $(($2 + 5)) > $_f &
  _hp=$!
  timeout $2 nc -l -p $1 < $_f
  _rc=$?
  kill $_hp 2> /dev/null
  rm -f $_f
  return $_rc
}
# eth_iperf LABEL LIMIT ARGS...: eth_tool LABEL LIMIT iperf3 ARGS, run again (at most 3 times, 1 s apart) when
# iperf3's control connection failed before any data ("unable to ..."): the server was still closing its
# previous test. A data-path failure shows up in the report of the run that counted.
eth_iperf() {
  _il=$1; _ilim=$2; shift 2
  _try=1
  while :; do
    eth_tool "$_il" "$_ilim" iperf3 "$@" && return 0
    grep -q "unable to" /tmp/eth-tool.out && [ $_try -lt 3 ] || return 1
    echo "=== ETH-TOOL-AGAIN $_il g$G: iperf3 control connection failed (try $_try) ==="
    _try=$((_try + 1)); sleep 1
  done
}
# ---- the switch guest (link "switch", harness/vrnic_harness/ethswitch.py) ----
# sw_cmd "stats LABEL" | end: one command to the switch guest over the out-of-band link (it prints its qdisc's and
# ports' counters on its console; end: once more, then its script ends). The switch is the guest after the last
# scenario guest: 10.0.0.<ETH_N+1>, TCP 18590 (SWITCH_CTL_PORT).
sw_cmd() {
  _n=0
  until echo "$1" | nc 10.0.0.$((ETH_N + 1)) 18590 > /dev/null 2>&1; do
    _n=$((_n + 1)); [ $_n -lt 40 ] || { echo "SW-CMD-FAIL $1"; return 1; }; sleep 0.5
  done
  sleep 1
}
