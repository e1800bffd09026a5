/*
 * bad_opcode: hand-built send WQEs the device does not execute, written
 * straight into the SQ buffer that mlx5dv_init_obj exposes, with the doorbell
 * record updated and the send doorbell rung through the UAR (bf.reg), as
 * libmlx5 would; stock libibverbs + libmlx5 on one device otherwise.
 *
 * Each case: a bad WQE at index 0 and a good RDMA WRITE (RC) or SEND (UD)
 * behind it, the send CQ armed first. Expected: a CQ event, the bad WQE's
 * completion IBV_WC_LOC_QP_OP_ERR (even when unsignaled), the good one
 * IBV_WC_WR_FLUSH_ERR, nothing more, ibv_query_qp says ERR; then the QP is
 * recovered (RESET -> INIT -> RTR -> RTS) and a SEND through ibv_post_send
 * succeeds. Cases on RC: opcodes 0x07, 0x14 (masked CS: not advertised),
 * 0x1b (LOCAL_INVAL), 0x1f, 0x25 (UMR on an RC QP), 0xff, a SEND with ds 0,
 * a SEND with opmod 1, a SEND with the reserved fence mode 7; on UD: RDMA
 * WRITE (0x08) and SEND_INVAL (0x01). A hand-built NOP on RC (signaled)
 * completes successfully, in order.
 *
 * One line per check; per case a "BADOP ..." summary; the last line is
 * "BAD-OPCODE PASS <n> checks" or "BAD-OPCODE FAIL ...".
 */
#include <endian.h>
#include <infiniband/mlx5dv.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#define VT_NAME "BAD-OPCODE"
#include "vrverbs.h"

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static uint16_t lid;
static char buf[1 << 16] __attribute__((aligned(4096)));
static struct ibv_mr *mr;

struct end {
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct mlx5dv_qp dv;
	uint16_t idx; /* next SQ index of hand-built WQEs */
	int ud;
};


static struct end mk(int ud)
{
	struct end e = { .ud = ud };
	e.ch = ibv_create_comp_channel(ctx);
	e.cq = e.ch ? ibv_create_cq(ctx, 64, NULL, e.ch, 0) : NULL;
	struct ibv_qp_init_attr a = { .send_cq = e.cq, .recv_cq = e.cq, .qp_type = ud ? IBV_QPT_UD : IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 } };
	e.qp = e.cq ? ibv_create_qp(pd, &a) : NULL;
	if (!e.qp) DIE("create channel/cq/qp");
	struct mlx5dv_obj o = { .qp = { .in = e.qp, .out = &e.dv } };
	if (mlx5dv_init_obj(&o, MLX5DV_OBJ_QP)) DIE("mlx5dv_init_obj");
	if (e.dv.sq.stride != 64 || e.dv.sq.wqe_cnt < 4 || !e.dv.bf.reg) DIE("SQ stride %u wqe_cnt %u", e.dv.sq.stride, e.dv.sq.wqe_cnt);
	return e;
}

static void modify(struct end *e, struct ibv_qp_attr *m, int mask, const char *what)
{
	if (ibv_modify_qp(e->qp, m, mask)) DIE("%s", what);
}

