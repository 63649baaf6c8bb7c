/* Stands in for kubelet (and any ExecStart program) under a real systemd:
 * writes its argv (hex, one per line), /proc/self/exe, its environment and
 * its blocked and ignored signal masks to $RECORD_DIR/<unit>.<start>.<pid>, where <unit> is the last
 * component of its cgroup and <start> CLOCK_MONOTONIC in ns (PIDs wrap, so they do not order starts); sends READY=1 to $NOTIFY_SOCKET so Type=notify units start. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

extern char **environ;

static void hex(FILE *f, const char *s) {
    for (; *s; s++) fprintf(f, "%02x", (unsigned char)*s);
    fputc('\n', f);
}

int main(int argc, char **argv) {
    const char *dir = getenv("RECORD_DIR");
    char unit[256] = "unknown", line[4096], path[4500], exe[4096];
    FILE *cg = fopen("/proc/self/cgroup", "r");
    if (cg) {
        while (fgets(line, sizeof line, cg)) {
            char *slash = strrchr(line, '/');
            if (slash) {
                snprintf(unit, sizeof unit, "%s", slash + 1);
                unit[strcspn(unit, "\n")] = 0;
            }
        }
        fclose(cg);
    }
    if (!dir) dir = "/tmp";
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    snprintf(path, sizeof path, "%s/%s.%lld.%d", dir, unit,
             (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec, (int)getpid());
    FILE *f = fopen(path, "w");
    if (!f) return 71;
    fprintf(f, "argc %d\n", argc);
    for (int i = 0; i < argc; i++) hex(f, argv[i]);
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    fprintf(f, "exe\n");
    hex(f, exe);
    /* Before the environment: its lines run to the end of the record. */
    fprintf(f, "signals\n");
    FILE *st = fopen("/proc/self/status", "r");
    while (st && fgets(line, sizeof line, st))
        if (!strncmp(line, "SigBlk:", 7) || !strncmp(line, "SigIgn:", 7)) fputs(line, f);
    if (st) fclose(st);
    fprintf(f, "env\n");
    for (char **e = environ; *e; e++) hex(f, *e);
    fclose(f);
    const char *ns = getenv("NOTIFY_SOCKET");
    if (ns && *ns) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        strncpy(sa.sun_path, ns, sizeof sa.sun_path - 1);
        if (sa.sun_path[0] == '@') sa.sun_path[0] = 0;
        int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
        sendto(fd, "READY=1", 7, 0, (struct sockaddr *)&sa,
               offsetof(struct sockaddr_un, sun_path) + strlen(ns));
    }
    /* Play a kubelet that refuses a flag: exit 1 when an argument contains
     * $RECORDER_FAIL_IF_ARG; otherwise stay up $RECORDER_SLEEP seconds. */
    const char *refuse = getenv("RECORDER_FAIL_IF_ARG");
    for (int i = 1; refuse && *refuse && i < argc; i++)
        if (strstr(argv[i], refuse)) return 1;
    /* Play kubeadm's kubelet before `join`: exit 1 while $RECORDER_FAIL_IF_MISSING
     * does not exist. $RECORDER_JOIN_AFTER=N: the Nth start of this unit
     * (counted in $RECORD_DIR/<unit>.count) "joins" first: it creates the
     * files named in $RECORDER_JOIN_FILES (':'-separated), then fails. */
    const char *missing = getenv("RECORDER_FAIL_IF_MISSING");
    if (missing && *missing && access(missing, F_OK) != 0) {
        const char *after = getenv("RECORDER_JOIN_AFTER");
        const char *files = getenv("RECORDER_JOIN_FILES");
        if (after && files) {
            char cpath[4600];
            int count = 0;
            snprintf(cpath, sizeof cpath, "%s/%s.count", dir, unit);
            FILE *c = fopen(cpath, "r");
            if (c) { if (fscanf(c, "%d", &count) != 1) count = 0; fclose(c); }
            count++;
            c = fopen(cpath, "w");
            if (c) { fprintf(c, "%d\n", count); fclose(c); }
            if (count >= atoi(after)) {
                char list[4096];
                snprintf(list, sizeof list, "%s", files);
                for (char *p = strtok(list, ":"); p; p = strtok(NULL, ":")) {
                    FILE *j = fopen(p, "w");
                    if (j) fclose(j);
                }
            }
        }
        return 1;
    }
    const char *nap = getenv("RECORDER_SLEEP");
    if (nap) sleep(atoi(nap));
    const char *code = getenv("RECORDER_EXIT");
    return code ? atoi(code) : 0;
}
