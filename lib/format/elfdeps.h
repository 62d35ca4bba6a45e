/* elfdeps.h: the shared libraries an ELF executable names (DT_NEEDED) and its
 * interpreter, read from the file without running anything (ldd would). */
#ifndef AB_ELFDEPS_H
#define AB_ELFDEPS_H

#include <stddef.h>

#include "err.h"

struct ab_elf_deps {
	char *interp;		/* PT_INTERP path, or NULL */
	char **needed;		/* DT_NEEDED names */
	size_t n;
};

int ab_elf_deps(const char *path, struct ab_elf_deps *d, struct ab_err *err);
void ab_elf_deps_free(struct ab_elf_deps *d);

#endif
