#include <new>
#include <cstdio>
#include <cstddef>
static int handler_calls;
extern "C" int plug_run(void)
{
	try {
		volatile size_t n = (size_t)1 << 62;
		char *p = new char[n];
		std::printf("allocated?! %p\n", (void *)p);
	} catch (const std::bad_alloc &) {
		std::puts("caught bad_alloc");
	}
	std::set_new_handler([] { handler_calls++; std::set_new_handler(nullptr); });
	try { volatile size_t n = (size_t)1 << 62; char *p = new char[n]; (void)p; } catch (const std::bad_alloc &) { std::printf("handler calls %d\n", handler_calls); }
	return 0;
}
