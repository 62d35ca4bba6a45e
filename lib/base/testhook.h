/* testhook.h: AB_TEST_PAUSE points (agentbox(7), "TEST HOOKS").
 *
 * When $AB_TEST_PAUSE names POINT, the tool stops itself with SIGSTOP
 * there, so a test can change the world or kill it at exactly that moment.
 * Unset, nothing changes.  Points are listed in each tool's man page.
 */
#ifndef AB_TESTHOOK_H
#define AB_TESTHOOK_H

void ab_test_pause(const char *point);

#endif
