/*
 * vrverbs.h: the verbs set-up the guest test programs share (with vrtest.h's DIE): the first RDMA device opened,
 * port 1's LID, an RC QP brought to INIT, and RTR -> RTS towards a QP of the same port (loopback through the
 * device's own port) or a peer's.
 */
#ifndef VRVERBS_H
#define VRVERBS_H
#include <infiniband/verbs.h>
#include <stdint.h>
#include "vrtest.h"

/* The first device of ibv_get_device_list, opened (DIE "no device" / "open"). */
static inline struct ibv_context *vt_open(void)
{
	int n;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (!list || !n) DIE("no device");
	struct ibv_context *c = ibv_open_device(list[0]);
	if (!c) DIE("open");
	ibv_free_device_list(list);
	return c;
}

/* Port 1's LID (DIE "query_port"). */
static inline uint16_t vt_lid(struct ibv_context *c)
{
	struct ibv_port_attr pa;
	if (ibv_query_port(c, 1, &pa)) DIE("query_port");
	return pa.lid;
}

/* An RC QP (one SGE each way) in INIT on port 1 with these remote access rights (DIE "create_qp" / "INIT"). */
static inline struct ibv_qp *vt_rc_qp(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq, int send_wr,
				      int recv_wr, int access)
{
	struct ibv_qp_init_attr a = { .send_cq = scq, .recv_cq = rcq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = send_wr, .max_recv_wr = recv_wr, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp *q = ibv_create_qp(pd, &a);
	if (!q) DIE("create_qp");
	struct ibv_qp_attr m = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = access };
	if (ibv_modify_qp(q, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) DIE("INIT");
	return q;
}

/* The RC path attributes of RTR and RTS (path MTU 1024; PSNs 0 unless given). */
struct vt_path {
	uint8_t timeout, retry, rnr_retry, rd_atomic, min_rnr_timer;
	uint32_t rq_psn, sq_psn;
};

/* INIT -> RTR -> RTS towards QP remote_qpn behind LID dlid on port 1 (DIE "RTR" / "RTS"). */
static inline void vt_rc_rts(struct ibv_qp *q, uint32_t remote_qpn, uint16_t dlid, struct vt_path p)
{
	struct ibv_qp_attr m = { .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = remote_qpn,
		.rq_psn = p.rq_psn, .max_dest_rd_atomic = p.rd_atomic, .min_rnr_timer = p.min_rnr_timer,
		.ah_attr = { .dlid = dlid, .port_num = 1 } };
	if (ibv_modify_qp(q, &m, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) DIE("RTR");
	m.qp_state = IBV_QPS_RTS; m.timeout = p.timeout; m.retry_cnt = p.retry; m.rnr_retry = p.rnr_retry; m.sq_psn = p.sq_psn;
	m.max_rd_atomic = p.rd_atomic;
	if (ibv_modify_qp(q, &m, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			  IBV_QP_MAX_QP_RD_ATOMIC)) DIE("RTS");
}
#endif
