#!/bin/sh
# libfabric (two guests on an Ethernet segment, RoCE v2): fi_info -p verbs (the provider sees the RDMA device),
# then fi_pingpong between the guests (guest 0 serves on its address on the segment; the tool's own TCP bootstrap
# goes there too): the verbs provider's MSG endpoint (connections through rdma_cm) and verbs;ofi_rxm's RDM
# endpoint (trixie has no fabtests package, so no fi_rdm_pingpong: libfabric-bin's fi_pingpong -e rdm is the
# same RDM ping-pong). 64 B and 64 KiB, 200 iterations each.
. /usr/local/lib/vrnic-ulp-lib.sh
ulp_hang_watch
roce_all_up
echo "ULP-FI-START g$G nic=$ETH_NIC dev=$ROCE_DEV $(fi_info --version | head -1 | tr ' ' _)"
fi_info -p verbs > /tmp/fi-info.txt 2>&1
echo "ULP-FI-INFO g$G rc=$? domains=$(sed -n 's/^\s*domain: *//p' /tmp/fi-info.txt | sort -u | tr '\n' ' ')" \
  "types=$(sed -n 's/^\s*type: *//p' /tmp/fi-info.txt | sort -u | tr '\n' ' ')"
I=${FI_ITERS:-200}
for S in 64 65536; do
  roce_pair 0 fi-msg-s$S 60 fi_pingpong -p verbs -e msg -B @PORT@ -s @SIP@ -I $I -S $S \
    -- fi_pingpong -p verbs -e msg -P @PORT@ -I $I -S $S @SIP@
  roce_pair 0 fi-rdm-s$S 60 fi_pingpong -p "verbs;ofi_rxm" -e rdm -B @PORT@ -s @SIP@ -I $I -S $S \
    -- fi_pingpong -p "verbs;ofi_rxm" -e rdm -P @PORT@ -I $I -S $S @SIP@
done
eth_barrier done
ulp_ktrouble end
vr_dmesg "libfabric g$G"
