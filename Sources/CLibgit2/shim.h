#ifndef CONCORD_CLIBGIT2_SHIM_H
#define CONCORD_CLIBGIT2_SHIM_H
#include <git2.h>
#include <git2/sys/merge.h>
#include <git2/sys/mempack.h>
#include <git2/sys/odb_backend.h>
#include <git2/sys/repository.h>

/* git_libgit2_opts is variadic, which Swift cannot call: one typed wrapper per shape used. */
static inline int concord_git_opts_int(int option, int value) {
    return git_libgit2_opts(option, value);
}
#endif
