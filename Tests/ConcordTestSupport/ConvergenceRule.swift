import ConcordModel

/// The rule of per-field last-writer-wins applied to a set of writes at once, written independently
/// of the merge code: the record is deleted if the latest event (by write stamp) is a delete; else
/// each field holds its latest assignment (set or removal, ties by value bytes, a removal lowest),
/// if that assignment came after the latest delete.
public enum ConvergenceRule {
    public enum Event {
        case write(WriteStamp, assignments: [String: JSONValue?])
        case delete(WriteStamp)

        public var stamp: WriteStamp {
            switch self {
            case .write(let stamp, _), .delete(let stamp): stamp
            }
        }
    }

    public static func apply(_ events: [Event], id: RecordID, kind: String) -> [UInt8]? {
        guard let latest = events.max(by: { $0.stamp < $1.stamp }) else { return nil }
        if case .delete(let stamp) = latest {
            return Record(id: id, kind: kind, device: stamp.device, member: stamp.member, stamp: stamp.at, state: .deleted).encoded()
        }
        let floor = events.compactMap { if case .delete(let stamp) = $0 { stamp } else { nil } }.max()
        var fields = [String: (stamp: WriteStamp, value: JSONValue?)]()
        for case .write(let stamp, let assignments) in events {
            for (key, value) in assignments {
                guard let current = fields[key] else {
                    fields[key] = (stamp, value)
                    continue
                }
                if current.stamp < stamp || (current.stamp == stamp && valueBytes(current.value).lexicographicallyPrecedes(valueBytes(value))) {
                    fields[key] = (stamp, value)
                }
            }
        }
        var data = [String: JSONValue](), stamps = [String: WriteStamp]()
        for (key, field) in fields where floor.map({ $0 < field.stamp }) ?? true {
            if let value = field.value { data[key] = value }
            if field.value == nil || field.stamp != latest.stamp { stamps[key] = field.stamp }
        }
        let envelope = latest.stamp
        return Record(id: id, kind: kind, device: envelope.device, member: envelope.member, stamp: envelope.at,
                      state: .live(data: data), fieldStamps: stamps, lastDeleted: floor).encoded()
    }

    /// A value's canonical bytes; a removal has none (and so sorts first).
    public static func valueBytes(_ value: JSONValue?) -> [UInt8] { value?.canonicalBytes() ?? [] }
}
