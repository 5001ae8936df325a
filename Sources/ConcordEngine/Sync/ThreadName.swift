import Foundation
#if canImport(Darwin)
import Darwin
#endif

/// Names the calling thread, as `/proc/self/task/*/comm` and debuggers show it (at most 15 bytes
/// on Linux). Not `Thread.name`: on Linux it names the thread only once the thread that started it
/// has recorded its handle, which races with the new thread's first lines; and Swift's Glibc does
/// not offer `pthread_setname_np`, so the name is written to `/proc/thread-self/comm`, as `prctl`
/// would set it. Best effort: a thread left unnamed runs as well.
package func nameCurrentThread(_ name: String) {
    #if canImport(Darwin)
    _ = pthread_setname_np(name)
    #elseif os(Linux)
    guard let handle = FileHandle(forWritingAtPath: "/proc/thread-self/comm") else { return }
    try? handle.write(contentsOf: Data(name.utf8.prefix(15)))
    try? handle.close()
    #endif
}
