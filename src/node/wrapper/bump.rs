//! The wrapper's allocator: a bump arena in `.bss`, then, when it is full,
//! chunks mapped from the kernel (bumped, or in the freeing mode the
//! wrapper runs in, carved into size classes that are reused once freed).
//! A start without rules lives for about a millisecond in the arena and
//! frees almost nothing worth reusing, so musl's malloc (a third of the
//! wrapper's instructions, and an mmap/munmap pair for many small
//! allocations) buys nothing here; without a caller it is not linked at
//! all (8 KB of payload). `.bss` costs no payload bytes, and only the pages
//! actually used are ever touched.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::UnsafeCell;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

unsafe extern "C" {
    fn mmap(
        addr: *mut c_void,
        len: usize,
        prot: c_int,
        flags: c_int,
        fd: c_int,
        off: i64,
    ) -> *mut c_void;
    fn munmap(addr: *mut c_void, len: usize) -> c_int;
}
const PROT_READ_WRITE: c_int = 0x1 | 0x2;
const MAP_PRIVATE_ANONYMOUS: c_int = 0x02 | 0x20;
/// Smallest chunk mapped once the arena is full.
const CHUNK_BYTES: usize = 4 << 20;
const PAGE: usize = 4096;

/// What malloc guarantees on x86_64 and aarch64, and what libunwind's
/// exception object needs although Rust declares it 8-aligned (its code
/// stores to it with 16-byte aligned SSE moves).
const MIN_ALIGN: usize = 16;

/// Far more than a start needs (~100 KiB on the OpenShift worker unit);
/// beyond it allocations go to the system allocator.
const ARENA_BYTES: usize = 1 << 20;

#[repr(C, align(4096))]
struct Arena(UnsafeCell<[u8; ARENA_BYTES]>);

// SAFETY: bytes are handed out once each through the atomic `next` below.
unsafe impl Sync for Arena {}

pub struct BumpAlloc {
    arena: Arena,
    /// Offset of the first free byte.
    next: AtomicUsize,
    /// The mapped chunk after the arena: its first free and its end
    /// address (0, 0 before the first), changed under `chunk_lock`.
    chunk_next: AtomicUsize,
    chunk_end: AtomicUsize,
    chunk_lock: AtomicBool,
    /// Whether freed blocks past the arena are reused or unmapped (see
    /// [`BumpAlloc::free_from_now`]); set before any chunk exists.
    freeing: AtomicBool,
    /// In freeing mode: the first free block of each size class (16 B
    /// doubling to [`MAX_CLASS`]), each holding the next's address; changed
    /// under `chunk_lock`.
    free: [AtomicUsize; CLASSES],
}

/// Size classes 16 B, 32 B, ... 256 KiB; a larger block is a mapping of
/// its own, unmapped when freed.
const CLASSES: usize = 15;
const MAX_CLASS: usize = 16 << (CLASSES - 1);

/// The class of a block past the arena in freeing mode (None: its own
/// mapping).
fn class_of(layout: Layout) -> Option<usize> {
    let size = layout
        .size()
        .max(layout.align())
        .max(MIN_ALIGN)
        .next_power_of_two();
    (size <= MAX_CLASS).then(|| (size.trailing_zeros() - MIN_ALIGN.trailing_zeros()) as usize)
}

impl BumpAlloc {
    pub const fn new() -> BumpAlloc {
        BumpAlloc {
            arena: Arena(UnsafeCell::new([0; ARENA_BYTES])),
            next: AtomicUsize::new(0),
            chunk_next: AtomicUsize::new(0),
            chunk_end: AtomicUsize::new(0),
            chunk_lock: AtomicBool::new(false),
            freeing: AtomicBool::new(false),
            free: [const { AtomicUsize::new(0) }; CLASSES],
        }
    }

