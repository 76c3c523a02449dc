// Transparent huge pages for the heap.
//
// Why. A 5,000-name request reads thousands of node entries scattered over
// tens of MB of heap; with 4 KiB pages nearly every entry is a TLB miss, and
// in a virtual machine each miss is a two-level page walk. Asking the kernel
// for 2 MiB pages for the heap made every profile's names-mode request
// 13–40 % cheaper in CPU (docs/benchmarks.md, schedext-hot-bench A/B) for
// ~2 % more peak memory at 15,000 nodes / 150,000 pods.
//
// How. Kernels in THP "madvise" mode (Debian's default) give huge pages only
// to memory that asks for them, and glibc's malloc asks only when the tunable
// glibc.malloc.hugetlb=1 is set, which glibc reads once, at start-up. So the
// server re-executes itself (the same binary, argv and pid) with that
// tunable added to GLIBC_TUNABLES, before it starts any thread or opens any
// file. Nothing happens when the kernel is in "always" (the heap gets them
// anyway) or "never" mode, or when GLIBC_TUNABLES already names
// glibc.malloc.hugetlb: an operator turns this off with
// GLIBC_TUNABLES=glibc.malloc.hugetlb=0.
#ifndef SCHEDEXT_SRC_COMMON_HEAP_PAGES_H_
#define SCHEDEXT_SRC_COMMON_HEAP_PAGES_H_

#include <optional>
#include <string>
#include <string_view>

namespace schedext::common {

// The GLIBC_TUNABLES value to re-execute with, given the current one (null:
// unset) and the text of /sys/kernel/mm/transparent_hugepage/enabled (its
// active mode in brackets, "always [madvise] never"); nullopt: nothing to do.
std::optional<std::string> TunablesForHeapHugePages(const char* tunables,
                                                    std::string_view thp_enabled);

// Re-executes /proc/self/exe with `argv` and the tunables above when
// TunablesForHeapHugePages asks for it. Returns only when it does not (or when
// exec fails: the process then goes on with the pages it has).
void ReexecWithHeapHugePages(char** argv);

// Whether this process's malloc asks for huge pages (the tunable is set to 1).
bool HeapHugePagesRequested();

}  // namespace schedext::common

#endif  // SCHEDEXT_SRC_COMMON_HEAP_PAGES_H_
