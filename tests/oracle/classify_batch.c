/* The oracle's view of the classifier: reads command lines separated by NUL bytes from standard
 * input and prints one answer per line: the sorted comma-joined tags, `none`, or `refused`
 * followed by a tab and the reason. */
#include <stdio.h>
#include <stdlib.h>

#include "allowlist/tags.h"
#include "classifier/classifier.h"

int main(void)
{
	char *buf = NULL;
	size_t cap = 0;
	ssize_t got;
	while ((got = getdelim(&buf, &cap, '\0', stdin)) != -1) {
		size_t len = (size_t)got;
		if (len > 0 && buf[len - 1] == '\0')
			len--;
		struct cls_result r;
		if (cls_classify(buf, len, &r) == -1) {
			printf("refused\t%s\n", r.reason);
		} else {
			char tags[160];
			allow_tags_format(r.tags, ",", tags, sizeof tags);
			printf("%s\n", tags);
		}
		cls_result_free(&r);
	}
	free(buf);
	return 0;
}
