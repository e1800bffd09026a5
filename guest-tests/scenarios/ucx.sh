#!/bin/sh
# ucx (two guests on an Ethernet segment, RoCE v2): ucx_info -d (the transports UCX finds on the RDMA device), then
# ucx_perftest between the guests (guest 0 serves, the client bootstraps over the out-of-band link): UCP tag
# latency and bandwidth, UCP put latency and bandwidth, UCX_NET_DEVICES=<dev>:1 (the transports UCX picks itself;
# on vrnic rc_mlx5 with ud_mlx5 for wireup, through mlx5dv without DEVX; dc_mlx5 needs DEVX). UCX's defaults, except
# for what vrnic.ucx_env adds.
. /usr/local/lib/vrnic-ulp-lib.sh
ulp_hang_watch
roce_all_up
export UCX_NET_DEVICES=$ROCE_DEV:1
# vrnic.ucx_env=K=V[,K=V]: more UCX environment, e.g. UCX_UD_TIMER_TICK=1ms (UD connection requests resent)
for _kv in $(vr_karg vrnic.ucx_env | tr , ' '); do export "$_kv"; echo "ULP-UCX-ENV g$G $_kv"; done
echo "ULP-UCX-START g$G nic=$ETH_NIC dev=$ROCE_DEV $(ucx_info -v | grep -o 'Library version: [0-9.]*' | tr ' ' _)"
if [ "$G" = 0 ]; then
  ucx_info -d > /tmp/ucx-d.txt 2>&1
  echo "ULP-UCX-TRANSPORTS g$G $(sed -n 's/^#\s*Transport: *//p' /tmp/ucx-d.txt | sort -u | tr '\n' ' ')"
  echo "ULP-UCX-DEVICES g$G $(sed -n 's/^#\s*Device: *//p' /tmp/ucx-d.txt | sort -u | tr '\n' ' ')"
  ucx_info -e -u t -D net 2>&1 | grep -E "^#.*(rc|ud|dc|tcp)" | head -20 | sed "s/^/ULP-UCX-EP g$G /"
fi
# which memory domain UCX opened the device with: DEVX (a flush key: flush(remote) works) or plain mlx5dv
UCX_LOG_LEVEL=debug ucx_info -d > /tmp/ucx-dbg.txt 2>&1
echo "ULP-UCX-DEVX g$G $(grep -oE 'DEVX is not supported|DEVX requested but not supported|mlx5dv_open_device\([^)]*\) failed[^[]*|mlx5dv_devx_[a-z_]*\([^)]*\) failed[^[]*' /tmp/ucx-dbg.txt | sort -u | tr '\n' ';')"
grep -iE "devx|flush" /tmp/ucx-dbg.txt | head -8 | sed "s/^/ULP-UCX-DBG g$G /"
echo "ULP-UCX-CONFIG g$G $(ucx_info -c 2>/dev/null | grep -E '^UCX_(FENCE_MODE|PROTO_ENABLE|MAX_RMA_LANES|IB_MLX5_DEVX)=' | sort | tr '\n' ' ')"
ITERS=${UCX_ITERS:-2000}
roce_pair 0 ucx-tag_lat 90 ucx_perftest -P 0 -p @PORT@ -- ucx_perftest @SOOB@ -P 0 -p @PORT@ -t tag_lat -s 8 -n $ITERS
roce_pair 0 ucx-tag_bw 90 ucx_perftest -P 0 -p @PORT@ -- ucx_perftest @SOOB@ -P 0 -p @PORT@ -t tag_bw -s 65536 -n 500
roce_pair 0 ucx-put_lat 90 ucx_perftest -P 0 -p @PORT@ -- ucx_perftest @SOOB@ -P 0 -p @PORT@ -t ucp_put_lat -s 8 -n $ITERS
roce_pair 0 ucx-put_bw 90 ucx_perftest -P 0 -p @PORT@ -- ucx_perftest @SOOB@ -P 0 -p @PORT@ -t ucp_put_bw -s 65536 -n 500
eth_barrier done
ulp_ktrouble end
vr_dmesg "ucx g$G"
