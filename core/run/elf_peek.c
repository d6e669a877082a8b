#define _GNU_SOURCE
#include "run/elf_peek.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int in_file(size_t size, Elf64_Off off, size_t len) { return off <= size && len <= size - off; }

static int find_symbol(const unsigned char *f, size_t size, const char *name, void *out, size_t len, char *err,
                       size_t errlen) {
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)f;
    if (size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0) {
        snprintf(err, errlen, "not an ELF file");
        return -1;
    }
    if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_type != ET_DYN) {
        snprintf(err, errlen, "not a 64-bit ELF shared object (build it with -shared -fPIC)");
        return -1;
    }
    if (!in_file(size, eh->e_shoff, (size_t)eh->e_shnum * sizeof(Elf64_Shdr))) {
        snprintf(err, errlen, "truncated ELF file");
        return -1;
    }
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(f + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum) continue;
        const Elf64_Shdr *strs = &sh[sh[i].sh_link];
        if (!in_file(size, sh[i].sh_offset, sh[i].sh_size) || !in_file(size, strs->sh_offset, strs->sh_size)) break;
        const Elf64_Sym *sym = (const Elf64_Sym *)(f + sh[i].sh_offset);
        size_t nsym = sh[i].sh_size / sizeof *sym;
        for (size_t s = 0; s < nsym; s++) {
            if (sym[s].st_name >= strs->sh_size || sym[s].st_shndx == SHN_UNDEF || sym[s].st_shndx >= eh->e_shnum)
                continue;
            const char *sname = (const char *)f + strs->sh_offset + sym[s].st_name;
            if (strncmp(sname, name, strs->sh_size - sym[s].st_name) != 0) continue;
            const Elf64_Shdr *sec = &sh[sym[s].st_shndx];
            if (sec->sh_type == SHT_NOBITS || sym[s].st_size < len || sym[s].st_value < sec->sh_addr) {
                snprintf(err, errlen, "symbol %s has no initialised data of %zu bytes", name, len);
                return -1;
            }
            Elf64_Off off = sec->sh_offset + (sym[s].st_value - sec->sh_addr);
            if (!in_file(size, off, len)) break;
            memcpy(out, f + off, len);
            return 0;
        }
    }
    snprintf(err, errlen, "it does not export the symbol \"%s\"", name);
    return -1;
}

int sr__elf_peek_symbol(const char *path, const char *name, void *out, size_t len, char *err, size_t errlen) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open it: %s", strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
        close(fd);
        snprintf(err, errlen, "not a regular, non-empty file");
        return -1;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        snprintf(err, errlen, "cannot map it: %s", strerror(errno));
        return -1;
    }
    int rc = find_symbol(m, (size_t)st.st_size, name, out, len, err, errlen);
    munmap(m, (size_t)st.st_size);
    return rc;
}
