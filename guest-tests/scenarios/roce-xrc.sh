#!/bin/sh
# roce-xrc (two guests on an Ethernet segment): ibv_xsrq_pingpong over RoCE v2 with -g <GID index>: XRC initiator
# QPs sending into XRC SRQs through XRC target QPs, 64 B x 200 over the IPv4 GID, 16 KiB x 100 (multi-packet)
# with CQ events (-e) over the IPv6 GID. Guest 0 serves; the tool's own TCP exchange runs on the out-of-band link.
. /usr/local/lib/vrnic-roce-lib.sh
roce_all_up
ibv_devinfo -d $ROCE_DEV -v | grep -E "hca_id|state|link_layer|XRC"
echo "ROCE-XRC-START g$G"
roce_perf 0 v4-xrc-s64       60 ibv_xsrq_pingpong -d @DEV@ -i 1 -g @GID4@ -s 64 -n 200
roce_perf 0 v6-xrc-e-s16384  60 ibv_xsrq_pingpong -d @DEV@ -i 1 -g @GID6@ -e -s 16384 -n 100
echo "ROCE-XRC-DONE g$G"
roce_counters xrc
vr_dmesg "roce-xrc"
