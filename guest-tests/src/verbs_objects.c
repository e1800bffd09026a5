/* verbs_objects: verbs object lifecycle against an mlx5 device (vrnic guest scenario `verbs-objects`).
 *
 * usage: verbs_objects [-d DEV] [-H HUGETLBFS_DIR] [-w WATCHDOG_S]
 *
 * Opens DEV (default mlx5_0), queries device/port/gid/pkey, allocates PDs and an XRCD, registers MRs of
 * 4 KiB .. 64 MiB (and one backed by a 2 MiB huge page from HUGETLBFS_DIR if given and usable), creates
 * CQs, SRQs and RC/UC/UD QPs, walks every QP through the legal transitions (RESET->INIT->RTR->RTS,
 * RTS->RTS, ->ERR, ->RESET, and a second cycle with different attributes, INIT->INIT, ->ERR from
 * INIT/RTR, RESET->RESET, ERR->ERR) checking ibv_query_qp against what was set, tries illegal
 * transitions and bad parameters (each must fail with an error and leave the QP state unchanged), and
 * destroys everything.
 *
 * One line per check: "CHECK <n> ok <what>" or "CHECK <n> FAIL <what>: <detail>"; last line
 * "VERBS-OBJECTS PASS <n> checks" or "VERBS-OBJECTS FAIL <k> of <n> checks failed". Exit 0 only on PASS.
 * Every verbs call runs under alarm(): a call that does not return within the watchdog prints
 * "VERBS-OBJECTS FAIL watchdog: <call> did not return within <s> s" and exits 3.
 *
 * Expected query values follow what mlx5_ib (Linux 6.12) puts in the QP context: e.g. log_sra_max =
 * fls(max_rd_atomic - 1) (so powers of two round-trip), REMOTE_READ/ATOMIC are dropped while the
 * responder depth is 0, UD QPs always carry path MTU 4096. Values are chosen so each check is exact.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int nchecks, nfail;
static int watchdog_s = 60;
static char cur_op[256] = "start";

static void on_alarm(int sig)
{
	char buf[512];
	(void)sig;
	int n = snprintf(buf, sizeof(buf), "VERBS-OBJECTS FAIL watchdog: %s did not return within %d s\n", cur_op,
			 watchdog_s);
	if (write(1, buf, n) < 0) {
	}
	_exit(3);
}

/* start a verbs call under the watchdog */
static void op(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cur_op, sizeof(cur_op), fmt, ap);
	va_end(ap);
	alarm(watchdog_s);
}

static void done(void) { alarm(0); }

static int check(int cond, const char *what, const char *fmt, ...)
{
	char detail[512] = "";
	nchecks++;
	if (!cond && fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(detail, sizeof(detail), fmt, ap);
		va_end(ap);
	}
	if (cond) {
		printf("CHECK %d ok %s\n", nchecks, what);
	} else {
		nfail++;
		printf("CHECK %d FAIL %s: %s\n", nchecks, what, detail);
	}
	fflush(stdout);
	return cond;
}

/* rc: 0 ok, else errno value (ibv_modify_qp & co return the errno) */
static int check_rc_ok(int rc, const char *what)
{
	return check(rc == 0, what, "%s returned %d (%s)", cur_op, rc, strerror(rc));
}

/* the call must fail; want = 0: any errno, else that errno */
static int check_rc_fails(int rc, int want, const char *what)
{
	char w[320];
	if (rc == 0)
		return check(0, what, "%s succeeded, expected failure%s%s", cur_op, want ? " with " : "",
			     want ? strerror(want) : "");
	snprintf(w, sizeof(w), "%s (errno %d %s)", what, rc, strerror(rc));
	if (want && rc != want)
		return check(0, w, "expected errno %d (%s)", want, strerror(want));
	return check(1, w, NULL);
}

static int check_ptr_ok(void *p, const char *what)
{
	int e = errno;
	return check(p != NULL, what, "%s returned NULL, errno %d (%s)", cur_op, e, strerror(e));
}

static int check_ptr_fails(void *p, int want, const char *what)
{
	int e = errno;
	if (p)
		return check(0, what, "%s succeeded, expected failure", cur_op);
	return check_rc_fails(e ? e : -1, want, what);
}

static const char *st_name(enum ibv_qp_state s)
{
	static const char *n[] = {"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR", "UNKNOWN"};
	return s <= IBV_QPS_UNKNOWN ? n[s] : "?";
}

static const char *qpt_name(enum ibv_qp_type t)
{
	return t == IBV_QPT_RC ? "RC" : t == IBV_QPT_UC ? "UC" : t == IBV_QPT_UD ? "UD" : "?";
}

/* ------------------------------------------------------------------------------------------ */
static struct ibv_context *ctx;
static struct ibv_device_attr dattr;
static struct ibv_port_attr pattr;

struct tqp {
	struct ibv_qp *qp;
	enum ibv_qp_type type;
	int idx;
	const char *tag; /* e.g. "RC#0" */
	char tagbuf[32];
	enum ibv_qp_state state; /* what the test believes */
	uint32_t partner_qpn;
};

/* attributes for one walk through RESET->INIT->RTR->RTS */
struct params {
	int access_init;   /* RESET->INIT qp_access_flags (RC/UC) */
	uint32_t qkey;     /* UD RESET->INIT */
	enum ibv_mtu mtu;  /* RC/UC INIT->RTR */
	uint32_t rq_psn, sq_psn;
	uint16_t dlid;
	uint8_t sl;
	uint8_t max_dest_rd_atomic, min_rnr_timer; /* RC INIT->RTR */
	uint8_t timeout, retry_cnt, rnr_retry, max_rd_atomic; /* RC RTR->RTS */
};

static int query(struct tqp *t, struct ibv_qp_attr *a)
{
	struct ibv_qp_init_attr ia;
	memset(a, 0, sizeof(*a));
	op("ibv_query_qp(%s)", t->tag);
	int rc = ibv_query_qp(t->qp, a, 0x1fffff, &ia);
	done();
	return rc;
}

