#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# mutants.sh: do the module's tests fail when the module is wrong?
#
# For each mutation below: copy the module's sources (Kbuild, kmod/,
# ioctl/) to build/kmod-mutants/NAME, apply one small bug by exact text
# replacement, build it, and run the test program meant to catch it in the
# VM with KPPROF_KO pointing at the mutant.  A mutant is "caught" (ok) when
# that program fails; one that survives is a hole in the tests (not ok).
# A mutation whose text is no longer in the sources is skipped.
#
# Two guarantees have no mutant here because no test can see them fail on
# this machine (qemu TCG): the smp_mb() in kpp_ring_poll() (without it a
# wake-up is lost only when x86's store buffer reorders the waitqueue
# insertion after the ring's loads, a window of nanoseconds), and the
# lock-free drop checks (the locked checks decide the same; they only save
# the lock).  poll_wait_after_check plants the same lost wake-up, with the
# window widened by a busy loop so that a test run can hit it.
#
# Not in any list: it builds a module per mutant (minutes).  Run by hand:
#   selftests/kmod/mutants.sh [NAME...]      (default: all)
# MUTANTS_DRY=1 only checks that each mutation still applies.
# Needs: make -C selftests/kmod, the kernel headers, qemu (scripts/vm-run).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
. selftests/lib/tap.sh
kver=$(dpkg-query -W -f='${Depends}' linux-image-amd64 2>/dev/null |
	sed -E 's/^linux-image-([^ ,]+).*/\1/')
kdir=/lib/modules/$kver/build

