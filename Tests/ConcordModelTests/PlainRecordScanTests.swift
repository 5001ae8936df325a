import XCTest
@testable import ConcordModel
import ConcordTestSupport

/// `PlainRecordScan` may only say yes where the full decoder accepts the bytes as a record of
/// that id and kind; it must say yes to what concord writes for plain data.
final class PlainRecordScanTests: XCTestCase {
    /// What `ProfilePathRules.contentProblem` answers without the scan: nil when acceptable.
    private func fullVerdict(_ bytes: [UInt8], id: String, kind: String) -> Bool {
        guard let record = try? Record.decode(bytes) else { return false }
        return record.id.rawValue == id && record.kind == kind
    }

    func testTheScanOnlyAcceptsWhatTheDecoderAccepts() throws {
        var generator = SeededGenerator(seed: 20261125)
        let texts: [JSONValue] = ["word", "", "I want \"this\"", "back\\slash", "é", "tab\t", "symbols/a b.png", "{}[],:"]
        let plain: [JSONValue] = texts + [.number("46"), .number("-0"), .number("1.5e-3"), .number("0"), .bool(true), .bool(false), .null]
        let nested: [JSONValue] = [.object(["a": 1]), .array([1, "x"]), .object([:]), .array([])]
        let keys = ["label", "category", "Zed", "a b", "é", "", "position", "x\"y", "spoken"]
        var records = [(bytes: [UInt8], id: String, kind: String)]()
        for index in 0..<1_500 {
            var data = [String: JSONValue]()
            for _ in 0..<Int.random(in: 0...6, using: &generator) {
                let pool = Int.random(in: 0..<8, using: &generator) == 0 ? nested : plain
                data[keys.randomElement(using: &generator)!] = pool.randomElement(using: &generator)!
            }
            let stamp = HLC(wallMillis: Int64.random(in: 1_700_000_000_000...1_800_000_000_000, using: &generator),
                            counter: Int.random(in: 0...20, using: &generator))
            let id = try RecordID(["w\(index)", "a.b-c_\(index)", "Z\(index)"].randomElement(using: &generator)!)
            let kind = ["vocabulary", "scenes", "notes"].randomElement(using: &generator)!
            var record = Record(id: id, kind: kind, device: ["laptop", "phone 2", "ü"].randomElement(using: &generator)!,
                                member: ["ada", "bob"].randomElement(using: &generator)!, stamp: stamp,
                                state: Int.random(in: 0..<10, using: &generator) == 0 ? .deleted : .live(data: data))
            if Int.random(in: 0..<10, using: &generator) == 0, !data.isEmpty {
                let earlier = WriteStamp(at: HLC(wallMillis: stamp.wallMillis - 1000, counter: 0), member: "bob", device: "phone")
                record.fieldStamps = [data.keys.first!: earlier]
            }
            records.append((record.encoded(), id.rawValue, kind))
        }
        var accepted = 0, checked = 0
        func compare(_ bytes: [UInt8], id: String, kind: String, _ what: @autoclosure () -> String) {
            checked += 1
            guard PlainRecordScan.accepts(bytes, id: id, kind: kind) else { return }
            accepted += 1
            XCTAssertTrue(fullVerdict(bytes, id: id, kind: kind), "the scan accepted what the decoder refuses: \(what())\n\(String(decoding: bytes, as: UTF8.self))")
        }
        // The records as written: every plain live one is accepted by the scan.
        for (bytes, id, kind) in records {
            compare(bytes, id: id, kind: kind, "as written")
            let record = try Record.decode(bytes)
            let isPlain = !record.isDeleted && record.fieldStamps.isEmpty && record.data!.values.allSatisfy { value in
                if case .string(let text) = value { return text.utf8.allSatisfy { $0 >= 0x20 && $0 <= 0x7E && $0 != 0x22 && $0 != 0x5C } }
                if case .object = value { return false }
                if case .array = value { return false }
                return true
            } && record.data!.keys.allSatisfy { $0.utf8.allSatisfy { $0 >= 0x20 && $0 <= 0x7E && $0 != 0x22 && $0 != 0x5C } }
                && record.device.utf8.allSatisfy { $0 >= 0x20 && $0 <= 0x7E }
            XCTAssertEqual(PlainRecordScan.accepts(bytes, id: id, kind: kind), isPlain, String(decoding: bytes, as: UTF8.self))
            // Another id or kind than the path's: never accepted.
            XCTAssertFalse(PlainRecordScan.accepts(bytes, id: id + "x", kind: kind))
            XCTAssertFalse(PlainRecordScan.accepts(bytes, id: id, kind: kind + "x"))
        }
        XCTAssertGreaterThan(accepted, records.count / 10, "the scan hardly ever said yes")
        // Mostly the accepted ones are mutated: the scan's strictness is what is tried.
        let acceptedRecords = records.filter { PlainRecordScan.accepts($0.bytes, id: $0.id, kind: $0.kind) }
        // Mutations: bytes replaced, removed, inserted; lines repeated (duplicate keys), swapped, dropped.
        let alphabet = Array("{}[],:\"\\ \n\t0123456789-+.eEtrufalsn\u{7F}".utf8) + [0x00, 0x1F, 0x80, 0xC3, 0xFF]
        for _ in 0..<40_000 {
            var (bytes, id, kind) = (Int.random(in: 0..<4, using: &generator) == 0 ? records : acceptedRecords).randomElement(using: &generator)!
            let position = Int.random(in: 0..<bytes.count, using: &generator)
            switch Int.random(in: 0..<6, using: &generator) {
            case 0: bytes[position] = alphabet.randomElement(using: &generator)!
            case 1: bytes.remove(at: position)
            case 2: bytes.insert(alphabet.randomElement(using: &generator)!, at: position)
            default:
                var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map(Array.init)
                let line = Int.random(in: 0..<lines.count, using: &generator), other = Int.random(in: 0..<lines.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: lines.insert(lines[line], at: other)
                case 1: lines.swapAt(line, other)
                default: lines.remove(at: line)
                }
                bytes = Array(lines.joined(separator: [0x0A]))
            }
            compare(bytes, id: id, kind: kind, "mutated")
        }
        XCTAssertEqual(checked, records.count + 40_000)
        XCTAssertGreaterThan(accepted, records.count / 10 + 2_000, "hardly any mutation was accepted: the comparison tried little")
    }
}
