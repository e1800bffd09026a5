#!/bin/sh
# events: completion events (CQ arm -> EQE -> interrupt -> ibv_get_cq_event) with unmodified tools.
# Two guests on the fabric (guest 0 server, guest 1 client): perftest -e latency and bandwidth,
# ibv_rc_pingpong -e with 20000 iterations, ibv_ud_pingpong -e; then each guest runs loopback
# pairs against its own device (guest 0 the perftest ones, guest 1 the pingpong ones).
# perftest refuses -e with RDMA WRITE (also --write_with_imm): events are exercised with SEND (RC, UD).
# -N: no peak figure (else the ib_send_bw server prints " WARNING: BW peak won't be measured").
. /usr/local/lib/vrnic-lib.sh
G=$(vr_guest)
vr_two_guests_up
ibv_devinfo -d mlx5_0 | grep -E "hca_id|state|port_lid|active_mtu|link_layer"
echo "EVENTS-START g$G role=$([ "$G" = 0 ] && echo server || echo client)"
D="-d mlx5_0 -i 1"
# --guest-arg vrnic.ev_pp_iters=N shortens the 20000-iteration pingpong (development runs only)
EV_PP_ITERS=$(vr_karg vrnic.ev_pp_iters)
P="$D -F -e"
vr_pair ev-send-lat        60 ib_send_lat  $P -s 2 -n ${EV_LAT_ITERS:-2000}
vr_pair ev-send-bw         60 ib_send_bw   $P -N -s 65536 -n ${EV_LONG_BW_ITERS:-5000}
vr_pair ev-send-bw-bidir  60 ib_send_bw   $P -N -b -s 65536 -n ${EV_BW_ITERS:-2000}
vr_pair ev-ud-send-lat     60 ib_send_lat  $P -c UD -s 2 -n ${EV_LAT_ITERS:-2000}
vr_pair ev-rc-pingpong     420 ibv_rc_pingpong $D -e -s 1 -n ${EV_PP_ITERS:-20000}
vr_pair ev-ud-pingpong     60 ibv_ud_pingpong $D -e -s 1024 -n ${EV_UD_ITERS:-2000}
echo "EVENTS-2VM-DONE g$G"
# loopback: each guest on its own device, concurrently (ports apart from the pairs above)
VR_LOOPBACK=1; VR_PORT0=$((18700 + 50 * G)); VR_PAIR_N=0
if [ "$G" = 0 ]; then
  vr_pair lo-send-lat      60 ib_send_lat  $P -s 2 -n ${EV_LAT_ITERS:-2000}
  vr_pair lo-send-bw       60 ib_send_bw   $P -N -s 65536 -n ${EV_BW_ITERS:-2000}
  vr_pair lo-ud-send-lat   60 ib_send_lat  $P -c UD -s 2 -n ${EV_LAT_ITERS:-2000}
else
  vr_pair lo-rc-pingpong   120 ibv_rc_pingpong $D -e -s 1 -n ${EV_LO_PP_ITERS:-10000}
  vr_pair lo-ud-pingpong   60 ibv_ud_pingpong $D -e -s 1024 -n ${EV_UD_ITERS:-2000}
fi
echo "EVENTS-DONE g$G"
vr_dmesg "after events"
