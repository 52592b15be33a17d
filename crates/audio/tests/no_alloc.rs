//! After warm-up, converting or analysing a 20 ms chunk does not allocate.
//!
//! A counting global allocator (per thread, so other test threads do not
//! interfere) wraps the system allocator for this test binary only.

use audio::resample::{Resampler, SUPPORTED_RATES};
use audio::vad::{Vad, VadParams};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.with(|c| c.set(c.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.with(|c| c.set(c.get() + 1));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_during(f: impl FnOnce()) -> usize {
    let before = ALLOCS.with(Cell::get);
    f();
    ALLOCS.with(Cell::get) - before
}

/// 20 ms of a 440 Hz tone at `rate`, as PCM16LE.
fn chunk(rate: u32, phase: usize) -> Vec<u8> {
    let n = rate as usize / 50;
    (0..n)
        .flat_map(|i| {
            let t = (phase * n + i) as f64 / f64::from(rate);
            ((8000.0 * (2.0 * std::f64::consts::PI * 440.0 * t).sin()) as i16).to_le_bytes()
        })
        .collect()
}

#[test]
fn resampler_steady_state_is_allocation_free() {
    for a in SUPPORTED_RATES {
        for b in SUPPORTED_RATES {
            let chunks: Vec<Vec<u8>> = (0..50).map(|i| chunk(a, i)).collect();
            let mut rs = Resampler::new(a, b).unwrap();
            let mut out = Vec::new();
            for c in &chunks[..5] {
                out.clear();
                rs.process_pcm16le(c, &mut out);
            }
            let n = allocations_during(|| {
                for c in &chunks[5..] {
                    out.clear();
                    rs.process_pcm16le(c, &mut out);
                }
            });
            assert_eq!(n, 0, "{a} -> {b}: {n} allocations over 45 chunks of 20 ms");
            // Odd-sized chunks too, once `out` has grown to fit the largest
            // output (a pass over the stream, then the same stream again).
            let odd: Vec<u8> = chunks.concat();
            for c in odd.chunks(333) {
                out.clear();
                rs.process_pcm16le(c, &mut out);
            }
            rs.reset();
            let n = allocations_during(|| {
                for c in odd.chunks(333) {
                    out.clear();
                    rs.process_pcm16le(c, &mut out);
                }
                out.clear();
                rs.flush(&mut out);
            });
            assert_eq!(n, 0, "{a} -> {b}: {n} allocations with 333-byte chunks");
        }
    }
}

#[test]
fn vad_steady_state_is_allocation_free() {
    for rate in [8_000, 16_000] {
        let mut vad = Vad::new(VadParams::default(), rate).unwrap();
        let chunks: Vec<Vec<u8>> = (0..50).map(|i| chunk(rate, i)).collect();
        for c in &chunks[..5] {
            vad.process_pcm16le(c);
        }
        let n = allocations_during(|| {
            for c in &chunks[5..] {
                let events = vad.process_pcm16le(c);
                assert!(events.is_empty());
            }
        });
        assert_eq!(n, 0, "{rate} Hz: {n} allocations over 45 chunks of 20 ms");
    }
}
