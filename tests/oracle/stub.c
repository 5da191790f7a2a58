/* The oracle's stand-in for every network program (tests/oracle/README.md): it appends what it
 * was run as to /tmp/.oracle-calls and does nothing else, so a line bash runs in the oracle's
 * sandbox reaches no network whatever it asks for.
 *
 * One record per call: the program it stands for, argv[0], what standard input is (p pipe,
 * f file, c character device, n none), then the arguments; fields end with 0x1f, the record
 * with 0x1e, all in one O_APPEND write.  The program it stands for is written after the ELF
 * image ("\nORACLE-ID:NAME\n" at the end of the file), so a copy or a link of a stub made by the
 * line still says what it is.  Each stub also prints `git push` on standard output: a
 * download's answer is code an attacker chose, so a line that runs it must be refused.
 *
 * git stubs with anything that makes git run a configured command (-c, --config-env,
 * --upload-pack, GIT_EDITOR, GIT_CONFIG_COUNT, ...) hand over to gitemu.py, which runs those
 * commands as git would. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef ORACLE_GITEMU
#error ORACLE_GITEMU must name gitemu.py
#endif

#define LOG_PATH "/tmp/.oracle-calls"

/* The NAME of the trailer at the end of our own executable, or NULL. */
static const char *identity(char *buf, size_t cap)
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return NULL;
	char tail[96];
	off_t end = lseek(fd, 0, SEEK_END);
	if (end < (off_t)sizeof tail) {
		close(fd);
		return NULL;
	}
	ssize_t n = pread(fd, tail, sizeof tail, end - (off_t)sizeof tail);
	close(fd);
	if (n != (ssize_t)sizeof tail || tail[sizeof tail - 1] != '\n')
		return NULL;
	const char *key = "\nORACLE-ID:";
	for (size_t i = sizeof tail - 1; i-- > 0;) {
		if (i + strlen(key) <= sizeof tail && memcmp(tail + i, key, strlen(key)) == 0) {
			size_t s = i + strlen(key), l = sizeof tail - 1 - s;
			if (l == 0 || l >= cap)
				return NULL;
			memcpy(buf, tail + s, l);
			buf[l] = '\0';
			return buf;
		}
	}
	return NULL;
}

static char stdin_kind(void)
{
	struct stat st;
	if (fstat(0, &st) == -1)
		return 'n';
	if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))
		return 'p';
	if (S_ISREG(st.st_mode))
		return 'f';
	return 'c';
}

static int put(char *buf, size_t cap, size_t *n, const char *s, char end)
{
	size_t l = strlen(s);
	if (*n + l + 1 > cap)
		return -1;
	memcpy(buf + *n, s, l);
	*n += l;
	buf[(*n)++] = end;
	return 0;
}

/* Whether git would run a command this call configures (over-approximated: gitemu.py looks
 * closer). */
static int git_configures(int argc, char **argv)
{
	static const char *const env[] = {"GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_SSH_COMMAND",
	        "GIT_SSH", "GIT_PAGER", "GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "SSH_ASKPASS",
	        "GIT_PROXY_COMMAND", "EDITOR", "VISUAL", "PAGER", "GIT_CONFIG_COUNT",
	        "GIT_CONFIG_PARAMETERS", NULL};
	for (size_t i = 0; env[i] != NULL; i++) {
		const char *v = getenv(env[i]);
		if (v != NULL && v[0] != '\0')
			return 1;
	}
	static const char *const pre[] = {"-c", "-u", "--c", "--u", "--r", "--e", NULL};
	for (int i = 1; i < argc; i++) {
		for (size_t k = 0; pre[k] != NULL; k++)
			if (strncmp(argv[i], pre[k], strlen(pre[k])) == 0)
				return 1;
		if (strstr(argv[i], "ext::") != NULL)
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	char idbuf[64];
	const char *id = identity(idbuf, sizeof idbuf);
	if (id == NULL) {
		const char *b = strrchr(argv[0], '/');
		id = b ? b + 1 : argv[0];
	}
	static char rec[1 << 16];
	size_t n = 0;
	char kind[2] = {stdin_kind(), '\0'};
	int ok = put(rec, sizeof rec, &n, id, '\x1f') == 0 &&
	         put(rec, sizeof rec, &n, argv[0], '\x1f') == 0 &&
	         put(rec, sizeof rec, &n, kind, '\x1f') == 0;
	for (int i = 1; ok && i < argc; i++)
		ok = put(rec, sizeof rec, &n, argv[i], '\x1f') == 0;
	if (!ok)
		n = 0; /* too long to keep: record the program alone */
	if (n == 0) {
		put(rec, sizeof rec, &n, id, '\x1f');
		put(rec, sizeof rec, &n, "?", '\x1f');
		put(rec, sizeof rec, &n, kind, '\x1f');
	}
	rec[n++] = '\x1e';
	int fd = open(LOG_PATH, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
	if (fd != -1) {
		ssize_t w = write(fd, rec, n);
		(void)w;
		close(fd);
	}
	signal(SIGPIPE, SIG_IGN);
	ssize_t w = write(1, "git push\n", 9);
	(void)w;
	if ((strcmp(id, "git") == 0 || strncmp(id, "git-", 4) == 0) && git_configures(argc, argv)) {
		char **nv = calloc((size_t)argc + 4, sizeof *nv);
		if (nv == NULL)
			return 0;
		nv[0] = "python3";
		nv[1] = ORACLE_GITEMU;
		nv[2] = (char *)id;
		for (int i = 1; i < argc; i++)
			nv[i + 2] = argv[i];
		execv("/usr/bin/python3", nv);
	}
	return 0;
}
