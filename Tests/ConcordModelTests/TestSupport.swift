import XCTest
@_exported import ConcordTestSupport

@testable import ConcordModel

/// A small, seedable, deterministic random generator (SplitMix64).
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
