"""The scenario registry: the one list of guest scenarios (Scenario records, run/scenario.py). ci/test runs the
default set (`guest-tests/run --ci`), guest-tests/README.md's scenario table is generated from it
(`guest-tests/run --list-md`, checked by --self-test).

Scenarios whose guests and servers are set up alike share a boot (run/plan.py, `guest-tests/run --list-boots`);
`alone` says why one cannot, `last` why one must end its boot.
"""
from .bench import check_bench
from .bench_eth import check_bench_eth
from .bench_roce import check_bench_roce
from .bench_ulp import check_bench_ulp
from .checks_mlx5 import (DEVINFO_FW, DEVINFO_LID, DEVINFO_TOML, check_devinfo, check_mlx5_probe, check_reload,
                          interact_reload)
from .checks_eth import (check_eth_iperf, check_eth_mtu, check_eth_offloads, check_eth_ping, check_eth_probe,
                         check_eth_vlan, check_eth_host, check_eth_reload, check_eth_ethtool, interact_eth_offloads,
                         interact_eth_host, interact_eth_reload, interact_eth_ethtool)
from .checks_roce import (PINGPONG_FAULTS, PORT_FAULTS, check_roce_devinfo, check_roce_faults, interact_roce_faults, check_roce_pingpong, check_roce_perftest, check_roce_cm, check_roce_rxe, check_roce_pcap)
from .checks_qos import check_roce_dscp
from .checks_pfc import PFC_TOML, check_roce_pfc, interact_roce_pfc
from .checks_ibfabric import check_ib_opensm, check_ib_sa, check_ipoib, check_sm_failover, interact_sm_failover
from .checks_switch import check_eth_switch
from .checks_cc import check_roce_ecn, interact_cc
from .bench_cc import check_bench_cc
from .checks_ulp import check_ib_ulp, check_libfabric, check_nfs_rdma, check_nvmeof, check_ucx
from .checks_pairs import check_events, check_grh, check_net2, check_perftest, check_pingpong
from .checks_pyverbs import check_pyverbs
from .checks_pci import (check_barbench, check_lspci, check_msix, check_probe, check_reboot, check_rxe, interact_msix,
                         interact_reboot)
from .scenario import DOORBELL_MODES, Scenario, eth
from .checks_xrc import check_roce_xrc, check_xrc
from .checks_verbs import (check_bad_opcode, check_churn, check_device_memory, check_errors, check_hostile,
                           check_peer_loss, check_resize_cq, check_rereg, check_timestamp, check_ulp,
                           check_verbs_objects, interact_churn, interact_peer_loss, interact_rereg,
                           check_scale, interact_scale)

DOORBELL = DOORBELL_MODES  # one run with the servers in --doorbell trap, then one in poll

