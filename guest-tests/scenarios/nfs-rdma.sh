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
echo "ULP-NFS-START g$G nic=$ETH_NIC dev=$ROCE_DEV"
ulp_nfs_exercise
ulp_ktrouble end
vr_dmesg "nfs-rdma g$G"