    /// From now on a block past the arena is reused once freed (per size
    /// class) or, when large, unmapped: for the day-2 sync, which runs for
    /// minutes and reads an answer per try (bump chunks would keep every
    /// one), and for the boot path's node rules, whose template data is
    /// dropped after each matched block (review 14 r14a F2: kept, 450
    /// templated rules held 400 MB of copies of a pod's features.d file).
    /// No malloc of musl's is linked for it. Only before any chunk was
    /// mapped (a chunk block of the bump mode has no class); false if one
    /// was.
    pub fn free_from_now(&self) -> bool {
        self.lock();
        let fresh = self.chunk_end.load(Ordering::Relaxed) == 0;
        if fresh {
            self.freeing.store(true, Ordering::Relaxed);
        }
        self.unlock();
        fresh
    }

    fn lock(&self) {
        while self
            .chunk_lock
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
    }

    fn unlock(&self) {
        self.chunk_lock.store(false, Ordering::Release);
    }

    fn freeing(&self) -> bool {
        self.freeing.load(Ordering::Relaxed)
    }

    /// A fresh anonymous mapping of `len` bytes, or null.
    fn map(len: usize) -> *mut u8 {
        // SAFETY: a fresh anonymous mapping; no existing memory is touched.
        let p = unsafe {
            mmap(
                std::ptr::null_mut(),
                len,
                PROT_READ_WRITE,
                MAP_PRIVATE_ANONYMOUS,
                -1,
                0,
            )
        };
        if p as isize == -1 {
            std::ptr::null_mut()
        } else {
            p as *mut u8
        }
    }

    /// Freeing mode past the arena: a freed block of the class, else one
    /// carved from the chunk; a large block its own mapping.
    fn alloc_freeing(&self, layout: Layout) -> *mut u8 {
        if layout.align() > PAGE {
            return std::ptr::null_mut();
        }
        let Some(class) = class_of(layout) else {
            return Self::map(layout.size().next_multiple_of(PAGE));
        };
        self.lock();
        let head = self.free[class].load(Ordering::Relaxed);
        if head != 0 {
            // SAFETY: a freed block of this class holds the next's address.
            let next = unsafe { *(head as *const usize) };
            self.free[class].store(next, Ordering::Relaxed);
            self.unlock();
            return head as *mut u8;
        }
        let size = MIN_ALIGN << class;
        let p = self.carve(size, size.min(PAGE));
        self.unlock();
        p
    }

    /// Freeing mode: `ptr` (past the arena) back to its class, or unmapped.
    fn dealloc_freeing(&self, ptr: *mut u8, layout: Layout) {
        let Some(class) = class_of(layout) else {
            // SAFETY: its own mapping of this length (alloc_freeing).
            unsafe { munmap(ptr as *mut c_void, layout.size().next_multiple_of(PAGE)) };
            return;
        };
        self.lock();
        // SAFETY: the block is ours again, at least 16 bytes, 16-aligned.
        unsafe { *(ptr as *mut usize) = self.free[class].load(Ordering::Relaxed) };
        self.free[class].store(ptr as usize, Ordering::Relaxed);
        self.unlock();
    }

    /// Past the arena: bump in the mapped chunk, mapping a new one when it
    /// is full. Blocks there are never given back (the process is short).
    fn alloc_in_chunk(&self, layout: Layout) -> *mut u8 {
        if self.freeing() {
            return self.alloc_freeing(layout);
        }
        if layout.align() > PAGE {
            return std::ptr::null_mut();
        }
        self.lock();
        let p = self.carve(layout.size(), layout.align().max(MIN_ALIGN));
        self.unlock();
        p
    }

    /// `size` bytes at `align` from the chunk, a new chunk mapped when it
    /// has no room (or null); under `chunk_lock`.
    fn carve(&self, size: usize, align: usize) -> *mut u8 {
        let mut start = self
            .chunk_next
            .load(Ordering::Relaxed)
            .next_multiple_of(align);
        let mut end = self.chunk_end.load(Ordering::Relaxed);
        if start == 0 || end < start + size {
            let len = size.max(CHUNK_BYTES).next_multiple_of(PAGE);
            let p = Self::map(len) as usize;
            if p == 0 {
                return std::ptr::null_mut();
            }
            (start, end) = (p, p + len);
        }
        self.chunk_next.store(start + size, Ordering::Relaxed);
        self.chunk_end.store(end, Ordering::Relaxed);
        start as *mut u8
    }

