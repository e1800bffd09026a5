#!/bin/sh
# device-memory: guest 0 allocates on-device memory (ibv_alloc_dm), copies data in and out
# (ibv_memcpy_to/from_dm), registers it (ibv_reg_dm_mr); guest 1, over the fabric, RDMA-writes into it,
# reads from it and fetch-and-adds a counter in it; guest 0 then checks the bytes (guest-tests/src/dm_test.c).
. /usr/local/lib/vrnic-lib.sh
G=$(vr_guest)
vr_two_guests_up
ibv_devinfo -d mlx5_0 -v | grep -E "hca_id|state|port_lid|device memory"
if [ "$G" = 0 ]; then
  echo "=== dm_test server ==="
  dm_test server 18700; echo "DM-RC g0 $?"
else
  echo "=== dm_test client 10.0.0.1 ==="
  dm_test client 10.0.0.1 18700; echo "DM-RC g1 $?"
fi
vr_dmesg "after dm_test"
