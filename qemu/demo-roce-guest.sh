#!/bin/sh
# qemu/demo part 3 (each of two guests on an Ethernet segment): RoCE. Each guest's RDMA device over its port
# (mlx5_0 over the mlx5e netdev on a vrnic port; rxe0 over virtio-net otherwise) with its RoCE v2 GIDs. Two vrnic
# guests: rping (rdma_cm) and ib_write_lat -R (rdma_cm) between them; a vrnic guest and an rxe guest:
# ibv_rc_pingpong -g <IPv4 GID index> between them. Guest 0 serves; result lines printed.
. /usr/local/lib/vrnic-roce-lib.sh
roce_all_up || exit 1
echo "--- guest $G: $ROCE_DEV over $ETH_DEV ($ETH_NIC), RoCE v2 GIDs ---"
roce_gids demo
ibv_devinfo -d $ROCE_DEV | grep -E "hca_id|state|active_mtu|link_layer"
if [ "$ETH_NICS" = vrnic,vrnic ]; then
  roce_pair 0 demo-rping 120 rping -s -v -a @SIP@ -p @PORT@ -C 10 -- rping -c -v -a @SIP@ -p @PORT@ -C 10
  [ "$ROCE_RC" = 0 ] || vr_fail "DEMO-ROCE rping rc=$ROCE_RC"
  roce_perf_cm 0 demo-ib_write_lat-R 120 ib_write_lat -d @DEV@ -i 1 -F -s 2 -n 1000
  [ "$ROCE_RC" = 0 ] || vr_fail "DEMO-ROCE ib_write_lat -R rc=$ROCE_RC"
else
  roce_perf 0 demo-rc_pingpong-g 120 ibv_rc_pingpong -d @DEV@ -i 1 -g @GID4@ -s 4096 -n 200 -c
  [ "$ROCE_RC" = 0 ] || vr_fail "DEMO-ROCE ibv_rc_pingpong -g rc=$ROCE_RC"
fi
eth_barrier done
echo "DEMO-ROCE g$G done ($ETH_NICS)"
