/*
 * A standalone driver for the fuzz targets of tests/fuzz/, for compilers
 * without libFuzzer (gcc): runs LLVMFuzzerTestOneInput once on each file
 * named on the command line, or on each file of each directory named (one
 * level, in name order), as libFuzzer does when given files instead of a
 * corpus to grow. make check's fuzz smoke (mk/fuzz.mk) replays the seed
 * corpora with it, under the sanitizers of the build (make asan); a
 * target's oracle aborts on a broken promise, which fails the run.
 *
 * Prints "<target>: N inputs" and exits 0, or 1 when an input could not
 * be read (a crash is the target's abort).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* At most what `make fuzz` lets libFuzzer make (-max_len=4096), with room. */
#define DRIVER_MAX_INPUT (1 << 20)

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf;
    size_t n;

    if (!f) {
        fprintf(stderr, "fuzz driver: cannot open %s\n", path);
        return -1;
    }
    buf = malloc(DRIVER_MAX_INPUT);
    if (!buf) {
        fclose(f);
        return -1;
    }
    n = fread(buf, 1, DRIVER_MAX_INPUT, f);
    fclose(f);
    /* a copy of exactly n bytes, so that ASan sees a read past the input */
    {
        uint8_t *exact = malloc(n ? n : 1);
        if (!exact) {
            free(buf);
            return -1;
        }
        memcpy(exact, buf, n);
        free(buf);
        LLVMFuzzerTestOneInput(exact, n);
        free(exact);
    }
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir, int *count)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, cap = 0, i;
    int rc = 0;

    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            char **v = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof *v);
            if (!v) {
                rc = -1;
                break;
            }
            names = v;
        }
        names[n] = malloc(strlen(dir) + strlen(e->d_name) + 2);
        if (!names[n]) {
            rc = -1;
            break;
        }
        sprintf(names[n], "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, by_name);
    for (i = 0; i < n; i++) {
        if (rc == 0 && run_file(names[i]) != 0)
            rc = -1;
        else if (rc == 0)
            (*count)++;
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    int i, count = 0, rc = 0;

    for (i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "fuzz driver: no such file or directory: %s\n", argv[i]);
            rc = 1;
        } else if (S_ISDIR(st.st_mode) ? run_dir(argv[i], &count) != 0
                                       : (run_file(argv[i]) != 0 || (count++, 0))) {
            rc = 1;
        }
    }
    printf("%s: %d inputs\n", argc > 0 ? argv[0] : "fuzz", count);
    return rc;
}
