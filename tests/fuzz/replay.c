/* Replays a libFuzzer corpus without libFuzzer: every regular file under the directories (or the
 * files) named on the command line is passed once to LLVMFuzzerTestOneInput.  Used so that the
 * ordinary and the sanitizer builds run every seed as a test. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
			cap = cap ? cap * 2 : 4096;
			uint8_t *nb = realloc(buf, cap);
			if (nb == NULL) {
				free(buf);
				fclose(f);
				return -1;
			}
			buf = nb;
		}
		size_t n = fread(buf + len, 1, cap - len, f);
		if (n == 0)
			break;
		len += n;
	}
	fclose(f);
	/* An exact-size copy lets ASan catch reads one past the input. */
	uint8_t *exact = malloc(len ? len : 1);
	if (exact == NULL) {
		free(buf);
		return -1;
	}
	if (len)
		memcpy(exact, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	return 0;
}

static int replay_path(const char *path, size_t *count)
{
	struct stat st;
	if (stat(path, &st) == -1) {
		perror(path);
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		(*count)++;
		return replay_file(path);
	}
	DIR *d = opendir(path);
	if (d == NULL) {
		perror(path);
		return -1;
	}
	int rc = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char sub[4096];
		if ((size_t)snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >= sizeof sub)
			continue;
		if (replay_path(sub, count) == -1)
			rc = -1;
	}
	closedir(d);
	return rc;
}

int main(int argc, char **argv)
{
	size_t count = 0;
	int rc = 0;
	for (int i = 1; i < argc; i++)
		if (replay_path(argv[i], &count) == -1)
			rc = 1;
	printf("replayed %zu inputs\n", count);
	if (count == 0) {
		fprintf(stderr, "replay: no inputs found\n");
		return 1;
	}
	return rc;
}
