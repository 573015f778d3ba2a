/* SPDX-License-Identifier: MIT */
/*
 * For the tests that numbers are read and written the same under any
 * LC_NUMERIC: switch LC_NUMERIC to de_DE.UTF-8 or, where that locale is not
 * installed, to one made here with localedef (libc-bin) whose decimal point
 * is ',' as in de_DE. comma_locale_leave() goes back to "C" and removes it.
 */
#ifndef MEMLENS_TEST_COMMA_LOCALE_H
#define MEMLENS_TEST_COMMA_LOCALE_H

#include <locale.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

static char comma_dir[64];

static bool comma_locale_enter(void)
{
	static const char src[] = "LC_NUMERIC\ndecimal_point \",\"\nthousands_sep \".\"\n"
				  "grouping 3;3\nEND LC_NUMERIC\n";
	char path[128], cmd[512];
	FILE *f;

	comma_dir[0] = '\0';
	if (setlocale(LC_NUMERIC, "de_DE.UTF-8"))
		return true;
	snprintf(comma_dir, sizeof(comma_dir), "/tmp/memlens-locale.XXXXXX");
	if (!mkdtemp(comma_dir)) {
		comma_dir[0] = '\0';
		return false;
	}
	snprintf(path, sizeof(path), "%s/comma.src", comma_dir);
	f = fopen(path, "w");
	if (!f)
		return false;
	fputs(src, f);
	if (fclose(f))
		return false;
	snprintf(cmd, sizeof(cmd), "localedef -c -i %s -f ANSI_X3.4-1968 %s/comma >/dev/null 2>&1",
		 path, comma_dir);
	if (system(cmd) == -1)
		return false;
	setenv("LOCPATH", comma_dir, 1);
	return setlocale(LC_NUMERIC, "comma") != NULL;
}

static void comma_locale_leave(void)
{
	char cmd[128];

	setlocale(LC_NUMERIC, "C");
	unsetenv("LOCPATH");
	if (comma_dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", comma_dir);
		if (system(cmd))
			fprintf(stderr, "# could not remove %s\n", comma_dir);
		comma_dir[0] = '\0';
	}
}

#endif
