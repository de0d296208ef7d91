// SPDX-License-Identifier: GPL-2.0
// std::sync under threads: Mutex, RwLock, Condvar, Barrier, mpsc, Arc,
// OnceLock, scoped threads, panics caught across threads, big and aligned
// allocations, Vec/String growth (realloc).
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier, Condvar, Mutex, OnceLock, RwLock};
use std::thread;

#[repr(align(64))]
struct Aligned([u8; 64]);
#[repr(align(4096))]
struct Page([u8; 4096]);

static ONCE: OnceLock<Vec<u64>> = OnceLock::new();

fn main() {
    let iters: usize = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(20000);
    let n = 8;
    // every panic takes a symbolized backtrace (the unwinder, dladdr, DWARF), printed nowhere
    static BT: AtomicUsize = AtomicUsize::new(0);
    std::panic::set_hook(Box::new(|_| {
        let b = std::backtrace::Backtrace::force_capture();
        if format!("{b}").contains("foreign_sync") { BT.fetch_add(1, Ordering::SeqCst); }
    }));
    let counter = Arc::new(Mutex::new(0usize));
    let map = Arc::new(RwLock::new(HashMap::<usize, String>::new()));
    let pair = Arc::new((Mutex::new(Vec::<Box<[u8]>>::new()), Condvar::new()));
    let barrier = Arc::new(Barrier::new(n));
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    let inits = Arc::new(AtomicUsize::new(0));
    let mut hs = Vec::new();
    for t in 0..n {
        let (counter, map, pair, barrier, tx, inits) =
            (counter.clone(), map.clone(), pair.clone(), barrier.clone(), tx.clone(), inits.clone());
        hs.push(thread::spawn(move || {
            barrier.wait();
            ONCE.get_or_init(|| { inits.fetch_add(1, Ordering::SeqCst); (0..1000).collect() });
            let mut s = String::new();
            for i in 0..iters {
                *counter.lock().unwrap() += 1;
                if i % 10 == 0 {
                    map.write().unwrap().insert((t * iters + i) % 5000, format!("{t}-{i}"));
                } else {
                    let _ = map.read().unwrap().get(&(i % 5000)).map(|v| v.len());
                }
                if i % 50 == 0 {
                    let (m, c) = &*pair;
                    m.lock().unwrap().push(vec![t as u8; i % 3000 + 1].into_boxed_slice());
                    c.notify_one();
                }
                if i % 100 == 0 {
                    tx.send(vec![1u8; 100 + i % 70000]).unwrap();
                    let a: Vec<Aligned> = (0..(i % 17 + 1)).map(|_| Aligned([t as u8; 64])).collect();
                    let p = Box::new(Page([1; 4096]));
                    assert_eq!(a.iter().map(|x| x.0[63] as usize).sum::<usize>(), (i % 17 + 1) * t);
                    assert_eq!(p.0[4095], 1);
                    assert_eq!(&*p as *const Page as usize % 4096, 0);
                }
                if i % 1000 == 0 {
                    let r = std::panic::catch_unwind(|| {
                        let v: Vec<u32> = Vec::with_capacity(10);
                        if v.capacity() >= 10 { panic!("expected {}", "x".repeat(100)); }
                    });
                    assert!(r.is_err());
                }
                s.push_str("abc");
                if s.len() > 1 << 20 { s = String::new(); }
            }
            s.len()
        }));
    }
    drop(tx);
    let consumer = {
        let pair = pair.clone();
        thread::spawn(move || {
            let (m, c) = &*pair;
            let mut got = 0usize;
            let expected = n * ((iters + 49) / 50);
            let mut g = m.lock().unwrap();
            while got < expected {
                got += g.drain(..).map(|b| b.len()).count();
                if got < expected { g = c.wait(g).unwrap(); }
            }
            got
        })
    };
    let received: usize = rx.iter().map(|v| v.len()).sum();
    let lens: Vec<usize> = hs.into_iter().map(|h| h.join().unwrap()).collect();
    let got = consumer.join().unwrap();
    // a panicking thread, joined
    let e = thread::spawn(|| -> u8 { panic!("thread panic") }).join();
    // scoped threads, BTreeMap growth
    let mut parts = vec![BTreeMap::new(); 4];
    thread::scope(|sc| {
        for (k, p) in parts.iter_mut().enumerate() {
            sc.spawn(move || for i in 0..50000usize { p.insert(i * 4 + k, vec![0u8; i % 50]); });
        }
    });
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let c = *counter.lock().unwrap();
    println!("counter {c} map {} received {received} cv {got} lens {:?} once {} panic_join {} scoped {total} backtraces {}",
             map.read().unwrap().len(), lens, inits.load(Ordering::SeqCst), e.is_err(), BT.load(Ordering::SeqCst));
    assert_eq!(BT.load(Ordering::SeqCst), n * ((iters + 999) / 1000) + 1);
    assert_eq!(c, n * iters);
    assert_eq!(inits.load(Ordering::SeqCst), 1);
    assert!(e.is_err());
    assert_eq!(total, 200000);
}
