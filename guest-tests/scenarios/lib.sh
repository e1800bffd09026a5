# helpers sourced by guest scenario scripts (installed as /usr/local/lib/vrnic-lib.sh)
vr_bdf() { lspci -D -n -d 15b3:1017 2>/dev/null | awk 'NR==1{print $1}'; }
vr_fail() { echo "GUEST-FAIL $*"; exit 1; }
vr_uptime() { cut -d' ' -f1 /proc/uptime; }
# load mlx5_core + mlx5_ib and wait (at most $1 s, default 60) for mlx5_0 port 1 ACTIVE.
# Prints "MLX5-UP start=<uptime> active=<uptime> state=<sysfs state>" or "MLX5-UP-FAIL <why>".
vr_mlx5_up() {
  _lim=${1:-60}; _t0=$(vr_uptime)
  modprobe mlx5_core || { echo "MLX5-UP-FAIL modprobe mlx5_core rc=$?"; return 1; }
  modprobe mlx5_ib || { echo "MLX5-UP-FAIL modprobe mlx5_ib rc=$?"; return 1; }
  _i=0; _st=
  while [ $_i -lt $((_lim * 10)) ]; do
    _st=$(cat /sys/class/infiniband/mlx5_0/ports/1/state 2>/dev/null)
    case "$_st" in *ACTIVE*) echo "MLX5-UP start=$_t0 active=$(vr_uptime) state=$_st"; return 0;; esac
    sleep 0.1; _i=$((_i + 1))
  done
  echo "MLX5-UP-FAIL port 1 not ACTIVE after ${_lim} s (state '$_st', mlx5_0 $([ -e /sys/class/infiniband/mlx5_0 ] && echo present || echo absent))"
  return 1
}
# two-guest scenarios: this guest has its out-of-band address and mlx5_0 is ACTIVE, or the scenario fails
vr_two_guests_up() {
  [ -n "$(vr_ip)" ] || vr_fail "no out-of-band address (vrnic.net)"
  vr_mlx5_up 90 || { vr_dmesg "probe failed"; vr_fail "mlx5_0 not ACTIVE"; }
}
# the whole kernel log between markers the harness scans
vr_dmesg() { echo "=== dmesg ($1) ==="; dmesg; echo "=== end dmesg ==="; }
# which drivers the PCI function and its auxiliary devices are bound to
vr_bindings() {
  for d in /sys/bus/pci/devices/$1 /sys/bus/auxiliary/devices/*; do
    [ -e "$d" ] || continue
    echo "BINDING $(basename $d) -> $(basename "$(readlink $d/driver 2>/dev/null)" 2>/dev/null)"
  done
}
# vr_karg NAME: the value of kernel argument NAME=<value> (the last one), empty if absent
vr_karg() { _v=; for _a in $(cat /proc/cmdline); do case "$_a" in "$1"=*) _v=${_a#*=};; esac; done; echo "$_v"; }
# this guest's index in a multi-guest run (kernel argument vrnic.guest=<i>, 0 if absent)
vr_guest() { _g=$(vr_karg vrnic.guest); echo ${_g:-0}; }
# this guest's out-of-band address (vrnic.net=<addr/prefix>) without the prefix, empty if none
vr_ip() { _n=$(vr_karg vrnic.net); [ -z "$_n" ] || echo ${_n%/*}; }
# ---- client/server tool pairs (rc-pingpong, loopback, perftest) ---------------------------------------
# vr_pair LABEL LIMIT CMD...: run an unmodified tool as a server/client pair; the n-th pair of the script uses
# TCP port VR_PORT0+n (default 18600+n) for the out-of-band exchange (the tools' -p): a client never meets
# another pair's server, and both guests must call the same pairs in the same order.
#   two guests (vrnic.guests=2): guest 0 runs "CMD -p PORT" (server), guest 1 "CMD -p PORT 10.0.0.1"
#     (client, restarted while the server does not listen yet);
#   VR_LOOPBACK=1: both in this guest, the client to 127.0.0.1.
# Each side is bounded by LIMIT seconds (timeout). The raw output is printed between
#   "=== TOOL <label> g<i> <role>: <command> ===" and "=== TOOL-END <label> g<i> <role> rc=<rc> seconds=<s> tries=<n> ==="
vr_now() { awk '{print $1}' /proc/uptime; }
vr_since() { awk -v t0="$1" '{printf "%.2f", $1 - t0}' /proc/uptime; }
_vr_connect_failed() {
  grep -qE "Couldn't connect to|Unable to open file descriptor for socket|Unable to init the socket connection" "$1" &&
    ! grep -qE "remote address|local address:.*remote" "$1"
}
_vr_client() {  # LIMIT OUT HOST CMD...
  _lim=$1; _out=$2; _host=$3; shift 3
  _t0=$(vr_now); _tries=0
  while :; do
    _tries=$((_tries + 1))
    _left=$(awk -v t0="$_t0" -v l="$_lim" '{printf "%d", l - ($1 - t0)}' /proc/uptime)
    [ "$_left" -ge 1 ] || { _rc=124; break; }
    timeout "$_left" "$@" "$_host" > "$_out" 2>&1
    _rc=$?
    [ $_rc -ne 0 ] && _vr_connect_failed "$_out" || break
    sleep 0.5
  done
  _ctries=$_tries
  return $_rc
}
_vr_show() {  # LABEL ROLE CMD OUT RC SECONDS TRIES
  echo "=== TOOL $1 g$VR_G $2: $3 ==="
  cat "$4"
  echo "=== TOOL-END $1 g$VR_G $2 rc=$5 seconds=$6 tries=$7 ==="
}
# perftest converts cycles to time with a clock rate it measures after the run (a linear fit of rdtsc
# against gettimeofday over ~60 ms) and needs r^2 >= 0.9; when the host preempts this vCPU during the fit it
# prints "Correlation coefficient r^2: ... < 0.9" and every figure of its table comes out inf, nan or (the
# bandwidth tests) 0.00. Nothing was wrong with the transfer: the pair runs again (at most VR_CALIB_TRIES
# times, default 3).
vr_calib_failed() {
  grep -q "Correlation coefficient r^2" "$1" && grep -qE "^ *[0-9]+ +[0-9]+ +(inf|-?nan|0\.00([[:space:]]|$))" "$1"
}
vr_pair() {
  _label=$1; _plim=$2; shift 2
  VR_PAIR_N=$(( ${VR_PAIR_N:-0} + 1 )); _port=$(( ${VR_PORT0:-18600} + VR_PAIR_N ))
  VR_G=$(vr_guest)
  _cmd="$* -p $_port"
  _attempt=0
  while :; do
    _attempt=$((_attempt + 1)); _again=done
    if [ "${VR_LOOPBACK:-0}" = 1 ]; then
      _ts=$(vr_now)
      ( timeout "$_plim" "$@" -p "$_port" > /tmp/pair.server 2>&1; echo $? > /tmp/pair.server.rc ) &
      _spid=$!
      sleep 0.3
      _tc=$(vr_now)
      _vr_client "$_plim" /tmp/pair.client 127.0.0.1 "$@" -p "$_port"
      _crc=$?; _cs=$(vr_since $_tc)
      wait $_spid
      _src=$(cat /tmp/pair.server.rc); _ss=$(vr_since $_ts)
      _vr_show "$_label" server "$_cmd" /tmp/pair.server "$_src" "$_ss" 1
      _vr_show "$_label" client "$_cmd 127.0.0.1" /tmp/pair.client "$_crc" "$_cs" "$_ctries"
      vr_calib_failed /tmp/pair.client && _again=again
    elif [ "$VR_G" = 0 ]; then
      _ts=$(vr_now)
      timeout "$_plim" "$@" -p "$_port" > /tmp/pair.server 2>&1
      _src=$?
      _vr_show "$_label" server "$_cmd" /tmp/pair.server "$_src" "$(vr_since $_ts)" 1
      # the client's verdict on its clock calibration (TCP port + 1000)
      _again=$(echo ok | timeout "$_plim" nc -l -p $((_port + 1000)) 2>/dev/null)
    else
      _tc=$(vr_now)
      _vr_client "$_plim" /tmp/pair.client 10.0.0.1 "$@" -p "$_port"
      _crc=$?
      _vr_show "$_label" client "$_cmd 10.0.0.1" /tmp/pair.client "$_crc" "$(vr_since $_tc)" "$_ctries"
      vr_calib_failed /tmp/pair.client && _again=again
      [ $_attempt -lt ${VR_CALIB_TRIES:-3} ] || _again=done
      _n=0
      until echo $_again | nc 10.0.0.1 $((_port + 1000)) 2>/dev/null | grep -q ok; do
        _n=$((_n + 1)); [ $_n -lt 100 ] || break; sleep 0.2
      done
    fi
    [ "$_again" = again ] && [ $_attempt -lt ${VR_CALIB_TRIES:-3} ] || break
    echo "=== TOOL-AGAIN $_label g$VR_G: perftest's clock calibration failed (attempt $_attempt) ==="
  done
}
# the ibv_*_pingpong set of rc-pingpong (two guests) and loopback (one guest): label, time limit, command
vr_pingpong_set() {
  D="-d mlx5_0 -i 1"
  vr_pair rc-s1            40 ibv_rc_pingpong $D -s 1 -n 1000
  vr_pair rc-s4096-c       40 ibv_rc_pingpong $D -s 4096 -n 1000 -c
  vr_pair rc-s65536-c      40 ibv_rc_pingpong $D -s 65536 -n 200 -c
  vr_pair rc-s1048576-c    60 ibv_rc_pingpong $D -s 1048576 -n 50 -c
  vr_pair rc-e-s1          40 ibv_rc_pingpong $D -e -s 1 -n 1000
  vr_pair rc-e-s4096-c     40 ibv_rc_pingpong $D -e -s 4096 -n 1000 -c
  vr_pair rc-e-s1048576-c  60 ibv_rc_pingpong $D -e -s 1048576 -n 50 -c
  vr_pair uc-s4096-c       40 ibv_uc_pingpong $D -s 4096 -n 1000 -c
  vr_pair ud-s2048-c       40 ibv_ud_pingpong $D -s 2048 -n 1000 -c
  vr_pair srq-s4096-c      60 ibv_srq_pingpong $D -s 4096 -n 100 -c
}
