#!/bin/sh
# bench-cc (the roce-ecn topology: three vrnic guests through the switch guest's marking egress towards g0): with
# congestion control on, then off (roce_cc_request: the harness sends `cc on|off` to every vrnic server), REPS
# repetitions (vrnic.cc_reps, default 3) of: the latency probe alone (ib_write_lat -n PROBE_N from g2 into g0:
# "idle"), then the incast (g1 and g2 ib_write_bw -D D into g0) with the probe running through it ("load").
# The check (run/bench_cc.py) prints BENCH lines. vrnic.cc_d=<s> (default 15), vrnic.cc_probe_n=<n> (default 300).
# vrnic.cc_params=NAME:VALUE,... writes mlx5_ib's debugfs cc_params files (MODIFY_CONG_PARAMS) on every guest
# first, e.g. DCQCN's time constants scaled to this path (docs/congestion.md, bench-cc).
. /usr/local/lib/vrnic-roce-lib.sh
D=$(vr_karg vrnic.cc_d); D=${D:-15}
REPS=$(vr_karg vrnic.cc_reps); REPS=${REPS:-3}
N=$(vr_karg vrnic.cc_probe_n); N=${N:-300}
roce_all_up
CCP=$(vr_karg vrnic.cc_params)
if [ -n "$CCP" ]; then
  grep -q ' /sys/kernel/debug ' /proc/mounts || mount -t debugfs debugfs /sys/kernel/debug
  CCD=/sys/kernel/debug/mlx5/$(basename "$(readlink -f /sys/class/infiniband/$ROCE_DEV/device)")/cc_params
  for kv in $(echo "$CCP" | tr ',' ' '); do
    echo "${kv#*:}" > "$CCD/${kv%%:*}" || vr_fail "cc_params ${kv%%:*}"
    echo "CC-PARAM g$G ${kv%%:*}=$(cat "$CCD/${kv%%:*}")"
  done
fi
P=18800
for mode in on off; do
  roce_cc_request $mode
  r=1
  while [ $r -le $REPS ]; do
    # the probe alone: g0 serves, the last guest runs it (the same path as under load)
    if [ "$G" = 0 ]; then
      ( timeout 120 ib_write_lat -d $ROCE_DEV -F -x $ROCE_GID4 -s 2 -n $N -p $((P + 9)) > /tmp/idle.s 2>&1 ) &
      sleep 1
    fi
    eth_barrier "idle-$mode-$r"
    if [ "$G" = $((ETH_N - 1)) ]; then
      _incast_client "cc$mode-r$r-idle" 120 ib_write_lat -d $ROCE_DEV -F -x $ROCE_GID4 -s 2 -n $N -p $((P + 9)) \
        $(roce_oob 0)
    fi
    [ "$G" = 0 ] && wait
    P=$((P + 10))
    eth_barrier "idle-done-$mode-$r"
    [ "$G" = 0 ] && sw_cmd "stats before-cc$mode-r$r"
    roce_counters "before-cc$mode-r$r"
    roce_incast "cc$mode-r$r" $D $P $N
    roce_counters "after-cc$mode-r$r"
    [ "$G" = 0 ] && sw_cmd "stats after-cc$mode-r$r"
    P=$((P + 10))
    r=$((r + 1))
  done
done
[ "$G" = 0 ] && sw_cmd end
true
