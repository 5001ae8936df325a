/// Building blocks shared by the merge policies: the trivial byte-level cases, parsing both sides, and
/// the field-level three-way merge of JSON objects.
enum MergeSupport {
    /// Why a file cannot be merged without guessing; becomes ``FileMergeOutcome/unresolved(reason:)``.
    struct Unresolvable: Error {
        let reason: String
    }

    /// The byte-level cases every merge starts with: `ours == theirs` → ours; `base == ours` → theirs;
    /// `base == theirs` → ours. Returns `nil` when none applies.
    static func trivialMerge(base: [UInt8]?, ours: [UInt8], theirs: [UInt8]) -> FileMergeOutcome? {
        if ours == theirs { return .merged(bytes: ours, conflicts: []) }
        if let base, base == ours { return .merged(bytes: theirs, conflicts: []) }
        if let base, base == theirs { return .merged(bytes: ours, conflicts: []) }
        return nil
    }

    /// Runs `body`, turning an ``Unresolvable`` into `.unresolved`.
    static func resolving(_ body: () throws(Unresolvable) -> FileMergeOutcome) -> FileMergeOutcome {
        do {
            return try body()
        } catch {
            return .unresolved(reason: error.reason)
        }
    }

    /// Parses both sides with `parse`. If either fails, throws a reason naming each side that failed
    /// (`ours is not <what>: <error>`, then `theirs …`, joined by `; `).
    static func parseSides<T>(
        ours: [UInt8], theirs: [UInt8], as what: String, _ parse: ([UInt8]) throws(ModelError) -> T
    ) throws(Unresolvable) -> (ours: T, theirs: T) {
        var problems: [String] = []
        func attempt(_ bytes: [UInt8], _ side: String) -> T? {
            do {
                return try parse(bytes)
            } catch {
                problems.append("\(side) is not \(what): \(error.errorDescription ?? "unreadable")")
                return nil
            }
        }
        let o = attempt(ours, "ours")
        let t = attempt(theirs, "theirs")
        guard let o, let t else { throw Unresolvable(reason: problems.joined(separator: "; ")) }
        return (o, t)
    }

    /// Whether two optional values are the same: both absent, or both present with identical canonical
    /// bytes (so `"é"` precomposed and decomposed, or `1` and `1.0`, are different values).
    static func same(_ a: JSONValue?, _ b: JSONValue?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        // A string's canonical bytes are a function of its UTF-8 bytes, a number's are its lexeme.
        case (.string(let x)?, .string(let y)?), (.number(let x)?, .number(let y)?): x.utf8.elementsEqual(y.utf8)
        // Byte-equal values are always `==`, so `==` is a cheap filter before encoding.
        case (let a?, let b?): a == b && a.canonicalLine() == b.canonicalLine()
        default: false
        }
    }

    /// Of two values changed differently, the one whose canonical bytes (``JSONValue/canonicalBytes()``)
    /// compare greater, byte by byte; an absent (removed) value counts as no bytes, so it always loses.
    static func greaterValue(_ a: JSONValue?, _ b: JSONValue?) -> JSONValue? {
        guard let a else { return b }
        guard let b else { return a }
        return a.canonicalBytes().lexicographicallyPrecedes(b.canonicalBytes()) ? b : a
    }

    /// Three-way merge of the top-level fields of JSON objects, over the union of the keys of all three.
    ///
    /// For each key, with `b`, `o`, `t` its values (or absence) in base, ours and theirs: `o` same as `t`
    /// → `o`; `o` same as `b` → `t`; `t` same as `b` → `o`; otherwise the field collided and
    /// `resolve(o, t)` decides (it must not depend on argument order beyond which side is which). A value
    /// is compared whole: nested objects and arrays are never merged inside. Keys that are canonically
    /// equivalent Unicode count as one key, written with the spelling whose UTF-8 bytes sort last.
    static func mergeFields(
        base: [String: JSONValue], ours: [String: JSONValue], theirs: [String: JSONValue],
        resolve: (JSONValue?, JSONValue?) -> JSONValue?
    ) -> (fields: [String: JSONValue], collided: Bool) {
        var keys = Array(base.keys) + Array(ours.keys) + Array(theirs.keys)
        keys.sort { utf8Precedes($1, $0) }
        var seen = Set<String>()
        var merged: [String: JSONValue] = [:]
        var collided = false
        for key in keys where seen.insert(key).inserted {
            let b = base[key], o = ours[key], t = theirs[key]
            let value: JSONValue?
            if same(o, t) {
                value = o
            } else if same(o, b) {
                value = t
            } else if same(t, b) {
                value = o
            } else {
                value = resolve(o, t)
                collided = true
            }
            if let value { merged[key] = value }
        }
        return (merged, collided)
    }
}