/* RESET -> INIT -> RTR -> RTS; RC to `remote` (PSNs from 0). */
static void to_rts(struct end *e, uint32_t remote)
{
	struct ibv_qp_attr m = { .qp_state = IBV_QPS_RESET };
	modify(e, &m, IBV_QP_STATE, "RESET");
	e->idx = 0;
	memset(&m, 0, sizeof(m));
	m.qp_state = IBV_QPS_INIT; m.port_num = 1;
	if (e->ud) {
		m.qkey = 0x1234;
		modify(e, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, "INIT");
		m.qp_state = IBV_QPS_RTR;
		modify(e, &m, IBV_QP_STATE, "RTR");
		m.qp_state = IBV_QPS_RTS; m.sq_psn = 0;
		modify(e, &m, IBV_QP_STATE | IBV_QP_SQ_PSN, "RTS");
		return;
	}
	m.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	modify(e, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, "INIT");
	memset(&m, 0, sizeof(m));
	m.qp_state = IBV_QPS_RTR; m.path_mtu = IBV_MTU_1024; m.dest_qp_num = remote; m.rq_psn = 0;
	m.max_dest_rd_atomic = 4; m.min_rnr_timer = 1; m.ah_attr.dlid = lid; m.ah_attr.port_num = 1;
	modify(e, &m, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
	       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER, "RTR");
	m.qp_state = IBV_QPS_RTS; m.timeout = 14; m.retry_cnt = 7; m.rnr_retry = 7; m.sq_psn = 0; m.max_rd_atomic = 4;
	modify(e, &m, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
	       IBV_QP_MAX_QP_RD_ATOMIC, "RTS");
}

/* struct mlx5_wqe_ctrl_seg, written by hand. */
static void ctrl(uint8_t *w, uint8_t opmod, uint16_t idx, uint8_t opcode, uint32_t qpn, uint8_t ds, uint8_t fm_ce_se)
{
	memset(w, 0, 16);
	*(uint32_t *)w = htobe32(((uint32_t)opmod << 24) | ((uint32_t)idx << 8) | opcode);
	*(uint32_t *)(w + 4) = htobe32((qpn << 8) | ds);
	w[11] = fm_ce_se;
}

static void data_seg(uint8_t *w, uint32_t len, uint32_t lkey, void *addr)
{
	*(uint32_t *)w = htobe32(len);
	*(uint32_t *)(w + 4) = htobe32(lkey);
	*(uint64_t *)(w + 8) = htobe64((uintptr_t)addr);
}

/* Copies a WQE of `nbb` WQEBBs into the SQ at the end's next index. */
static void put_wqe(struct end *e, const uint8_t *w, int nbb)
{
	for (int i = 0; i < nbb; i++) {
		uint32_t slot = (e->idx + i) & (e->dv.sq.wqe_cnt - 1);
		memcpy((char *)e->dv.sq.buf + (size_t)slot * e->dv.sq.stride, w + 64 * i, 64);
	}
	e->idx += nbb;
}

/* The doorbell: record first, then the first WQE's ctrl qword to the UAR's send doorbell. */
static void ring(struct end *e, const uint8_t *first_ctrl)
{
	__sync_synchronize();
	e->dv.dbrec[MLX5_SND_DBR] = htobe32(e->idx);
	__sync_synchronize();
	uint64_t v;
	memcpy(&v, first_ctrl, 8);
	*(volatile uint64_t *)e->dv.bf.reg = v;
	__sync_synchronize();
}

/* A good WQE at the end's next index: RC RDMA WRITE of 8 bytes into buf, or a UD SEND to itself. */
static int good_wqe(struct end *e, uint8_t *w)
{
	memset(w, 0, 128);
	if (e->ud) {
		ctrl(w, 0, e->idx, MLX5_OPCODE_SEND, e->qp->qp_num, 5, MLX5_WQE_CTRL_CQ_UPDATE);
		*(uint32_t *)(w + 16) = htobe32(0x1234);                 /* qkey */
		*(uint32_t *)(w + 24) = htobe32(e->qp->qp_num);          /* dqp_dct */
		*(uint16_t *)(w + 16 + 0x0e) = htobe16(lid);             /* rlid */
		data_seg(w + 64, 8, mr->lkey, buf + 2048);
		return 2;
	}
	ctrl(w, 0, e->idx, MLX5_OPCODE_RDMA_WRITE, e->qp->qp_num, 3, MLX5_WQE_CTRL_CQ_UPDATE);
	*(uint64_t *)(w + 16) = htobe64((uintptr_t)buf + 4096);
	*(uint32_t *)(w + 24) = htobe32(mr->rkey);
	data_seg(w + 32, 8, mr->lkey, buf + 2048);
	return 1;
}