/* query and compare the state (+ nothing else) */
static int expect_state(struct tqp *t, enum ibv_qp_state want, const char *ctxs)
{
	struct ibv_qp_attr a;
	char w[200];
	int rc = query(t, &a);
	snprintf(w, sizeof(w), "%s %s: ibv_query_qp state %s", t->tag, ctxs, st_name(want));
	if (rc)
		return check(0, w, "ibv_query_qp returned %d (%s)", rc, strerror(rc));
	return check(a.qp_state == want, w, "state %s (%d)", st_name(a.qp_state), a.qp_state);
}

#define EXPECT_FIELD(t, stage, name, got, want)                                                            \
	do {                                                                                               \
		char w_[200];                                                                              \
		snprintf(w_, sizeof(w_), "%s %s: query " name " = %lu", (t)->tag, stage,                   \
			 (unsigned long)(want));                                                           \
		check((unsigned long)(got) == (unsigned long)(want), w_, "got %lu (0x%lx)",               \
		      (unsigned long)(got), (unsigned long)(got));                                          \
	} while (0)

static int modify(struct tqp *t, struct ibv_qp_attr *a, int mask, const char *what)
{
	op("ibv_modify_qp(%s, %s)", t->tag, what);
	int rc = ibv_modify_qp(t->qp, a, mask);
	done();
	return rc;
}

/* a legal transition: must succeed, the queried state must follow */
static int legal(struct tqp *t, struct ibv_qp_attr *a, int mask, enum ibv_qp_state to)
{
	char w[200];
	enum ibv_qp_state from = t->state;
	a->qp_state = to;
	snprintf(w, sizeof(w), "%s %s->%s", t->tag, st_name(from), st_name(to));
	int rc = modify(t, a, mask | IBV_QP_STATE, w);
	if (!check_rc_ok(rc, w))
		return 0;
	t->state = to;
	snprintf(w, sizeof(w), "after %s->%s", st_name(from), st_name(to));
	return expect_state(t, to, w);
}

static void to_reset(struct tqp *t)
{
	struct ibv_qp_attr a = {0};
	legal(t, &a, 0, IBV_QPS_RESET);
}

static void to_err(struct tqp *t)
{
	struct ibv_qp_attr a = {0};
	legal(t, &a, 0, IBV_QPS_ERR);
}

