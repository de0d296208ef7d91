// SPDX-License-Identifier: GPL-2.0
// cxx_throw: a C++ program that throws and catches (exception objects come
// from __cxa_allocate_exception -> malloc), with containers around it.
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

static int parse(const std::string &s)
{
	if (s.empty() || s[0] == 'x')
		throw std::invalid_argument("bad token: " + s);
	return std::stoi(s);
}

int main()
{
	std::map<std::string, int> counts;
	long sum = 0, errors = 0;

	for (int i = 0; i < 20000; i++) {
		std::string tok = (i % 7 == 0) ? "x" + std::to_string(i) : std::to_string(i);
		try {
			sum += parse(tok);
			counts[tok.substr(0, 2)]++;
		} catch (const std::exception &e) {
			errors++;
			std::vector<std::string> v(3, e.what());
			counts["err"] += (int)v.size();
		}
	}
	std::printf("sum %ld errors %ld keys %zu\n", sum, errors, counts.size());
	return 0;
}
