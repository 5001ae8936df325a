/// One entry of a tree, as a value.
public struct TreeEntry: Sendable, Hashable {
    public enum Kind: Sendable, Hashable { case blob, tree, other }
    public let name: String
    public let id: ObjectID
    public let kind: Kind

    package init(name: String, id: ObjectID, kind: Kind) {
        (self.name, self.id, self.kind) = (name, id, kind)
    }
}
