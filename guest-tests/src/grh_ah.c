/*
 * grh_ah: UD with a GRH on one device (two UD QPs, stock libibverbs), the path ibv_create_ah_from_wc takes:
 *
 *   A sends to B through an AH with is_global (DGID = the port's GID 0)  -> B's wc has IBV_WC_GRH, and the
 *     40-byte GRH area holds IPVer 6, NxtHdr 0x1B, SGID = DGID = GID 0, the flow label and hop limit sent
 *   B answers through ibv_create_ah_from_wc(its wc, that GRH)            -> A receives it, with IBV_WC_GRH
 *   A sends through an AH without GRH                                    -> B's wc has no IBV_WC_GRH
 *
 * One line per check; the last line is "GRH-AH PASS <n> checks" or "GRH-AH FAIL ...".
 */
#include <string.h>
#include <unistd.h>

#define VT_NAME "GRH-AH"
#include "vrverbs.h"

#define QKEY 0x11111111u
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static char buf[1 << 16] __attribute__((aligned(4096)));

struct end { struct ibv_cq *cq; struct ibv_qp *qp; };

static struct end mk(void)
{
	struct end e;
	e.cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr a = { .send_cq = e.cq, .recv_cq = e.cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 } };
	e.qp = ibv_create_qp(pd, &a);
	if (!e.cq || !e.qp) DIE("create cq/qp");
	struct ibv_qp_attr m = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };
	if (ibv_modify_qp(e.qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) DIE("INIT");
	m.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(e.qp, &m, IBV_QP_STATE)) DIE("RTR");
	m.qp_state = IBV_QPS_RTS; m.sq_psn = 0;
	if (ibv_modify_qp(e.qp, &m, IBV_QP_STATE | IBV_QP_SQ_PSN)) DIE("RTS");
	return e;
}

static void post_recv(struct end *e, uint64_t wr_id, char *addr, uint32_t len)
{
	struct ibv_sge s = { .addr = (uintptr_t)addr, .length = len, .lkey = mr->lkey };
	struct ibv_recv_wr w = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1 }, *bad;
	if (ibv_post_recv(e->qp, &w, &bad)) DIE("post_recv");
}

static void post_send(struct end *e, struct ibv_ah *ah, uint32_t qpn, uint64_t wr_id, char *addr, uint32_t len)
{
	struct ibv_sge s = { .addr = (uintptr_t)addr, .length = len, .lkey = mr->lkey };
	struct ibv_send_wr w = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED }, *bad;
	w.wr.ud.ah = ah; w.wr.ud.remote_qpn = qpn; w.wr.ud.remote_qkey = QKEY;
	if (ibv_post_send(e->qp, &w, &bad)) DIE("post_send");
}

/* The completion with `wr_id` on e's CQ (others, e.g. send completions, are skipped), within 5 s. */
static int wait_wc(struct end *e, uint64_t wr_id, struct ibv_wc *wc)
{
	double t0 = now();
	while (now() - t0 < 5) {
		if (ibv_poll_cq(e->cq, 1, wc) == 1) {
			if (wc->wr_id == wr_id) return 1;
			continue;
		}
		usleep(100);
	}
	return 0;
}

int main(void)
{
	ctx = vt_open();
	struct ibv_port_attr pa;
	union ibv_gid gid0;
	if (ibv_query_port(ctx, 1, &pa) || ibv_query_gid(ctx, 1, 0, &gid0)) DIE("query port/gid");
	pd = ibv_alloc_pd(ctx);
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!mr) DIE("pd/mr");
	struct end a = mk(), b = mk();
	struct ibv_ah_attr g = { .dlid = pa.lid, .port_num = 1, .is_global = 1,
		.grh = { .dgid = gid0, .sgid_index = 0, .hop_limit = 64, .traffic_class = 0, .flow_label = 0x1234 } };
	struct ibv_ah *ah_g = ibv_create_ah(pd, &g);
	struct ibv_ah_attr plain = { .dlid = pa.lid, .port_num = 1 };
	struct ibv_ah *ah_p = ibv_create_ah(pd, &plain);
	if (!ah_g || !ah_p) DIE("create_ah");
	for (int i = 0; i < 64; i++) buf[i] = (char)(i * 7 + 1);
	char *rb = buf + 4096, *ra = buf + 8192;
	memset(rb, 0xee, 40);

	/* A -> B with a GRH. */
	post_recv(&b, 1, rb, 40 + 256);
	post_send(&a, ah_g, b.qp->qp_num, 10, buf, 64);
	struct ibv_wc wc;
	int got = wait_wc(&b, 1, &wc);
	CHECK(got && wc.status == IBV_WC_SUCCESS && wc.byte_len == 40 + 64, "global AH: received, byte_len %u (40 + 64)",
	      got ? wc.byte_len : 0);
	CHECK(got && (wc.wc_flags & IBV_WC_GRH), "global AH: wc has IBV_WC_GRH");
	CHECK(got && wc.src_qp == a.qp->qp_num && wc.slid == pa.lid, "global AH: src_qp %u slid %u", got ? wc.src_qp : 0,
	      got ? wc.slid : 0);
	CHECK(!memcmp(rb + 40, buf, 64), "global AH: payload after the 40-byte GRH area");
	uint32_t w0 = ((uint8_t)rb[0] << 24) | ((uint8_t)rb[1] << 16) | ((uint8_t)rb[2] << 8) | (uint8_t)rb[3];
	CHECK(w0 >> 28 == 6 && (w0 & 0xfffff) == 0x1234 && (uint8_t)rb[6] == 0x1b && (uint8_t)rb[7] == 64,
	      "GRH: IPVer %u flow label 0x%x NxtHdr 0x%02x HopLmt %u", w0 >> 28, w0 & 0xfffff, (uint8_t)rb[6],
	      (uint8_t)rb[7]);
	CHECK(!memcmp(rb + 8, gid0.raw, 16) && !memcmp(rb + 24, gid0.raw, 16), "GRH: SGID and DGID = GID 0");

	/* B answers through an AH made from the completion and the GRH. */
	struct ibv_ah *back = got ? ibv_create_ah_from_wc(pd, &wc, (struct ibv_grh *)rb, 1) : NULL;
	CHECK(back != NULL, "ibv_create_ah_from_wc");
	if (back) {
		post_recv(&a, 2, ra, 40 + 256);
		post_send(&b, back, wc.src_qp, 11, buf, 32);
		struct ibv_wc wa;
		int ga = wait_wc(&a, 2, &wa);
		CHECK(ga && wa.status == IBV_WC_SUCCESS && wa.byte_len == 40 + 32 && (wa.wc_flags & IBV_WC_GRH) &&
		      wa.src_qp == b.qp->qp_num, "answer through the AH from the wc: arrived with a GRH");
		ibv_destroy_ah(back);
	}

	/* A -> B without a GRH: no IBV_WC_GRH. */
	post_recv(&b, 3, rb, 40 + 256);
	post_send(&a, ah_p, b.qp->qp_num, 12, buf, 16);
	got = wait_wc(&b, 3, &wc);
	CHECK(got && wc.status == IBV_WC_SUCCESS && !(wc.wc_flags & IBV_WC_GRH), "AH without GRH: no IBV_WC_GRH");

	ibv_destroy_ah(ah_g);
	ibv_destroy_ah(ah_p);
	return vt_end();
}
