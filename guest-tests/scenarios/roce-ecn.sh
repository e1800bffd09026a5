#!/bin/sh
# roce-ecn (three vrnic guests cabled to the switch guest, ethswitch.py; the switch's egress towards g0 is the
# congestion point: htb rate limit + RED ecn): g1 and g2 each run ib_write_bw -D $D into g0 at the same time
# (roce_incast), twice: phase "on", then phase "off", each after the harness sent `cc on` / `cc off` to every vrnic
# server (roce_cc_request; ConnectX starts with CC on, the request makes it explicit). Around each phase: every
# guest's port counters (ROCE-COUNTERS before-<phase>/after-<phase>, hw_counters included) and the switch's
# (sw_cmd stats).
# vrnic.ecn_d=<s> sets D (default 20).
. /usr/local/lib/vrnic-roce-lib.sh
D=$(vr_karg vrnic.ecn_d); D=${D:-20}
roce_all_up
P=18800
for phase in on off; do
  roce_cc_request $phase
  roce_counters "before-$phase"
  [ "$G" = 0 ] && sw_cmd "stats before-$phase"
  roce_incast $phase $D $P
  roce_counters "after-$phase"
  [ "$G" = 0 ] && sw_cmd "stats after-$phase"
  P=$((P + 10))
done
[ "$G" = 0 ] && sw_cmd end
true
