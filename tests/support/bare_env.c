/* Runs a program with environment strings that have no '=' added to its
 * own (the kernel counts them against exec's limits; a program reading its
 * environment as NAME=VALUE pairs does not see them).
 * usage: bare_env COUNT LENGTH PROGRAM [ARG...] */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv) {
    if (argc < 4) return 2;
    int count = atoi(argv[1]);
    size_t length = (size_t)atol(argv[2]);
    size_t have = 0;
    while (environ[have]) have++;
    char **env = calloc(have + count + 1, sizeof *env);
    if (!env) return 71;
    memcpy(env, environ, have * sizeof *env);
    for (int i = 0; i < count; i++) {
        char *s = malloc(length + 1);
        if (!s) return 71;
        memset(s, 'b', length);
        s[length] = 0;
        env[have + i] = s;
    }
    execve(argv[3], argv + 3, env);
    return 127;
}
