/// Fixed vectors made once with OpenSSH 9.2 (`ssh-keygen -t ed25519 -N '' -C vector@concord`,
/// `ssh-keygen -Y sign -n git`, `ssh-keygen -Y sign -n git -O hashalg=sha256`), so the format
/// logic is tested even where ssh-keygen is not installed.
enum Vector {
    /// The key file exactly as ssh-keygen wrote it (check integers 0xfc331be5).
    static let privateKeyFile = """
    -----BEGIN OPENSSH PRIVATE KEY-----
    b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
    QyNTUxOQAAACCJGl53bLzPZG/yvMLBC9sXq6dljP/wzMt20i13u5ttaAAAAJj8Mxvl/DMb
    5QAAAAtzc2gtZWQyNTUxOQAAACCJGl53bLzPZG/yvMLBC9sXq6dljP/wzMt20i13u5ttaA
    AAAEDoS2Pt5rbR7bWuKjPmAMlBEXRfSpQGezCv7LqS9s1/ZIkaXndsvM9kb/K8wsEL2xer
    p2WM//DMy3bSLXe7m21oAAAADnZlY3RvckBjb25jb3JkAQIDBAUGBw==
    -----END OPENSSH PRIVATE KEY-----

    """

    static let checkInt: UInt32 = 0xfc33_1be5

    /// The Ed25519 seed inside `privateKeyFile`.
    static let seedHex = "e84b63ede6b6d1edb5ae2a33e600c94111745f4a94067b30afecba92f6cd7f64"

    static let comment = "vector@concord"

    /// `k.pub` as ssh-keygen wrote it, minus the newline.
    static let publicLine = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIkaXndsvM9kb/K8wsEL2xerp2WM//DMy3bSLXe7m21o vector@concord"

    /// `ssh-keygen -l -f k.pub`, second field.
    static let fingerprint = "SHA256:57IiLOKov+cvp99f7r+DcGIQpRWKkLVNaXg8vcNsKYo"

    /// The signed message (shaped like a commit object).
    static let message = """
    tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904
    author A <a@example.com> 1700000000 +0000
    committer A <a@example.com> 1700000000 +0000

    concord test vector

    """

    /// `ssh-keygen -Y sign -f k -n git msg` → msg.sig, byte for byte (ends with a newline).
    static let signature = """
    -----BEGIN SSH SIGNATURE-----
    U1NIU0lHAAAAAQAAADMAAAALc3NoLWVkMjU1MTkAAAAgiRped2y8z2Rv8rzCwQvbF6unZY
    z/8MzLdtItd7ubbWgAAAADZ2l0AAAAAAAAAAZzaGE1MTIAAABTAAAAC3NzaC1lZDI1NTE5
    AAAAQDmqEDV3OCZh3KI65x8cASi0DdlGouxuNUIeqKv53XOPFSzytUp8mOqhxfDZRgZeQ9
    IZJBqAelQQsFHNpaSRrgk=
    -----END SSH SIGNATURE-----

    """

    /// Same message, `-O hashalg=sha256`.
    static let signatureSHA256 = """
    -----BEGIN SSH SIGNATURE-----
    U1NIU0lHAAAAAQAAADMAAAALc3NoLWVkMjU1MTkAAAAgiRped2y8z2Rv8rzCwQvbF6unZY
    z/8MzLdtItd7ubbWgAAAADZ2l0AAAAAAAAAAZzaGEyNTYAAABTAAAAC3NzaC1lZDI1NTE5
    AAAAQK3mdqRPYLRnl+GGNy3tdtCNBDJM8SwRSE68X5NUyf8dP/qf8isCB9nEqxJ5RH7asO
    bzF39/An02ccIRVbdCuww=
    -----END SSH SIGNATURE-----

    """

    static var seed: [UInt8] {
        stride(from: 0, to: seedHex.count, by: 2).map { offset in
            let start = seedHex.index(seedHex.startIndex, offsetBy: offset)
            return UInt8(seedHex[start..<seedHex.index(start, offsetBy: 2)], radix: 16) ?? 0
        }
    }
}
