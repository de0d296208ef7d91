// SPDX-License-Identifier: GPL-2.0
// std::thread, mutexes of every kind, condition variables, futures,
// exceptions across threads, thread_local destructors, call_once.
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <queue>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

static std::mutex m;
static std::recursive_mutex rm;
static std::timed_mutex tm;
static std::shared_mutex sm;
static std::condition_variable cv;
static std::condition_variable_any cva;
static std::once_flag once;
static std::atomic<long> tl_dtors{0};

struct TL { std::vector<int> v = std::vector<int>(100, 1); ~TL() { tl_dtors += v.size(); } };
static thread_local TL tl;

static long rec(int d) { std::lock_guard<std::recursive_mutex> g(rm); return d ? 1 + rec(d - 1) : 0; }

int main(int argc, char **argv) {
	const int N = 8; const int ITER = argc > 1 ? atoi(argv[1]) : 20000;
	long counter = 0; std::map<int, std::string> shared_map;
	std::queue<std::unique_ptr<std::string>> q; bool done = false;
	std::atomic<long> consumed{0}, throws{0}, once_calls{0}, timed{0};
	std::vector<std::thread> ts;
	// producer/consumer over a condition variable
	std::thread cons([&] {
		std::unique_lock<std::mutex> l(m);
		for (;;) {
			cv.wait(l, [&] { return done || !q.empty(); });
			while (!q.empty()) { consumed += q.front()->size(); q.pop(); }
			if (done) break;
		}
	});
	for (int t = 0; t < N; t++)
		ts.emplace_back([&, t] {
			(void)tl.v.size();
			std::call_once(once, [&] { once_calls++; });
			for (int i = 0; i < ITER; i++) {
				{ std::lock_guard<std::mutex> g(m); counter++; q.push(std::make_unique<std::string>(i % 64 + 1, 'x')); }
				cv.notify_one();
				if (i % 7 == 0) { std::unique_lock<std::shared_mutex> w(sm); shared_map[i % 1000] = std::to_string(i); }
				else { std::shared_lock<std::shared_mutex> r(sm); (void)shared_map.count(i % 1000); }
				if (i % 100 == 0) rec(5);
				if (i % 500 == 0) {
					if (tm.try_lock_for(std::chrono::milliseconds(50))) { timed++; tm.unlock(); }
					try { throw std::runtime_error(std::string(200, 'e')); }
					catch (const std::exception &e) { throws += e.what()[0] == 'e'; }
				}
			}
		});
	for (auto &t : ts) t.join();
	{ std::lock_guard<std::mutex> g(m); done = true; }
	cv.notify_one(); cons.join();
	// futures, exceptions through them
	std::vector<std::future<long>> fs;
	for (int i = 0; i < 16; i++)
		fs.push_back(std::async(std::launch::async, [i]() -> long {
			std::vector<long> v(10000 + i); std::iota(v.begin(), v.end(), 0);
			if (i % 4 == 3) throw std::out_of_range("f");
			return std::accumulate(v.begin(), v.end(), 0L); }));
	long fsum = 0, fexc = 0;
	for (auto &f : fs) { try { fsum += f.get(); } catch (const std::out_of_range &) { fexc++; } }
	// condition_variable_any over shared_mutex
	std::shared_mutex sm2; bool go = false; std::thread w([&] { std::unique_lock<std::shared_mutex> l(sm2); cva.wait(l, [&] { return go; }); });
	{ std::unique_lock<std::shared_mutex> l(sm2); go = true; } cva.notify_all(); w.join();
	long expect_consumed = 0; for (int i = 0; i < ITER; i++) expect_consumed += i % 64 + 1;
	printf("counter %ld consumed %ld/%ld throws %ld once %ld timed %ld map %zu fsum %ld fexc %ld tl %ld\n",
	       counter, (long)consumed, expect_consumed * N, (long)throws, (long)once_calls, (long)timed,
	       shared_map.size(), fsum, fexc, (long)tl_dtors);
	return !(counter == (long)N * ITER && consumed == expect_consumed * N && throws == N * (ITER / 500) && once_calls == 1);
}
