/* A shared library of our own for tests/programs_test: run from morselfs. */
static int counter = 41;	/* .data: written, so a private copy of the page */

int msl_next(void)
{
	return ++counter;
}

unsigned int msl_mix(unsigned int x)
{
	return (x * 2654435761u) >> 7;
}