static int reset_to_init(struct tqp *t, const struct params *p, const char *stage)
{
	struct ibv_qp_attr a = {0};
	int mask = IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	a.pkey_index = 0;
	a.port_num = 1;
	if (t->type == IBV_QPT_UD) {
		a.qkey = p->qkey;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = p->access_init;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	if (!legal(t, &a, mask, IBV_QPS_INIT))
		return 0;
	struct ibv_qp_attr q;
	if (query(t, &q))
		return 0;
	EXPECT_FIELD(t, stage, "port_num", q.port_num, 1);
	EXPECT_FIELD(t, stage, "pkey_index", q.pkey_index, 0);
	if (t->type == IBV_QPT_UD)
		EXPECT_FIELD(t, stage, "qkey", q.qkey, p->qkey);
	else
		EXPECT_FIELD(t, stage, "qp_access_flags", q.qp_access_flags, p->access_init);
	return 1;
}

static int init_to_rtr(struct tqp *t, const struct params *p, const char *stage)
{
	struct ibv_qp_attr a = {0};
	int mask = 0;
	if (t->type != IBV_QPT_UD) {
		a.path_mtu = p->mtu;
		a.dest_qp_num = t->partner_qpn;
		a.rq_psn = p->rq_psn;
		a.ah_attr.dlid = p->dlid;
		a.ah_attr.sl = p->sl;
		a.ah_attr.port_num = 1;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	}
	if (t->type == IBV_QPT_RC) {
		a.max_dest_rd_atomic = p->max_dest_rd_atomic;
		a.min_rnr_timer = p->min_rnr_timer;
		/* REMOTE_READ is meaningful once the responder has resources */
		a.qp_access_flags = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER | IBV_QP_ACCESS_FLAGS;
	}
	if (!legal(t, &a, mask, IBV_QPS_RTR))
		return 0;
	struct ibv_qp_attr q;
	if (query(t, &q))
		return 0;
	if (t->type == IBV_QPT_UD) {
		EXPECT_FIELD(t, stage, "qkey", q.qkey, p->qkey);
		EXPECT_FIELD(t, stage, "path_mtu (UD: 4096)", q.path_mtu, IBV_MTU_4096);
		return 1;
	}
	EXPECT_FIELD(t, stage, "path_mtu", q.path_mtu, p->mtu);
	EXPECT_FIELD(t, stage, "dest_qp_num", q.dest_qp_num, t->partner_qpn);
	EXPECT_FIELD(t, stage, "rq_psn", q.rq_psn, p->rq_psn);
	EXPECT_FIELD(t, stage, "ah_attr.dlid", q.ah_attr.dlid, p->dlid);
	EXPECT_FIELD(t, stage, "ah_attr.sl", q.ah_attr.sl, p->sl);
	EXPECT_FIELD(t, stage, "ah_attr.port_num", q.ah_attr.port_num, 1);
	if (t->type == IBV_QPT_RC) {
		EXPECT_FIELD(t, stage, "max_dest_rd_atomic", q.max_dest_rd_atomic, p->max_dest_rd_atomic);
		EXPECT_FIELD(t, stage, "min_rnr_timer", q.min_rnr_timer, p->min_rnr_timer);
		EXPECT_FIELD(t, stage, "qp_access_flags", q.qp_access_flags,
			     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	} else {
		EXPECT_FIELD(t, stage, "qp_access_flags", q.qp_access_flags, p->access_init);
	}
	return 1;
}

static int rtr_to_rts(struct tqp *t, const struct params *p, const char *stage)
{
	struct ibv_qp_attr a = {0};
	int mask = IBV_QP_SQ_PSN;
	a.sq_psn = p->sq_psn;
	if (t->type == IBV_QPT_RC) {
		a.timeout = p->timeout;
		a.retry_cnt = p->retry_cnt;
		a.rnr_retry = p->rnr_retry;
		a.max_rd_atomic = p->max_rd_atomic;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	}
	if (!legal(t, &a, mask, IBV_QPS_RTS))
		return 0;
	struct ibv_qp_attr q;
	if (query(t, &q))
		return 0;
	EXPECT_FIELD(t, stage, "sq_psn", q.sq_psn, p->sq_psn);
	if (t->type == IBV_QPT_UD) {
		EXPECT_FIELD(t, stage, "qkey", q.qkey, p->qkey);
		return 1;
	}
	/* what RTR latched must still be there */
	EXPECT_FIELD(t, stage, "rq_psn", q.rq_psn, p->rq_psn);
	EXPECT_FIELD(t, stage, "dest_qp_num", q.dest_qp_num, t->partner_qpn);
	EXPECT_FIELD(t, stage, "path_mtu", q.path_mtu, p->mtu);
	EXPECT_FIELD(t, stage, "ah_attr.dlid", q.ah_attr.dlid, p->dlid);
	if (t->type == IBV_QPT_RC) {
		EXPECT_FIELD(t, stage, "timeout", q.timeout, p->timeout);
		EXPECT_FIELD(t, stage, "retry_cnt", q.retry_cnt, p->retry_cnt);
		EXPECT_FIELD(t, stage, "rnr_retry", q.rnr_retry, p->rnr_retry);
		EXPECT_FIELD(t, stage, "max_rd_atomic", q.max_rd_atomic, p->max_rd_atomic);
		EXPECT_FIELD(t, stage, "max_dest_rd_atomic", q.max_dest_rd_atomic, p->max_dest_rd_atomic);
		EXPECT_FIELD(t, stage, "min_rnr_timer", q.min_rnr_timer, p->min_rnr_timer);
	}
	return 1;
}

/* an illegal transition / bad parameter: must fail with `want` (0: any errno); the state must not move */
static void must_fail(struct tqp *t, struct ibv_qp_attr *a, int mask, int want, const char *what)
{
	char w[240];
	enum ibv_qp_state before = t->state;
	snprintf(w, sizeof(w), "%s in %s: %s fails", t->tag, st_name(before), what);
	int rc = modify(t, a, mask, what);
	check_rc_fails(rc, want, w);
	if (rc == 0)
		t->state = a->qp_state; /* it moved: later checks must not cascade */
	snprintf(w, sizeof(w), "after refused '%s'", what);
	expect_state(t, rc == 0 ? t->state : before, w);
}

/* full attribute set for a RESET->RTS jump attempt */
static int full_attrs(struct tqp *t, struct ibv_qp_attr *a, const struct params *p)
{
	memset(a, 0, sizeof(*a));
	a->pkey_index = 0;
	a->port_num = 1;
	a->qkey = p->qkey;
	a->qp_access_flags = p->access_init;
	a->path_mtu = p->mtu;
	a->dest_qp_num = t->partner_qpn;
	a->rq_psn = p->rq_psn;
	a->sq_psn = p->sq_psn;
	a->ah_attr.dlid = p->dlid;
	a->ah_attr.port_num = 1;
	a->max_dest_rd_atomic = p->max_dest_rd_atomic;
	a->min_rnr_timer = p->min_rnr_timer;
	a->timeout = p->timeout;
	a->retry_cnt = p->retry_cnt;
	a->rnr_retry = p->rnr_retry;
	a->max_rd_atomic = p->max_rd_atomic;
	if (t->type == IBV_QPT_UD)
		return IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY | IBV_QP_SQ_PSN;
	if (t->type == IBV_QPT_UC)
		return IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS | IBV_QP_AV | IBV_QP_PATH_MTU |
		       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_SQ_PSN;
	return IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS | IBV_QP_AV | IBV_QP_PATH_MTU |
	       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_SQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER |
	       IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
}

static void illegal_from_current(struct tqp *t, const struct params *p, const enum ibv_qp_state *tos, int n)
{
	for (int i = 0; i < n; i++) {
		struct ibv_qp_attr a;
		char w[80];
		int mask = full_attrs(t, &a, p) | IBV_QP_STATE;
		/* drop attributes the target state's legal transition would not take: the kernel must
		   refuse on the state pair alone */
		a.qp_state = tos[i];
		snprintf(w, sizeof(w), "illegal ->%s", st_name(tos[i]));
		must_fail(t, &a, mask, EINVAL, w);
	}
}

static void walk_qp(struct tqp *t, const struct params *p1, const struct params *p2)
{
	struct ibv_qp_attr a;
	int mask;
	printf("=== QP %s qpn 0x%x ===\n", t->tag, t->qp->qp_num);
	t->state = IBV_QPS_RESET;
	expect_state(t, IBV_QPS_RESET, "after create");

	/* illegal from RESET */
	{
		enum ibv_qp_state tos[] = {IBV_QPS_RTR, IBV_QPS_RTS};
		illegal_from_current(t, p1, tos, 2);
	}
	/* RESET->INIT without a required attribute / with one the transition does not take */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = p1->qkey;
	a.qp_access_flags = p1->access_init;
	mask = IBV_QP_STATE | IBV_QP_PORT | (t->type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);
	must_fail(t, &a, mask, EINVAL, "RESET->INIT without PKEY_INDEX");
	a.pkey_index = 0;
	mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | (t->type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);
	must_fail(t, &a, mask, EINVAL, "RESET->INIT without PORT");
	mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY | IBV_QP_ACCESS_FLAGS |
	       (t->type == IBV_QPT_UD ? IBV_QP_DEST_QPN : IBV_QP_SQ_PSN);
	a.dest_qp_num = 5;
	a.sq_psn = 1;
	must_fail(t, &a, mask, EINVAL, "RESET->INIT with an attribute it does not take");
	/* bad parameters */
	mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | (t->type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);
	a.port_num = 2;
	must_fail(t, &a, mask, EINVAL, "RESET->INIT port_num 2 (1 port)");
	a.port_num = 0;
	must_fail(t, &a, mask, EINVAL, "RESET->INIT port_num 0");
	a.port_num = 1;
	a.pkey_index = dattr.max_pkeys ? dattr.max_pkeys : 64;
	must_fail(t, &a, mask, EINVAL, "RESET->INIT pkey_index = max_pkeys");

	/* ---- cycle 1 */
	if (!reset_to_init(t, p1, "INIT(1)"))
		return;
	{
		enum ibv_qp_state tos[] = {IBV_QPS_RTS};
		illegal_from_current(t, p1, tos, 1);
	}
	if (t->type != IBV_QPT_UD) {
		/* INIT->RTR missing DEST_QPN; bad MTU; too many rd atomics */
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = p1->mtu;
		a.rq_psn = p1->rq_psn;
		a.ah_attr.dlid = p1->dlid;
		a.ah_attr.port_num = 1;
		a.max_dest_rd_atomic = p1->max_dest_rd_atomic;
		a.min_rnr_timer = p1->min_rnr_timer;
		int rmask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_RQ_PSN |
			    (t->type == IBV_QPT_RC ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0);
		must_fail(t, &a, rmask, EINVAL, "INIT->RTR without DEST_QPN");
		a.dest_qp_num = t->partner_qpn;
		a.path_mtu = (enum ibv_mtu)7;
		must_fail(t, &a, rmask | IBV_QP_DEST_QPN, EINVAL, "INIT->RTR path_mtu 7 (invalid)");
		a.path_mtu = p1->mtu;
		if (t->type == IBV_QPT_RC) {
			a.max_dest_rd_atomic = 255; /* above any device maximum (vrnic 128) */
			must_fail(t, &a, rmask | IBV_QP_DEST_QPN, EINVAL, "INIT->RTR max_dest_rd_atomic 255");
		}
	}
	if (!init_to_rtr(t, p1, "RTR(1)"))
		return;
	{
		enum ibv_qp_state tos[] = {IBV_QPS_INIT, IBV_QPS_RTR};
		illegal_from_current(t, p1, tos, 2);
	}
	if (t->type == IBV_QPT_RC) {
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.timeout = p1->timeout;
		a.retry_cnt = p1->retry_cnt;
		a.rnr_retry = p1->rnr_retry;
		a.max_rd_atomic = p1->max_rd_atomic;
		must_fail(t, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					 IBV_QP_MAX_QP_RD_ATOMIC,
			  EINVAL, "RTR->RTS without SQ_PSN");
		a.sq_psn = p1->sq_psn;
		a.max_rd_atomic = 255;
		must_fail(t, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					 IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_SQ_PSN,
			  EINVAL, "RTR->RTS max_rd_atomic 255");
	}
	if (!rtr_to_rts(t, p1, "RTS(1)"))
		return;
	{
		enum ibv_qp_state tos[] = {IBV_QPS_INIT, IBV_QPS_RTR};
		illegal_from_current(t, p1, tos, 2);
	}
	/* RTS->RTS: change what the transition may change */
	memset(&a, 0, sizeof(a));
	if (t->type == IBV_QPT_RC) {
		a.qp_access_flags = IBV_ACCESS_REMOTE_READ;
		a.min_rnr_timer = p2->min_rnr_timer;
		mask = IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER;
	} else if (t->type == IBV_QPT_UC) {
		a.qp_access_flags = 0;
		mask = IBV_QP_ACCESS_FLAGS;
	} else {
		a.qkey = p2->qkey;
		mask = IBV_QP_QKEY;
	}
	if (legal(t, &a, mask, IBV_QPS_RTS)) {
		struct ibv_qp_attr q;
		if (!query(t, &q)) {
			if (t->type == IBV_QPT_RC) {
				EXPECT_FIELD(t, "RTS->RTS", "qp_access_flags", q.qp_access_flags, IBV_ACCESS_REMOTE_READ);
				EXPECT_FIELD(t, "RTS->RTS", "min_rnr_timer", q.min_rnr_timer, p2->min_rnr_timer);
				EXPECT_FIELD(t, "RTS->RTS", "timeout (unchanged)", q.timeout, p1->timeout);
				EXPECT_FIELD(t, "RTS->RTS", "retry_cnt (unchanged)", q.retry_cnt, p1->retry_cnt);
			} else if (t->type == IBV_QPT_UC) {
				EXPECT_FIELD(t, "RTS->RTS", "qp_access_flags", q.qp_access_flags, 0);
			} else {
				EXPECT_FIELD(t, "RTS->RTS", "qkey", q.qkey, p2->qkey);
			}
			EXPECT_FIELD(t, "RTS->RTS", "sq_psn (unchanged)", q.sq_psn, p1->sq_psn);
			if (t->type != IBV_QPT_UD)
				EXPECT_FIELD(t, "RTS->RTS", "dest_qp_num (unchanged)", q.dest_qp_num, t->partner_qpn);
		}
	}
	to_err(t);
	{
		enum ibv_qp_state tos[] = {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS};
		illegal_from_current(t, p1, tos, 3);
	}
	to_err(t); /* ERR->ERR */
	to_reset(t);

	/* ---- cycle 2, different attributes, INIT->INIT */
	if (!reset_to_init(t, p2, "INIT(2)"))
		return;
	memset(&a, 0, sizeof(a));
	if (t->type == IBV_QPT_UD) {
		a.qkey = p1->qkey;
		mask = IBV_QP_QKEY;
	} else {
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
		mask = IBV_QP_ACCESS_FLAGS;
	}
	if (legal(t, &a, mask, IBV_QPS_INIT)) {
		struct ibv_qp_attr q;
		if (!query(t, &q)) {
			if (t->type == IBV_QPT_UD)
				EXPECT_FIELD(t, "INIT->INIT", "qkey", q.qkey, p1->qkey);
			else
				EXPECT_FIELD(t, "INIT->INIT", "qp_access_flags", q.qp_access_flags, IBV_ACCESS_REMOTE_WRITE);
		}
	}
	struct params p2b = *p2;
	if (t->type == IBV_QPT_UD)
		p2b.qkey = p1->qkey;
	else
		p2b.access_init = IBV_ACCESS_REMOTE_WRITE;
	if (!init_to_rtr(t, &p2b, "RTR(2)"))
		return;
	if (!rtr_to_rts(t, &p2b, "RTS(2)"))
		return;
	to_reset(t); /* RTS->RESET directly */

	/* ->ERR from INIT and from RTR, RESET->RESET; RESET->ERR is illegal */
	if (reset_to_init(t, p1, "INIT(3)")) {
		to_err(t);
		to_reset(t);
	}
	if (reset_to_init(t, p1, "INIT(4)") && init_to_rtr(t, p1, "RTR(4)")) {
		to_err(t);
		to_reset(t);
	}
	if (reset_to_init(t, p1, "INIT(5)") && init_to_rtr(t, p1, "RTR(5)"))
		to_reset(t); /* RTR->RESET */
	if (reset_to_init(t, p1, "INIT(6)"))
		to_reset(t); /* INIT->RESET */
	to_reset(t); /* RESET->RESET */
	{
		/* Linux (ib_modify_qp_is_ok) has no RESET->ERR */
		enum ibv_qp_state tos[] = {IBV_QPS_ERR};
		illegal_from_current(t, p1, tos, 1);
	}
	/* and back up to RTS once more: the QP is usable after all that */
	if (reset_to_init(t, p1, "INIT(7)") && init_to_rtr(t, p1, "RTR(7)"))
		rtr_to_rts(t, p1, "RTS(7)");
}

/* ------------------------------------------------------------------------------------------ */
static struct ibv_mr *reg(struct ibv_pd *pd, void *buf, size_t len, int access, const char *what)
{
	op("ibv_reg_mr(%s, %zu bytes)", what, len);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, len, access);
	int e = errno;
	done();
	errno = e;
	return mr;
}

int main(int argc, char **argv)
{
	const char *devname = "mlx5_0", *hugedir = NULL;
	int c;
	while ((c = getopt(argc, argv, "d:H:w:")) != -1) {
		if (c == 'd')
			devname = optarg;
		else if (c == 'H')
			hugedir = optarg;
		else if (c == 'w')
			watchdog_s = atoi(optarg);
		else {
			fprintf(stderr, "usage: %s [-d DEV] [-H HUGETLBFS_DIR] [-w WATCHDOG_S]\n", argv[0]);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGALRM, on_alarm);

	/* ---- device */
	int n = 0;
	op("ibv_get_device_list");
	struct ibv_device **list = ibv_get_device_list(&n);
	done();
	if (!check_ptr_ok(list, "ibv_get_device_list"))
		goto out;
	struct ibv_device *dev = NULL;
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), devname))
			dev = list[i];
	if (!check(dev != NULL, "device present in ibv_get_device_list", "%s not among %d devices", devname, n))
		goto out;
	op("ibv_open_device(%s)", devname);
	ctx = ibv_open_device(dev);
	done();
	if (!check_ptr_ok(ctx, "ibv_open_device"))
		goto out;

	op("ibv_query_device");
	int rc = ibv_query_device(ctx, &dattr);
	done();
	if (!check_rc_ok(rc, "ibv_query_device"))
		goto out;
	printf("DEVICE fw_ver %s node_guid 0x%016llx max_qp %d max_qp_wr %d max_sge %d max_cq %d max_cqe %d "
	       "max_mr %d max_pd %d max_srq %d max_srq_wr %d max_qp_rd_atom %d max_pkeys %u atomic_cap %d\n",
	       dattr.fw_ver, (unsigned long long)be64toh(dattr.node_guid), dattr.max_qp, dattr.max_qp_wr,
	       dattr.max_sge, dattr.max_cq, dattr.max_cqe, dattr.max_mr, dattr.max_pd, dattr.max_srq,
	       dattr.max_srq_wr, dattr.max_qp_rd_atom, dattr.max_pkeys, dattr.atomic_cap);
	check(dattr.phys_port_cnt == 1, "query_device phys_port_cnt 1", "phys_port_cnt %u", dattr.phys_port_cnt);
	check(dattr.fw_ver[0] != 0, "query_device fw_ver non-empty", "empty");
	check(dattr.max_qp_wr >= 64 && dattr.max_sge >= 1 && dattr.max_cqe >= 4096 && dattr.max_srq_wr >= 128 &&
		      dattr.max_qp_rd_atom >= 16 && dattr.max_pkeys >= 1,
	      "query_device limits large enough for this test", "limits too small");

	op("ibv_query_port(1)");
	rc = ibv_query_port(ctx, 1, &pattr);
	done();
	if (!check_rc_ok(rc, "ibv_query_port(1)"))
		goto out;
	printf("PORT state %d lid %u sm_lid %u active_mtu %d link_layer %u gid_tbl_len %d pkey_tbl_len %u\n",
	       pattr.state, pattr.lid, pattr.sm_lid, pattr.active_mtu, pattr.link_layer, pattr.gid_tbl_len,
	       pattr.pkey_tbl_len);
	check(pattr.state == IBV_PORT_ACTIVE, "port 1 ACTIVE", "state %d", pattr.state);
	check(pattr.link_layer == IBV_LINK_LAYER_INFINIBAND, "port 1 link_layer InfiniBand", "%u", pattr.link_layer);
	check(pattr.lid != 0, "port 1 has a LID", "lid 0");
	check(pattr.active_mtu == IBV_MTU_4096, "port 1 active_mtu 4096", "%d", pattr.active_mtu);
	{
		struct ibv_port_attr p2;
		op("ibv_query_port(2)");
		rc = ibv_query_port(ctx, 2, &p2);
		done();
		check_rc_fails(rc, EINVAL, "ibv_query_port(2) on a 1-port device fails");
	}
	{
		union ibv_gid gid;
		op("ibv_query_gid(1, 0)");
		rc = ibv_query_gid(ctx, 1, 0, &gid);
		done();
		if (check_rc_ok(rc, "ibv_query_gid(1, 0)")) {
			printf("GID[0] %016llx:%016llx\n", (unsigned long long)be64toh(gid.global.subnet_prefix),
			       (unsigned long long)be64toh(gid.global.interface_id));
			check(be64toh(gid.global.subnet_prefix) == 0xfe80000000000000ULL, "GID[0] subnet prefix fe80::",
			      "0x%016llx", (unsigned long long)be64toh(gid.global.subnet_prefix));
			check(gid.global.interface_id != 0, "GID[0] interface id non-zero", "0");
		}
		uint16_t pkey = 0;
		op("ibv_query_pkey(1, 0)");
		rc = ibv_query_pkey(ctx, 1, 0, &pkey);
		done();
		if (check_rc_ok(rc, "ibv_query_pkey(1, 0)"))
			check(ntohs(pkey) == 0xffff, "P_Key[0] = 0xffff (default partition)", "0x%04x", ntohs(pkey));
	}

	/* ---- PDs, XRCD */
	struct ibv_pd *pds[4] = {0};
	for (int i = 0; i < 4; i++) {
		char w[64];
		snprintf(w, sizeof(w), "ibv_alloc_pd #%d", i);
		op("%s", w);
		pds[i] = ibv_alloc_pd(ctx);
		done();
		check_ptr_ok(pds[i], w);
	}
	struct ibv_pd *pd = pds[0];
	if (!pd)
		goto out;
	{
		struct ibv_xrcd_init_attr xa = {.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
						.fd = -1, .oflags = O_CREAT};
		op("ibv_open_xrcd");
		struct ibv_xrcd *x = ibv_open_xrcd(ctx, &xa);
		done();
		if (check_ptr_ok(x, "ibv_open_xrcd")) {
			op("ibv_close_xrcd");
			check_rc_ok(ibv_close_xrcd(x), "ibv_close_xrcd");
			done();
		}
	}

	/* ---- MRs */
	static const size_t sizes[] = {4096, 65536, 1 << 20, 16 << 20, 64 << 20};
	const int nsz = sizeof(sizes) / sizeof(sizes[0]);
	void *bufs[8] = {0};
	struct ibv_mr *mrs[8] = {0};
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	for (int i = 0; i < nsz; i++) {
		char w[96];
		bufs[i] = mmap(NULL, sizes[i], PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (bufs[i] == MAP_FAILED) {
			bufs[i] = NULL;
			check(0, "mmap MR buffer", "%zu bytes: %s", sizes[i], strerror(errno));
			continue;
		}
		memset(bufs[i], 0x5a, sizes[i]);
		snprintf(w, sizeof(w), "ibv_reg_mr %zu KiB", sizes[i] >> 10);
		mrs[i] = reg(pds[i % 2], bufs[i], sizes[i], acc, w);
		if (check_ptr_ok(mrs[i], w)) {
			printf("MR %zu KiB lkey 0x%x rkey 0x%x\n", sizes[i] >> 10, mrs[i]->lkey, mrs[i]->rkey);
			check(mrs[i]->length == sizes[i] && mrs[i]->addr == bufs[i], "MR length/addr as registered",
			      "length %zu addr %p", mrs[i]->length, mrs[i]->addr);
		}
	}
	{
		int uniq = 1, cnt = 0;
		for (int i = 0; i < nsz; i++)
			for (int j = i + 1; j < nsz; j++)
				if (mrs[i] && mrs[j] && (mrs[i]->lkey == mrs[j]->lkey || mrs[i]->rkey == mrs[j]->rkey))
					uniq = 0;
		for (int i = 0; i < nsz; i++)
			cnt += mrs[i] != NULL;
		check(uniq && cnt == nsz, "MR keys distinct", "%d MRs, distinct=%d", cnt, uniq);
	}
	/* the same buffer registered twice: two MRs, two keys */
	if (bufs[1]) {
		mrs[nsz] = reg(pd, bufs[1], sizes[1], IBV_ACCESS_LOCAL_WRITE, "second MR on the 64 KiB buffer");
		if (check_ptr_ok(mrs[nsz], "ibv_reg_mr same buffer twice") && mrs[1])
			check(mrs[nsz]->lkey != mrs[1]->lkey, "second MR on a buffer has its own lkey", "same lkey 0x%x",
			      mrs[1]->lkey);
	}
	/* 2 MiB huge page */
	void *hbuf = NULL;
	size_t hlen = 2 << 20;
	int hfd = -1;
	char hpath[256] = "";
	if (!hugedir) {
		printf("NOTE hugepage MR skipped: no hugetlbfs directory given (-H)\n");
	} else {
		snprintf(hpath, sizeof(hpath), "%s/verbs_objects.%d", hugedir, getpid());
		hfd = open(hpath, O_CREAT | O_RDWR, 0600);
		if (hfd < 0) {
			printf("NOTE hugepage MR skipped: open %s: %s\n", hpath, strerror(errno));
		} else {
			hbuf = mmap(NULL, hlen, PROT_READ | PROT_WRITE, MAP_SHARED, hfd, 0);
			if (hbuf == MAP_FAILED) {
				printf("NOTE hugepage MR skipped: mmap 2 MiB of %s: %s\n", hpath, strerror(errno));
				hbuf = NULL;
			} else {
				memset(hbuf, 0xa5, hlen);
				mrs[nsz + 1] = reg(pd, hbuf, hlen, acc, "2 MiB huge page");
				if (check_ptr_ok(mrs[nsz + 1], "ibv_reg_mr 2 MiB huge-page buffer (hugetlbfs)"))
					printf("MR hugepage 2048 KiB at %p lkey 0x%x rkey 0x%x\n", hbuf,
					       mrs[nsz + 1]->lkey, mrs[nsz + 1]->rkey);
			}
		}
	}
	/* bad MR parameters */
	if (bufs[0]) {
		struct ibv_mr *m = reg(pd, bufs[0], 4096, IBV_ACCESS_REMOTE_WRITE, "REMOTE_WRITE without LOCAL_WRITE");
		check_ptr_fails(m, EINVAL, "ibv_reg_mr REMOTE_WRITE without LOCAL_WRITE fails");
		if (m)
			ibv_dereg_mr(m);
	}
	{
		void *hole = mmap(NULL, 1 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (hole != MAP_FAILED) {
			munmap(hole, 1 << 20);
			struct ibv_mr *m = reg(pd, hole, 1 << 20, IBV_ACCESS_LOCAL_WRITE, "unmapped range");
			check_ptr_fails(m, 0, "ibv_reg_mr on an unmapped range fails");
			if (m)
				ibv_dereg_mr(m);
		}
	}

	/* ---- CQs */
	static const int cqes[] = {1, 100, 4096, 65536};
	struct ibv_cq *cqs[4] = {0};
	struct ibv_comp_channel *ch = NULL;
	op("ibv_create_comp_channel");
	ch = ibv_create_comp_channel(ctx);
	done();
	check_ptr_ok(ch, "ibv_create_comp_channel");
	for (int i = 0; i < 4; i++) {
		char w[64];
		snprintf(w, sizeof(w), "ibv_create_cq cqe %d", cqes[i]);
		op("%s", w);
		cqs[i] = ibv_create_cq(ctx, cqes[i], NULL, i == 0 ? ch : NULL, 0);
		done();
		if (check_ptr_ok(cqs[i], w))
			check(cqs[i]->cqe >= cqes[i], "CQ has at least the requested entries", "cqe %d < %d",
			      cqs[i]->cqe, cqes[i]);
	}
	if (cqs[0]) {
		op("ibv_req_notify_cq");
		check_rc_ok(ibv_req_notify_cq(cqs[0], 0), "ibv_req_notify_cq (arm)");
		done();
		struct ibv_wc wc;
		op("ibv_poll_cq(empty)");
		int np = ibv_poll_cq(cqs[0], 1, &wc);
		done();
		check(np == 0, "ibv_poll_cq on an empty CQ returns 0", "returned %d", np);
	}
	{
		op("ibv_create_cq(cqe 1<<25)");
		struct ibv_cq *bad = ibv_create_cq(ctx, 1 << 25, NULL, NULL, 0);
		done();
		check_ptr_fails(bad, 0, "ibv_create_cq with cqe 1<<25 (> max_cqe) fails");
		if (bad)
			ibv_destroy_cq(bad);
	}

	/* ---- SRQs */
	struct ibv_srq *srqs[2] = {0};
	for (int i = 0; i < 2; i++) {
		struct ibv_srq_init_attr sa = {.attr = {.max_wr = 128 << i, .max_sge = 1 + i}};
		char w[64];
		snprintf(w, sizeof(w), "ibv_create_srq max_wr %u", sa.attr.max_wr);
		op("%s", w);
		srqs[i] = ibv_create_srq(pd, &sa);
		done();
		if (!check_ptr_ok(srqs[i], w))
			continue;
		struct ibv_srq_attr q = {0};
		op("ibv_query_srq");
		rc = ibv_query_srq(srqs[i], &q);
		done();
		if (check_rc_ok(rc, "ibv_query_srq")) {
			check(q.max_wr >= (128u << i), "query_srq max_wr >= requested", "max_wr %u", q.max_wr);
			check(q.srq_limit == 0, "query_srq srq_limit 0 after create", "srq_limit %u", q.srq_limit);
		}
		struct ibv_srq_attr m = {.srq_limit = 10 + i};
		op("ibv_modify_srq(srq_limit %u)", m.srq_limit);
		rc = ibv_modify_srq(srqs[i], &m, IBV_SRQ_LIMIT);
		done();
		if (check_rc_ok(rc, "ibv_modify_srq srq_limit (arm)")) {
			memset(&q, 0, sizeof(q));
			op("ibv_query_srq");
			rc = ibv_query_srq(srqs[i], &q);
			done();
			if (check_rc_ok(rc, "ibv_query_srq after arm"))
				check(q.srq_limit == 10u + i, "query_srq srq_limit as armed", "srq_limit %u, armed %u",
				      q.srq_limit, 10 + i);
		}
		m.srq_limit = 1u << 20;
		op("ibv_modify_srq(srq_limit 1<<20)");
		rc = ibv_modify_srq(srqs[i], &m, IBV_SRQ_LIMIT);
		done();
		check_rc_fails(rc, EINVAL, "ibv_modify_srq srq_limit beyond max_wr fails");
	}
	{
		struct ibv_srq_init_attr sa = {.attr = {.max_wr = (uint32_t)dattr.max_srq_wr + 1, .max_sge = 1}};
		op("ibv_create_srq(max_wr max+1)");
		struct ibv_srq *bad = ibv_create_srq(pd, &sa);
		done();
		check_ptr_fails(bad, EINVAL, "ibv_create_srq max_wr > max_srq_wr fails");
		if (bad)
			ibv_destroy_srq(bad);
	}

	/* ---- QPs: RC (own RQ), RC on an SRQ, UC, UD */
	struct tqp qps[4];
	memset(qps, 0, sizeof(qps));
	const enum ibv_qp_type types[4] = {IBV_QPT_RC, IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD};
	int have_cq = cqs[1] && cqs[2];
	for (int i = 0; i < 4 && have_cq; i++) {
		struct ibv_qp_init_attr ia = {.send_cq = cqs[1], .recv_cq = cqs[2], .qp_type = types[i],
					      .cap = {.max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1,
						      .max_recv_sge = 1}};
		if (i == 1) {
			ia.srq = srqs[0];
			ia.cap.max_recv_wr = 0;
			ia.cap.max_recv_sge = 0;
		}
		qps[i].type = types[i];
		qps[i].idx = i;
		snprintf(qps[i].tagbuf, sizeof(qps[i].tagbuf), "%s%s#%d", qpt_name(types[i]), i == 1 ? "+SRQ" : "", i);
		qps[i].tag = qps[i].tagbuf;
		char w[64];
		snprintf(w, sizeof(w), "ibv_create_qp %s", qps[i].tag);
		op("%s", w);
		qps[i].qp = ibv_create_qp(pds[i % 2], &ia);
		done();
		if (check_ptr_ok(qps[i].qp, w)) {
			printf("QP %s qpn 0x%x\n", qps[i].tag, qps[i].qp->qp_num);
			check(qps[i].qp->qp_num > 1, "QP number is not a special QP", "qpn %u", qps[i].qp->qp_num);
		}
	}
	{
		int distinct = 1;
		for (int i = 0; i < 4; i++)
			for (int j = i + 1; j < 4; j++)
				if (qps[i].qp && qps[j].qp && qps[i].qp->qp_num == qps[j].qp->qp_num)
					distinct = 0;
		check(distinct, "QP numbers distinct", "duplicate QP number");
	}
	/* bad QP parameters */
	if (have_cq) {
		struct ibv_qp_init_attr ia = {.send_cq = cqs[1], .recv_cq = cqs[2], .qp_type = IBV_QPT_RC,
					      .cap = {.max_send_wr = (uint32_t)dattr.max_qp_wr + 1, .max_recv_wr = 1,
						      .max_send_sge = 1, .max_recv_sge = 1}};
		op("ibv_create_qp(max_send_wr > max_qp_wr)");
		struct ibv_qp *bad = ibv_create_qp(pd, &ia);
		done();
		check_ptr_fails(bad, EINVAL, "ibv_create_qp max_send_wr > max_qp_wr fails");
		if (bad)
			ibv_destroy_qp(bad);
		ia.cap.max_send_wr = 1;
		ia.cap.max_send_sge = 1024; /* a WQE far beyond max_wqe_sz_sq (max_sge is only a hint for libmlx5) */
		op("ibv_create_qp(max_send_sge 1024)");
		bad = ibv_create_qp(pd, &ia);
		done();
		check_ptr_fails(bad, 0, "ibv_create_qp max_send_sge 1024 fails");
		if (bad)
			ibv_destroy_qp(bad);
	}
	/* a UD address handle (no command on IB, but part of the object set) */
	{
		struct ibv_ah_attr aa = {.dlid = pattr.lid, .port_num = 1};
		op("ibv_create_ah");
		struct ibv_ah *ah = ibv_create_ah(pd, &aa);
		done();
		if (check_ptr_ok(ah, "ibv_create_ah (dlid = own LID)")) {
			op("ibv_destroy_ah");
			check_rc_ok(ibv_destroy_ah(ah), "ibv_destroy_ah");
			done();
		}
	}

	/* pair RC#0<->RC+SRQ#1, UC#2 -> RC#0's number (any QPN), UD: none */
	if (qps[0].qp && qps[1].qp) {
		qps[0].partner_qpn = qps[1].qp->qp_num;
		qps[1].partner_qpn = qps[0].qp->qp_num;
	}
	if (qps[2].qp)
		qps[2].partner_qpn = qps[0].qp ? qps[0].qp->qp_num : 0x123;
	for (int i = 0; i < 4; i++) {
		if (!qps[i].qp)
			continue;
		struct params p1 = {.access_init = qps[i].type == IBV_QPT_RC || qps[i].type == IBV_QPT_UC
							   ? IBV_ACCESS_REMOTE_WRITE : 0,
				    .qkey = 0x11110000u + i,
				    .mtu = qps[i].type == IBV_QPT_UC ? IBV_MTU_2048 : IBV_MTU_4096,
				    .rq_psn = 0x010203 + 0x111 * i,
				    .sq_psn = 0xabcdef - 0x111 * i,
				    .dlid = pattr.lid,
				    .sl = 0,
				    .max_dest_rd_atomic = 8,
				    .min_rnr_timer = 12,
				    .timeout = 14,
				    .retry_cnt = 5,
				    .rnr_retry = 6,
				    .max_rd_atomic = 4};
		struct params p2 = {.access_init = 0,
				    .qkey = 0x22220000u + i,
				    .mtu = qps[i].type == IBV_QPT_UC ? IBV_MTU_512 : IBV_MTU_1024,
				    .rq_psn = 0x777000 + i,
				    .sq_psn = 0x000042 + i,
				    .dlid = (uint16_t)(pattr.lid + 0x10 + i),
				    .sl = 3,
				    .max_dest_rd_atomic = 16,
				    .min_rnr_timer = 24,
				    .timeout = 18,
				    .retry_cnt = 3,
				    .rnr_retry = 7,
				    .max_rd_atomic = 2};
		walk_qp(&qps[i], &p1, &p2);
	}

	/* ---- destroy, with "still in use" refusals first */
	printf("=== teardown ===\n");
	if (qps[0].qp && cqs[1]) {
		op("ibv_destroy_cq(in use)");
		rc = ibv_destroy_cq(cqs[1]);
		done();
		check_rc_fails(rc, EBUSY, "ibv_destroy_cq of a CQ a QP uses fails");
		if (!rc)
			cqs[1] = NULL;
	}
	if (qps[1].qp && srqs[0]) {
		op("ibv_destroy_srq(in use)");
		rc = ibv_destroy_srq(srqs[0]);
		done();
		check_rc_fails(rc, EBUSY, "ibv_destroy_srq of an SRQ a QP uses fails");
		if (!rc)
			srqs[0] = NULL;
	}
	if (mrs[0]) {
		op("ibv_dealloc_pd(in use)");
		rc = ibv_dealloc_pd(pds[0]);
		done();
		check_rc_fails(rc, EBUSY, "ibv_dealloc_pd of a PD with MRs/QPs fails");
		if (!rc)
			pds[0] = NULL;
	}
	for (int i = 0; i < 4; i++)
		if (qps[i].qp) {
			char w[64];
			snprintf(w, sizeof(w), "ibv_destroy_qp %s", qps[i].tag);
			op("%s", w);
			check_rc_ok(ibv_destroy_qp(qps[i].qp), w);
			done();
		}
	for (int i = 0; i < 2; i++)
		if (srqs[i]) {
			op("ibv_destroy_srq");
			check_rc_ok(ibv_destroy_srq(srqs[i]), "ibv_destroy_srq");
			done();
		}
	for (int i = 0; i < 4; i++)
		if (cqs[i]) {
			op("ibv_destroy_cq");
			check_rc_ok(ibv_destroy_cq(cqs[i]), "ibv_destroy_cq");
			done();
		}
	if (ch) {
		op("ibv_destroy_comp_channel");
		check_rc_ok(ibv_destroy_comp_channel(ch), "ibv_destroy_comp_channel");
		done();
	}
	for (int i = 0; i < 8; i++)
		if (mrs[i]) {
			char w[64];
			snprintf(w, sizeof(w), "ibv_dereg_mr #%d (%zu KiB)", i, mrs[i]->length >> 10);
			op("%s", w);
			check_rc_ok(ibv_dereg_mr(mrs[i]), w);
			done();
		}
	for (int i = 0; i < 4; i++)
		if (pds[i]) {
			op("ibv_dealloc_pd");
			check_rc_ok(ibv_dealloc_pd(pds[i]), "ibv_dealloc_pd");
			done();
		}
	if (hbuf)
		munmap(hbuf, hlen);
	if (hfd >= 0) {
		close(hfd);
		unlink(hpath);
	}
	for (int i = 0; i < nsz; i++)
		if (bufs[i])
			munmap(bufs[i], sizes[i]);
	/* the device still answers after all that */
	op("ibv_query_port(1) after teardown");
	rc = ibv_query_port(ctx, 1, &pattr);
	done();
	if (check_rc_ok(rc, "ibv_query_port(1) after teardown"))
		check(pattr.state == IBV_PORT_ACTIVE, "port 1 still ACTIVE after teardown", "state %d", pattr.state);
	op("ibv_close_device");
	check_rc_ok(ibv_close_device(ctx), "ibv_close_device");
	done();
	ibv_free_device_list(list);
out:
	if (nfail)
		printf("VERBS-OBJECTS FAIL %d of %d checks failed\n", nfail, nchecks);
	else
		printf("VERBS-OBJECTS PASS %d checks\n", nchecks);
	return nfail ? 1 : 0;
}
