/* size.h: byte and count arguments with k, M, G suffixes (powers of 1024). */
#ifndef AB_SIZE_H
#define AB_SIZE_H

#include <stddef.h>

#include "err.h"

/* Parses "512", "64k", "1M", "2G" into *out, refusing 0, anything above
 * max, overflow and trailing garbage (AB_EUSAGE naming WHAT). */
int ab_parse_size(const char *s, long long max, const char *what,
    long long *out, struct ab_err *err);
/* N bytes as a person reads them: "1.5 GiB", "64.0 KiB", "300 bytes". */
void ab_human_size(long long n, char *out, size_t cap);

#endif