SCENARIOS = {
    "lspci": Scenario(default=True, device=True, timeout=90, check=check_lspci,
                  doc="lspci -nn -vvv shows 15b3:1017 class 0207, BARs 32M/16K/1M 64-bit pref, MSI-X Count=64"),
    "msix": Scenario(last="binds the function to vfio-pci (msixcount) and raises interrupts through the control socket", default=True, device=True, iommu=True, timeout=240, interact=interact_msix, check=check_msix,
                 doc="vfio-pci (vIOMMU, type1) + msixcount; server 'raise' hook, exact per-vector counts"),
    "probe": Scenario(default=True, device=True, timeout=120, check=check_probe,
                  doc="stock mlx5_core prints the init-segment firmware version"),
    "reboot": Scenario(alone="reboots the guest twice: /init would run its boot's scenarios again", default=True, device=True, reboot=True, timeout=240, interact=interact_reboot, check=check_reboot,
                   doc="guest reboots twice on one server process, device visible each boot"),
    "rxe-baseline": Scenario(default=True, device=False, timeout=300, check=check_rxe,
                         doc="Soft-RoCE on lo: perftest write/send/read lat, write/send bw"),
    "mlx5-probe": Scenario(default=True, device=True, timeout=180, check=check_mlx5_probe,
                       doc="mlx5_core+mlx5_ib bind, mlx5_0 ACTIVE, >=12 s of health polling, no mlx5/ib errors in dmesg"),
    "devinfo": Scenario(default=True, device=True, timeout=180, check=check_devinfo, config=DEVINFO_TOML, fw=DEVINFO_FW,
                    server_args=["--lid", str(DEVINFO_LID)],
                    doc="ibv_devinfo -v / rdma link / sysfs agree with the configured fw, GUIDs, LID"),
    "reload": Scenario(alone="ends with a guest reboot: /init would run its boot's scenarios again", default=True, device=True, reboot=True, timeout=600, interact=interact_reload, check=check_reload,
                   server_args=["--doorbell", "poll"],
                   doc="5x rmmod/modprobe mlx5_ib mlx5_core ending ACTIVE, then a guest reboot ending ACTIVE "
                       "(server in poll doorbell mode)"),
    "verbs-objects": Scenario(shares_driver=True, default=True, device=True, timeout=400, check=check_verbs_objects,
                          doc="verbs_objects.c: PD/MR(4K..64M, 2M hugepage)/CQ/SRQ/RC-UC-UD QP lifecycle, "
                              "transitions, query_qp, illegal ops"),
    "net2": Scenario(default=True, device=False, guests=2, timeout=90, check=check_net2,
                 doc="two guests, no device: the virtio-net link (10.0.0.1 <-> 10.0.0.2): ping both ways, one TCP exchange"),
    "loopback": Scenario(shares_driver=True, default=True, device=True, fabric=True, timeout=300, check=check_pingpong, doorbell=DOORBELL,
                     doc="one guest, one device: the rc-pingpong tool set, server and client over 127.0.0.1; "
                         "doorbell trap, then poll"),
    "rc-pingpong": Scenario(shares_driver=True, default=True, device=True, guests=2, fabric=True, timeout=300, check=check_pingpong, doorbell=DOORBELL,
                        doc="two guests, two vrnic on the UDP fabric: ibv_rc_pingpong (-e, 1 B..1 MiB, -c), "
                            "ibv_uc/ud/srq_pingpong; doorbell trap, then poll"),
    "perftest": Scenario(shares_driver=True, default=True, device=True, guests=2, fabric=True, timeout=300, check=check_perftest, doorbell=DOORBELL,
                     doc="two guests: ib_{write,send,read,atomic}_{lat,bw} with result tables; doorbell trap, then poll; "
                         "ib_write_bw -q 1024 (trap)"),
    "device-memory": Scenario(shares_driver=True, default=True, device=True, guests=2, fabric=True, timeout=300, check=check_device_memory,
                          doc="ibv_alloc_dm/memcpy_to/from_dm/reg_dm_mr on guest 0; guest 1 RDMA-writes, reads and "
                              "fetch-and-adds into it over the fabric; bytes checked (dm_test.c)"),
    "errors": Scenario(shares_driver=True, default=True, device=True, fabric=True, timeout=300, check=check_errors,
                   doc="err_test.c: remote access/local protection errors, RNR (rnr_retry 0 and 7), retry "
                       "exhaustion, in-order flush; the device keeps working, port ACTIVE"),
    "peer-loss": Scenario(shares_driver=True, last="SIGKILLs guest 1's server", default=True, device=True, guests=2, fabric=True, timeout=300, interact=interact_peer_loss,
                      check=check_peer_loss,
                      doc="ib_write_bw between two guests; guest 1's vrnic SIGKILLed mid-transfer: guest 0 gets "
                          "RETRY_EXC_ERR, its device keeps working (loopback pingpong), port ACTIVE"),
    "ulp": Scenario(shares_driver=True, default=True, device=True, timeout=180, check=check_ulp,
                doc="ib_umad, ib_cm (CM_SUP via PCAP), ib_ipoib (ib0 up with carrier: its broadcast join answered by vrnic's SA), "
                    "port counters via PerfMgt MADs"),
    "churn": Scenario(shares_driver=True, default=True, device=True, timeout=300, interact=interact_churn, check=check_churn,
                  doc="verbs objects created/destroyed in a loop; the server's RssAnon after equals after warm-up +-5%"),
    "scale": Scenario(default=True, device=True, timeout=600, interact=interact_scale, check=check_scale,
                  doc="scale.c with mlx5_core prof_sel=1 (the driver sizes the QP table to 2^12): RC QPs up to "
                      "max_qp (each 256 sharing a CQ, each 1024 an SRQ) and one past it, refused (LIM -> ENOMEM); "
                      "paired to RTS through the port, one SEND across every 64th pair; 8192 4 KiB MRs; 4096 "
                      "16-entry CQs; all destroyed: the server's object counts back to the baseline, its RssAnon "
                      "within 10%; creation rates per 1024 printed"),
    "scale-max": Scenario(device=True, timeout=1800, mem="2G", interact=interact_scale, check=check_scale,
                      alone="creates objects up to the device's maximum, in a guest with 2 GiB",
                      doc="scale.c (by hand) at the device's own maxima: RC QPs up to max_qp (2^16), 4 KiB MRs up "
                          "to 65536, CQs up to max_cq (2^16), with scale's checks "
                          "(--guest-arg SCALE=QPS,MRS,CQS,SAMPLE: 0 = the device's maximum, -1 = skip)"),
    "hostile": Scenario(shares_driver=True, last="garbage BAR0 accesses, malformed commands, then an FLR", default=True, device=True, timeout=300, check=check_hostile,
                    doc="hostile.c: garbage BAR0 accesses, stray doorbells, malformed command entries and "
                        "mailbox chains; then FLR + reload ends ACTIVE"),
    "resize-cq": Scenario(shares_driver=True, default=True, device=True, fabric=True, timeout=300, check=check_resize_cq, doorbell=DOORBELL,
                      doc="resize_cq.c: ibv_resize_cq up and down with CQEs of an RC loopback pair unpolled: all "
                          "kept, in order; traffic through the resized CQ across its wrap; too small refused; "
                          "doorbell trap, then poll"),
    "timestamp": Scenario(shares_driver=True, default=True, device=True, fabric=True, timeout=300, check=check_timestamp, doorbell=DOORBELL,
                      doc="timestamp.c: hca_core_clock, ibv_query_rt_values_ex monotonic at the advertised rate, "
                          "IBV_WC_EX_WITH_COMPLETION_TIMESTAMP on every completion, non-decreasing, between "
                          "clock reads; doorbell trap, then poll"),
    "grh": Scenario(shares_driver=True, default=True, device=True, guests=2, fabric=True, timeout=300, check=check_grh, doorbell=DOORBELL,
                guest_server_args=lambda gi: ["--port-guid", "0x0002c90300a0b0%02x" % (0xc1 + 0x10 * gi)],
                doc="address vectors with a GRH on the IB port (routed by LID): ib_send_bw/ib_write_lat/ib_read_bw "
                    "-x 0 and ib_send_lat -c UD -x 0 between two guests and in loopback on guest 0, "
                    "ibv_rc/ud_pingpong -g 0 between the guests; tx_no_route and rx_dgid_mismatch 0; doorbell trap, then poll"),
    # ---- issue 23: IB fabric services (run/checks_ibfabric.py)
    "ib-sa": Scenario(shares_driver=True, default=True, device=True, guests=3, fabric=True, timeout=300, check=check_ib_sa,
                  doc="infiniband-diags between three guests on the UDP fabric: ibstat shows distinct node/port/"
                      "system image GUIDs and SM lid 1 on all, ibstatus sm lid 0x1; from g0, smpquery -L nodeinfo/"
                      "nodedesc/portinfo 2 (SMPs on QP0 across the fabric) returns g1's GUIDs and LID, perfquery "
                      "2 1 (QP1) g1's counters, which move by >= 500 packets across 500 ibv_ud_pingpong round "
                      "trips; on every guest saquery (vrnic's SA on LID 1) lists the three node GUIDs, saquery -p "
                      "9 PathRecords, sminfo the SM at lid 1 (g0's port GUID, SMINFO_MASTER); ibnetdiscover from "
                      "g0 and g2 (directed routes through the modeled switch) lists the three CAs and one 3-port "
                      "switch; ibroute 4 shows the switch's LFT (lid k -> port k, its own LID -> port 0)"),
    "ipoib": Scenario(shares_driver=True, last="unloading ib_ipoib after its connected-mode traffic can race its multicast teardown (a WARNING in ipoib_transport_dev_cleanup, once in three CI runs): the boot powers off after it", default=True, device=True, guests=3, fabric=True, timeout=600, check=check_ipoib,
                  doc="IPoIB between three guests on the UDP fabric: ib0 joins the broadcast group through vrnic's SA "
                      "and gets carrier; datagram mode (ARP over UD multicast to MLID 0xC000, unicast UD with SA "
                      "PathRecords): each guest pings the other two 1000 times at 10 ms with 0% loss, iperf3 TCP "
                      "-t 3 g1->g0 and g0->g1; connected mode (IPoIB-CM over ib_cm, MTU 65520): the same; in the "
                      "same boot the ib-cm checks (rdma_cm over the IPoIB addresses, g0/g1): rping -v -C 10000, "
                      "ucmatose, udaddy, mckey (SA join + ATTACH), ib_write_lat -R, ib_send_bw -R; vrnic multicast "
                      "counters (stats)"),
    "ib-sm-failover": Scenario(shares_driver=True, last="kills guest 0 and its server (the master SM)", default=True, device=True, guests=3, fabric=True, timeout=300, interact=interact_sm_failover,
                           check=check_sm_failover,
                           doc="three guests (LIDs 1-3), every vrnic an SM (LID 1 master, 2 and 3 standbys polling it "
                               "with SMInfo); ib_write_bw -D 25 g1->g2; guest 0 and its vrnic killed mid-transfer: "
                               "LID 2's server takes over, sm_lid/ibstat on g1 and g2 show SM lid 2 within 10 s, "
                               "saquery from both answered by the new SA (2 NodeRecords: the live ports), the "
                               "transfer ends without an error"),
    "ib-opensm": Scenario(default=True, device=True, guests=3, fabric=True, timeout=900, check=check_ib_opensm,
                      server_args=("--sm", "off"),
                      doc="the real SM in place of vrnic's: three guests, servers with --sm off (ports INIT without a "
                          "LID, the modeled switch unconfigured); OpenSM on guest 0 (guid2lid = the fabric's LIDs) "
                          "sweeps through the modeled switch, assigns the LIDs, programs the switch and brings every "
                          "port ACTIVE; then ib-sa's and ipoib's checks against it (ibnetdiscover 3 CAs + 1 switch, "
                          "ibroute 4 the LFT OpenSM set, saquery/sminfo answered by OpenSM from every guest, IPoIB "
                          "pings (200 a peer), iperf3, rdma_cm (rping -C 1000)); no server runs an SM (stats subnet.sm/sa null)"),
    "bad-opcode": Scenario(shares_driver=True, default=True, device=True, fabric=True, timeout=240, check=check_bad_opcode, doorbell=DOORBELL,
                       doc="bad_opcode.c: hand-built WQEs (unknown/unadvertised opcodes, ds 0, opmod, fence mode 7; "
                           "RC and UD) through mlx5dv and the UAR doorbell: LOC_QP_OP_ERR + CQ event, the next WQE "
                           "flushed, QP in ERR, recovery through RESET; a NOP succeeds; doorbell trap, then poll"),
    "events": Scenario(shares_driver=True, default=True, device=True, guests=2, fabric=True, timeout=600, check=check_events,
                   server_args=["--doorbell", "poll"],
                   doc="two guests: completion events: ib_send_lat (RC, UD) and ib_send_bw (-b too) -e, ibv_rc_pingpong -e "
                       "-n 20000, ibv_ud_pingpong -e; then loopback pairs on each guest's device; doorbell poll (the "
                       "trap mode's events are rc-pingpong's -e runs and every other scenario's)"),
    "rereg": Scenario(shares_driver=True, default=True, device=True, fabric=True, timeout=600, interact=interact_rereg, check=check_rereg,
                  doc="rereg.c: ibv_rereg_mr with every TRANSLATION/PD/ACCESS combination (UMR), data checked after "
                      "each, 1000 reg/rereg/dereg cycles; the server's mkey count returns to its baseline"),
    # ---- the Ethernet port (issue 19): eth = the segment (vrnic_harness/ethtopo.py): nics per guest, link udp|bridge,
    # host. `guest-tests/run --eth-nic virtio eth-...` runs them with
    # virtio-net NICs in place of the vrnic ports (validates the harness and the scripts).
    "eth-probe": Scenario(default=True, device=True, timeout=120, eth=eth(nics=["vrnic"], link="udp"), check=check_eth_probe,
                      doc="eth mode: mlx5_core binds, its netdev appears, ethtool -i says mlx5_core, ip link set up "
                          "brings carrier up, 12 s of health polling, ethtool -l shows the channels, no mlx5 errors"),
    "eth-ping": Scenario(default=True, device=True, guests=3, timeout=240, eth=eth(nics=["vrnic", "vrnic", "virtio"], link="bridge"),
                     check=check_eth_ping,
                     doc="3 guests on a bridge (vrnic, vrnic, virtio-net): each pings each, IPv4 and IPv6, 1000 "
                         "flood pings with 0% loss; ARP/ND entries carry the peers' MACs; broadcast, 224.0.0.1 and "
                         "ff02::1 answered by every peer"),
    "eth-mtu": Scenario(default=True, device=True, guests=2, timeout=180, eth=eth(nics=["vrnic", "vrnic"], link="udp"),
                    check=check_eth_mtu,
                    doc="two vrnic guests over udp: at MTU 1500 ping -M do -s 8972 is refused, 1472 passes; MTU 9000 "
                        "on both ends: -s 8972 (IPv4) and -s 8952 (IPv6) pass with 0% loss"),
    "eth-vlan": Scenario(default=True, device=True, guests=2, timeout=180, eth=eth(nics=["vrnic", "vrnic"], link="udp"),
                     check=check_eth_vlan,
                     doc="two vrnic guests over udp: VLAN 100 subinterfaces ping (IPv4+IPv6, 0% loss); VLAN 200 -> "
                         "VLAN 201 pings all lost, the other VLAN's subinterface receives 0 packets"),
    "eth-iperf": Scenario(default=True, device=True, guests=3, timeout=300, eth=eth(nics=["vrnic", "vrnic", "virtio"], link="bridge"),
                      check=check_eth_iperf,
                      doc="bridge: vrnic<-vrnic and vrnic<-virtio-net iperf3 TCP 1 and 4 streams both directions, "
                          "UDP: all complete, no retransmit storm, < 10% UDP loss; g0's ethtool -S: > 1 RX queue "
                          "moved with 4 then 16 streams"),
    "eth-offloads": Scenario(default=True, device=True, guests=2, timeout=300, eth=eth(nics=["vrnic", "vrnic"], link="udp"),
                         interact=interact_eth_offloads, check=check_eth_offloads,
                         doc="two vrnic guests over udp: every ethtool -K tso/tx/rx combination, a 2 MiB file both "
                             "ways over TCP with equal sha256; frames injected on the link with a bad UDP or IPv4 "
                             "checksum are counted and not delivered, a good one is"),
    "eth-reload": Scenario(alone="ends with a guest reboot: /init would run its boot's scenarios again", default=True, device=True, guests=2, reboot=True, timeout=420, eth=eth(nics=["vrnic", "vrnic"], link="udp"),
                       interact=interact_eth_reload, check=check_eth_reload,
                       doc="two vrnic guests over udp: g0 3x rmmod mlx5_ib mlx5_core/modprobe and 10x ip link set "
                           "down/up, pings after each; then a reboot on the same server that pings again"),
    "eth-host": Scenario(default=True, device=True, timeout=180, eth=eth(nics=["vrnic"], link="bridge", host=True),
                     interact=interact_eth_host, check=check_eth_host,
                     doc="tap backend: the port's TAP on a bridge in a netns whose br0 has 10.1.0.254/fd00:1::fe; "
                         "guest pings host and host (netns) pings guest, IPv4+IPv6, 0% loss; host -> guest TCP"),
    "eth-ethtool": Scenario(default=True, device=True, guests=2, timeout=360, eth=eth(nics=["vrnic", "vrnic"], link="udp"),
                        interact=interact_eth_ethtool, check=check_eth_ethtool,
                        doc="g0: ethtool -G/-L with traffic before and after, -N drop and steer-to-queue-1 rules "
                            "that take effect, -t, -S moving, -K gro, -A pause; control-socket link flap seen as "
                            "carrier events; foreign-MAC frames filtered unless promiscuous"),
    # ---- RoCE on the Ethernet port (issue 20): roce_up (scenarios/roce-lib.sh) finds the RDMA device over each
    # guest's port: mlx5_ib's on a vrnic port, rxe0 on a virtio-net NIC (`--eth-nic virtio` runs every scenario
    # rxe <-> rxe: the scripts and checks validated without vrnic); all pass on vrnic ports (validated against the
    # device branch's server before the merge) and rxe <-> rxe
    "roce-devinfo": Scenario(default=True, device=True, timeout=180, eth=eth(nics=["vrnic"], link="udp"),
                         check=check_roce_devinfo,
                         doc="eth mode, RoCE: ibv_devinfo -v link_layer Ethernet, PORT_ACTIVE; the sysfs GID table has "
                             "RoCE v2 entries for the IPv4 and IPv6 addresses on the netdev, an added IPv4/IPv6 "
                             "address appears and goes with ip addr del; port counters present; debugfs cc_params (rp_ai_rate "
                             "written and read back; np_cnp_dscp 48, np_cnp_prio 6, rp_gd 11) and the four congestion "
                             "counters at 0 in hw_counters and rdma statistic; no mlx5 errors"),
    "roce-pingpong": Scenario(default=True, device=True, guests=2, timeout=600, eth=eth(nics=["vrnic", "vrnic"], link="udp"),
                          guest_server_args=lambda gi: ["--faults", PINGPONG_FAULTS],
                          check=check_roce_pingpong,
                          doc="two guests over udp, RoCE v2 with -g: ibv_rc/uc/ud/srq_pingpong over the IPv4 GID and "
                              "the IPv6 GID, rc 1 B..1 MiB, -c, -e, ud at the active MTU; byte counts asserted; the "
                              "ports mark every 64th ECT frame CE (--faults rx:ce_every=64): CNPs flow both ways "
                              "(stats -> congestion: np_ecn_marked_roce_packets, np_cnp_sent, rp_cnp_handled move)"),
    "roce-perftest": Scenario(shares_driver=True, default=True, device=True, guests=2, timeout=600, eth=eth(nics=["vrnic", "vrnic"], link="udp"),
                          check=check_roce_perftest,
                          doc="two guests over udp: ib_{write,send,read,atomic}_{lat,bw} -x <IPv4 GID>, ib_send_bw over "
                              "the IPv6 GID, write/send/read lat+bw with -R (rdma_cm), ib_write_bw -q 1024; result rows, "
                              "bandwidth > 0"),
    "roce-cm": Scenario(shares_driver=True, default=True, device=True, guests=2, timeout=900, eth=eth(nics=["vrnic", "vrnic"], link="udp"),
                    check=check_roce_cm,
                    doc="two guests over udp, rdma_cm (CM MADs on QP1 over RoCE): rping -C 10000 -S 65535 -V, rping -v "
                        "(100 ping data lines), ucmatose -c 10, udaddy, mckey (multicast), rdma_server/client, "
                        "rdma_xserver/xclient; rping to a port nobody listens on fails cleanly within 30 s"),
    "roce-rxe": Scenario(default=True, device=True, guests=2, timeout=900, eth=eth(nics=["vrnic", "virtio"], link="bridge"),
                     check=check_roce_rxe,
                     doc="bridge: a vrnic guest and a virtio-net guest running rxe, both roles: ibv_rc/ud_pingpong -g, "
                         "ib_write_bw, ib_read_lat, ib_send_bw, ib_atomic_lat -x, rping -v -C 1000, ucmatose, udaddy, "
                         "rdma_server/client; counts checked, interop matrix printed"),
    "roce-pcap": Scenario(shares_driver=True, default=True, device=True, guests=2, timeout=400,
                      eth=eth(nics=["vrnic", "vrnic"], link="udp", pcap=True), check=check_roce_pcap,
                      doc="two guests over udp, guest 0's port captured: ib_write_bw -x -s 65536 -n 100 and "
                          "ib_send_lat; on the host tshark decodes every UDP 4791 frame as infiniband (none "
                          "malformed), our ICRC verifier passes every frame, RDMA WRITE First/Middle/Last counts = "
                          "perftest's messages x size / MTU"),
    "roce-dscp": Scenario(default=True, device=True, guests=2, timeout=300,
                      eth=eth(nics=["vrnic", "vrnic"], link="udp", pcap=True), check=check_roce_dscp,
                      doc="two guests over udp, guest 0's port captured: dcb app dscp-prio 26:3, ets show/set prio-tc, "
                          "pfc 3:on read back (mlx5e dcbnl -> QPTS/QPDPM/QTCT/QETCR/PFCC); ib_write_bw --tclass=104 "
                          "and ib_write_bw -R -T 104 (rdma_cm ToS) frames carry DSCP 26, plain rping DSCP 0; on a "
                          "VLAN netdev (egress-qos-map 0:3 2:5) ib_write_bw -R -T 104 frames PCP 5, plain rping "
                          "and ping PCP 3"),
    "roce-pfc": Scenario(default=True, device=True, guests=2, timeout=300,
                     eth=eth(nics=["vrnic", "vrnic"], link="bridge"), interact=interact_roce_pfc,
                     check=check_roce_pfc, config=PFC_TOML,
                     doc="bridge: dcb pfc set prio-pfc 3:on on g0 (PFCC), VLANs with PCP 3 and PCP 0, pings over both; "
                         "the host writes 802.1Qbb PFC frames for priority 3 (quanta 0xffff, timed at 100 Mb/s) into g0's TAP for 3 s: "
                         "ethtool -S tx_prio3_packets stands (while the pause holds) as tx_prio0_packets advances, rx_prio3_pause counts "
                         "the frames, priority 3 resumes after; a PFC frame for priority 5 (off) is ignored; then PFC transmit: g0's RX "
                         "slowed (napi_defer_hard_irqs, gro_flush_timeout 2 s), the host sends 2500 priority-3 frames "
                         "honouring the port's PFC frames: all arrive, the host sees XOFF and XON, tx_prio3_pause and "
                         "tx_prio3_pause_duration move, no rx_out_of_buffer, no discard"),
    "roce-faults": Scenario(default=True, device=True, guests=2, timeout=900, eth=eth(nics=["vrnic", "vrnic"], link="bridge"),
                        guest_server_args=lambda gi: ["--faults", PORT_FAULTS % (7 + gi)],
                        interact=interact_roce_faults, check=check_roce_faults,
                        doc="bridge, the link impaired (tc netem loss 3% reorder 5% duplicate 1% delay 1ms on the TAPs "
                            "where the host has sch_netem; the ports' --faults drop/reorder/duplicate): ib_write_bw, "
                            "ib_read_bw, rping -C 200 -V complete; retransmission counters and the ports' fault counters move"),
    # ---- issue 21: the switch guest (a real ECN-marking qdisc, ethswitch.py)
    "eth-switch": Scenario(default=True, device=True, guests=2, timeout=300,
                       eth=eth(nics=["vrnic", "vrnic"], link="switch", pcap=True, switch=dict(egress=0)),
                       check=check_eth_switch,
                       doc="two guests cabled to the switch guest (Linux bridge; egress to g0 htb 30 Mbit/s + RED ecn): "
                           "iperf3 -P 2 g1 -> g0 with tcp_ecn=1: the switch's RED marked > 0, g0's port capture holds "
                           "CE frames, the sender's TcpExt TCPDeliveredCE > 0"),
    "roce-ecn": Scenario(default=True, device=True, guests=3, timeout=420,
                     eth=eth(nics=["vrnic", "vrnic", "vrnic"], link="switch", switch=dict(egress=0)),
                     interact=interact_cc, check=check_roce_ecn,
                     doc="three guests cabled to the switch guest (egress to g0: htb + RED ecn): g1 and g2 "
                         "ib_write_bw -D 20 into g0 at once, `cc on` then `cc off` on every server: both flows complete; "
                         "with the CC data path and counters (else SKIP lines, checks_cc.STRICT): np_cnp_sent/"
                         "rp_cnp_handled move with CC on and stay still with it off, shares 35-65%, no loss-caused "
                         "retransmission (out_of_sequence, packet_seq_err, local_ack_timeout_err)"),
    "barbench": Scenario(check_together=True, device=True, timeout=240, doorbell=DOORBELL,
                     check=check_barbench, doc="BAR0 access cost, server --doorbell trap vs poll"),
    "bench-loopback": Scenario(alone="benchmark figures: nothing else in the boot", device=True, fabric=True, timeout=900, check=check_bench, doorbell=DOORBELL,
                           script="bench", doc="perftest set: vrnic loopback vs rxe on lo in one guest (BENCH lines)"),
    "bench-2vm": Scenario(alone="benchmark figures: nothing else in the boot", device=True, guests=2, fabric=True, timeout=900, check=check_bench, doorbell=DOORBELL,
                      script="bench", doc="perftest set: vrnic over its fabric vs rxe over the guests' virtio-net "
                                          "link (BENCH lines)"),
    "bench-eth": Scenario(alone="benchmark figures: nothing else in the boot", device=True, guests=2, timeout=400, eth=eth(nics=["vrnic", "vrnic"], link="udp"),
                      eth_runs=["vrnic", "virtio"], check=check_bench_eth,
                      doc="two vrnic guests over udp, then two virtio-net guests on the same link: iperf3 TCP 1 and "
                          "4 streams, ping RTT and tcp_rr 64 B medians of 3 (BENCH lines; vrnic=NA if its run failed)"),
    "bench-roce": Scenario(alone="benchmark figures: nothing else in the boot", device=True, guests=2, timeout=1200, eth=eth(nics=["vrnic", "vrnic"], link="udp"),
                       eth_runs=["vrnic", "virtio"], check=check_bench_roce,
                       doc="perftest set over RoCE v2 (-x): two vrnic guests over udp, then two rxe guests (virtio-net) "
                           "on the same link; medians of 3 (BENCH lines; vrnic=NA if its run failed)"),
    "bench-cc": Scenario(alone="benchmark figures: nothing else in the boot", device=True, guests=3, timeout=2400,
                     eth=eth(nics=["vrnic", "vrnic", "vrnic"], link="switch", switch=dict(egress=0, burst="64k", red_min=4000, red_max=12000)),
                     script="bench-cc", interact=interact_cc, check=check_bench_cc,
                     doc="roce-ecn's topology, CC on (ConnectX defaults), on with tuned cc_params, then off: two "
                         "ib_write_bw -D 15 flows into g0 through the marking switch, total goodput against the "
                         "bottleneck rate and shares, ib_write_lat p99 of a probe flow idle and under the load, the "
                         "switch's drain rate mid-load; medians of 3 (BENCH lines); ~7 min"),
    # ---- issue 22: xrc
    "xrc": Scenario(shares_driver=True, default=True, device=True, guests=2, fabric=True, timeout=300, check=check_xrc, doorbell=DOORBELL,
                doc="two guests on the UDP fabric: ibv_xsrq_pingpong (XRC INI -> XRC TGT -> XRC SRQ, both ways) 64 B x "
                    "500, -e 16 KiB x 100 (multi-packet), one server for 2 client processes; doorbell trap, then poll"),
    "roce-xrc": Scenario(shares_driver=True, default=True, device=True, guests=2, timeout=400, eth=eth(nics=["vrnic", "vrnic"], link="udp"),
                     check=check_roce_xrc, doorbell=DOORBELL,
                     doc="two guests over udp, RoCE v2 with -g: ibv_xsrq_pingpong 64 B x 200 over the IPv4 GID, -e "
                         "16 KiB x 100 over the IPv6 GID; doorbell trap, then poll"),
    # ---- issue 22: pyverbs
    # rdma-core's own test suite (scenarios/pyverbs.sh, checks_pyverbs.py, docs/conformance.md): the vrnic port and
    # rxe0 (Soft-RoCE on lo) in the same boot; the CI subset in pyverbs/pyverbs-roce, every test in *-full
    "pyverbs": Scenario(ulp=True, shares_driver=True, default=True, device=True, fabric=True, timeout=900, check=check_pyverbs, script="pyverbs",
                    doc="rdma-core 56's pyverbs tests (CI subset, docs/conformance.md) on mlx5_0's IB port and on rxe0 "
                        "(lo) in the same boot: every test rxe passes passes on vrnic, no vrnic FAIL/ERROR"),
    "pyverbs-roce": Scenario(ulp=True, shares_driver=True, default=True, device=True, timeout=900, eth=eth(nics=["vrnic"], link="udp"),
                         check=check_pyverbs, script="pyverbs",
                         doc="the pyverbs CI subset on the RoCE port (its IPv4 RoCE v2 GID) and on rxe0 (lo), same rule"),
    "pyverbs-full": Scenario(ulp=True, shares_driver=True, default=False, device=True, fabric=True, timeout=2400, check=check_pyverbs, script="pyverbs",
                         doc="every test of rdma-core 56's suite on mlx5_0's IB port and on rxe0: the figures of "
                             "docs/conformance.md"),
    "pyverbs-roce-full": Scenario(ulp=True, shares_driver=True, default=False, device=True, timeout=2400, eth=eth(nics=["vrnic"], link="udp"),
                              check=check_pyverbs, script="pyverbs",
                              doc="every test of the suite on the RoCE port and on rxe0"),
    # ---- issue 22: kernel ULPs, UCX, libfabric (scenarios/ulp-lib.sh; run/checks_ulp.py): RoCE v2 between two
    # guests (rdma_cm; the same ULPs on the IB personality: ib-ulp); each validated rxe <-> rxe first
    # (`guest-tests/run --eth-nic virtio <name>`)
    "nvmeof": Scenario(ulp=True, shares_driver=True, last="restarts guest 0's RDMA device (unbind, FLR, bind) under load", default=True, device=True, guests=2, timeout=600, eth=eth(nics=["vrnic", "vrnic"], link="udp"),
                   check=check_nvmeof,
                   doc="nvmet target (configfs, memory-backed null_blk, RDMA port :4420) on g0, nvme connect -t rdma "
                       "on g1: fio --verify=crc32c 4 KiB randwrite/randread QD16, 128 KiB seq write/read; "
                       "disconnect; then g0's RDMA device restarted (unbind, FLR, bind) under a fio load: the "
                       "host reconnects, fio ends, data verified"),
    "ib-ulp": Scenario(ulp=True, shares_driver=True, default=True, device=True, guests=2, fabric=True, timeout=600, check=check_ib_ulp,
                   doc="nvmeof's and nfs-rdma's ULP checks on the IB personality (LIDs 1, 2): rdma_cm over IPoIB "
                       "addresses (ARP on ib0, PathRecord from vrnic's SA, CM over QP1): nvme connect -t rdma + fio "
                       "--verify=crc32c 4 KiB rand/128 KiB seq; NFSv4.2 over RDMA: files 1 KiB..16 MiB sha256-equal "
                       "on both sides, fio on the mount"),
    "nfs-rdma": Scenario(ulp=True, shares_driver=True, default=True, device=True, guests=2, timeout=480, eth=eth(nics=["vrnic", "vrnic"], link="udp"),
                     check=check_nfs_rdma,
                     doc="kernel NFS server (NFSv4, RDMA listener :20049) exporting a tmpfs on g0, mount -o "
                         "rdma,port=20049,vers=4.2 on g1: files 1 KiB..16 MiB written and read back, sha256 equal "
                         "on both sides; fio --verify=crc32c on the mount; 4 KiB QD1 read round trip printed"),
    # ucx: UCX's defaults. UCX 1.18.1's strong fence asks rc_mlx5 for flush(remote), which needs a flush key that
    # only a DEVX md has (vrnic offers no DEVX, as a CX-5 opened without it): UCX logs 2 ERROR lines per fence in
    # ucp_put_bw, accepted there only (check_ucx, docs/conformance.md). Every test fails on rxe under TCG (UD timeout)
    "ucx": Scenario(ulp=True, shares_driver=True, default=True, device=True, guests=2, timeout=420, eth=eth(nics=["vrnic", "vrnic"], link="udp"),
                check=check_ucx,
                doc="ucx_info -d lists verbs transports on the RDMA device (rc_mlx5/ud_mlx5, rc_verbs/ud_verbs; "
                    "dc_mlx5 needs DEVX); ucx_perftest tag_lat, tag_bw, ucp_put_lat, ucp_put_bw between the guests "
                    "with UCX's defaults: Final lines parsed; any UCX ERROR/FATAL fails, but for the strong fence's "
                    "flush(remote) in ucp_put_bw on an md without DEVX (vrnic.ucx_env=K=V[,K=V] adds UCX environment)"),
    "libfabric": Scenario(ulp=True, shares_driver=True, default=True, device=True, guests=2, timeout=420, eth=eth(nics=["vrnic", "vrnic"], link="udp"),
                      check=check_libfabric,
                      doc="fi_info -p verbs; fi_pingpong -p verbs -e msg (rdma_cm) and -p 'verbs;ofi_rxm' -e rdm "
                          "between the guests, 64 B and 64 KiB: result rows parsed"),
    "bench-ulp": Scenario(ulp=True, alone="benchmark figures: nothing else in the boot", device=True, guests=2, timeout=1200, eth=eth(nics=["vrnic", "vrnic"], link="udp"),
                      eth_runs=["vrnic", "virtio"], check=check_bench_ulp,
                      doc="NVMe-oF fio 4 KiB randread QD16 IOPS and 128 KiB seq read MB/s, NFS/RDMA 128 KiB read "
                          "MB/s, ucx_perftest tag latency: two vrnic guests, then two rxe guests (virtio-net) on the "
                          "same link; medians of 3 (BENCH lines; vrnic=NA if its run failed)"),
}
for _name, _sc in SCENARIOS.items():
    _sc.name = _name
