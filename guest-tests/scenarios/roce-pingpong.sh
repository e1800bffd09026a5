#!/bin/sh
# roce-pingpong (two guests on an Ethernet segment): the rc-pingpong tool set over RoCE v2 with -g <GID index>,
# over the IPv4 GID and the IPv6 GID: ibv_rc_pingpong (1 B .. 1 MiB, -c, -e), ibv_uc_pingpong, ibv_ud_pingpong (up
# to the MTU), ibv_srq_pingpong. Guest 0 serves; the tools' own TCP exchange runs on the out-of-band link.
# The ports run with --faults rx:ce_every=64 (every 64th ECN-capable frame CE-marked): the pingpongs pass through
# live congestion control, and the host checks the servers' stats -> congestion counters moved (checks_roce.py).
. /usr/local/lib/vrnic-roce-lib.sh
roce_all_up
ibv_devinfo -d $ROCE_DEV | grep -E "hca_id|state|active_mtu|link_layer"
MTU=$(ibv_devinfo -d $ROCE_DEV | sed -n 's/.*active_mtu:[^0-9]*\([0-9]*\).*/\1/p')
echo "ROCE-PINGPONG-START g$G mtu=$MTU"
for f in 4 6; do
  D="-d @DEV@ -i 1 -g @GID$f@"
  roce_perf 0 v$f-rc-s1           60 ibv_rc_pingpong $D -s 1 -n 200
  roce_perf 0 v$f-rc-s4096-c      60 ibv_rc_pingpong $D -s 4096 -n 200 -c
  roce_perf 0 v$f-uc-s4096-c      60 ibv_uc_pingpong $D -s 4096 -n 200 -c
  roce_perf 0 v$f-ud-s$MTU-c      60 ibv_ud_pingpong $D -s $MTU -n 200 -c
  roce_perf 0 v$f-srq-s4096-c     60 ibv_srq_pingpong $D -s 4096 -n 100 -c
done
roce_perf 0 v4-rc-s65536-c      60 ibv_rc_pingpong -d @DEV@ -i 1 -g @GID4@ -s 65536 -n 100 -c
roce_perf 0 v4-rc-s1048576-c    90 ibv_rc_pingpong -d @DEV@ -i 1 -g @GID4@ -s 1048576 -n 10 -c
roce_perf 0 v4-rc-e-s1          60 ibv_rc_pingpong -d @DEV@ -i 1 -g @GID4@ -e -s 1 -n 200
roce_perf 0 v4-rc-e-s4096-c     60 ibv_rc_pingpong -d @DEV@ -i 1 -g @GID4@ -e -s 4096 -n 200 -c
roce_perf 0 v6-rc-e-s65536-c    60 ibv_rc_pingpong -d @DEV@ -i 1 -g @GID6@ -e -s 65536 -n 100 -c
roce_perf 0 v4-ud-e-s$MTU-c     60 ibv_ud_pingpong -d @DEV@ -i 1 -g @GID4@ -e -s $MTU -n 200 -c
echo "ROCE-PINGPONG-DONE g$G"
roce_counters pingpong
vr_dmesg "roce-pingpong"
