/*
 * A dynamically linked program for tests/programs_test, run from morselfs
 * with libmsl.so from morselfs (LD_LIBRARY_PATH).  Writes its own .data and
 * calls into the library (whose .data it also changes), then prints every
 * file under argv[1] that /proc/self/maps shows mapped.
 */
#include <stdio.h>
#include <string.h>

int msl_next(void);
unsigned int msl_mix(unsigned int x);

static char word[] = "hello";

int main(int argc, char **argv)
{
	char line[4096], last[4096] = "";
	FILE *f;
	int a, b;

	word[0] = 'H';
	a = msl_next();
	b = msl_next();
	printf("%s %d %d %u\n", word, a, b, msl_mix(12345));
	if (argc < 2)
		return 0;
	f = fopen("/proc/self/maps", "r");
	if (!f)
		return 1;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, argv[1]);

		if (p && strcmp(p, last)) {
			printf("mapped %s", p);
			strcpy(last, p);
		}
	}
	fclose(f);
	return 0;
}
