/* size.h: byte and count arguments with k, M, G suffixes (powers of 1024). */
#ifndef AB_SIZE_H
#define AB_SIZE_H

#include "err.h"

/* Parses "512", "64k", "1M", "2G" into *out, refusing 0, anything above
 * max, overflow and trailing garbage (AB_EUSAGE naming WHAT). */
int ab_parse_size(const char *s, long long max, const char *what,
    long long *out, struct ab_err *err);

#endif
