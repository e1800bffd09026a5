#!/bin/sh
# ib-sa: three guests, each with its own vrnic (LID 1, 2, 3) on the UDP fabric, and infiniband-diags against vrnic's
# built-in SM: the IB stage of LID 1's server answers SMInfo (g0 locally, g1/g2 over the fabric) and runs the SA;
# the modeled switch answers the directed routes. The body is ib-lib.sh's ib_sa_run (ib-opensm runs it against
# OpenSM).
. /usr/local/lib/vrnic-lib.sh
. /usr/local/lib/vrnic-ib-lib.sh
vr_two_guests_up
ib_sa_run
vr_dmesg "after ib-sa"
