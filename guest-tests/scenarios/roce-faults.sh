#!/bin/sh
# roce-faults (two guests on a bridge; the harness impairs the link: tc netem loss 3% reorder 5% duplicate 1%
# delay 1ms on the TAPs where the host has sch_netem, and the vrnic ports' own link faults --faults
# tx:drop=0.03,tx:reorder=0.05,tx:duplicate=0.01): ib_write_bw and ib_read_bw complete, rping -C 200 -V
# verifies its data (200 pings: each lost packet costs an RC retransmission timeout; ~0.35 s a ping on vrnic);
# the port counters before and after (retransmission counters must move). rping's server ends only on the client's
# one DREQ, which the impaired link can lose: a server killed at its limit after its client completed every verified
# ping is accepted (checks_roce.rping_lost_disconnect).
. /usr/local/lib/vrnic-roce-lib.sh
roce_all_up
ibv_devinfo -d $ROCE_DEV | grep -E "hca_id|state|active_mtu|link_layer"
echo "ROCE-FAULTS-START g$G"
roce_counters before
D="-d @DEV@ -i 1 -F -x @GID4@"
roce_perf 0 f-ib_write_bw 180 ib_write_bw $D -s 65536 -n 200
roce_perf 0 f-ib_read_bw  180 ib_read_bw $D -s 65536 -n 200
roce_pair 0 f-rping 240 rping -s -a @SIP@ -p @PORT@ -C 200 -S 4096 -V -- rping -c -a @SIP@ -p @PORT@ -C 200 -S 4096 -V
roce_counters after
eth_barrier done
echo "ROCE-FAULTS-DONE g$G"
vr_dmesg "roce-faults"
