#!/bin/sh
# roce-pcap (two guests over udp, the harness captures guest 0's port to OUT/eth0.pcap): guest 1 runs
# ib_write_bw -x <IPv4 GID> -s 65536 -n 100 against guest 0 (netdev MTU 1500: path MTU 1024, so each message is
# RDMA WRITE First + 62 Middle + Last); then ib_send_lat -s 2 (SEND Only frames). The host decodes the capture
# (tshark: infiniband over UDP 4791, nothing malformed), checks every frame's ICRC and counts the WRITE frames
# against perftest's own message count, size and MTU (vrnic_harness/roce_pcap.py).
. /usr/local/lib/vrnic-roce-lib.sh
roce_all_up 1500
ibv_devinfo -d $ROCE_DEV | grep -E "hca_id|state|active_mtu|link_layer"
echo "ROCE-PCAP-START g$G"
roce_perf 0 pcap-ib_write_bw 90 ib_write_bw -d @DEV@ -i 1 -F -x @GID4@ -s 65536 -n 100
roce_perf 0 pcap-ib_send_lat 60 ib_send_lat -d @DEV@ -i 1 -F -x @GID4@ -s 2 -n 100
eth_barrier done
echo "ROCE-PCAP-DONE g$G"
roce_counters pcap
vr_dmesg "roce-pcap"
