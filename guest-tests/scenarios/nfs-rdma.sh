#!/bin/sh
# nfs-rdma (two guests on an Ethernet segment, RoCE v2): guest 0 a kernel NFS server (NFSv4 only: there is no
# rpcbind; versions, the RDMA listener on port 20049 and the threads through /proc/fs/nfsd, rpc.mountd for the
# export upcalls) exporting a tmpfs; guest 1 mounts it with -o rdma,port=20049,vers=4.2, writes files of 1 KiB ..
# 16 MiB, reads them back with its page cache dropped; both sides print sha256 sums. Then fio on the mount
# (--verify=crc32c, direct I/O) and the small-operation round trip: fio 4 KiB direct reads at QD1 (psync), whose
# mean completion latency is one READ RPC over RDMA (a figure, not asserted).
. /usr/local/lib/vrnic-ulp-lib.sh
ulp_hang_watch
roce_all_up
SIZES="1024 65536 1048576 16777216"
MNT=/mnt/nfs
echo "ULP-NFS-START g$G nic=$ETH_NIC dev=$ROCE_DEV"
if [ "$G" = 0 ]; then
  ulp_nfs_server_up /export
else
  dd if=/dev/urandom of=/tmp/rnd bs=1M count=16 2> /dev/null
  for s in $SIZES; do head -c $s /tmp/rnd > /tmp/src.$s; done
fi
eth_barrier nfsd-up
if [ "$G" = 1 ]; then
  ulp_nfs_mount $MNT
  for s in $SIZES; do
    cp /tmp/src.$s $MNT/f.$s || echo "ULP-NFS-WRITE-FAIL g$G f.$s rc=$?"
  done
  sync
  echo 3 > /proc/sys/vm/drop_caches
  for s in $SIZES; do
    echo "ULP-NFS-SUM g$G src f.$s $(sha256sum < /tmp/src.$s | cut -d' ' -f1)"
    echo "ULP-NFS-SUM g$G nfs f.$s $(sha256sum < $MNT/f.$s | cut -d' ' -f1) bytes=$(wc -c < $MNT/f.$s)"
  done
fi
eth_barrier files-written
if [ "$G" = 0 ]; then
  for s in $SIZES; do echo "ULP-NFS-SUM g$G export f.$s $(sha256sum < /export/f.$s | cut -d' ' -f1)"; done
fi
eth_barrier files-summed
if [ "$G" = 1 ]; then
  V="--directory=$MNT --verify=crc32c"
  ulp_fio nfs-seq128k 180 $V --rw=write --bs=128k --iodepth=4 --size=32M
  ulp_fio nfs-rand4k 180 $V --rw=randwrite --bs=4k --iodepth=8 --size=8M
  ulp_tool fio-nfs-lat4k 90 fio --name=nfs-lat4k --directory=$MNT --ioengine=psync --direct=1 --rw=randread --bs=4k \
    --size=8M --time_based --runtime=${NFS_LAT_S:-8}
  grep -E "xprt:|^\s+(READ|WRITE|GETATTR|OPEN):" /proc/self/mountstats | sed "s/^/ULP-NFS-MOUNTSTATS g$G /"
  umount $MNT
  echo "ULP-NFS-UMOUNT g$G rc=$? left=$(grep -c " $MNT " /proc/mounts)"
fi
eth_barrier done
[ "$G" = 0 ] && echo 0 > /proc/fs/nfsd/threads
ulp_ktrouble end
vr_dmesg "nfs-rdma g$G"
