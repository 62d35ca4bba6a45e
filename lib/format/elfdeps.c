#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfdeps.h"

struct image {
	const unsigned char *p;
	size_t len;
	const Elf64_Ehdr *eh;
};

static const Elf64_Phdr *phdr(const struct image *im, int i)
{
	return (const Elf64_Phdr *)(im->p + im->eh->e_phoff +
	    (size_t)i * im->eh->e_phentsize);
}

/* Maps a virtual address to a file offset through the PT_LOAD segments. */
static int vaddr_off(const struct image *im, Elf64_Addr va, size_t *off)
{
	const Elf64_Phdr *ph;
	int i;

	for (i = 0; i < im->eh->e_phnum; i++) {
		ph = phdr(im, i);
		if (ph->p_type == PT_LOAD && va >= ph->p_vaddr &&
		    va - ph->p_vaddr < ph->p_filesz) {
			*off = ph->p_offset + (va - ph->p_vaddr);
			return *off < im->len ? 0 : -1;
		}
	}
	return -1;
}

static char *bounded_str(const struct image *im, size_t off)
{
	const unsigned char *end;

	if (off >= im->len)
		return NULL;
	end = memchr(im->p + off, '\0', im->len - off);
	return end == NULL ? NULL : strdup((const char *)im->p + off);
}

static int add_needed(struct ab_elf_deps *d, char *s)
{
	char **v = realloc(d->needed, (d->n + 1) * sizeof *v);

	if (v == NULL || s == NULL) {
		free(s);
		if (v != NULL)
			d->needed = v;
		return -1;
	}
	d->needed = v;
	d->needed[d->n++] = s;
	return 0;
}

static int read_dynamic(const struct image *im, const Elf64_Phdr *dyn,
    struct ab_elf_deps *d)
{
	const Elf64_Dyn *e;
	size_t i, n, stroff = 0;
	Elf64_Addr strtab = 0;

	if (dyn->p_offset > im->len || dyn->p_filesz > im->len - dyn->p_offset)
		return -1;
	e = (const Elf64_Dyn *)(im->p + dyn->p_offset);
	n = dyn->p_filesz / sizeof *e;
	for (i = 0; i < n && e[i].d_tag != DT_NULL; i++)
		if (e[i].d_tag == DT_STRTAB)
			strtab = e[i].d_un.d_ptr;
	if (strtab == 0 || vaddr_off(im, strtab, &stroff) < 0)
		return -1;
	for (i = 0; i < n && e[i].d_tag != DT_NULL; i++)
		if (e[i].d_tag == DT_NEEDED &&
		    add_needed(d, bounded_str(im, stroff + e[i].d_un.d_val)) < 0)
			return -1;
	return 0;
}

static int parse(const struct image *im, struct ab_elf_deps *d)
{
	const Elf64_Ehdr *eh = im->eh;
	const Elf64_Phdr *ph;
	int i;

	if (im->len < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phoff > im->len ||
	    (size_t)eh->e_phnum * sizeof(Elf64_Phdr) > im->len - eh->e_phoff)
		return -1;
	for (i = 0; i < eh->e_phnum; i++) {
		ph = phdr(im, i);
		if (ph->p_type == PT_INTERP && d->interp == NULL &&
		    (d->interp = bounded_str(im, ph->p_offset)) == NULL)
			return -1;
		if (ph->p_type == PT_DYNAMIC && read_dynamic(im, ph, d) < 0)
			return -1;
	}
	return 0;
}

int ab_elf_deps(const char *path, struct ab_elf_deps *d, struct ab_err *err)
{
	struct image im;
	struct stat st;
	void *map;
	int fd, rc;

	memset(d, 0, sizeof *d);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ab_fail_errno(err, AB_EENGINE, "cannot open %s", path);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
		close(fd);
		return ab_fail(err, AB_EREFUSED, "%s is not an executable",
		    path);
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return ab_fail_errno(err, AB_EENGINE, "cannot map %s", path);
	im.p = map;
	im.len = (size_t)st.st_size;
	im.eh = map;
	rc = parse(&im, d);
	munmap(map, (size_t)st.st_size);
	if (rc < 0) {
		ab_elf_deps_free(d);
		return ab_fail(err, AB_EREFUSED,
		    "%s is not a 64-bit ELF file agentbox can read", path);
	}
	return 0;
}

void ab_elf_deps_free(struct ab_elf_deps *d)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		free(d->needed[i]);
	free(d->needed);
	free(d->interp);
	memset(d, 0, sizeof *d);
}
