# SPDX-License-Identifier: GPL-2.0
# perl ithreads: each thread clones the interpreter (a storm of mallocs),
# shared hashes under lock(), Thread::Queue (cond_wait/cond_signal).
use strict; use warnings;
use threads; use threads::shared; use Thread::Queue;
my $n = shift // 20000;
my %h :shared; my $count :shared = 0;
my $q = Thread::Queue->new;
my @t = map { my $id = $_; threads->create(sub {
	for my $i (1 .. $n) {
		{ lock($count); $count++; }
		if ($i % 10 == 0) { lock(%h); $h{($id * $n + $i) % 3000} = "x" x ($i % 200); }
		$q->enqueue([$id, $i]) if $i % 50 == 0;
	}
	return $id;
}) } 1 .. 6;
my $cons = threads->create(sub { my $s = 0; while (defined(my $item = $q->dequeue)) { $s += $item->[1]; } return $s; });
my $ids = 0; $ids += $_->join for @t;
$q->end; my $s = $cons->join;
my $len = 0; $len += length $h{$_} for keys %h;
print "count $count ids $ids keys ", scalar(keys %h), " len $len queued_sum $s\n";
exit($count == 6 * $n ? 0 : 1);
