// concord-bench: times concord against the git CLI on the same data and writes docs/benchmarks.md.
// Run it with `make bench`; `concord-bench --help` lists the options.
import Foundation

do {
    let options = try BenchOptions.parse(Array(CommandLine.arguments.dropFirst()))
    try Bench(options: options, scenarios: Scenario.all).run()
} catch let usage as BenchOptions.Usage {
    FileHandle.standardError.write(Data("\(usage.text)\n".utf8))
    exit(usage.isHelp ? 0 : 2)
} catch {
    let text = (error as? LocalizedError)?.errorDescription ?? "\(error)"
    FileHandle.standardError.write(Data("concord-bench: error: \(text)\n".utf8))
    exit(1)
}
