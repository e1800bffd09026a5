#!/bin/sh
# roce-cm (two guests on an Ethernet segment): librdmacm over RoCE, every connection set up by CM MADs on QP1
# (address and route resolution over the port's netdev): rping -C 10000 -S 65535 -V (data verified), ucmatose
# -c 10, udaddy, mckey (RoCE multicast), rdma_server/rdma_client, rdma_xserver/rdma_xclient; and an rping to a
# port nobody listens on, which must fail (rejected) within a bound. Guest 0 serves. mckey: the sender sends 30
# datagrams, the receiver waits for 10 (UD multicast has no flow control: the first may go before the receiver
# posted its buffers).
. /usr/local/lib/vrnic-roce-lib.sh
roce_all_up
echo "ROCE-CM-START g$G"
roce_counters before
# 10000 pings of 64 KiB; 1000 where rxe runs (virtio-net guests: rxe under TCG takes ~28 ms a ping)
RPING_C=$(vr_karg vrnic.rping_c)
case "$ETH_NICS" in *virtio*) RPING_C=${RPING_C:-1000};; *) RPING_C=${RPING_C:-10000};; esac
roce_pair 0 cm-rping 400 rping -s -a @SIP@ -p @PORT@ -C $RPING_C -S 65535 -V -- rping -c -a @SIP@ -p @PORT@ -C $RPING_C -S 65535 -V
roce_pair 0 cm-rping-v 120 rping -s -v -a @SIP@ -p @PORT@ -C 100 -- rping -c -v -a @SIP@ -p @PORT@ -C 100
roce_pair 0 cm-ucmatose 120 ucmatose -b @SIP@ -p @PORT@ -c 10 -- ucmatose -s @SIP@ -p @PORT@ -c 10
roce_pair 0 cm-udaddy 120 udaddy -b @SIP@ -- udaddy -s @SIP@
ROCE_SERVER_WAIT=4 roce_pair 0 cm-mckey 120 mckey -m 239.1.1.20 -b @SIP@ -C 10 -- mckey -m 239.1.1.20 -b @MYIP@ -C 30 -s
roce_pair 0 cm-rdma-server 120 rdma_server -s @SIP@ -p @PORT@ -- rdma_client -s @SIP@ -p @PORT@
roce_pair 0 cm-rdma-xserver 120 rdma_xserver -p @PORT@ -c r -- rdma_xclient -s @SIP@ -p @PORT@ -c r
eth_barrier refused
if [ "$G" = 1 ]; then
  eth_tool cm-refused 60 rping -c -v -d -a $(eth_ip 0) -p 19999 -C 1
fi
eth_barrier done
roce_counters after
echo "ROCE-CM-DONE g$G"
vr_dmesg "roce-cm"