ALIASES = {"bench": ["bench-loopback", "bench-2vm"]}
DEFAULT = [n for n, sc in SCENARIOS.items() if sc.default]


def expand(names):
    """Scenario names from the command line: "default" (also when none is given), "all", an alias, or a name."""
    out = []
    for n in names or ["default"]:
        out += DEFAULT if n == "default" else list(SCENARIOS) if n == "all" else ALIASES.get(n, [n])
    return out


def topology_words(sc):
    """One cell of the README table: guests, devices, fabric."""
    n = sc.guests
    w = "%d guest%s" % (n, "s" if n > 1 else "")
    if sc.eth:  # an Ethernet segment: its link and each guest's NIC
        w += ", eth %s: %s" % (sc.eth.link, ", ".join(sc.eth.nics))
        return w + (" + the switch guest (egress to g%d)" % sc.eth.switch_cfg().get("egress", 0)
                    if sc.eth.link == "switch" else "")
    if sc.device:
        w += ", %s" % ("a vrnic each" if n > 1 else "1 vrnic")
        if sc.fabric:
            w += " on the UDP fabric" if n > 1 else " (fabric port, loopback)"
    else:
        w += ", no device"
    if len(sc.doorbell) > 1:
        w += "; " + " then ".join("--doorbell " + m for m in sc.doorbell)
    return w


MD_BEGIN = "<!-- scenario table: generated by `guest-tests/run --list-md`, checked by `guest-tests/run --self-test` -->"
MD_END = "<!-- end of scenario table -->"


def markdown_table():
    """guest-tests/README.md's scenario table, between MD_BEGIN and MD_END."""
    rows = [MD_BEGIN, "", "| scenario | in CI (`--ci`) | topology | what it checks |", "|---|---|---|---|"]
    for n, sc in SCENARIOS.items():
        doc = sc.doc.replace("|", "\\|")
        rows.append("| `%s` | %s | %s | %s |" % (n, "yes" if sc.default else "no", topology_words(sc), doc))
    return "\n".join(rows + ["", MD_END]) + "\n"
