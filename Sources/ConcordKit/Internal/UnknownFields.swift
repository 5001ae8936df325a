import ConcordModel

/// How a typed save keeps the fields a type does not know: a newer app version's fields survive a
/// read-modify-write by an older version, at every depth.
///
/// When `Transaction.save` writes over a live record, the stored data is decoded again as the
/// saved type, noting what the type read of it (`ReadShape`), and the new encoding is merged with
/// the stored data, object by object:
/// - a member the type never asked for (at any depth of nested objects) is carried over from the
///   stored data, unless the new encoding has it;
/// - a member the type asked for but did not encode (an optional set to nil) is removed;
/// - a type that lists all members of an object (a dictionary, an enum's case) owns them all:
///   what it does not encode is removed;
/// - arrays whose elements (in both arrays) are all objects with an `id` member unique in the
///   array: a new element is merged with the stored element of the same `id` (so reordering keeps
///   its unknown members);
/// - other arrays (elements without `id`, a `Set` whose order differs per process): a new element
///   is merged with the stored element whose known part (`knownPart`: the stored element without
///   the members the type did not read, at every depth) equals the new element, when exactly one
///   stored element not yet paired is such (identical stored elements count as one; each is paired
///   once, so duplicates pair one to one). Otherwise the new element is written as encoded. This
///   never gives an element another's unknown members: moved, reordered and unchanged elements
///   keep theirs, while an element the type edited (or added) has none, and removed elements'
///   go with them.
/// Nothing of the type's value itself is remembered between fetch and save: the stored version
/// is read again inside the transaction that saves.
enum UnknownFields {
    /// `new` with what `shape`'s type did not know of `stored` carried over.
    static func merge(_ new: JSONValue, over stored: JSONValue, shape: ReadShape) -> JSONValue {
        switch (new, stored) {
        case (.object(let newMembers), .object(let storedMembers)):
            return .object(merge(newMembers, over: storedMembers, shape: shape))
        case (.array(let newElements), .array(let storedElements)):
            let matches = matching(newElements, storedElements, shape: shape)
            return .array(newElements.enumerated().map { index, element in
                guard let storedIndex = matches[index], let elementShape = shape.elements[storedIndex] else { return element }
                return merge(element, over: storedElements[storedIndex], shape: elementShape)
            })
        default:
            return new
        }
    }

    /// The members of an object: `new`'s, merged member by member with `stored`'s, plus the
    /// stored members `shape`'s type does not know.
    static func merge(_ new: [String: JSONValue], over stored: [String: JSONValue], shape: ReadShape) -> [String: JSONValue] {
        var merged = new
        for (key, storedValue) in stored {
            if let newValue = new[key] {
                if let memberShape = shape.members[key] { merged[key] = merge(newValue, over: storedValue, shape: memberShape) }
            } else if !shape.knows(key) {
                merged[key] = storedValue
            }
        }
        return merged
    }

    /// For each index of `new`, the index of the stored element it continues (see the type's doc);
    /// `shape` is what the type read of the stored array.
    static func matching(_ new: [JSONValue], _ stored: [JSONValue], shape: ReadShape) -> [Int: Int] {
        if let newIDs = identities(new), let storedIDs = identities(stored) {
            let storedIndex = Dictionary(uniqueKeysWithValues: storedIDs.enumerated().map { ($1, $0) })
            return Dictionary(uniqueKeysWithValues: newIDs.enumerated().compactMap { index, id in storedIndex[id].map { (index, $0) } })
        }
        var candidates = [JSONValue: [Int]]()
        for (index, element) in stored.enumerated() {
            guard let elementShape = shape.elements[index] else { continue }
            candidates[knownPart(element, shape: elementShape), default: []].append(index)
        }
        var matches = [Int: Int]()
        for (index, element) in new.enumerated() {
            guard let waiting = candidates[element], let first = waiting.first,
                  waiting.allSatisfy({ stored[$0] == stored[first] }) else { continue }
            matches[index] = first
            candidates[element] = Array(waiting.dropFirst())
        }
        return matches
    }

    /// What the type read of `stored`: its members the type knows (all of an object it owns),
    /// each the known part of itself, and the known part of each array element; other values as
    /// they are.
    static func knownPart(_ stored: JSONValue, shape: ReadShape) -> JSONValue {
        switch stored {
        case .object(let members):
            var known = [String: JSONValue]()
            for (key, value) in members where shape.knows(key) {
                known[key] = shape.members[key].map { knownPart(value, shape: $0) } ?? value
            }
            return .object(known)
        case .array(let elements):
            return .array(elements.enumerated().map { index, element in
                shape.elements[index].map { knownPart(element, shape: $0) } ?? element
            })
        default:
            return stored
        }
    }

    /// The `id` members of `elements` when every element is an object with a non-null `id` and no
    /// two share one; nil otherwise (or for an empty array).
    private static func identities(_ elements: [JSONValue]) -> [JSONValue]? {
        guard !elements.isEmpty else { return nil }
        var ids = [JSONValue](), seen = Set<JSONValue>()
        for element in elements {
            guard let id = element["id"], id != .null, seen.insert(id).inserted else { return nil }
            ids.append(id)
        }
        return ids
    }
}