static int poll_n(struct ibv_cq *cq, struct ibv_wc *wc, int want, double secs)
{
	double t0 = now();
	int got = 0;
	while (got < want && now() - t0 < secs) {
		int n = ibv_poll_cq(cq, want - got, wc + got);
		if (n < 0) return -1;
		got += n;
		if (got < want) usleep(200);
	}
	return got;
}

static int wait_event(struct end *e, double secs)
{
	struct pollfd p = { .fd = e->ch->fd, .events = POLLIN };
	if (poll(&p, 1, (int)(secs * 1000)) != 1) return 0;
	struct ibv_cq *cq; void *cctx;
	if (ibv_get_cq_event(e->ch, &cq, &cctx)) return 0;
	ibv_ack_cq_events(cq, 1);
	return cq == e->cq;
}

static enum ibv_qp_state qp_state(struct end *e)
{
	struct ibv_qp_attr qa; struct ibv_qp_init_attr qi;
	if (ibv_query_qp(e->qp, &qa, IBV_QP_STATE, &qi)) return (enum ibv_qp_state)-1;
	return qa.qp_state;
}

static int post_recv(struct end *e, uint64_t wr_id, void *addr, uint32_t len)
{
	struct ibv_sge s = { .addr = (uintptr_t)addr, .length = len, .lkey = mr->lkey };
	struct ibv_recv_wr w = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1 }, *bad;
	return ibv_post_recv(e->qp, &w, &bad);
}

/* After a case: RESET -> RTS (both sides of an RC pair) and one SEND through ibv_post_send. */
static int recover(struct end *a, struct end *b)
{
	to_rts(a, b ? b->qp->qp_num : 0);
	if (b) to_rts(b, a->qp->qp_num);
	struct end *rx = b ? b : a;
	struct ibv_ah *ah = NULL;
	if (post_recv(rx, 77, buf + 8192, 1024)) return 0;
	strcpy(buf + 12288, "after recovery");
	struct ibv_sge s = { .addr = (uintptr_t)buf + 12288, .length = 16, .lkey = mr->lkey };
	struct ibv_send_wr w = { .wr_id = 78, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED }, *bad;
	if (a->ud) {
		struct ibv_ah_attr aa = { .dlid = lid, .port_num = 1 };
		ah = ibv_create_ah(pd, &aa);
		if (!ah) return 0;
		w.wr.ud.ah = ah; w.wr.ud.remote_qpn = a->qp->qp_num; w.wr.ud.remote_qkey = 0x1234;
	}
	if (ibv_post_send(a->qp, &w, &bad)) return 0;
	struct ibv_wc wc[2];
	int ok;
	if (b) {
		ok = poll_n(a->cq, wc, 1, 10) == 1 && wc[0].status == IBV_WC_SUCCESS && wc[0].wr_id == 78 &&
		     poll_n(b->cq, wc + 1, 1, 10) == 1 && wc[1].status == IBV_WC_SUCCESS && wc[1].wr_id == 77;
	} else {
		/* Send and receive completions share the CQ, in either order. */
		ok = poll_n(a->cq, wc, 2, 10) == 2 && wc[0].status == IBV_WC_SUCCESS && wc[1].status == IBV_WC_SUCCESS &&
		     wc[0].wr_id + wc[1].wr_id == 77 + 78;
	}
	ok = ok && !strcmp(buf + 8192 + (a->ud ? 40 : 0), "after recovery");
	if (ah) ibv_destroy_ah(ah);
	return ok;
}

/* Both ends through RESET to RTS: libmlx5's SQ indices, the device's and ours all start at 0. */
static void fresh(struct end *a, struct end *b)
{
	to_rts(a, b ? b->qp->qp_num : 0);
	if (b) to_rts(b, a->qp->qp_num);
}

/*
 * One bad WQE (opcode, opmod, ds, fence mode) followed by a good one: error
 * completion, flush, ERR, event, recovery.
 */
