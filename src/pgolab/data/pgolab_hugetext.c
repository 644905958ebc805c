/* pgolab's _hugetext axis: linked into a server, it moves the program's code onto 2 MiB pages
 * when the program starts.
 *
 * A kernel gives huge pages to a binary's file-backed text only with CONFIG_READ_ONLY_THP_FOR_FS,
 * which Debian's and these machines' kernels lack (BOLT's -hugify asked and got none here). Anonymous
 * memory gets them wherever transparent huge pages are "madvise" or "always". So the code's
 * 2 MiB-aligned interior is copied into an anonymous area marked MADV_HUGEPAGE, made read-only and
 * executable, and moved over the original with one mremap: the bytes at every address stay the same,
 * so the code that runs it (this function, if it lies inside) goes on unharmed.
 *
 * It does nothing, and the program runs as linked, when:
 *   - PGOLAB_HUGETEXT=0 is set (to compare both ways with one binary);
 *   - transparent huge pages are "never", or disabled for this process (PR_SET_THP_DISABLE): the copy
 *     would cost its memory and gain nothing;
 *   - the program runs under valgrind (cost mode): valgrind would see its code replaced, and it
 *     simulates no TLB, so it could not see the difference anyway;
 *   - this object was linked into a shared library rather than the program (a server's build may
 *     pass its link flags to both): the copy is the program's;
 *   - the code has no whole 2 MiB page (x86-64's PMD size), or a step before the move fails (the
 *     original mapping is then untouched). The move itself, mremap, releases the original range
 *     first; should it fail after that (out of memory maps), the program dies at start-up.
 * What the copy costs: its memory is the process's own, charged to the commit limit (once more by each
 * forked process, though the pages stay shared until written, which code never is), not shared with
 * other processes through the page cache; and tools that name functions from /proc/PID/maps (perf)
 * see the moved range as anonymous memory.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#define PGOLAB_HUGE_PAGE ((uintptr_t)2 << 20)

struct pgolab_code {
    uintptr_t lo[8], hi[8];    /* each executable segment's whole 2 MiB pages */
    int count;
    int own;                   /* this function lies in the program, not in a shared library */
};

static int pgolab_program_code(struct dl_phdr_info *info, size_t size, void *data) {
    struct pgolab_code *code = data;
    uintptr_t self = (uintptr_t)&pgolab_program_code;
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t start = info->dlpi_addr + ph->p_vaddr, end = start + ph->p_memsz;
        if (self >= start && self < end)
            code->own = 1;
        /* (A writable one would fault once read-only: it is left as it is.) */
        if (!(ph->p_flags & PF_X) || (ph->p_flags & PF_W) || code->count == 8)
            continue;
        uintptr_t lo = (start + PGOLAB_HUGE_PAGE - 1) & ~(PGOLAB_HUGE_PAGE - 1);
        uintptr_t hi = end & ~(PGOLAB_HUGE_PAGE - 1);
        if (hi > lo) {
            code->lo[code->count] = lo;
            code->hi[code->count++] = hi;
        }
    }
    return 1;    /* the first object is the program itself: stop there */
}

static void pgolab_move_to_huge_pages(uintptr_t lo, uintptr_t hi) {
    size_t length = hi - lo;
    char *area = mmap(NULL, length + PGOLAB_HUGE_PAGE, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED)
        return;
    /* A 2 MiB-aligned copy, so that the kernel can back it, and keep it backed when moved, by PMDs. */
    char *copy = (char *)(((uintptr_t)area + PGOLAB_HUGE_PAGE - 1) & ~(PGOLAB_HUGE_PAGE - 1));
    if (copy > area)
        munmap(area, (size_t)(copy - area));
    if (area + length + PGOLAB_HUGE_PAGE > copy + length)
        munmap(copy + length, (size_t)(area + length + PGOLAB_HUGE_PAGE - (copy + length)));
    madvise(copy, length, MADV_HUGEPAGE);
    memcpy(copy, (const void *)lo, length);
    if (mprotect(copy, length, PROT_READ | PROT_EXEC) != 0
        || mremap(copy, length, length, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)lo) == MAP_FAILED)
        munmap(copy, length);
}

static int pgolab_huge_pages_allowed(void) {
    char setting[128] = "";
    int fd = open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, setting, sizeof setting - 1);
    close(fd);
    return n > 0 && !strstr(setting, "[never]") && prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) != 1;
}

__attribute__((constructor)) static void pgolab_hugetext(void) {
    const char *off = getenv("PGOLAB_HUGETEXT"), *preload = getenv("LD_PRELOAD");
    if ((off && strcmp(off, "0") == 0) || (preload && strstr(preload, "vgpreload")) || !pgolab_huge_pages_allowed())
        return;
    struct pgolab_code code = {0};
    dl_iterate_phdr(pgolab_program_code, &code);
    if (!code.own)
        return;
    for (int i = 0; i < code.count; i++)
        pgolab_move_to_huge_pages(code.lo[i], code.hi[i]);
}
