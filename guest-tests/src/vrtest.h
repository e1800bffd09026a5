/*
 * vrtest.h: what the guest test programs share (guest-tests/src, compiled by harness/vrnic_harness/guestbin.py).
 * Define VT_NAME (the program's tag, e.g. "ERR-TEST") before including it.
 *
 *   CHECK(cond, fmt, ...)  one line per check, "ok   <what>" or "FAIL <what>"; counts checks and fails; its value
 *                          is whether cond held
 *   DIE(fmt, ...)          "<VT_NAME> FAIL <what> (errno N)", exit 1: the program cannot go on
 *   vt_end()               the last line, "<VT_NAME> PASS <n> checks" or "<VT_NAME> FAIL <f> of <n> checks";
 *                          the exit code (0 only on PASS)
 *   now()                  CLOCK_MONOTONIC in seconds
 */
#ifndef VRTEST_H
#define VRTEST_H
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef VT_NAME
#error "define VT_NAME (the program's tag in its PASS/FAIL lines) before including vrtest.h"
#endif

static int checks, fails;

#define CHECK(cond, ...) ({ int ok_ = !!(cond); checks++; if (ok_) { printf("ok   "); } else { fails++; printf("FAIL "); } \
	printf(__VA_ARGS__); printf("\n"); fflush(stdout); ok_; })
#define DIE(...) do { printf(VT_NAME " FAIL "); printf(__VA_ARGS__); printf(" (errno %d)\n", errno); exit(1); } while (0)

static inline int vt_end(void)
{
	if (fails)
		printf(VT_NAME " FAIL %d of %d checks\n", fails, checks);
	else
		printf(VT_NAME " PASS %d checks\n", checks);
	return fails != 0;
}

static inline double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}
#endif
