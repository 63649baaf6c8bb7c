/* LD_PRELOAD shim for tests/io_safety_dirs.rs (review 18 r18c F2): another
 * user slipping a link in at a name the program has just found missing,
 * at that chosen moment, with no race. The stat-family lookup of exactly
 * $LINK_AT that finds nothing (ENOENT), after $LINK_SKIP such lookups,
 * makes before it returns the link $LINK_AT -> $LINK_TO owned by uid/gid
 * $LINK_UID. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int done, seen;

static void after(const char *path, int ret) {
    const char *at = getenv("LINK_AT"), *to = getenv("LINK_TO");
    const char *uid = getenv("LINK_UID");
    if (done || ret == 0 || errno != ENOENT || !path || !at || !to || !uid) return;
    if (strcmp(path, at) != 0) return;
    const char *skip = getenv("LINK_SKIP");
    if (skip && seen++ < atoi(skip)) return;
    done = 1;
    int saved = errno;
    if (symlink(to, at) != 0) abort();
    if (lchown(at, atoi(uid), atoi(uid)) != 0) abort();
    errno = saved;
}

int statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *buf) {
    int (*real)(int, const char *, int, unsigned, struct statx *) = dlsym(RTLD_NEXT, "statx");
    int ret = real(dirfd, path, flags, mask, buf);
    after(path, ret);
    return ret;
}

int lstat64(const char *path, struct stat64 *buf) {
    int (*real)(const char *, struct stat64 *) = dlsym(RTLD_NEXT, "lstat64");
    int ret = real(path, buf);
    after(path, ret);
    return ret;
}

int lstat(const char *path, struct stat *buf) {
    int (*real)(const char *, struct stat *) = dlsym(RTLD_NEXT, "lstat");
    int ret = real(path, buf);
    after(path, ret);
    return ret;
}