# NAME|FILE|TEST PROGRAM|OLD TEXT|NEW TEXT   (\n and \t in the texts)
mutations='
owned_time_unchecked|kmod/record.c|record_test|hdr->cpu \|\| hdr->time_ns \|\||hdr->cpu \|\|
uid_effective|kmod/dev.c|record_test|current_uid()|current_euid()
config_page_mprotect|kmod/config.c|privilege_test|\tkpp_vm_flags_clear(vma, VM_MAYWRITE \| VM_MAYEXEC);|\tkpp_vm_flags_clear(vma, VM_MAYEXEC);
set_config_unprivileged|kmod/dev.c|privilege_test|\t\tif (!perfmon_capable())\n\t\t\treturn -EPERM;\n\t\treturn kpp_ioctl_set_config|\t\treturn kpp_ioctl_set_config
ring_overcommit|kmod/ring.c|ring_full_test|return prod + total - from > rb->size;|return prod + total - from > 2 * rb->size;
drop_uncounted|kmod/ring.c|ring_full_test|\tif (drop >= 0) {\n\t\tatomic64_inc(&rb->dropped[drop]);\n\t\treturn -ENOBUFS;|\tif (drop >= 0) {\n\t\treturn -ENOBUFS;
note_pad_unchecked|kmod/record.c|note_test|r->hdr.nr_pcs \|\| r->pad)|r->hdr.nr_pcs)
note_what_unchecked|kmod/record.c|note_test|\tif (r->what != KPPROF_NOTE_SECCOMP && r->what != KPPROF_NOTE_NO_HEAP)\n\t\treturn -EINVAL;\n|
cycle_stamped_before_advance|kmod/ring.c|cycle_test|\tif (advance)\n\t\tWRITE_ONCE(rb->cycle, rb->cycle + 1);\n\t*cycle = rb->cycle;|\t*cycle = rb->cycle;\n\tif (advance)\n\t\tWRITE_ONCE(rb->cycle, rb->cycle + 1);
path_nul_unchecked|kmod/record.c|garbage_test|if (r->path[r->path_len - 1] != '"'"'\0'"'"' \|\||if (0 \|\|
share_unchecked|kmod/ring.c|fairness_test|\tif (held + total > rb->share_max)\n\t\treturn true;\n\treturn others && held + total > div_u64(free, others + 1);|\treturn false;
poll_wait_after_check|kmod/dev.c|wakeup_test|\tif (!poll_does_not_wait(pts) &&\n\t    (kpp_is_consumer(file) \|\| kpp_may_consume()))\n\t\tpoll_wait(file, &rb->waitq, pts);\n\tif (!kpp_is_consumer(file))\n\t\treturn EPOLLOUT \| EPOLLWRNORM;\n\t/* the consumer'"'"'s context: release what it has read, drain producers */\n\tkpp_ring_reclaim_all(rb);\n\tkpp_pring_drain_all();\n\t/* with the barrier that orders poll_wait() before the ring'"'"'s loads */\n\tif (kpp_ring_poll(rb))\n\t\treturn EPOLLIN \| EPOLLRDNORM \| EPOLLOUT \| EPOLLWRNORM;\n|\tif (!kpp_is_consumer(file))\n\t\treturn EPOLLOUT \| EPOLLWRNORM;\n\tkpp_ring_reclaim_all(rb);\n\tkpp_pring_drain_all();\n\tif (kpp_ring_poll(rb))\n\t\treturn EPOLLIN \| EPOLLRDNORM \| EPOLLOUT \| EPOLLWRNORM;\n\tfor (int i = 0; i < 20000; i++)\n\t\tcpu_relax();\n\tpoll_wait(file, &rb->waitq, pts);\n
poll_wait_consumer_only|kmod/dev.c|hardening_test|\tpoll_wait(file, &rb->waitq, pts);\n\tif (!kpp_is_consumer(file))\n\t\treturn EPOLLOUT \| EPOLLWRNORM;\n|\tif (!kpp_is_consumer(file))\n\t\treturn EPOLLOUT \| EPOLLWRNORM;\n\tpoll_wait(file, &rb->waitq, pts);\n
detach_keeps_mappings|kmod/dev.c|hardening_test|\t\tunmap_mapping_range(file->f_mapping,|\t\tif (0) unmap_mapping_range(file->f_mapping,
submit_ignores_fmode|kmod/dev.c|hardening_test|\tif (!(file->f_mode & FMODE_WRITE)) {|\tif (0) {
preemptible_window|kmod/ring.c|preempt_test|\tout->cycle = cycle;\n\tkpp_ring_commit(hdr);|\tout->cycle = cycle;\n\tpreempt_enable();\n\tpreempt_disable();\n\tkpp_ring_commit(hdr);
ring_copied_on_fork|kmod/ring.c|consumer_test|VM_DONTCOPY \| VM_DONTEXPAND \| VM_DONTDUMP|VM_DONTEXPAND \| VM_DONTDUMP
ring_mprotect_exec|kmod/ring.c|consumer_test|\tkpp_vm_flags_clear(vma, VM_MAYEXEC);\n}|}
cons_not_reset|kmod/ring.c|consumer_test|\t\t\tsmp_store_release(rb->cons_pos, rb->reclaim);|\t\t\tbarrier();
cycle_published_plainly|kmod/config.c|consumer_test|\twhile (old < cycle && !try_cmpxchg(&cs->page->cycle, &old, cycle))\n\t\t;|\tWRITE_ONCE(cs->page->cycle, cycle + 0 * old);
timer_not_stopped|kmod/config.c|consumer_test|\tWRITE_ONCE(cs->timer_on, false);\n\tcancel_delayed_work_sync(&cs->cycle_work);|\tWRITE_ONCE(cs->timer_on, false);
permission_at_write|kmod/dev.c|lifecycle_test|\tif (!((struct kpp_file *)file->private_data)->producer) {|\tif (READ_ONCE(kpp_dev.producer_gid) >= 0 && !in_group_p(make_kgid(&init_user_ns, kpp_dev.producer_gid)) && !perfmon_capable()) {
task_size_max|kmod/record.c|compat_test.sh|pcs[i] >= TASK_SIZE)|pcs[i] >= TASK_SIZE_MAX)
version_unchecked|kmod/record.c|garbage_test|\t/* only version 0 is known: a later one may have appended fields */\n\tif (hdr->version != KPPROF_REC_VERSION)\n\t\treturn -EINVAL;\n|\t/* only version 0 is known: a later one may have appended fields */\n
lost_under_reported|kmod/pring.c|pring_many_test|\tr->full = sum;|\tr->full = sum / 2;
records_stamped_old_cycle|kmod/ring.c|pring_many_test|\tout->cycle = cycle;|\tout->cycle = cycle ? cycle - 1 : 0;
lost_claim_unbounded|kmod/pring.c|pring_lost_test|\troom = now > p->lost_time ? now - p->lost_time : 0;|\troom = U64_MAX;
lost_cut_uncounted|kmod/pring.c|pring_lost_test|\t\tp->resets++;\n\t\tatomic64_inc(&kpp_dev.pring_invalid);\n\t}\n\treturn sum;|\t}\n\treturn sum;
seq_bumped_once|kmod/config.c|config_test|\tWRITE_ONCE(page->seq, page->seq + 1);\n\t/* pairs with the reader'"'"'s load|\t/* pairs with the reader'"'"'s load
'

want=("$@")
tap_plan
while IFS= read -r line; do
	[ -n "$line" ] || continue
	name=$(printf '%s' "$line" | awk -F'|' '{print $1}')
	if [ ${#want[@]} -gt 0 ] && ! printf '%s\n' "${want[@]}" | grep -qx "$name"; then
		continue
	fi
	file=$(printf '%s' "$line" | awk -F'|' '{print $2}')
	test=$(printf '%s' "$line" | awk -F'|' '{print $3}')
	dir=build/kmod-mutants/$name
	rm -rf "$dir"
	mkdir -p "$dir"
	cp -r Kbuild kmod ioctl "$dir"/
	rm -f "$dir"/kmod/*.o "$dir"/kmod/.*.cmd
	# the texts may hold | only as \| (selftests/lib/apply_mutant.py)
	if ! MUT_LINE="$line" selftests/lib/apply_mutant.py "$dir/$file" 3
	then
		tap_skip "$name" "text to mutate not found (once) in $file"
		continue
	fi
	if [ "${MUTANTS_DRY:-0}" = 1 ]; then
		diff -u "$file" "$dir/$file" | sed -n '/^[-+][^-+]/p' | sed 's/^/# /'
		tap_ok "$name: applies to $file"
		continue
	fi
	if ! make -C "$kdir" M="$top/$dir" KPPROF_VERSION="mutant-$name" modules \
		>"$dir/build.log" 2>&1; then
		tap_fail "$name" "mutant does not build (see $dir/build.log)"
		continue
	fi
	KPPROF_KO=$top/$dir/kpprof.ko scripts/vm-run --timeout 300 -- \
		"build/selftests/kmod/$test" >"$dir/run.log" 2>&1
	rc=$?
	failed=$(grep -c '^not ok' "$dir/run.log")
	if [ "$rc" -ne 0 ] && [ "$failed" -gt 0 ]; then
		tap_ok "$name: caught by $test ($failed failing cases)"
	elif [ "$rc" -ne 0 ]; then
		tap_fail "$name" "$test exited $rc without a failing case (see $dir/run.log)"
	else
		tap_fail "$name" "SURVIVED: $test passes against the mutant"
	fi
done <<<"$mutations"
tap_done