    fn base(&self) -> usize {
        self.arena.0.get() as usize
    }

    fn offset_of(&self, ptr: *mut u8) -> Option<usize> {
        let p = ptr as usize;
        (p >= self.base() && p < self.base() + ARENA_BYTES).then(|| p - self.base())
    }

    /// Move `next` from `from` to `to` if nobody moved it meanwhile.
    fn bump(&self, from: usize, to: usize) -> bool {
        self.next
            .compare_exchange(from, to, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }
}

impl Default for BumpAlloc {
    fn default() -> Self {
        BumpAlloc::new()
    }
}

unsafe impl GlobalAlloc for BumpAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let mut cur = self.next.load(Ordering::Relaxed);
        loop {
            // Align the address, not the offset (the arena's own alignment
            // is 4096, so the two agree for every align up to that).
            let align = layout.align().max(MIN_ALIGN);
            let start = (self.base() + cur).next_multiple_of(align) - self.base();
            let end = start + layout.size();
            if end > ARENA_BYTES {
                return self.alloc_in_chunk(layout);
            }
            match self
                .next
                .compare_exchange_weak(cur, end, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return (self.base() + start) as *mut u8,
                Err(now) => cur = now,
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // Only the newest allocation can be given back; a chunk's block is
        // kept until exit.
        if let Some(start) = self.offset_of(ptr) {
            self.bump(start + layout.size(), start);
        } else if self.freeing() {
            self.dealloc_freeing(ptr, layout);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size <= layout.size() {
            // Shrinking: give the tail back if this is the newest allocation.
            if let Some(start) = self.offset_of(ptr) {
                self.bump(start + layout.size(), start + new_size);
            }
            return ptr;
        }
        if self.offset_of(ptr).is_none()
            && self.freeing()
            && let Ok(new) = Layout::from_size_align(new_size, layout.align())
            && class_of(new).is_some()
            && class_of(new) == class_of(layout)
        {
            // Still fits its class's block.
            return ptr;
        }
        // Growing the newest allocation in place: the common `Vec::push` case.
        if let Some(start) = self.offset_of(ptr)
            && start + new_size <= ARENA_BYTES
            && self.bump(start + layout.size(), start + new_size)
        {
            return ptr;
        }
        // SAFETY: align and size come from a valid layout (GlobalAlloc contract).
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: new_layout has a non-zero size (new_size > layout.size()).
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            // SAFETY: both blocks are valid for layout.size() bytes and distinct.
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, new, layout.size());
                self.dealloc(ptr, layout);
            }
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    #[test]
    fn aligns_and_does_not_overlap() {
        static A: BumpAlloc = BumpAlloc::new();
        let a = &A;
        unsafe {
            let p = a.alloc(layout(3, 1));
            let q = a.alloc(layout(8, 8));
            let r = a.alloc(layout(64, 64));
            // At least malloc's 16 for every block, more when asked.
            assert_eq!(
                (p as usize % 16, q as usize % 16, r as usize % 64),
                (0, 0, 0)
            );
            assert!(q as usize >= p as usize + 3 && r as usize >= q as usize + 8);
        }
    }

    #[test]
    fn grows_the_newest_block_in_place_and_keeps_bytes_when_moving() {
        static A: BumpAlloc = BumpAlloc::new();
        let a = &A;
        unsafe {
            let p = a.alloc(layout(4, 1));
            p.copy_from_nonoverlapping(b"abcd".as_ptr(), 4);
            let p2 = a.realloc(p, layout(4, 1), 64);
            assert_eq!(p, p2, "newest block grows in place");
            let _other = a.alloc(layout(8, 1));
            let p3 = a.realloc(p2, layout(64, 1), 128);
            assert_ne!(p2, p3, "an older block moves");
            assert_eq!(std::slice::from_raw_parts(p3, 4), b"abcd");
        }
    }

    #[test]
    fn freeing_the_newest_block_reuses_it() {
        static A: BumpAlloc = BumpAlloc::new();
        let a = &A;
        unsafe {
            let p = a.alloc(layout(100, 8));
            a.dealloc(p, layout(100, 8));
            assert_eq!(a.alloc(layout(100, 8)), p);
        }
    }

    /// In freeing mode what is freed past the arena is used again: a
    /// thousand tries each reading and freeing 4 MiB in small and large
    /// blocks map about one try's worth.
    #[test]
    fn frees_and_reuses_once_asked() {
        static A: BumpAlloc = BumpAlloc::new();
        let a = &A;
        assert!(a.free_from_now());
        unsafe {
            let big = a.alloc(layout(ARENA_BYTES - 8, 8));
            assert!(a.offset_of(big).is_some());
            let mut chunks = std::collections::BTreeSet::new();
            for _ in 0..20 {
                let large = a.alloc(layout(4 << 20, 8));
                large.write_bytes(1, 4096);
                large.add((4 << 20) - 1).write(1);
                let small: Vec<*mut u8> = (0..4096)
                    .map(|i| a.alloc(layout(16 + i % 1000, 8)))
                    .collect();
                for &p in &small {
                    assert!(!p.is_null() && a.offset_of(p).is_none());
                    p.write_bytes(2, 16);
                    chunks.insert(p as usize / CHUNK_BYTES);
                }
                for (i, &p) in small.iter().enumerate() {
                    a.dealloc(p, layout(16 + i % 1000, 8));
                }
                a.dealloc(large, layout(4 << 20, 8));
            }
            assert!(
                chunks.len() <= 3,
                "{} chunks: nothing was reused",
                chunks.len()
            );
            // Grown within its class: in place; past it: moved, bytes kept.
            let p = a.alloc(layout(100, 8));
            p.write_bytes(7, 100);
            assert_eq!(a.realloc(p, layout(100, 8), 120), p);
            let q = a.realloc(p, layout(120, 8), 5000);
            assert_ne!(q, p);
            assert_eq!(*q.add(99), 7);
            // An arena block that must move out lands past it.
            let r = a.realloc(big, layout(ARENA_BYTES - 8, 8), ARENA_BYTES + 8);
            assert!(!r.is_null() && a.offset_of(r).is_none());
            a.dealloc(r, layout(ARENA_BYTES + 8, 8));
            // Alignment above the size is kept.
            let s = a.alloc(layout(8, 256));
            assert_eq!(s as usize % 256, 0);
        }
        // Refused once a bump chunk exists.
        static B: BumpAlloc = BumpAlloc::new();
        unsafe {
            B.alloc(layout(ARENA_BYTES + 8, 8));
        }
        assert!(!B.free_from_now());
    }

    #[test]
    fn maps_chunks_when_full() {
        static A: BumpAlloc = BumpAlloc::new();
        let a = &A;
        unsafe {
            let big = a.alloc(layout(ARENA_BYTES - 8, 8));
            assert!(a.offset_of(big).is_some());
            let p = a.alloc(layout(64, 8));
            assert!(!p.is_null() && a.offset_of(p).is_none());
            let p = a.realloc(p, layout(64, 8), 4096);
            assert!(a.offset_of(p).is_none());
            a.dealloc(p, layout(4096, 8));
            // A block in the arena that must move out of it.
            let q = a.realloc(big, layout(ARENA_BYTES - 8, 8), ARENA_BYTES + 8);
            assert!(!q.is_null() && a.offset_of(q).is_none());
            a.dealloc(q, layout(ARENA_BYTES + 8, 8));
            // Many small blocks share a chunk, and every byte is writable.
            let full = a.alloc(layout(ARENA_BYTES - 8, 8));
            assert!(a.offset_of(full).is_some());
            let r = a.alloc(layout(100, 8));
            let s = a.alloc(layout(100, 8));
            assert!(a.offset_of(r).is_none() && a.offset_of(s).is_none());
            assert_eq!(s as usize, r as usize + 112);
            let huge = a.alloc(layout(2 * CHUNK_BYTES + 1, 4096));
            assert!(!huge.is_null() && (huge as usize).is_multiple_of(4096));
            huge.write_bytes(0xa5, 2 * CHUNK_BYTES + 1);
            assert!(a.alloc(layout(8, 2 * PAGE)).is_null());
        }
    }
}
