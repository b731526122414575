/*
 * fuzz_replay.c - main() of a fuzz target in a normal build (no libFuzzer): runs
 * LLVMFuzzerTestOneInput once on every file of the directories (and files) given, so ctest
 * replays each target's seed corpus and its regression inputs (tests/fuzz/regress/<target>/:
 * inputs that once crashed) in every build. Exits 0 when every input ran; a finding aborts.
 */
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_target.h"

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        return -1;
    }
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? 2 * cap : 4096;
            uint8_t *nb = realloc(buf, cap);
            if (nb == NULL)
                abort();
            buf = nb;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        if (n == 0)
            break;
        len += n;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    unsigned inputs = 0;
    int failed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            continue; /* a target may have no regression inputs yet */
        }
        if (!S_ISDIR(sb.st_mode)) {
            failed |= replay_file(argv[i]) != 0;
            inputs++;
            continue;
        }
        struct dirent **names;
        int n = scandir(argv[i], &names, NULL, alphasort);
        for (int k = 0; k < n; k++) {
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s", argv[i], names[k]->d_name);
            if (names[k]->d_name[0] != '.' && stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
                failed |= replay_file(path) != 0;
                inputs++;
            }
            free(names[k]);
        }
        free(names);
    }
    printf("%s: %u inputs replayed\n", argc > 0 ? argv[0] : "fuzz", inputs);
    return failed ? 1 : 0;
}
