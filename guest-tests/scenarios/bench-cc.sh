#!/bin/sh
# bench-cc (the roce-ecn topology: three vrnic guests through the switch guest's marking egress towards g0): with
# congestion control on (ConnectX defaults), on with the tuned parameters, then off (roce_cc_request: the harness
# sends `cc on|off` to every vrnic server; vrnic.cc_modes=on,tuned,off picks and orders the arms), REPS
# repetitions (vrnic.cc_reps, default 3) of: the latency probe alone (ib_write_lat -n PROBE_N from g2 into g0:
# "idle"), then the incast (g1 and g2 ib_write_bw -D D into g0) with the probe running through it ("load").
# The check (run/bench_cc.py) prints BENCH lines; g0 samples the switch's counters twice during each load (mid1,
# mid2: the switch's drain rate while the flows run). vrnic.cc_d=<s> (default 15), vrnic.cc_probe_n=<n> (default 300).
# vrnic.cc_params=NAME:VALUE,... writes mlx5_ib's debugfs cc_params files (MODIFY_CONG_PARAMS) on every guest
# first (for every arm); vrnic.cc_tuned=NAME:VALUE,... replaces the tuned arm's set (docs/congestion.md, bench-cc).
. /usr/local/lib/vrnic-roce-lib.sh
D=$(vr_karg vrnic.cc_d); D=${D:-15}
REPS=$(vr_karg vrnic.cc_reps); REPS=${REPS:-3}
N=$(vr_karg vrnic.cc_probe_n); N=${N:-300}
roce_all_up
# cc_write NAME:VALUE,...: mlx5_ib's debugfs cc_params files of this guest's device (MODIFY_CONG_PARAMS)
cc_write() {
  grep -q ' /sys/kernel/debug ' /proc/mounts || mount -t debugfs debugfs /sys/kernel/debug
  CCD=/sys/kernel/debug/mlx5/$(basename "$(readlink -f /sys/class/infiniband/$ROCE_DEV/device)")/cc_params
  for kv in $(echo "$1" | tr ',' ' '); do
    echo "${kv#*:}" > "$CCD/${kv%%:*}" || vr_fail "cc_params ${kv%%:*}"
    echo "CC-PARAM g$G ${kv%%:*}=$(cat "$CCD/${kv%%:*}")"
  done
}
CCP=$(vr_karg vrnic.cc_params)
[ -z "$CCP" ] || cc_write "$CCP"
# the arms, in order: on (CC on, the parameters as they are: ConnectX defaults), tuned (CC on after writing
# vrnic.cc_tuned, default DCQCN's time constants scaled to this path, SimConfig::bench_cc_tuned), off (`cc off`)
MODES=$(vr_karg vrnic.cc_modes); MODES=${MODES:-on,tuned,off}
TUNED=$(vr_karg vrnic.cc_tuned)
TUNED=${TUNED:-rp_time_reset:2000,rp_ai_rate:1,rp_hai_rate:5,rp_dce_tcp_rtt:2000,rp_rate_reduce_monitor_period:2000,rp_clamp_tgt_rate:0,rp_rate_to_set_on_first_cnp:50,rp_max_rate:50,rp_min_rate:5}
P=18800
for mode in $(echo "$MODES" | tr ',' ' '); do
  if [ "$mode" = tuned ]; then
    cc_write "$TUNED"
    roce_cc_request on
  else
    roce_cc_request $mode
  fi
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
    # the switch's counters twice in the middle of the load: its drain rate while the flows run (run/bench_cc.py)
    [ "$G" = 0 ] && ( sleep $((3 + D / 3)); sw_cmd "stats mid1-cc$mode-r$r"; sleep $((D / 3))
                      sw_cmd "stats mid2-cc$mode-r$r" ) &
    roce_incast "cc$mode-r$r" $D $P $N
    roce_counters "after-cc$mode-r$r"
    [ "$G" = 0 ] && sw_cmd "stats after-cc$mode-r$r"
    P=$((P + 10))
    r=$((r + 1))
  done
done
[ "$G" = 0 ] && sw_cmd end
true
