// This file touches the C library through the CShims shim (malloc.h).
internal import CShims

/// The C heap of this process: for a process that runs for weeks (`watch`), and for a one-shot
/// command that allocates and frees large buffers (`clone`).
package enum ProcessMemory {
    /// Gives the heap's free memory back to the system (glibc's `malloc_trim(0)`; nothing elsewhere,
    /// nor built with `-DCONCORD_PORTABLE`).
    ///
    /// A sync frees all it allocated (heaptrack on a watch through 60 ssh syncs: no allocation
    /// left per sync), but glibc keeps freed chunks in its arenas, scattered between live ones,
    /// and returns only the top of the heap: a watch's anonymous memory grew ~4 KB per sync
    /// (`RssAnon` 4.0 → 4.2 MB over 20 syncs), and stayed flat with a trim after each.
    package static func returnFreedMemory() {
        concord_return_freed_memory()
    }

    /// The opposite, for a one-shot command: freed memory is kept for the next allocation instead
    /// of being returned to the kernel and faulted in again. B5's clone (thousands of objects
    /// copied, hashed and written) took ~2,000 fewer page faults and ~4% less time so. Never for
    /// a long-running process, whose memory would then not shrink. glibc's `mallopt`: nothing
    /// elsewhere, nor built with `-DCONCORD_PORTABLE`.
    package static func keepFreedMemory() {
        concord_keep_freed_memory()
    }
}
