// SPDX-License-Identifier: GPL-2.0
// cxx_demo - a C++ object for symbolize_test: a namespaced method (for
// demangling) and a function that is in .symtab only (for debug files).
namespace kpp_demo {
struct Shop {
	int checkout(int n);
};

__attribute__((noinline)) int Shop::checkout(int n)
{
	volatile int s = 0;

	for (int i = 0; i < n; i++)
		s += i;
	return s;
}
} // namespace kpp_demo

// Hidden: not in .dynsym, so a stripped copy has no name for it.
__attribute__((noinline, visibility("hidden"))) int hidden_helper(int n)
{
	volatile int s = 1;

	for (int i = 0; i < n; i++)
		s *= 3;
	return s;
}

extern "C" void *cxx_demo_hidden(void)
{
	return (void *)&hidden_helper;
}
