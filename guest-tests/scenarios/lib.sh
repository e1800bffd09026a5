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
# the whole kernel log between markers the harness scans
vr_dmesg() { echo "=== dmesg ($1) ==="; dmesg; echo "=== end dmesg ==="; }
# which drivers the PCI function and its auxiliary devices are bound to
vr_bindings() {
  for d in /sys/bus/pci/devices/$1 /sys/bus/auxiliary/devices/*; do
    [ -e "$d" ] || continue
    echo "BINDING $(basename $d) -> $(basename "$(readlink $d/driver 2>/dev/null)" 2>/dev/null)"
  done
}
# this guest's index in a multi-guest run (kernel argument vrnic.guest=<i>, 0 if absent)
vr_guest() { _g=0; for _a in $(cat /proc/cmdline); do case "$_a" in vrnic.guest=*) _g=${_a#vrnic.guest=};; esac; done; echo $_g; }
# this guest's out-of-band address (vrnic.net=<addr/prefix>) without the prefix, empty if none
vr_ip() { for _a in $(cat /proc/cmdline); do case "$_a" in vrnic.net=*) _n=${_a#vrnic.net=}; echo ${_n%/*};; esac; done; }
