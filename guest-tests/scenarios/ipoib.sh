#!/bin/sh
# ipoib (+ the ib-cm checks): three guests, each with its own vrnic (LIDs 1..3) on the UDP fabric; IPoIB and
# rdma_cm over it, ib0 joining the broadcast group through vrnic's SA (the built-in SM's, LID 1). The body is
# ib-lib.sh's ipoib_run (ib-opensm runs it against OpenSM).
. /usr/local/lib/vrnic-roce-lib.sh  # vrnic-lib.sh, and roce_show (a long tool output elided)
. /usr/local/lib/vrnic-ib-lib.sh
vr_two_guests_up
ipoib_run
vr_dmesg "after ipoib"
