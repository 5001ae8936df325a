// This file touches the libgit2 C API.
internal import CLibgit2

/// Who made a commit and when (git's author/committer line), as a value.
public struct GitSignature: Sendable, Hashable {
    public let name: String
    public let email: String
    /// Seconds since the Unix epoch.
    public let time: Int64
    /// Offset from UTC in minutes.
    public let offsetMinutes: Int32

    public init(name: String, email: String, time: Int64, offsetMinutes: Int32 = 0) {
        self.name = name
        self.email = email
        self.time = time
        self.offsetMinutes = offsetMinutes
    }

    init(_ raw: UnsafePointer<git_signature>) {
        name = String(cString: raw.pointee.name)
        email = String(cString: raw.pointee.email)
        time = raw.pointee.when.time
        offsetMinutes = raw.pointee.when.offset
    }
}

/// A commit, read once into a value.
public struct Commit: Sendable, Hashable {
    public let id: ObjectID
    public let tree: ObjectID
    public let parents: [ObjectID]
    public let author: GitSignature
    public let committer: GitSignature
    /// The full message, summary line and trailers included.
    public let message: String
}

/// A commit's `gpgsig` header and the exact bytes it signs.
public struct CommitSignature: Sendable, Equatable {
    public let signature: String
    public let signedData: [UInt8]

    /// Splits a commit's raw header (its field lines, each ending in a newline) and message: the
    /// first `gpgsig` field, its continuation lines (starting with a space) unfolded, is the
    /// signature; the other header lines, the blank line and the message are what it signs.
    /// Nil when the header has no `gpgsig` field; a header with a second signature field
    /// (`gpgsig` again, or `gpgsig-sha256`, which git would join or drop) is refused.
    static func split(header: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer) throws -> CommitSignature? {
        let field = Array("gpgsig ".utf8)
        var signed = [UInt8]()
        signed.reserveCapacity(header.count + message.count + 1)
        var signature = [UInt8]()
        var found = false, inSignature = false
        var start = 0
        while start < header.count {
            var end = start
            while end < header.count, header[end] != 0x0A { end += 1 }
            let next = min(end + 1, header.count)
            let line = header[start..<end]
            if inSignature, line.first == 0x20 {
                signature.append(0x0A)
                signature.append(contentsOf: line.dropFirst())
            } else if line.starts(with: field) || line.starts(with: Array("gpgsig-".utf8)) {
                guard !found, line.starts(with: field) else {
                    throw GitError(function: "commit signature", code: .other(-1), message: "a commit with more than one signature field")
                }
                found = true
                inSignature = true
                signature.append(contentsOf: line.dropFirst(field.count))
            } else {
                inSignature = false
                signed.append(contentsOf: header[start..<next])
            }
            start = next
        }
        guard found else { return nil }
        signed.append(0x0A)
        signed.append(contentsOf: message)
        return CommitSignature(signature: String(decoding: signature, as: UTF8.self), signedData: signed)
    }
}

extension CommitSignature {
    /// The signature of a raw commit object (its bytes, as hashed to its id), split as
    /// `Repository.signature(ofCommit:)` splits it; nil when it has none, holds a NUL byte, or
    /// cannot be split (that reader then says why).
    public init?(rawCommit bytes: [UInt8]) {
        // The header ends at the first blank line (found byte by byte: Foundation's generic
        // `firstRange(of:)` was most of what a path fetch spent on each commit it copied).
        guard !bytes.contains(0), let blank = bytes.indices.dropLast().first(where: { bytes[$0] == 0x0A && bytes[$0 + 1] == 0x0A })
        else { return nil }
        let found = bytes.withUnsafeBytes { raw in
            try? Self.split(header: UnsafeRawBufferPointer(rebasing: raw[..<(blank + 1)]),
                            message: UnsafeRawBufferPointer(rebasing: raw[(blank + 2)...]))
        }
        guard let found else { return nil }
        self = found
    }
}

extension Repository {
    /// Reads commit `id`.
    public func commit(_ id: ObjectID) throws -> Commit {
        var oid = id.raw
        var commit: OpaquePointer?
        try check("git_commit_lookup", git_commit_lookup(&commit, handle, &oid))
        guard let commit else { throw GitError(function: "git_commit_lookup", code: .notFound, message: "commit \(id) not found") }
        defer { git_commit_free(commit) }
        var parents = [ObjectID]()
        for index in 0..<git_commit_parentcount(commit) {
            if let parent = git_commit_parent_id(commit, index) { parents.append(ObjectID(parent)) }
        }
        return Commit(
            id: id,
            tree: ObjectID(git_commit_tree_id(commit)),
            parents: parents,
            author: GitSignature(git_commit_author(commit)),
            committer: GitSignature(git_commit_committer(commit)),
            message: git_commit_message(commit).map { String(cString: $0) } ?? ""
        )
    }

