import XCTest

@testable import ConcordModel

/// A small, seedable, deterministic random generator (SplitMix64).
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

/// Parses `input`, asserting it fails, and returns the error.
func parseFailure(_ input: String, file: StaticString = #filePath, line: UInt = #line) -> JSONParseError? {
    do {
        let value = try JSONValue.parse(input)
        XCTFail("expected a parse error, got \(value)", file: file, line: line)
        return nil
    } catch {
        return error
    }
}

/// Runs `body`, asserting it throws a `ModelError`, and returns it.
func modelError<T>(_ body: () throws(ModelError) -> T, file: StaticString = #filePath, line: UInt = #line) -> ModelError? {
    do {
        let value = try body()
        XCTFail("expected an error, got \(value)", file: file, line: line)
        return nil
    } catch {
        return error
    }
}
