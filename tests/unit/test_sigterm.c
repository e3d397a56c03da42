/* tests/unit/test_sigterm.c - the notice carried in ssgd's all-reduce (worker/sigterm.h):
 * every rank's packed slot, summed as the all-reduce sums it (in floats, like MPI_SUM of
 * MPI_FLOAT), decodes to the same contributing-rank count and the ranks that heard a
 * notice, for worlds up to 4000 ranks; nobody heard one decodes to 0, as the plain
 * contributing count did before. The handler hears SIGTERM and a drain's SIGUSR1, and knows
 * when another handler took either. */
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "notice.h"
#include "sigterm.h"

static void sum_and_check(int nranks, int every_contrib, int every_heard)
{
    float sum = 0;
    int want_c = 0, want_h = 0;
    for (int r = 0; r < nranks; r++) {
        int c = r % every_contrib == 0, h = r % every_heard == 0;
        want_c += c;
        want_h += h;
        sum += sigterm_slot_pack(c, h, nranks);
    }
    int heard = -1;
    assert_int_equal(sigterm_slot_unpack(sum, nranks, &heard), want_c);
    assert_int_equal(heard, want_h);
}

static void test_slot_round_trip(void **state)
{
    (void)state;
    const int worlds[] = {1, 2, 3, 8, 64, 1000, 4000};
    for (size_t i = 0; i < sizeof worlds / sizeof *worlds; i++) {
        int n = worlds[i];
        sum_and_check(n, 1, n + 1); /* every rank contributes, nobody heard one */
        sum_and_check(n, 1, 1);     /* every rank heard one */
        sum_and_check(n, 2, 3);
        sum_and_check(n, 3, 2);
    }
}

static void test_nobody_heard_is_the_plain_count(void **state)
{
    (void)state;
    /* no notice: the slot is the 0/1 contribution it always was (GNS reads the count) */
    assert_true(sigterm_slot_pack(1, 0, 2) == 1.0f);
    assert_true(sigterm_slot_pack(0, 0, 2) == 0.0f);
    int heard = -1;
    assert_int_equal(sigterm_slot_unpack(2.0f, 2, &heard), 2);
    assert_int_equal(heard, 0);
    /* one of two ranks heard one: 2 contributors + 3 */
    assert_int_equal(sigterm_slot_unpack(5.0f, 2, &heard), 2);
    assert_int_equal(heard, 1);
}

/* The handler takes a drain's SIGUSR1 (what mpirun forwards at once) as it takes SIGTERM:
 * the flag says which came last, and neither ends the process. */
static void test_both_notices_heard(void **state)
{
    (void)state;
    assert_int_equal(sigterm_install(), 0);
    assert_int_equal(sigterm_heard(), 0);
    assert_int_equal(raise(NOTICE_FORWARDED_SIGNAL), 0);
    assert_int_equal(sigterm_heard(), SIGUSR1);
    assert_int_equal(raise(SIGTERM), 0);
    assert_int_equal(sigterm_heard(), SIGTERM);
}

/* sigterm_installed sees another handler taking either signal (what an MPI_Init might
 * do), so that the worker installs its own again after it. */
static void test_installed_sees_a_replacement(void **state)
{
    (void)state;
    assert_int_equal(sigterm_install(), 0);
    assert_int_equal(sigterm_installed(), 1);
    signal(NOTICE_FORWARDED_SIGNAL, SIG_IGN);
    assert_int_equal(sigterm_installed(), 0);
    assert_int_equal(sigterm_install(), 0);
    signal(SIGTERM, SIG_IGN);
    assert_int_equal(sigterm_installed(), 0);
    assert_int_equal(sigterm_install(), 0);
    assert_int_equal(sigterm_installed(), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slot_round_trip),
        cmocka_unit_test(test_nobody_heard_is_the_plain_count),
        cmocka_unit_test(test_both_notices_heard),
        cmocka_unit_test(test_installed_sees_a_replacement),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
