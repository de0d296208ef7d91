// SPDX-License-Identifier: GPL-2.0
// nextdef_cmain's C++ plugin: a new[] that cannot be served must throw
// std::bad_alloc, after calling the new_handler, as without the shim.
#include <cstddef>
#include <cstdio>
#include <new>

static int handler_calls;

static void handler()
{
	handler_calls++;
	std::set_new_handler(nullptr);
}

extern "C" int plug_run(void)
{
	volatile std::size_t n = std::size_t(1) << 62;

	try {
		char *p = new char[n];
		std::printf("allocated %p\n", static_cast<void *>(p));
	} catch (const std::bad_alloc &) {
		std::puts("caught bad_alloc");
	}
	std::set_new_handler(handler);
	try {
		char *p = new char[n];
		std::printf("allocated %p\n", static_cast<void *>(p));
	} catch (const std::bad_alloc &) {
		std::printf("handler calls %d\n", handler_calls);
	}
	return 0;
}
