import XCTest

@testable import ConcordModel

final class HLCTests: XCTestCase {
    func testStringForm() {
        let ms = HLClock.parseInstant("2026-01-01T10:00:00.001Z")
        XCTAssertEqual(ms, 1_767_261_600_001)
        XCTAssertEqual(HLC(wallMillis: 1_767_261_600_001, counter: 0).description, "2026-01-01T10:00:00.001Z-0000")
        XCTAssertEqual(HLC(wallMillis: 0, counter: 42).description, "1970-01-01T00:00:00.000Z-0042")
    }

    func testParseFormatRoundTrip() {
        let samples = [
            "1970-01-01T00:00:00.000Z-0000", "2000-02-29T23:59:59.999Z-9999", "2024-02-29T12:34:56.789Z-0001",
            "2100-03-01T00:00:00.000Z-0500", "1999-12-31T23:59:59.999Z-0000", "9999-12-31T23:59:59.999Z-9999",
            "0001-01-01T00:00:00.000Z-0000",
        ]
        for sample in samples {
            XCTAssertEqual(HLC(parsing: sample)?.description, sample, sample)
        }
    }

    func testParseRejectsMalformed() {
        let bad = [
            "", "2026-01-01T10:00:00.001Z", "2026-01-01T10:00:00.001Z-000", "2026-01-01T10:00:00.001Z-00000",
            "2026-01-01T10:00:00Z-0000", "2026-01-01T10:00:00.01Z-0000", "2026-13-01T10:00:00.001Z-0000",
            "2026-02-29T10:00:00.001Z-0000", "1900-02-29T10:00:00.001Z-0000", "2026-01-01T24:00:00.001Z-0000",
            "2026-01-01T10:60:00.001Z-0000", "2026-01-01T10:00:60.001Z-0000", "2026-01-00T10:00:00.001Z-0000",
            "2026-01-01 10:00:00.001Z-0000", "2026-01-01T10:00:00.001z-0000", "2026-01-01T10:00:00.001Z-00a0",
            "2026-04-31T10:00:00.001Z-0000", "+026-01-01T10:00:00.001Z-0000",
        ]
        for sample in bad {
            XCTAssertNil(HLC(parsing: sample), sample)
        }
        XCTAssertNotNil(HLC(parsing: "2000-02-29T10:00:00.001Z-0000"))
    }

    func testStringOrderMatchesValueOrder() {
        var rng = SplitMix64(seed: 0xC0FFEE)
        var stamps: [HLC] = []
        for _ in 0..<3000 {
            // Cluster some values so ties on wallMillis are common.
            let wall = Bool.random(using: &rng)
                ? Int64.random(in: 0...CivilTime.maxMillis, using: &rng)
                : 1_767_261_600_000 + Int64.random(in: 0..<5, using: &rng)
            stamps.append(HLC(wallMillis: wall, counter: Int.random(in: 0...9999, using: &rng)))
        }
        let byValue = stamps.sorted()
        let byString = stamps.sorted { $0.description.utf8.lexicographicallyPrecedes($1.description.utf8) }
        XCTAssertEqual(byValue, byString)
        for stamp in stamps {
            XCTAssertEqual(HLC(parsing: stamp.description), stamp)
            XCTAssertEqual(HLClock.parseInstant(HLClock.formatInstant(stamp.wallMillis)), stamp.wallMillis)
        }
    }

    func testCivilArithmeticAgreesWithDayCounting() {
        // Walk day by day from 1970 to 2400 and check the date advances like a calendar.
        var (y, m, d): (Int64, Int64, Int64) = (1970, 1, 1)
        for days in Int64(0)...Int64(157_000) {
            let date = CivilTime.date(days: days)
            if date.year != y || date.month != m || date.day != d || CivilTime.days(year: y, month: m, day: d) != days {
                XCTFail("day \(days): got \(date), expected \(y)-\(m)-\(d)")
                return
            }
            d += 1
            if d > CivilTime.daysIn(month: m, year: y) { d = 1; m += 1 }
            if m > 12 { m = 1; y += 1 }
        }
        XCTAssertEqual(y, 2399)
    }

    func testParseInstant() {
        XCTAssertEqual(HLClock.parseInstant("1970-01-01T00:00:00Z"), 0)
        XCTAssertEqual(HLClock.parseInstant("1970-01-01T00:00:00.1Z"), 100)
        XCTAssertEqual(HLClock.parseInstant("1970-01-01T00:00:00.12Z"), 120)
        XCTAssertEqual(HLClock.parseInstant("1970-01-01T00:00:01.123Z"), 1123)
        XCTAssertEqual(HLClock.parseInstant("2024-03-01T00:00:00Z"), 1_709_251_200_000)
        for bad in ["1970-01-01T00:00:00.Z", "1970-01-01T00:00:00.1234Z", "1970-01-01T00:00:00", "1970-01-01",
                    "1970-01-01T00:00:00Z ", "1970-01-01T00:00:00+00:00"] {
            XCTAssertNil(HLClock.parseInstant(bad), bad)
        }
        XCTAssertEqual(HLClock.formatInstant(1_709_251_200_005), "2024-03-01T00:00:00.005Z")
    }

    func testClockNext() {
        let clock = HLClock.fixed(1000)
        XCTAssertEqual(clock.next(after: nil), HLC(wallMillis: 1000, counter: 0))
        // Wall clock ahead of last: take the wall clock.
        XCTAssertEqual(clock.next(after: HLC(wallMillis: 900, counter: 7)), HLC(wallMillis: 1000, counter: 0))
        // Tie: bump the counter.
        XCTAssertEqual(clock.next(after: HLC(wallMillis: 1000, counter: 7)), HLC(wallMillis: 1000, counter: 8))
        // Last is ahead (remote clock skew): keep it and bump.
        XCTAssertEqual(clock.next(after: HLC(wallMillis: 5000, counter: 0)), HLC(wallMillis: 5000, counter: 1))
        // Counter overflow moves to the next millisecond.
        XCTAssertEqual(clock.next(after: HLC(wallMillis: 1000, counter: 9999)), HLC(wallMillis: 1001, counter: 0))
    }

    func testClockIsMonotonic() {
        var rng = SplitMix64(seed: 7)
        let readings = (0..<2000).map { _ in Int64.random(in: 1000...1010, using: &rng) }
        var last: HLC?
        for reading in readings {
            let next = HLClock.fixed(reading).next(after: last)
            if let last { XCTAssertLessThan(last, next) }
            last = next
        }
        // With a frozen wall clock, 10,000+ events still strictly increase.
        let frozen = HLClock.fixed(0)
        var stamp = frozen.next(after: nil)
        for _ in 0..<10_050 {
            let next = frozen.next(after: stamp)
            XCTAssertLessThan(stamp, next)
            stamp = next
        }
        XCTAssertEqual(stamp, HLC(wallMillis: 1, counter: 50))
    }

    func testClampsOutOfRange() {
        XCTAssertEqual(HLC(wallMillis: .max, counter: 20_000), HLC(wallMillis: HLC.maxWallMillis, counter: 9999))
        XCTAssertEqual(HLC(wallMillis: .min).description, "0000-01-01T00:00:00.000Z-0000")
    }
}
