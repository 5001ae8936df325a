import Foundation
import XCTest

@testable import ConcordGit

/// The descriptors the stall watchdog looks through for the server's sockets (`NetworkWatchdog`):
/// /proc/self/fd on Linux; elsewhere, and built with `-DCONCORD_PORTABLE`, each number below the
/// descriptor limit that `fcntl` finds open.
final class OpenDescriptorsTests: XCTestCase {
    func testOpenDescriptorsHoldAPipeWhileItIsOpen() throws {
        var ends: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&ends), 0, String(cString: strerror(errno)))
        let whileOpen = Set(NetworkWatchdog.openDescriptors())
        close(ends[0])
        close(ends[1])
        let afterClose = Set(NetworkWatchdog.openDescriptors())

        XCTAssertTrue(whileOpen.isSuperset(of: ends), "\(ends) not in \(whileOpen.sorted())")
        // Another thread may take one of the numbers again meanwhile, hardly both.
        XCTAssertFalse(afterClose.isSuperset(of: ends), "\(ends) still in \(afterClose.sorted())")
    }
}