static void bad_case(const char *name, struct end *a, struct end *b, uint8_t opcode, uint8_t opmod, uint8_t ds,
		     uint8_t fm, int signaled)
{
	uint8_t w[128], g[128];
	int pass = 1;
	printf("--- %s: opcode 0x%02x opmod %u ds %u fence mode %u %s ---\n", name, opcode, opmod, ds, fm,
	       signaled ? "signaled" : "unsignaled");
	fresh(a, b);
	if (ibv_req_notify_cq(a->cq, 0)) DIE("req_notify_cq");
	memset(w, 0, sizeof(w));
	ctrl(w, opmod, a->idx, opcode, a->qp->qp_num, ds, (fm << 5) | (signaled ? MLX5_WQE_CTRL_CQ_UPDATE : 0));
	/* Plausible segments behind it: a remote address and a data segment. */
	*(uint64_t *)(w + 16) = htobe64((uintptr_t)buf + 4096);
	*(uint32_t *)(w + 24) = htobe32(mr->rkey);
	data_seg(w + 32, 8, mr->lkey, buf + 2048);
	int nbb = ds > 4 ? (ds + 3) / 4 : 1;
	put_wqe(a, w, nbb);
	int gbb = good_wqe(a, g);
	put_wqe(a, g, gbb);
	ring(a, w);
	pass &= CHECK(wait_event(a, 10), "%s: CQ event for the error completion", name);
	struct ibv_wc wc[3];
	int n = poll_n(a->cq, wc, 2, 10);
	pass &= CHECK(n == 2, "%s: two completions (%d)", name, n);
	if (n >= 1) {
		pass &= CHECK(wc[0].status == IBV_WC_LOC_QP_OP_ERR && wc[0].qp_num == a->qp->qp_num,
			      "%s: bad WQE -> %s (status %d), vendor_err 0x%x, qp 0x%x", name,
			      ibv_wc_status_str(wc[0].status), wc[0].status, wc[0].vendor_err, wc[0].qp_num);
	}
	if (n == 2)
		pass &= CHECK(wc[1].status == IBV_WC_WR_FLUSH_ERR, "%s: the WQE behind it -> %s", name,
			      ibv_wc_status_str(wc[1].status));
	usleep(20000);
	pass &= CHECK(ibv_poll_cq(a->cq, 1, wc + 2) == 0, "%s: nothing more", name);
	enum ibv_qp_state st = qp_state(a);
	pass &= CHECK(st == IBV_QPS_ERR, "%s: ibv_query_qp state %d (ERR is %d)", name, st, IBV_QPS_ERR);
	int rec = recover(a, b);
	pass &= CHECK(rec, "%s: RESET->INIT->RTR->RTS, then a SEND through ibv_post_send succeeds", name);
	printf("BADOP %s qp=%s opcode=0x%02x status=%s vendor_err=0x%x flush=%s state=%s recovered=%s %s\n", name,
	       a->ud ? "UD" : "RC", opcode, n >= 1 ? ibv_wc_status_str(wc[0].status) : "none", n >= 1 ? wc[0].vendor_err : 0,
	       n == 2 && wc[1].status == IBV_WC_WR_FLUSH_ERR ? "yes" : "no", st == IBV_QPS_ERR ? "ERR" : "not-ERR",
	       rec ? "yes" : "no", pass ? "PASS" : "FAIL");
}

