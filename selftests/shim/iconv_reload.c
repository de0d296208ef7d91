// SPDX-License-Identifier: GPL-2.0
/*
 * iconv_reload - 4 rounds of iconv_open + iconv_close over UTF-32,
 * UNICODE and three 8-bit charsets (reload_host_test.sh).  glibc loads a
 * gconv module per charset and unloads one that was unused for a few
 * closes with its own __libc_dlclose, which the shim's dlclose wrapper
 * never sees; the next module often lands at the same start under the
 * same link_map address.  At rate 1 each module's init samples (its
 * malloc), so the test can check the mapping records.  Exit 2 if a
 * charset is missing (no gconv modules installed).
 */
#include <iconv.h>

int main(void)
{
	static const char *const cs[] = {
		"UTF-32", "KOI8-R", "CP1251", "ISO-8859-5",
		"UNICODE", "KOI8-R", "CP1251", "ISO-8859-5",
	};

	for (int r = 0; r < 4; r++)
		for (unsigned int i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) {
			iconv_t c = iconv_open("UTF-8", cs[i]);

			if (c == (iconv_t)-1)
				return 2;
			iconv_close(c);
		}
	return 0;
}
