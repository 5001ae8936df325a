import Foundation

/// A command a doc shows in a console block, and the output the doc shows for it.
struct DocCommand: Equatable {
    /// The doc's line holding the command (1-based), for failures to name.
    let line: Int
    /// The command as a shell runs it: the text after `$ ` (a console block) or the whole line
    /// without its trailing ` # comment` (a sh block).
    let text: String
    /// The lines the doc shows below the command, up to the next command or the fence; nil for a
    /// sh block, which shows commands only.
    let expected: [String]?
}

/// A fenced block of a markdown file that shows commands: one whose info string is `console`, `sh`
/// or `shell` (a fence may be indented, as in a list; its indentation is taken off every line).
///
/// - `console`: a terminal session. A line starting `$ ` is a command; the lines after it, up to
///   the next `$ ` line or the closing fence, are its expected output (standard output and standard
///   error together, as the terminal shows them). A line of output before the first command is a
///   mistake in the doc.
/// - `sh` / `shell`: commands only, one per non-empty line; `#` lines and a ` # …` after a
///   command are comments. Their output is not shown, so it is not compared.
///
/// Other fences (json, plain ```) hold data or excerpts, not commands.
struct ConsoleBlock: Equatable {
    static let infoStrings: Set<String> = ["console", "sh", "shell"]

    /// The line of the opening fence (1-based).
    let line: Int
    let infoString: String
    let commands: [DocCommand]

    /// A line of a doc that cannot be read as a console block.
    struct Malformed: Error, CustomStringConvertible {
        let file: String
        let line: Int
        let problem: String
        var description: String { "\(file):\(line): \(problem)" }
    }

    /// Every console, sh and shell block of `markdown` (the text of `file`), in order.
    static func blocks(in markdown: String, file: String) throws -> [ConsoleBlock] {
        let lines = markdown.components(separatedBy: "\n")
        var blocks = [ConsoleBlock]()
        var index = 0
        while index < lines.count {
            let opening = lines[index]
            let indentation = opening.prefix { $0 == " " }
            let fence = opening.dropFirst(indentation.count)
            index += 1
            guard fence.hasPrefix("```") else { continue }
            let infoString = String(fence.dropFirst(3)).trimmingCharacters(in: .whitespaces)
            guard let end = lines[index...].firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == "```" }) else {
                throw Malformed(file: file, line: index, problem: "a ``` fence is never closed")
            }
            defer { index = end + 1 }
            guard infoStrings.contains(infoString) else { continue }
            let body = lines[index..<end].enumerated().map { offset, text in
                (line: index + offset + 1, text: text.hasPrefix(indentation) ? String(text.dropFirst(indentation.count)) : text)
            }
            let commands = infoString == "console" ? try session(body, file: file) : script(body)
            blocks.append(ConsoleBlock(line: index, infoString: infoString, commands: commands))
        }
        return blocks
    }

    /// A console block's lines as commands, each with the output lines below it.
    private static func session(_ body: [(line: Int, text: String)], file: String) throws -> [DocCommand] {
        var commands = [DocCommand]()
        var current: (line: Int, text: String, output: [String])?
        for (line, text) in body {
            if text.hasPrefix("$ ") {
                if let current { commands.append(DocCommand(line: current.line, text: current.text, expected: current.output)) }
                current = (line, String(text.dropFirst(2)), [])
            } else if current != nil {
                current?.output.append(text)
            } else {
                throw Malformed(file: file, line: line, problem: "output before the block's first `$ ` command: \(text)")
            }
        }
        if let current { commands.append(DocCommand(line: current.line, text: current.text, expected: current.output)) }
        return commands
    }

    /// A sh block's lines as commands with no output shown.
    private static func script(_ body: [(line: Int, text: String)]) -> [DocCommand] {
        body.compactMap { line, text in
            let command = text.replacing(/\s+#\s.*$/, with: "").trimmingCharacters(in: .whitespaces)
            return command.isEmpty || command.hasPrefix("#") ? nil : DocCommand(line: line, text: command, expected: nil)
        }
    }
}

/// What may differ between a doc's output and a real run, and so is compared by its shape only.
/// Each rule keeps the text around the value (`commit `, `SHA256:`, a `Z`), so a change of format
/// still shows; the rules run in this order, on the doc's lines and on the real ones alike.
enum ConsoleOutput {
    static func normalised(_ line: String, home: String) -> String {
        // 1. Spaces at the end of a line (git indents a message's empty line; editors strip them in a doc).
        var line = String(line.reversed().drop { $0 == " " }.reversed())
        // 2. The sandbox's path: it is HOME, so a real path under it reads as the doc writes it, `~/…`.
        line = line.replacingOccurrences(of: home, with: "~")
        // 3. Ed25519 public keys (random per identity): the base64 blob after `ssh-ed25519 `.
        line = line.replacing(/ssh-ed25519 AAAA[0-9A-Za-z+\/]+=*/, with: "ssh-ed25519 <key>")
        // 4. Key fingerprints: the 43 base64 characters after `SHA256:`.
        line = line.replacing(/SHA256:[0-9A-Za-z+\/]{43}/, with: "SHA256:<fingerprint>")
        // 5. Git's dates (`Sun Nov 22 02:44:02 2026 +0000`, `git log`'s Date: line; a one-digit day is not padded: `Wed Dec 2`).
        line = line.replacing(/[A-Z][a-z]{2} [A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d \d{4} [+-]\d{4}/, with: "<date>")
        // 6. Times and HLC stamps: every digit of `2026-11-22T02:44:02.124Z-0000`, `2026-11-22 02:44:02`,
        //    `2026-11-22` or a time of day alone (`10:02` in `concord conflicts`) becomes 0, so their
        //    shape (separator, precision, Z, counter) is still compared.
        line = line.replacing(/\d{4}-\d\d-\d\d([T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z(-\d{4})?)?)?/) { match in
            String(match.output.0.map { $0.isNumber ? "0" : $0 })
        }
        line = line.replacing(/\b\d\d:\d\d(:\d\d)?\b/) { match in String(match.output.0.map { $0.isNumber ? "0" : $0 }) }
        // 7. UUIDs (log entry ids) and commit ids (7–40 hex digits, short or full): each hex digit
        //    becomes x, so a short id stays 7 long and a full one 40. A word of 7 or more letters
        //    a–f alone would be masked too; no output has one.
        line = line.replacing(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/) { match in
            String(match.output.map { $0 == "-" ? "-" : "x" })
        }
        line = line.replacing(/\b[0-9a-f]{7,40}\b/) { match in String(repeating: "x", count: match.output.count) }
        return line
    }
}