/* A hand-built signaled NOP and the good WQE behind it both complete successfully; the QP stays RTS. */
static void nop_case(struct end *a, struct end *b)
{
	uint8_t w[64], g[128];
	int pass = 1;
	printf("--- NOP: opcode 0x00 ds 1 signaled ---\n");
	fresh(a, b);
	ctrl(w, 0, a->idx, MLX5_OPCODE_NOP, a->qp->qp_num, 1, MLX5_WQE_CTRL_CQ_UPDATE);
	memset(w + 16, 0, 48);
	put_wqe(a, w, 1);
	int gbb = good_wqe(a, g);
	put_wqe(a, g, gbb);
	ring(a, w);
	struct ibv_wc wc[2];
	int n = poll_n(a->cq, wc, 2, 10);
	pass &= CHECK(n == 2 && wc[0].status == IBV_WC_SUCCESS && wc[1].status == IBV_WC_SUCCESS,
		      "NOP: NOP and the RDMA WRITE behind it complete successfully (%d: %s, %s)", n,
		      n >= 1 ? ibv_wc_status_str(wc[0].status) : "-", n >= 2 ? ibv_wc_status_str(wc[1].status) : "-");
	enum ibv_qp_state st = qp_state(a);
	pass &= CHECK(st == IBV_QPS_RTS, "NOP: QP still RTS (%d)", st);
	int rec = recover(a, b);
	pass &= CHECK(rec, "NOP: a SEND through ibv_post_send afterwards succeeds");
	printf("BADOP NOP qp=RC opcode=0x00 status=%s state=%s %s\n", n >= 1 ? ibv_wc_status_str(wc[0].status) : "none",
	       st == IBV_QPS_RTS ? "RTS" : "not-RTS", pass ? "PASS" : "FAIL");
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(240);
	int n;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (!list || !n) DIE("no device");
	ctx = ibv_open_device(list[0]);
	if (!ctx || !mlx5dv_is_supported(list[0])) DIE("open mlx5 device");
	pd = ibv_alloc_pd(ctx);
	if (!pd) DIE("pd");
	struct ibv_port_attr pa;
	if (ibv_query_port(ctx, 1, &pa)) DIE("query_port");
	lid = pa.lid;
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mr) DIE("reg_mr");

	struct end a = mk(0), b = mk(0), u = mk(1);
	printf("RC QP 0x%x -> 0x%x, UD QP 0x%x; SQ %u x %u B, doorbell at %p\n", a.qp->qp_num, b.qp->qp_num,
	       u.qp->qp_num, a.dv.sq.wqe_cnt, a.dv.sq.stride, a.dv.bf.reg);

	nop_case(&a, &b);
	bad_case("opcode-0x07", &a, &b, 0x07, 0, 3, 0, 1);
	bad_case("masked-cs", &a, &b, MLX5_OPCODE_ATOMIC_MASKED_CS, 0, 4, 0, 1);
	bad_case("local-inval", &a, &b, MLX5_OPCODE_LOCAL_INVAL, 0, 1, 0, 1);
	bad_case("config-cmd", &a, &b, MLX5_OPCODE_CONFIG_CMD, 0, 2, 0, 1);
	bad_case("umr-on-rc", &a, &b, MLX5_OPCODE_UMR, 0, 3, 0, 1);
	bad_case("opcode-0xff", &a, &b, 0xff, 0, 3, 0, 0);
	bad_case("send-ds-0", &a, &b, MLX5_OPCODE_SEND, 0, 0, 0, 0);
	bad_case("send-opmod-1", &a, &b, MLX5_OPCODE_SEND, 1, 2, 0, 1);
	bad_case("send-fence-mode-7", &a, &b, MLX5_OPCODE_SEND, 0, 2, 7, 1);
	bad_case("ud-rdma-write", &u, NULL, MLX5_OPCODE_RDMA_WRITE, 0, 3, 0, 1);
	bad_case("ud-send-inval", &u, NULL, MLX5_OPCODE_SEND_INVAL, 0, 5, 0, 0);

	ibv_destroy_qp(a.qp); ibv_destroy_qp(b.qp); ibv_destroy_qp(u.qp);
	ibv_destroy_cq(a.cq); ibv_destroy_cq(b.cq); ibv_destroy_cq(u.cq);
	ibv_destroy_comp_channel(a.ch); ibv_destroy_comp_channel(b.ch); ibv_destroy_comp_channel(u.ch);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return vt_end();
}
