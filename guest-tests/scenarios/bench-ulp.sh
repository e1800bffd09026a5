#!/bin/sh
# bench-ulp (two guests over udp; the harness runs it with vrnic ports, then with virtio-net + rxe): REPS
# repetitions of fio 4 KiB random read QD16 and 128 KiB sequential read QD16 over NVMe-oF (8 s each, a 64 MiB
# region written first), fio 128 KiB sequential read QD16 of a 64 MiB file over NFS/RDMA (page cache dropped), and
# ucx_perftest tag latency (8 B). Output: ETH-TOOL blocks bench-<test>-r<k> (fio) and TOOL blocks (ucx); the
# harness prints BENCH lines (run/bench_ulp.py). A barrier after each repetition keeps every wait of guest 0 under
# eth_barrier's 120 s on rxe too.
. /usr/local/lib/vrnic-ulp-lib.sh
REPS=${REPS:-3}
RT=${BENCH_RT:-8}
MNT=/mnt/nfs
ulp_hang_watch
roce_all_up
echo "BENCH-ULP-START g$G nic=$ETH_NIC dev=$ROCE_DEV reps=$REPS runtime=$RT"
[ "$G" = 0 ] && { ulp_nvmet_up; ulp_nfs_server_up /export; }
eth_barrier servers-up
if [ "$G" = 1 ]; then
  ulp_nvme_connect
  ulp_fio prefill 100 --filename=$ULP_BDEV --rw=write --bs=128k --iodepth=16 --size=64M
fi
eth_barrier nvme-ready
r=1
while [ $r -le $REPS ]; do
  if [ "$G" = 1 ]; then
    ulp_fio bench-nvme-randread4k-r$r 50 --filename=$ULP_BDEV --rw=randread --bs=4k --iodepth=16 --size=64M \
      --time_based --runtime=$RT
    ulp_fio bench-nvme-seqread128k-r$r 50 --filename=$ULP_BDEV --rw=read --bs=128k --iodepth=16 --size=64M \
      --time_based --runtime=$RT
  fi
  eth_barrier nvme-r$r
  r=$((r + 1))
done
if [ "$G" = 1 ]; then
  ulp_nvme_disconnect
  ulp_nfs_mount $MNT
  ulp_fio nfs-prefill 100 --filename=$MNT/bench.dat --rw=write --bs=128k --iodepth=16 --size=64M
fi
eth_barrier nfs-ready
r=1
while [ $r -le $REPS ]; do
  if [ "$G" = 1 ]; then
    echo 3 > /proc/sys/vm/drop_caches
    ulp_fio bench-nfs-read128k-r$r 90 --filename=$MNT/bench.dat --rw=read --bs=128k --iodepth=16 --size=64M \
      --time_based --runtime=$RT
  fi
  eth_barrier nfs-r$r
  r=$((r + 1))
done
[ "$G" = 1 ] && umount $MNT
export UCX_NET_DEVICES=$ROCE_DEV:1
r=1
while [ $r -le $REPS ]; do
  roce_pair 0 bench-ucx-tag_lat-r$r 90 ucx_perftest -P 0 -p @PORT@ -- ucx_perftest @SOOB@ -P 0 -p @PORT@ -t tag_lat -s 8 -n 2000
  r=$((r + 1))
done
eth_barrier done
ulp_ktrouble end