    /// Writes a signed commit object (it does not move any reference): the commit text is built by
    /// libgit2, `sign` returns the armored signature over exactly those bytes, and the result is
    /// stored with the signature in its `gpgsig` header.
    public func createSignedCommit(
        tree: ObjectID,
        parents: [ObjectID],
        author: GitSignature,
        message: String,
        sign: ([UInt8]) throws -> String
    ) throws -> ObjectID {
        let buffer = try commitBuffer(tree: tree, parents: parents, author: author, message: message)
        let signature = try sign(buffer)
        var oid = git_oid()
        let result = buffer.withUnsafeBufferPointer { bytes -> Int32 in
            // libgit2 wants a C string: the buffer with a terminating NUL.
            var text = Array(bytes)
            text.append(0)
            return text.withUnsafeBufferPointer { pointer in
                pointer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: pointer.count) {
                    git_commit_create_with_signature(&oid, handle, $0, signature, nil)
                }
            }
        }
        try check("git_commit_create_with_signature", result)
        return ObjectID(oid)
    }

    /// The unsigned commit text for these fields (what a signature covers).
    func commitBuffer(tree: ObjectID, parents: [ObjectID], author: GitSignature, message: String) throws -> [UInt8] {
        var signature: UnsafeMutablePointer<git_signature>?
        try check("git_signature_new",
                  git_signature_new(&signature, author.name, author.email, author.time, author.offsetMinutes))
        defer { git_signature_free(signature) }

        var treeOID = tree.raw
        var treeHandle: OpaquePointer?
        try check("git_tree_lookup", git_tree_lookup(&treeHandle, handle, &treeOID))
        defer { git_tree_free(treeHandle) }

        var parentHandles = [OpaquePointer?]()
        defer { parentHandles.forEach { git_commit_free($0) } }
        for parent in parents { parentHandles.append(try lookupCommit(parent)) }

        var buffer = git_buf()
        defer { git_buf_dispose(&buffer) }
        let result = parentHandles.withUnsafeMutableBufferPointer { pointers in
            git_commit_create_buffer(&buffer, handle, signature, signature, nil, message, treeHandle,
                                     parents.count, pointers.baseAddress)
        }
        try check("git_commit_create_buffer", result)
        return Array(UnsafeRawBufferPointer(start: buffer.ptr, count: buffer.size))
    }

    /// The signature of commit `id` and the bytes it covers, or nil for an unsigned commit.
    ///
    /// Read from the commit as libgit2 parsed it (its object cache holds commits a walk just
    /// read): its raw header and message, split as git splits a signed commit (`parse_signed_commit`:
    /// the first `gpgsig` header field with its continuation lines is the signature, everything
    /// else the signed bytes). `git_commit_extract_signature` inflates the commit object again,
    /// which was a tenth of checking each fetched commit (bench row B7); `libgit2Signature` is
    /// that call, and a test compares the two.
    public func signature(ofCommit id: ObjectID) throws -> CommitSignature? {
        var oid = id.raw
        var commit: OpaquePointer?
        try check("git_commit_lookup", git_commit_lookup(&commit, handle, &oid))
        guard let commit else { throw GitError(function: "git_commit_lookup", code: .notFound, message: "commit \(id) not found") }
        defer { git_commit_free(commit) }
        guard let header = git_commit_raw_header(commit), let message = git_commit_message_raw(commit) else {
            throw GitError(function: "git_commit_raw_header", code: .other(-1), message: "commit \(id) cannot be read")
        }
        let headerBytes = UnsafeRawBufferPointer(start: header, count: strlen(header))
        let messageBytes = UnsafeRawBufferPointer(start: message, count: strlen(message))
        // libgit2 keeps a header and message up to their first NUL; git signs and verifies every
        // byte. A commit with a NUL in it would verify here and not in git: refused.
        guard try objectHeader(id).size == headerBytes.count + 1 + messageBytes.count else {
            throw GitError(function: "commit signature", code: .other(-1), message: "commit \(id) holds a NUL byte")
        }
        return try CommitSignature.split(header: headerBytes, message: messageBytes)
    }

    /// `signature(ofCommit:)` by libgit2's `git_commit_extract_signature` (for the test that
    /// compares them).
    public func libgit2Signature(ofCommit id: ObjectID) throws -> CommitSignature? {
        var oid = id.raw
        var signature = git_buf()
        var signed = git_buf()
        defer {
            git_buf_dispose(&signature)
            git_buf_dispose(&signed)
        }
        let result = git_commit_extract_signature(&signature, &signed, handle, &oid, nil)
        if result == GIT_ENOTFOUND.rawValue { return nil }
        try check("git_commit_extract_signature", result)
        return CommitSignature(
            signature: String(decoding: UnsafeRawBufferPointer(start: signature.ptr, count: signature.size), as: UTF8.self),
            signedData: Array(UnsafeRawBufferPointer(start: signed.ptr, count: signed.size))
        )
    }

    /// Walks history from `tip` newest first (time order, parents after children), calling `visit`
    /// for each commit until it returns false.
    public func walkHistory(from tip: ObjectID, _ visit: (Commit) throws -> Bool) throws {
        try walk(from: tip, sorting: GIT_SORT_TOPOLOGICAL.rawValue | GIT_SORT_TIME.rawValue) { try visit(commit($0)) }
    }

    /// Every commit reachable from `tip`, newest first by author date (the signing device's clock),
    /// commits of one second in history order (children first): the order people read a log in.
    /// A merge dated before a commit it merged (made on a device whose clock is behind) comes after
    /// it, where a walk in history order puts every merge above what it merged.
    public func commitsByDate(from tip: ObjectID) throws -> [ObjectID] {
        var dated = [(id: ObjectID, time: Int64)]()
        try walk(from: tip, sorting: GIT_SORT_TOPOLOGICAL.rawValue | GIT_SORT_TIME.rawValue) { id in
            var oid = id.raw
            var commit: OpaquePointer?
            try check("git_commit_lookup", git_commit_lookup(&commit, handle, &oid))
            defer { git_commit_free(commit) }
            dated.append((id, git_commit_author(commit).pointee.when.time))
            return true
        }
        // Stable: equal dates keep the walk's order.
        return dated.enumerated().sorted { a, b in
            a.element.time != b.element.time ? a.element.time > b.element.time : a.offset < b.offset
        }.map(\.element.id)
    }

    /// The `count` newest commits reachable from `tip`, by commit time. Read lazily: the walk stops
    /// after `count` commits (no topological order, which would read the whole history first).
    public func recentCommits(from tip: ObjectID, count: Int) throws -> [Commit] {
        var out = [Commit]()
        guard count > 0 else { return out }
        try walk(from: tip, sorting: GIT_SORT_TIME.rawValue) { id in
            out.append(try commit(id))
            return out.count < count
        }
        return out
    }

    /// libgit2's walk from `tip` in `sorting` order, handing `visit` each commit id until it returns false.
    private func walk(from tip: ObjectID, sorting: UInt32, _ visit: (ObjectID) throws -> Bool) throws {
        var walker: OpaquePointer?
        try check("git_revwalk_new", git_revwalk_new(&walker, handle))
        defer { git_revwalk_free(walker) }
        try check("git_revwalk_sorting", git_revwalk_sorting(walker, sorting))
        var start = tip.raw
        try check("git_revwalk_push", git_revwalk_push(walker, &start))
        var oid = git_oid()
        while true {
            let result = git_revwalk_next(&oid, walker)
            if result == GIT_ITEROVER.rawValue { return }
            try check("git_revwalk_next", result)
            if try !visit(ObjectID(oid)) { return }
        }
    }

    /// The first commit of `commit`'s history, reached by first parents.
    public func rootCommit(of commit: ObjectID) throws -> ObjectID {
        var id = commit
        while let parent = try self.commit(id).parents.first { id = parent }
        return id
    }

    /// True when `ancestor` is `descendant` or one of its ancestors.
    public func isAncestor(_ ancestor: ObjectID, of descendant: ObjectID) throws -> Bool {
        if ancestor == descendant { return true }
        var a = descendant.raw
        var b = ancestor.raw
        let result = git_graph_descendant_of(handle, &a, &b)
        try check("git_graph_descendant_of", result)
        return result == 1
    }
}
