#!/bin/sh
# scale-max (by hand): scale.sh at the device's own maxima (2^16 QPs and CQs, 65536 MRs), the driver's default
# profile; --guest-arg SCALE=QPS,MRS,CQS,SAMPLE as in scale.sh.
SCALE_PROF=
SCALE_DEFAULT=0,0,0,64
. /scenarios/scale.sh
