/// The data format this build writes and the newest it reads.
///
/// History: 1 — first format (records, tombstones, JSON Lines logs, members, kinds), each record
/// kind one flat directory. 2 — record files in 256 bucket directories per kind (`RecordPaths`),
/// so a one-record change no longer rewrites a tree of every record of its kind. 3 — per-field
/// stamps: a live record's `fields` and `lastDeleted` (see `Record`), so `lww` merges each field by
/// its own last write and the result no longer depends on the order devices sync in. 4 — open
/// invitations (`.concord/invitations/<id>.json`, `OpenInvitation`) and the member field
/// `invitation`; the first open invitation of a format 3 profile moves its `profile.json` to 4 in the
/// same commit. A concord that reads only format 3 refuses that commit (a path its format lacks)
/// rather than misreading it, and a fetched `profile.json` of a newer format than this build reads
/// is refused with "upgrade concord". 5 — key proofs in member files (`Member.Key.proof`, `KeyProof`)
/// and the validity rule of this build: merges judged by the recomputed policy merge, membership
/// resolved (docs/security.md). Keys added in a commit whose parent is format 5 need their holder's
/// proof unless an active Admin adds them to another member's file; `concord upgrade` moves a
/// format 4 profile to 5 in one signed commit. 6 — a log entry imported from a dump may carry
/// `origin` (`LogEntry.origin`, `LogImport`): when, by whom and on which device it was first written,
/// while its `by` stays the importing signer. A format 5 profile is a format 6 one with no origins;
/// an Admin's import of such entries moves it to 6 in the same commit (`concord upgrade` does too),
/// so a concord that reads only format 5 refuses that commit with "upgrade concord" rather than
/// failing on a field it does not know, and an origin in a profile of an older format is refused.
/// 7 — records and log entries speak only for their signer (`StampRule`, docs/security.md rule 6): in
/// a commit whose first parent is format 7, every record stamp (`updatedBy`/`deletedBy`, field stamps,
/// `lastDeleted`) names the commit's signer (a `concord switch` commit's acting member) or is one the
/// file already had (for a merge: at either parent or their policy merge), with the value it had under
/// it. The files are those of format 6; only the rule is new, so `concord upgrade` (an Admin's signed
/// commit of `profile.json`) moves 3–6 to 7, stamps in the history before and at that commit stay as
/// they are, and a concord that reads only format 6 refuses the profile ("upgrade concord"). Formats
/// after this take 8, 9, … in the order they land, each upgrade chaining from the one before.
public let concordFormatVersion = 7
/// The oldest format this build reads. A format 2 record has no field stamps, and reading one as
/// format 3 would say all its fields were written at its `updatedAt`: not what happened. A format 3
/// profile is a format 4 profile with no open invitations, a format 4 profile a format 5 one with no
/// key proofs, and a format 5 profile a format 6 one with no log entry origins, and a format 6 profile a format 7 one whose
/// history is not held to the stamp rule, so all are read as they are.
public let oldestReadableFormatVersion = 3
