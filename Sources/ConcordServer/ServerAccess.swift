import ConcordKit

/// The server's side of who may open which profile: the rule itself is ConcordRules'
/// `ServerAccess.decide`, a pure function of a request's verb and profile name, the key, the
/// membership and the clock; here it is asked of a `ServeRequest` and its refusal said as a `ServerRefusal`.
extension ServerAccess {
    /// The decision for `request` by the key with fingerprint `key` (`SHA256:…`).
    static func decide(_ request: ServeRequest, key: String, isAdminKey: Bool, profile: ProfileState,
                       now: Int64) -> Result<Admission, ServerRefusal> {
        decide(Request(verb: request.verb, profile: request.profile), key: key, isAdminKey: isAdminKey, profile: profile, now: now)
            .mapError { ServerRefusal($0.message) }
    }

    /// The refusal a revoked member's key gets.
    static func removed(_ member: Member, profile: String) -> ServerRefusal {
        ServerRefusal(Refusal.removed(profile: profile, member).message)
    }
}
