/*
 * churn: creates and destroys verbs objects in a loop (PD, 1 MiB MR, CQ, RC QP walked to RTR, SRQ,
 * device memory) so the harness can check the server's memory stays flat.
 *
 *   churn WARM_SECONDS RUN_SECONDS
 * prints CHURN-WARM-DONE after the warm-up (the harness samples the server's RSS), CHURN-DONE after the
 * run (sampled again), and "CHURN PASS <iterations>" or "CHURN FAIL ...".
 */
#include <string.h>
#include <unistd.h>

#define VT_NAME "CHURN"
#include "vrverbs.h"

static char buf[1 << 20] __attribute__((aligned(4096)));

static int one(struct ibv_context *ctx, uint16_t lid)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_mr *mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) : NULL;
	struct ibv_cq *cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 1 } };
	struct ibv_srq *srq = pd ? ibv_create_srq(pd, &sa) : NULL;
	struct ibv_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_qp *qp = (pd && cq) ? ibv_create_qp(pd, &qa) : NULL;
	struct ibv_alloc_dm_attr da = { .length = 4096 };
	struct ibv_dm *dm = ibv_alloc_dm(ctx, &da);
	int ok = pd && mr && cq && srq && qp && dm;
	if (qp) {
		struct ibv_qp_attr m = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
		ok &= !ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
		struct ibv_qp_attr r = { .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = qp->qp_num,
			.rq_psn = 0, .max_dest_rd_atomic = 1, .min_rnr_timer = 12, .ah_attr = { .dlid = lid, .port_num = 1 } };
		ok &= !ibv_modify_qp(qp, &r, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
		ibv_destroy_qp(qp);
	}
	if (dm) ibv_free_dm(dm);
	if (srq) ibv_destroy_srq(srq);
	if (cq) ibv_destroy_cq(cq);
	if (mr) ibv_dereg_mr(mr);
	if (pd) ibv_dealloc_pd(pd);
	return ok;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	double warm = argc > 1 ? atof(argv[1]) : 10, run = argc > 2 ? atof(argv[2]) : 30;
	alarm((unsigned)(warm + run) + 120);
	struct ibv_context *ctx = vt_open();
	uint16_t lid = vt_lid(ctx);
	memset(buf, 1, sizeof(buf));
	long it = 0, bad = 0;
	double t0 = now();
	while (now() - t0 < warm) { bad += !one(ctx, lid); it++; }
	printf("CHURN-WARM-DONE iterations=%ld\n", it);
	sleep(2); /* the harness samples RSS */
	double t1 = now();
	long it2 = 0;
	while (now() - t1 < run) { bad += !one(ctx, lid); it2++; }
	printf("CHURN-DONE iterations=%ld failures=%ld\n", it2, bad);
	sleep(2);
	ibv_close_device(ctx);
	printf(bad ? "CHURN FAIL %ld of %ld iterations failed\n" : "CHURN PASS %ld iterations\n", bad ? bad : it + it2, it + it2);
	return bad != 0;
}
